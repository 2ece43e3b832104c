//! `bench --max-error-rate` against the mock's faults: with every request failing, the
//! first rate of a sweep stops after exactly the minimum of 10 counted requests, the
//! sweep stops with it (a hit-ratio sweep too) and bench exits with 3, the table and
//! `--json-out` saying why and at what counts; under the bound, nothing stops.

use crate::support::bench::{args, bench, jsonl};

#[test]
fn a_failing_endpoint_stops_the_run_and_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.jsonl");
    // At 20 req/s the 2000 requests would take 100 s; a 500 comes back at once.
    let run = bench()
        .args(args(
            "--mock --mock-fault http_500 --sweep 20,40 --num-requests 2000 --output-len 4 \
             --seed 1 --max-error-rate 0.5 --json-out",
        ))
        .arg(&out)
        .assert()
        .code(3);
    let o = run.get_output();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    let why = "stopped early: 10 of 10 requests failed (100.0 %), above --max-error-rate 0.5";
    assert!(stdout.contains(&format!("rate 20: {why}")), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "Error: rate 20: {why}; the rest of the run and of the plan was not sent"
        )),
        "{stderr}"
    );
    let rows = jsonl(&out);
    assert_eq!(rows.len(), 1, "the sweep stopped: {rows:?}");
    let r = &rows[0];
    assert_eq!(
        r["stopped_early"],
        serde_json::json!({"reason": "max_error_rate", "max_error_rate": 0.5, "requests": 10, "failed": 10})
    );
    // Requests in flight at the stop still end and count; the rest were never sent.
    let requests = r["requests"].as_u64().unwrap();
    assert!((10..2000).contains(&requests), "{requests}");
    assert_eq!(r["failed"].as_u64(), Some(requests));
}

#[test]
fn failures_under_the_bound_do_not_stop_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.jsonl");
    bench()
        .args(args(
            "--mock --mock-fault http_500:0.2 --rate 50 --num-requests 30 --output-len 4 \
             --seed 1 --max-error-rate 95% --json-out",
        ))
        .arg(&out)
        .assert()
        .success();
    let r = &jsonl(&out)[0];
    assert!(r.get("stopped_early").is_none(), "{r}");
    assert_eq!(r["requests"], 30);
}

#[test]
fn the_bound_is_a_ratio() {
    for bad in ["1.5", "-0.1", "lots", "150%"] {
        let o = bench()
            .args(args("--mock --rate 1 --num-requests 1"))
            .arg(format!("--max-error-rate={bad}"))
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let e = String::from_utf8_lossy(&o);
        assert!(e.contains("--max-error-rate: "), "{bad}: {e}");
    }
}

#[test]
fn a_stopped_run_ends_a_hit_ratio_sweep_too() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.jsonl");
    bench()
        .args(args(
            "--mock --mock-fault http_500 --rate 20 --num-requests 2000 --output-len 4 \
             --shared-prefix-len 16 --prefix-hit-ratio 0,0.5,1 --max-error-rate 0.5 \
             --json-out",
        ))
        .arg(&out)
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "Error: rate 20: stopped early: 10 of 10 requests failed",
        ));
    let rows = jsonl(&out);
    assert_eq!(rows.len(), 1, "the later ratios were not run: {rows:?}");
    assert_eq!(rows[0]["prefix_hit_ratio"], 0.0);
}
