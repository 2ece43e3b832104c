//! The `llmprobe bench` binary under faults: for every fault kind of the
//! mock, `bench --mock --mock-fault KIND` (forced on every request) reports exactly
//! its requests as failed under the documented reason in `--json-out` (a wrong but
//! well-formed answer: none, without answer checks), the records are kept, and the
//! exit code follows the gates: failures alone are data (exit 0), an
//! `error-ratio` gate turns them into exit 3. A separately started `llmprobe mock
//! --fault …` with a mix of faults gives the same reasons over the network.
//! `--respect-retry-after` pauses sending for a 429's `Retry-After`; without it the
//! schedule is kept.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

const N: u64 = 4;

fn llmprobe() -> Command {
    Command::cargo_bin("llmprobe").expect("binary")
}

/// (fault as given to --mock-fault, expected reason; "ok" = no failure)
const FAULTS: &[(&str, &str)] = &[
    ("http_500", "http_5xx"),
    ("http_503", "http_5xx"),
    ("http_429", "http_429"),
    ("close_before_response", "connect"),
    ("reset_mid_stream", "stream_error"),
    ("stall_before_headers", "timeout"),
    ("stall_after_tokens", "timeout"),
    ("malformed_json", "stream_error"),
    ("no_done", "stream_error"),
    ("invalid_utf8", "stream_error"),
    ("huge_line=2097152", "stream_error"),
    // About 2.5 s of 1-byte chunks: the 1 s total timeout bounds it.
    ("trickle", "timeout"),
    ("wrong_content_type", "stream_error"),
    ("json_instead_of_sse", "stream_error"),
    ("error_event", "stream_error"),
    ("empty_completion", "empty_output"),
    // Fast but wrong answers: without answer checks, bench counts them as successes.
    ("garbage", "ok"),
    ("repeat", "ok"),
    ("wrong_model", "ok"),
    ("bad_json", "ok"),
    ("template_leak", "ok"),
    ("wrong_answer", "ok"),
    ("no_tool_call", "ok"),
];

#[test]
fn every_fault_of_the_table_has_a_row() {
    let rows: Vec<&str> = FAULTS.iter().map(|(fault, _)| *fault).collect();
    assert_eq!(crate::support::faults::gaps(&rows), Vec::<String>::new());
}

fn bench(args: &[&str], dir: &Path, name: &str) -> (Output, Value, Vec<Value>) {
    bench_at("inf", args, dir, name)
}

fn bench_at(rate: &str, args: &[&str], dir: &Path, name: &str) -> (Output, Value, Vec<Value>) {
    let json = dir.join(format!("{name}.json"));
    let records = dir.join(format!("{name}.records.jsonl"));
    let out = llmprobe()
        .args(["--log-level", "error", "bench"])
        .args(args)
        .args([
            "--rate",
            rate,
            "--num-requests",
            &N.to_string(),
            "--input-len",
            "16",
            "--output-len",
            "8",
            "--timeout",
            "1s",
            "--no-progress",
        ])
        .arg("--json-out")
        .arg(&json)
        .arg("--records")
        .arg(&records)
        .output()
        .expect("bench runs");
    let summary = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| t.lines().next().and_then(|l| serde_json::from_str(l).ok()))
        .unwrap_or(Value::Null);
    let recs = std::fs::read_to_string(&records)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (out, summary, recs)
}

fn failed_by_reason(summary: &Value) -> BTreeMap<String, u64> {
    summary["failed_by_reason"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                .filter(|(_, v)| *v > 0)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_fault_is_counted_under_its_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bad = Vec::new();
    for (i, (fault, reason)) in FAULTS.iter().enumerate() {
        let name = format!("fault-{i}");
        let (out, summary, recs) = bench(
            &[
                "--mock",
                "--mock-ttft-ms",
                "10",
                "--mock-itl-ms",
                "2",
                "--mock-fault",
                fault,
            ],
            dir.path(),
            &name,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(0) {
            bad.push(format!("{fault}: exit {:?}: {stderr}", out.status.code()));
            continue;
        }
        let got = failed_by_reason(&summary);
        let want: BTreeMap<String, u64> = if *reason == "ok" {
            BTreeMap::new()
        } else {
            BTreeMap::from([(reason.to_string(), N)])
        };
        if got != want {
            bad.push(format!("{fault}: failed_by_reason {got:?}, want {want:?}"));
        }
        let completed = if *reason == "ok" { N } else { 0 };
        if summary["completed"].as_u64() != Some(completed) {
            bad.push(format!(
                "{fault}: completed {}, want {completed}",
                summary["completed"]
            ));
        }
        // Every request has its record, with the reason and (for failures) an error.
        let outcomes: Vec<&str> = recs.iter().filter_map(|r| r["outcome"].as_str()).collect();
        if outcomes.len() as u64 != N || outcomes.iter().any(|o| o != reason) {
            bad.push(format!("{fault}: record outcomes {outcomes:?}"));
        }
        if *reason != "ok" && recs.iter().any(|r| r["error"].as_str().is_none()) {
            bad.push(format!("{fault}: a failed record without an error"));
        }
        // Mid-stream faults keep the partial record: t_first and the chunks so far.
        if matches!(
            *fault,
            "reset_mid_stream" | "stall_after_tokens" | "error_event"
        ) && recs
            .iter()
            .any(|r| r["t_first"].is_null() || r["chunks"].as_array().is_none_or(|c| c.is_empty()))
        {
            bad.push(format!("{fault}: partial record lost"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn failures_are_data_until_a_gate_says_otherwise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "--mock",
        "--mock-ttft-ms",
        "10",
        "--mock-itl-ms",
        "2",
        "--mock-fault",
        "http_500",
    ];
    let (out, summary, _) = bench(&args, dir.path(), "nogate");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(summary["failed"].as_u64(), Some(N));
    let mut gated = args.to_vec();
    gated.extend(["--gate", "error-ratio<=1%"]);
    let (out, summary, _) = bench(&gated, dir.path(), "gate");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("error-ratio"), "{stderr}");
    assert_eq!(summary["failed_by_reason"]["http_5xx"].as_u64(), Some(N));
}

#[test]
fn a_separate_mock_with_a_fault_mix_gives_the_reasons_over_the_network() {
    let mut mock = llmprobe()
        .args([
            "--log-level",
            "error",
            "mock",
            "--listen",
            "127.0.0.1:0",
            "--ttft-ms",
            "10",
            "--itl-ms",
            "2",
            "--seed",
            "5",
            "--stall-ms",
            "3000",
            "--fault",
            "http_500:0.2",
            "--fault",
            "http_429:0.2",
            "--fault",
            "reset_mid_stream:0.2",
            "--fault",
            "stall_after_tokens:0.2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mock");
    let mut line = String::new();
    BufReader::new(mock.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("line");
    let url = line
        .trim()
        .strip_prefix("llmprobe mock listening on ")
        .map(str::to_string);
    let dir = tempfile::tempdir().expect("tempdir");
    let result = url.map(|url| {
        let json = dir.path().join("mix.json");
        let out = llmprobe()
            .args([
                "--log-level",
                "error",
                "bench",
                "--base-url",
                &url,
                "--model",
                "mock-llm",
                "--rate",
                "50",
                "--num-requests",
                "60",
                "--input-len",
                "16",
                "--output-len",
                "8",
                "--timeout",
                "1s",
                "--no-progress",
            ])
            .arg("--json-out")
            .arg(&json)
            .output()
            .expect("bench");
        (out, std::fs::read_to_string(&json).unwrap_or_default())
    });
    let _ = mock.kill();
    let _ = mock.wait();
    let (out, json) = result.unwrap_or_else(|| panic!("mock did not start: {line:?}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(json.lines().next().unwrap_or("")).expect("json");
    let got = failed_by_reason(&summary);
    let reasons: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(
        reasons,
        ["http_429", "http_5xx", "stream_error", "timeout"],
        "{got:?}"
    );
    let failed: u64 = got.values().sum();
    assert_eq!(summary["failed"].as_u64(), Some(failed));
    assert_eq!(summary["completed"].as_u64(), Some(60 - failed));
    assert!(failed > 0 && failed < 60, "{got:?}");
}

fn secs(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

#[test]
fn retry_after_pauses_sending_only_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "--mock",
        "--mock-ttft-ms",
        "10",
        "--mock-itl-ms",
        "2",
        "--mock-fault",
        "http_429=1",
        "--seed",
        "3",
    ];
    // N requests at 5/s: with seed 3 they are due at 0, 34, 482 and 708 ms, so some are
    // due after the first 429 came back, however late a busy machine makes it (it
    // takes a millisecond or so).
    let (out, _, recs) = bench_at("5", &args, dir.path(), "keep-schedule");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(recs.len() as u64, N);
    for r in &recs {
        assert_eq!(r["outcome"], "http_429", "{r}");
        assert_eq!(r["retry_after"].as_f64(), Some(1.0), "{r}");
        let lag = secs(r, "t_send") - secs(r, "t_sched");
        assert!(
            lag < 0.5,
            "without the flag requests keep their schedule: {r}"
        );
    }

    let mut respect = args.to_vec();
    respect.push("--respect-retry-after");
    let (out, _, recs) = bench_at("5", &respect, dir.path(), "respect");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(recs.len() as u64, N);
    let first = recs
        .iter()
        .min_by(|a, b| secs(a, "t_end").total_cmp(&secs(b, "t_end")))
        .expect("records");
    let first_end = secs(first, "t_end");
    let mut paused = 0;
    for r in &recs {
        assert_eq!(r["outcome"], "http_429", "{r}");
        // Scheduled after the first 429 came back: held until its Retry-After passed.
        if secs(r, "t_sched") > first_end + 0.005 {
            paused += 1;
            assert!(
                secs(r, "t_send") >= first_end + 1.0 - 0.005,
                "sent during the Retry-After pause (first 429 ended at {first_end}): {r}"
            );
        }
    }
    assert!(paused >= 1, "no request was scheduled after the first 429");
}
