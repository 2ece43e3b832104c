//! `llmprobe fingerprint record` and `compare` end to end against mock processes: the
//! same mock is the same model (exit 0, divergence 0), a mock with another logprob
//! seed or another answer is drift (exit 3), and bad input exits 2 with a clear error.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use crate::support::client::{Script, Step, serve};

const BIN: &str = env!("CARGO_BIN_EXE_llmprobe");

/// A mock process on 127.0.0.1:0, killed on drop.
struct Mock {
    child: Child,
    base: String,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mock(extra: &[&str]) -> Mock {
    let mut child = Command::new(BIN)
        .args([
            "mock",
            "--listen",
            "127.0.0.1:0",
            "--ttft-ms",
            "1",
            "--itl-ms",
            "1",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim_end()
        .strip_prefix("llmprobe mock listening on ")
        .unwrap_or_else(|| panic!("unexpected line {line:?}"))
        .to_string();
    Mock { child, base }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn record(m: &Mock, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "fingerprint",
        "record",
        "--base-url",
        &m.base,
        "--model",
        "m",
        "--out",
        out.to_str().unwrap(),
        "--repeats",
        "3",
        "--max-tokens",
        "6",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn compare_json(m: &Mock, baseline: &Path) -> (i32, Value) {
    let o = run(&[
        "fingerprint",
        "compare",
        baseline.to_str().unwrap(),
        "--base-url",
        &m.base,
        "--json",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    let v = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap(), v)
}

#[test]
fn same_model_passes_and_changed_models_drift() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("b.json");
    let base = mock(&[]);
    let with_logprobs: Vec<&str> = llmprobe::client::Endpoint::ALL
        .into_iter()
        .filter(|e| e.logprobs().is_some())
        .map(|e| e.as_str())
        .collect();
    assert_eq!(with_logprobs, ["chat", "completions", "responses"]);
    for endpoint in with_logprobs {
        let o = record(&base, &baseline, &["--endpoint", endpoint]);
        assert!(
            o.status.success(),
            "{endpoint}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let b: Value = serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
        assert_eq!(b["endpoint"], endpoint);
        assert_eq!(b["prompts"].as_array().unwrap().len(), 8);
        assert_eq!(
            b["prompts"][0]["answer"]["positions"]
                .as_array()
                .unwrap()
                .len(),
            6
        );
        assert_eq!(
            b["prompts"][0]["answer"]["positions"][0]["top"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
        // The mock is perfectly repeatable: no noise.
        assert_eq!(b["noise"]["divergence"], 0.0);
        assert_eq!(b["noise"]["token_agreement"], 1.0);
        let (code, v) = compare_json(&base, &baseline);
        assert_eq!(code, 0, "{endpoint}: {v}");
        assert_eq!(v["divergence"], 0.0);
        assert_eq!(v["token_agreement"], 1.0);
        assert_eq!(v["first_divergence"], Value::Null);
        assert_eq!(v["drift"], false);
        assert_eq!(v["threshold"]["divergence"], 0.02);
    }

    // Same tokens, other probabilities: every position compared, none differs.
    let reseeded = mock(&["--logprob-seed", "7"]);
    let (code, v) = compare_json(&reseeded, &baseline);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["token_agreement"], 1.0);
    assert_eq!(v["positions"], 48);
    assert!(v["divergence"].as_f64().unwrap() > 0.02, "{v}");
    assert_eq!(v["drift"], true);

    // Other tokens: the first position already differs.
    let other = mock(&["--answer", "something else entirely"]);
    let (code, v) = compare_json(&other, &baseline);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["first_divergence"], 0);
    assert_eq!(v["token_agreement"], 0.0);
    assert_eq!(v["positions"], 8);

    // The text form says the verdict.
    let o = run(&[
        "fingerprint",
        "compare",
        baseline.to_str().unwrap(),
        "--base-url",
        &other.base,
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("first divergence at token 0") && text.contains("DRIFT"),
        "{text}"
    );
}

#[test]
fn bad_input_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b.json");
    let m = mock(&[]);
    let o = record(&m, &out, &["--endpoint", "messages"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the messages API has no logprobs"), "{err}");

    let prompts = dir.path().join("p.txt");
    std::fs::write(&prompts, "fine\n\"broken\n").unwrap();
    let o = record(&m, &out, &["--prompts", prompts.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("p.txt:2: not a JSON string"), "{err}");

    std::fs::write(&out, "{\"format\": 1}").unwrap();
    let o = run(&[
        "fingerprint",
        "compare",
        out.to_str().unwrap(),
        "--base-url",
        &m.base,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("b.json: missing field"), "{err}");
}

#[tokio::test]
async fn a_server_without_logprobs_is_named() {
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":null}]}"#;
    let server = serve(vec![Script::full(200, "OK", "application/json", body)]).await;
    let base = server.base_url();
    let o = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("b.json");
        run(&[
            "fingerprint",
            "record",
            "--base-url",
            &base,
            "--model",
            "m",
            "--out",
            out.to_str().unwrap(),
            "--repeats",
            "1",
        ])
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("prompt 1: the answer has no choices[0].logprobs: the server ignored the logprobs request"),
        "{err}"
    );
}

/// A fingerprint request on a pooled connection the server closed as it was reused is
/// sent again on a new one, as every other request is (tests/it/client_stale_connection.rs).
#[tokio::test]
async fn a_fingerprint_request_survives_a_stale_pooled_connection() {
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[{"token":"hi","logprob":-0.1,"top_logprobs":[{"token":"hi","logprob":-0.1}]}]}}]}"#;
    let ok = || Script::full(200, "OK", "application/json", answer);
    let server = serve(vec![ok(), Script::default().then(Step::Close), ok()]).await;
    let cfg = llmprobe::client::ClientConfig {
        base_url: server.base_url(),
        ..Default::default()
    };
    let ask = llmprobe::fingerprint::Ask {
        endpoint: llmprobe::client::Endpoint::Chat,
        model: "m".into(),
        top_logprobs: 1,
        max_tokens: 1,
    };
    let sampler = llmprobe::fingerprint::Sampler::new(cfg, ask).unwrap();
    for _ in 0..2 {
        let a = sampler.answer("hello").await.unwrap();
        assert_eq!(a.text(), "hi");
    }
    assert_eq!(server.connections(), 2, "the retry opens a new connection");
    assert_eq!(server.requests().len(), 3, "request 2 was sent twice");
}
