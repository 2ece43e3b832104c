//! Repeat runs, confidence intervals, `report compare`, `--warmup auto` and the constant
//! arrival process, end to end against the in-process mock. The mock's timing is the
//! truth: TPOT is its ITL (5 ms here), so the interval of the mean TPOT over repeat
//! runs must contain 5 ms (to the mock's timer resolution); TTFT can only come out above its 40 ms (the mock
//! starts its clock when it has read the request), so its interval must sit just above.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

mod bench_support;
use bench_support::{args, bench, jsonl};

/// `--repeat N` against a mock with TTFT `ttft` ms and ITL `itl` ms; the --json-out
/// lines and stdout.
fn repeat_run(dir: &Path, name: &str, ttft: u32, itl: u32, repeat: u32) -> (Vec<Value>, String) {
    let out = dir.join(name);
    let assert = bench()
        .args(args(&format!(
            "--mock --mock-ttft-ms {ttft} --mock-itl-ms {itl} --mock-batch-slowdown 0 \
             --rate 20 --num-requests 40 --input-len 64 --output-len 16 --seed 3 \
             --repeat {repeat}"
        )))
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    (jsonl(&out), stdout)
}

fn ci(line: &Value, key: &str) -> (f64, f64) {
    let c = &line["ci95"][key];
    (c[0].as_f64().unwrap(), c[1].as_f64().unwrap())
}

#[test]
fn repeat_intervals_contain_the_mock_truth() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, stdout) = repeat_run(dir.path(), "r.jsonl", 40, 5, 5);
    assert_eq!(lines.len(), 1);
    let s = &lines[0];
    assert_eq!(s["repeats"], 5);
    assert_eq!(s["requests"], 200);
    assert!(stdout.contains("rate 20: mean of 5 runs"), "{stdout}");
    assert!(stdout.contains('±'), "{stdout}");
    // The interval can be a few microseconds wide, narrower than the mock's own
    // timer jitter (its tokens fire late, never early), so it must contain 5 ms once
    // widened by that 0.1 ms resolution.
    let (lo, hi) = ci(s, "tpot_ms.mean");
    assert!(
        lo <= hi && lo - 0.1 <= 5.0 && 5.0 <= hi + 0.1,
        "TPOT mean interval [{lo}, {hi}] misses the mock's 5 ms"
    );
    let (lo, hi) = ci(s, "ttft_ms.p50");
    assert!(lo >= 40.0 && hi < 50.0, "TTFT median interval [{lo}, {hi}]");
    // Offered rates of five seeded Poisson draws around 20 req/s.
    let (lo, hi) = ci(s, "offered_rate");
    assert!(
        lo <= 20.0 && 20.0 <= hi,
        "offered rate interval [{lo}, {hi}]"
    );
    let mean = s["ttft_ms"]["mean"].as_f64().unwrap();
    let (lo, hi) = ci(s, "ttft_ms.mean");
    assert!(lo <= mean && mean <= hi);
}

#[test]
fn compare_flags_a_20_percent_slowdown_and_passes_the_same_build() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _) = repeat_run(dir.path(), "base.jsonl", 40, 5, 3);
    let (_, _) = repeat_run(dir.path(), "same.jsonl", 40, 5, 3);
    let (_, _) = repeat_run(dir.path(), "slow.jsonl", 48, 6, 3);
    let compare = |new: &str| {
        let mut c = Command::cargo_bin("llmprobe").unwrap();
        c.args(["report", "compare"])
            .arg(dir.path().join("base.jsonl"))
            .arg(dir.path().join(new))
            .args(["--fail-on-regression", "5%"]);
        c
    };
    let same = compare("same.jsonl").assert().success();
    let text = String::from_utf8_lossy(&same.get_output().stdout).to_string();
    assert!(text.contains("rate 20: base 3 runs, new 3 runs"), "{text}");
    assert!(
        text.ends_with(
            "0 regressions beyond 5% (judged: throughput, goodput, TTFT/TPOT/ITL/E2E)\n"
        ),
        "{text}"
    );
    let slow = compare("slow.jsonl").assert().code(3);
    let text = String::from_utf8_lossy(&slow.get_output().stdout).to_string();
    let flagged = |key: &str| {
        text.lines()
            .any(|l| l.trim_start().starts_with(&format!("{key} ")) && l.ends_with("REGRESSION"))
    };
    // Medians: a loaded machine's outliers widen the intervals of means and tails.
    assert!(flagged("ttft_ms.p50"), "{text}");
    assert!(flagged("tpot_ms.p50"), "{text}");
    assert!(flagged("e2el_ms.p50"), "{text}");
    // Without --fail-on-regression the change is shown but the exit code is 0.
    let mut c = Command::cargo_bin("llmprobe").unwrap();
    c.args(["report", "compare"])
        .arg(dir.path().join("base.jsonl"))
        .arg(dir.path().join("slow.jsonl"))
        .assert()
        .success();
    // A --records file is not a summary: exit 2 naming the line.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"id\": 1}\n").unwrap();
    let mut c = Command::cargo_bin("llmprobe").unwrap();
    let err = c
        .args(["report", "compare"])
        .arg(dir.path().join("base.jsonl"))
        .arg(&bad)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(
        stderr.contains("bad.jsonl:1: not a --json-out line"),
        "{stderr}"
    );
}

#[test]
fn gate_on_ci_uses_the_pessimistic_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.jsonl");
    // The mean TTFT is a little above 40 ms; its interval's upper end is above the
    // mean, so a gate between the two passes on the value and fails on the interval.
    let run = |on: &str, gate: &str| {
        let mut c = bench();
        c.args(args(
            "--mock --mock-ttft-ms 40 --mock-itl-ms 2 --mock-batch-slowdown 0 --rate 20 \
             --num-requests 20 --input-len 32 --output-len 4 --repeat 3",
        ))
        .args(["--gate-on", on, "--gate", gate])
        .arg("--json-out")
        .arg(&out);
        c
    };
    run("value", "ttft-mean<=60ms").assert().success();
    let s = &jsonl(&out)[0];
    let (lo, hi) = ci(s, "ttft_ms.mean");
    let mean = s["ttft_ms"]["mean"].as_f64().unwrap();
    assert!(lo < mean && mean < hi, "[{lo}, {hi}] around {mean}");
    run("ci", "ttft-mean<=39ms").assert().code(3);
    let s = &jsonl(&out)[0];
    assert_eq!(
        s["gates"][0]["observed"].as_f64(),
        Some(ci(s, "ttft_ms.mean").1)
    );
}

#[test]
fn warmup_auto_says_how_many_requests_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.jsonl");
    let assert = bench()
        .args(args(
            "--mock --mock-ttft-ms 20 --mock-itl-ms 1 --rate 50 --num-requests 60 \
             --input-len 32 --output-len 4 --warmup auto",
        ))
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    let line = stderr
        .lines()
        .find(|l| l.contains("--warmup auto (MSER-5 on TTFT) left out the first"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let dropped: u64 = line
        .split_whitespace()
        .rev()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let s = &jsonl(&out)[0];
    assert_eq!(s["warmup_excluded"], dropped);
    assert_eq!(s["requests"].as_u64().unwrap() + dropped, 60);
    assert!(dropped <= 30);
}

#[test]
fn constant_arrivals_are_evenly_spaced() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("r.jsonl");
    bench()
        .args(args(
            "--mock --mock-ttft-ms 2 --mock-itl-ms 1 --rate 40 --num-requests 20 \
             --input-len 16 --output-len 2 --arrival constant",
        ))
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let mut recs = jsonl(&records);
    recs.sort_by_key(|r| r["id"].as_u64().unwrap());
    for (i, r) in recs.iter().enumerate() {
        let want = i as f64 / 40.0;
        assert!(
            (r["t_sched"].as_f64().unwrap() - want).abs() < 1e-9,
            "{i}: {}",
            r["t_sched"]
        );
    }
}
