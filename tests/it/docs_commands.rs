//! Every command a reader is told to run to validate a config: the `llmprobe ...`
//! lines in the header comments of `examples/*.yaml` and every `llmprobe ...
//! --config.check` in README.md and docs/*.md, run as written from the repository root,
//! must exit 0. Where a doc shows the command's output (`$ llmprobe ...` followed by
//! output lines), stdout must be that output; an output that starts with `Error: ` is a
//! documented failure, which must exit 2 with exactly that on stderr.
//!
//! A config file a command names is taken from the repository; a name that is not there
//! is the reader's own config and must be one of [`PLACEHOLDERS`], which stand in for it.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The docs' names for the reader's own config, with the config each stands for.
/// `probers.yaml` is the four-target config of docs/deploy.md's shard example.
const PLACEHOLDERS: &[(&str, &str)] = &[
    ("daemon.yaml", MINIMAL),
    ("my.yaml", MINIMAL),
    ("config.yaml", MINIMAL),
    ("probers.yaml", PROBERS),
];

const MINIMAL: &str = "examples/daemon-minimal.yaml";

const PROBERS: &str = "defaults: {rate: 1/h}\ntargets:\n\
  - {name: chat-a, base_url: http://127.0.0.1:9, model: m}\n\
  - {name: chat-b, base_url: http://127.0.0.1:9, model: m}\n\
  - {name: chat-c, base_url: http://127.0.0.1:9, model: m}\n\
  - {name: chat-d, base_url: http://127.0.0.1:9, model: m}\n";

/// A command found in a file, with the output the file shows for it, if any.
#[derive(Debug)]
struct Written {
    at: String,
    args: Vec<String>,
    output: Option<String>,
}

/// The words of the `llmprobe` command on `line`: from `llmprobe SUBCOMMAND --…` to the
/// end of the line, a `#` comment or a closing backtick (prose that names the program,
/// `llmprobe daemon: a complete example`, is no command).
fn command_on(line: &str) -> Option<Vec<String>> {
    let start = line.find("llmprobe ")? + "llmprobe ".len();
    let rest = &line[start..];
    let end = [rest.find(" #"), rest.find('`')]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    let words: Vec<String> = rest[..end].split_whitespace().map(String::from).collect();
    let subcommand = words.first()?.chars().all(|c| c.is_ascii_lowercase());
    let flags = words.iter().skip(1).any(|w| w.starts_with("--"));
    (subcommand && flags).then_some(words)
}

/// The commands of the header comment (the lines before the first that is not a
/// comment) of an example.
fn example_commands(path: &Path) -> Vec<Written> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(root()).unwrap().display().to_string();
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.starts_with('#'))
        .filter_map(|(i, l)| {
            command_on(l).map(|args| Written {
                at: format!("{name}:{}", i + 1),
                args,
                output: None,
            })
        })
        .collect()
}

/// Every `llmprobe ... --config.check` of a Markdown file; after `$ llmprobe` in a code
/// block, the lines up to the next `$` or the fence are its output.
fn doc_commands(path: &Path) -> Vec<Written> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(root()).unwrap().display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(args) = command_on(line) else {
            continue;
        };
        if !args.iter().any(|a| a == "--config.check") {
            continue;
        }
        let output = line.trim_start().starts_with("$ llmprobe ").then(|| {
            lines[i + 1..]
                .iter()
                .take_while(|l| !l.starts_with("$ ") && !l.starts_with("```"))
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        });
        found.push(Written {
            at: format!("{name}:{}", i + 1),
            args,
            output,
        });
    }
    found
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    out
}

/// Runs `w` from a directory that holds the repository's `examples/` and the
/// placeholder configs under their names, so the words run exactly as written.
fn run(w: &Written, dir: &Path) -> Result<(), String> {
    let config = w
        .args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| w.args.get(i + 1))
        .ok_or_else(|| {
            format!(
                "{}: `llmprobe {}` names no --config FILE",
                w.at,
                w.args.join(" ")
            )
        })?;
    if !root().join(config).is_file() && !PLACEHOLDERS.iter().any(|(n, _)| n == config) {
        return Err(format!(
            "{}: {config} is neither a file of the repository nor a placeholder this test knows",
            w.at
        ));
    }
    let out = Command::cargo_bin("llmprobe")
        .unwrap()
        .args(&w.args)
        .current_dir(dir)
        // The example's staging key comes from it: unset, as in a reader's shell.
        .env_remove("STAGING_API_KEY")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let fails = w
        .output
        .as_deref()
        .is_some_and(|o| o.starts_with("Error: "));
    let (code, shown) = if fails { (2, stderr) } else { (0, stdout) };
    if out.status.code() != Some(code) {
        return Err(format!(
            "{}: `llmprobe {}` exits {:?}, not {code}:\n{}{}",
            w.at,
            w.args.join(" "),
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        ));
    }
    match &w.output {
        Some(want) if *want != shown => Err(format!(
            "{}: `llmprobe {}` prints\n{shown}the doc shows\n{want}",
            w.at,
            w.args.join(" ")
        )),
        _ => Ok(()),
    }
}

#[test]
fn every_validate_command_in_the_examples_and_docs_passes_as_written() {
    let mut written = Vec::new();
    for path in files("examples", "yaml") {
        written.extend(example_commands(&path));
    }
    let examples = written.len();
    for path in std::iter::once(root().join("README.md")).chain(files("docs", "md")) {
        written.extend(doc_commands(&path));
    }
    // The full example says how to validate it; the README, daemon.md and deploy.md do too.
    assert!(examples >= 1, "no command in the examples' headers");
    for doc in ["README.md", "docs/daemon.md", "docs/deploy.md"] {
        assert!(
            written.iter().any(|w| w.at.starts_with(&format!("{doc}:"))),
            "no --config.check command found in {doc}"
        );
    }
    for w in &written[..examples] {
        assert!(
            w.args.iter().any(|a| a == "--config.check"),
            "{}: a header command other than a check cannot be held to exit 0: {:?}",
            w.at,
            w.args
        );
    }

    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("examples"), dir.path().join("examples")).unwrap();
    for (name, config) in PLACEHOLDERS {
        let text = if *config == MINIMAL {
            std::fs::read_to_string(root().join(MINIMAL)).unwrap()
        } else {
            config.to_string()
        };
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let failed: Vec<String> = written
        .iter()
        .filter_map(|w| run(w, dir.path()).err())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} commands fail:\n{}",
        failed.len(),
        written.len(),
        failed.join("\n")
    );
}
