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

/// numpy's default (linear) percentile of `values`, as `bench` computes its figures.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (h - h.floor()) * (v[hi] - v[lo])
}

/// The arithmetic mean of `values`.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// `derived[key]` of every record that counts in the summary (warmup left out).
pub fn derived(records: &[Value], key: &str) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r["warmup"] != true)
        .map(|r| r["derived"][key].as_f64().unwrap())
        .collect()
}

/// Whether two figures agree to rounding.
pub fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}
