//! `bench --respect-retry-after` against the in-process mock answering every request
//! with HTTP 429 and `Retry-After: 1`: with the flag, requests scheduled after the first
//! refusal wait out the second (the wait is dispatch lag, flagged in the report); without
//! it, the open-loop schedule is kept.

use assert_cmd::Command;
use serde_json::Value;

/// Runs 4 requests at 10 req/s, every one refused with Retry-After: 1; returns the
/// summary line and how long the run took. With seed 3 they are due at 0, 17, 241 and
/// 354 ms: the last two come after the first refusal however late a busy machine
/// makes it (it takes a millisecond or so; 350 ms would be needed to pause none).
fn run(respect: bool) -> (Value, std::time::Duration) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.jsonl");
    let mut cmd = Command::cargo_bin("llmprobe").unwrap();
    cmd.env_remove("OPENAI_API_KEY").args([
        "bench",
        "--mock",
        "--mock-fault",
        "http_429=1",
        "--rate",
        "10",
        "--num-requests",
        "4",
        "--output-len",
        "4",
        "--seed",
        "3",
        "--json-out",
    ]);
    cmd.arg(&out);
    if respect {
        cmd.arg("--respect-retry-after");
    }
    let started = std::time::Instant::now();
    cmd.assert().success();
    let elapsed = started.elapsed();
    let text = std::fs::read_to_string(&out).unwrap();
    (
        serde_json::from_str(text.lines().next().unwrap()).unwrap(),
        elapsed,
    )
}

#[test]
fn retry_after_pauses_new_requests_only_when_asked() {
    let (kept, _) = run(false);
    assert_eq!(kept["failed_by_reason"]["http_429"], 4, "{kept}");
    let lag = kept["dispatch_lag_ms"]["max"].as_f64().unwrap();
    assert!(
        lag < 500.0,
        "schedule kept without the flag: max lag {lag} ms"
    );

    let (paused, elapsed) = run(true);
    assert_eq!(paused["failed_by_reason"]["http_429"], 4, "{paused}");
    // Later requests waited for the 1 s Retry-After of an earlier refusal.
    let lag = paused["dispatch_lag_ms"]["max"].as_f64().unwrap();
    assert!(
        lag >= 500.0,
        "max dispatch lag {lag} ms with --respect-retry-after"
    );
    assert_eq!(paused["client_behind"], true);
    assert!(elapsed >= std::time::Duration::from_millis(900));
}
