//! One test alone in a child process of the test binary, for a test that measures the
//! whole process (its open file descriptors): the other tests of this shared binary
//! open and close descriptors at any moment.

use std::process::Command;

/// Set in the child to the name of the one test it runs.
const CHILD: &str = "LLMPROBE_TEST_ALONE";

/// Called first in a test whose module path is `module` (`module_path!()`) and whose
/// name is `test`. In the test binary's own process it runs that one test in a child
/// process, fails if the child did not pass exactly that test, and returns `false`: the
/// caller then returns. In the child it returns `true`: the caller runs its body there.
pub fn in_own_process(module: &str, test: &str) -> bool {
    // The harness names tests by their path below the crate: `faults_client::name`.
    let module = module.split_once("::").map_or("", |(_, rest)| rest);
    let name = format!("{module}::{test}");
    if std::env::var(CHILD).as_deref() == Ok(name.as_str()) {
        return true;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, &name)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, alone in a child process, did not pass:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    false
}
