//! `llmprobe bench` with answer checks: a wrong-answer fault on half the requests
//! fails the check on exactly those (completed, not good, no transport failure), the
//! `check-failure-ratio` gate turns that into exit 3, a correct `--mock-answer` to a
//! fixed `--prompt` passes every check, and bad check flags are usage errors (exit 2).

use std::path::Path;
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

fn bench(args: &[&str], dir: &Path) -> (Output, Value, Vec<Value>) {
    let json = dir.join("r.jsonl");
    let records = dir.join("records.jsonl");
    let _ = std::fs::remove_file(&json);
    let out = Command::cargo_bin("llmprobe")
        .expect("binary")
        .args(["--log-level", "error", "bench", "--mock", "--no-progress"])
        .args([
            "--mock-ttft-ms",
            "1",
            "--mock-itl-ms",
            "0.2",
            "--output-len",
            "16",
        ])
        .args(args)
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
        .map(|l| serde_json::from_str(l).expect("record line"))
        .collect();
    (out, summary, recs)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn repeated_answers_fail_the_repetition_check_not_the_transport() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--mock-fault",
        "repeat:0.5",
        "--max-repetition",
        "0.5",
        "--num-requests",
        "200",
        "--rate",
        "inf",
    ];
    let (out, s, recs) = bench(&args, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s["failed"], 0);
    assert_eq!(s["completed"], 200);
    assert_eq!(s["checked_requests"], 200);
    let failed = s["check_failures"]["max_repetition"].as_u64().unwrap();
    // The mock's fault draws are reproducible from the seed.
    assert_eq!(failed, 98);
    assert_eq!(s["check_failure_ratio"], 0.49);
    assert_eq!(s["good"], 200 - failed);
    assert_eq!(s["goodput_ratio"], 0.51);
    let in_records = recs
        .iter()
        .filter(|r| r["checks"][0]["passed"] == false)
        .count();
    assert_eq!(in_records as u64, failed);
    let bad = recs
        .iter()
        .find(|r| r["checks"][0]["passed"] == false)
        .unwrap();
    assert_eq!(bad["outcome"], "ok");
    assert!(
        bad["checks"][0]["excerpt"]
            .as_str()
            .unwrap()
            .starts_with(" tok0 tok0 tok0")
    );
    assert!(
        stdout(&out).contains(
            "answer checks failed on 98 of 200 completed requests (49.0%): max_repetition 98"
        ),
        "{}",
        stdout(&out)
    );

    let gated = [&args[..], &["--gate", "check-failure-ratio<=0.1"]].concat();
    let (out, _, _) = bench(&gated, dir.path());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("gate check-failure-ratio<=0.1: FAIL at inf (0.490)"));
}

#[test]
fn a_correct_answer_to_a_fixed_prompt_passes_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","required":["answer"],"properties":{"answer":{"const":4}}}"#,
    )
    .unwrap();
    let args = [
        "--prompt",
        "What is 2 + 2? Answer as JSON.",
        "--mock-answer",
        r#"{"answer": 4}"#,
        "--expect-json-schema",
        schema.to_str().unwrap(),
        "--expect-regex",
        r"\b4\b",
        "--expect-not-regex",
        r"<\|im_start\|>",
        "--expect-model",
        "mock-llm",
        "--model",
        "mock-llm",
        "--expect-finish-reason",
        "stop",
        "--min-output-tokens",
        "2",
        "--max-repetition",
        "0.5",
        "--num-requests",
        "20",
        "--rate",
        "inf",
        "--gate",
        "check-failure-ratio<=0",
    ];
    let (out, s, recs) = bench(&args, dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stderr(&out),
        stdout(&out)
    );
    assert_eq!(s["check_failure_ratio"], 0.0);
    assert_eq!(s["goodput_ratio"], 1.0);
    assert!(
        recs.iter()
            .all(|r| r["checks"].as_array().unwrap().len() == 7)
    );

    // The same checks against a wrong model and a template leak.
    for (fault, check) in [
        ("wrong_model", "expect_model"),
        ("template_leak", "expect_not_regex"),
    ] {
        let faulted = [&args[..], &["--mock-fault", fault]].concat();
        let (out, s, _) = bench(&faulted, dir.path());
        assert_eq!(out.status.code(), Some(3), "{fault}: {}", stderr(&out));
        assert_eq!(s["check_failures"][check], 20, "{fault}: {s}");
        assert_eq!(s["failed"], 0);
    }
}

#[test]
fn bad_check_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--expect-regex", "("], "--expect-regex: invalid regex"),
        (
            &["--max-repetition", "2"],
            "--max-repetition: must be in [0, 1]",
        ),
        (
            &["--expect-json-schema", "/nonexistent.json"],
            "--expect-json-schema: cannot read /nonexistent.json",
        ),
        (
            &["--endpoint", "embeddings", "--expect-regex", "x"],
            "--expect-regex: cannot check --endpoint embeddings",
        ),
        (
            &["--gate", "check-failure-ratio<=0.1"],
            "needs an answer check",
        ),
    ];
    let schema = dir.path().join("s.json");
    std::fs::write(&schema, r#"{"type":"object"}"#).unwrap();
    let structured = [
        "--endpoint",
        "messages",
        "--expect-json-schema",
        schema.to_str().unwrap(),
        "--structured-output",
    ];
    let cases = [
        &cases[..],
        &[(
            &structured[..],
            "--structured-output: --endpoint messages has no structured-output field",
        )],
    ]
    .concat();
    for (args, want) in cases {
        let all = [args, &["--num-requests", "1", "--rate", "inf"]].concat();
        let (out, _, _) = bench(&all, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_tool_call_check_passes_on_calls_and_gates_on_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("weather.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}"#,
    )
    .unwrap();
    for endpoint in ["chat", "responses"] {
        for stream in [&[][..], &["--no-stream"][..]] {
            let args = [
                &[
                    "--endpoint",
                    endpoint,
                    "--expect-tool-call",
                    "get_weather",
                    "--tool-schema",
                    schema.to_str().unwrap(),
                    "--tool-choice",
                    "required",
                    "--mock-fault",
                    "no_tool_call:0.5",
                    "--num-requests",
                    "40",
                    "--rate",
                    "inf",
                    "--gate",
                    "check-failure-ratio<=0.1",
                ][..],
                stream,
            ]
            .concat();
            let what = format!("{endpoint} {stream:?}");
            let (out, s, recs) = bench(&args, dir.path());
            // About half the answers are plain text: the gate fails (exit 3), the
            // transport never does.
            assert_eq!(out.status.code(), Some(3), "{what}: {}", stderr(&out));
            assert_eq!(s["failed"], 0, "{what}");
            let failed = s["check_failures"]["expect_tool_call"].as_u64().unwrap();
            assert!((10..=30).contains(&failed), "{what}: {failed}");
            let passed = recs
                .iter()
                .filter(|r| r["checks"][0]["passed"] == true)
                .count();
            assert_eq!(passed as u64, 40 - failed, "{what}");
            let bad = recs
                .iter()
                .find(|r| r["checks"][0]["passed"] == false)
                .unwrap();
            assert_eq!(
                bad["checks"][0]["reason"], "the answer called no tool (expected get_weather)",
                "{what}"
            );
            assert!(
                bad["checks"][0]["excerpt"]
                    .as_str()
                    .unwrap()
                    .starts_with(" tok0 tok1"),
                "{what}: {bad}"
            );
        }
    }
}

#[test]
fn tool_call_flags_the_protocol_cannot_carry_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--no-nonce"], "--no-nonce needs a fixed question"),
        (
            &["--endpoint", "completions", "--expect-tool-call", "f"],
            "--expect-tool-call: --endpoint completions cannot offer tools",
        ),
        (
            &["--endpoint", "embeddings", "--expect-tool-call", "f"],
            "--expect-tool-call: cannot check --endpoint embeddings",
        ),
        (
            &["--expect-tool-call", "f", "--tool-choice", "always"],
            "--tool-choice: unknown tool choice \"always\"",
        ),
        (
            &[
                "--expect-tool-call",
                "f",
                "--tool-schema",
                "/nonexistent.json",
            ],
            "--tool-schema: cannot read /nonexistent.json",
        ),
    ];
    for (args, want) in cases {
        let all = [args, &["--num-requests", "1", "--rate", "inf"]].concat();
        let (out, _, _) = bench(&all, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}
