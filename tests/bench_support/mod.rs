//! Shared helpers of the `bench` integration tests: the command, its JSONL outputs and
//! the fixtures.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// `llmprobe bench`, without a key from the environment.
pub fn bench() -> Command {
    let mut c = Command::cargo_bin("llmprobe").unwrap();
    c.arg("bench").env_remove("OPENAI_API_KEY");
    c
}

/// Every line of a JSONL file (`--records`, `--json-out`), parsed.
pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Command-line words of a string of flags.
pub fn args(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}
