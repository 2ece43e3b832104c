//! `bench --gpu-metrics-url`: GPU energy per rate against the mock's power model
//! (src/mock/gpu.rs: P = 60 W + 40 W per running request). The mock integrates P over
//! time exactly, so a rate's energy is 60 W × the rate's span plus 40 W × the time its
//! requests ran in the engine (from their schedule's start). That time is bounded
//! whatever the machine's load: below by the engine's own notes (`--mock-notes`: from
//! reading each request, its start, to its last token chunk leaving), above by the
//! client's E2E of each request (the client sends before the engine reads and sees the
//! end after it is written; a busy machine only widens it). At most 12 requests run at
//! once, so the power stays under the model's cap (700 W, reached at 16).

use crate::support::bench::*;

#[test]
fn a_sweep_reports_energy_per_token_falling_with_the_batch_as_the_power_model_says() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.jsonl");
    let notes = dir.path().join("notes.jsonl");
    let requests = 60_u64;
    let output_len = 32_u64;
    let assert = bench()
        .args(args(
            "--mock --mock-ttft-ms 40 --mock-itl-ms 5 --gpu-metrics-url mock \
             --sweep 2,10,40 --num-requests 60 --input-len 16 --output-len 32 \
             --max-concurrency 12",
        ))
        .arg("--json-out")
        .arg(&out)
        .arg("--mock-notes")
        .arg(&notes)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(
        stdout.contains("GPU energy") && stdout.contains("J/tok"),
        "{stdout}"
    );
    let s = jsonl(&out);
    assert_eq!(s.len(), 3);
    // The engine's busy time of each answer, in arrival order: the rates ran one after
    // the other, so the first 60 answers are the first rate's, and so on.
    let mut spans: Vec<(f64, f64)> = jsonl(&notes)
        .iter()
        .map(|n| {
            let arrival = n["arrival_ms"].as_f64().unwrap();
            let last = n["chunks"].as_array().unwrap().last().unwrap()["out_ms"]
                .as_f64()
                .unwrap();
            (arrival, (last - arrival) / 1000.0)
        })
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(spans.len() as u64, 3 * requests);
    let per_token: Vec<f64> = s
        .iter()
        .map(|r| {
            r["energy"]["energy_per_output_token_joules"]
                .as_f64()
                .unwrap()
        })
        .collect();
    for (i, r) in s.iter().enumerate() {
        let e = &r["energy"];
        assert_eq!(r["completed"], requests, "{r}");
        assert_eq!(e["gpus"], 1);
        assert_eq!(e["output_tokens"], requests * output_len);
        let energy = e["energy_joules"].as_f64().unwrap();
        let span = e["duration_s"].as_f64().unwrap();
        let engine_busy: f64 = spans[i * 60..(i + 1) * 60].iter().map(|s| s.1).sum();
        let client_busy = r["e2el_ms"]["mean"].as_f64().unwrap() / 1000.0 * requests as f64;
        let (low, high) = (
            60.0 * span + 40.0 * engine_busy,
            60.0 * span + 40.0 * client_busy,
        );
        // The slack covers the page's whole millijoules, and the instant between the
        // client reading the end and the engine counting the answer as ended.
        assert!(
            energy >= low * 0.999 && energy <= high * 1.01,
            "rate {}: {energy} J measured, the power model says {low}..{high} J",
            r["rate"]
        );
        let tokens = (requests * output_len) as f64;
        let j = e["energy_per_output_token_joules"].as_f64().unwrap();
        assert!((j - energy / tokens).abs() < 1e-9);
        assert!((e["output_tokens_per_joule"].as_f64().unwrap() * j - 1.0).abs() < 1e-9);
        assert!((e["mean_power_watts"].as_f64().unwrap() - energy / span).abs() < 1e-6);
    }
    // The idle power spreads over more tokens per second as the rate grows.
    assert!(
        per_token[0] > per_token[1] && per_token[1] > per_token[2],
        "{per_token:?}"
    );
}

#[test]
fn gpu_telemetry_mistakes_are_said_before_the_first_request() {
    for (flags, message) in [
        ("--rate 5 --model m --gpu-metrics-url mock", "needs --mock"),
        (
            "--mock --rate 5 --gpu-metrics-url ftp://x/metrics",
            "must be http or https",
        ),
        (
            "--mock --rate 5 --gpu-metrics-url not-a-url",
            "is not a URL",
        ),
        (
            "--mock --rate 5 --num-requests 5 --gpu-metrics-url http://127.0.0.1:1/metrics",
            "cannot read the GPU telemetry",
        ),
    ] {
        let assert = bench()
            .args(args(flags))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
        let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
        assert!(!stdout.contains("requests"), "{flags}: {stdout}");
    }
}

#[test]
fn a_page_that_is_no_gpu_telemetry_is_refused() {
    // The mock's own /metrics is an engine's, not a dcgm-exporter's.
    let mut cmd = crate::support::process::llmprobe();
    cmd.args(["mock", "--listen", "127.0.0.1:0"]);
    let mock = crate::support::process::Process::spawn(cmd, "llmprobe mock listening on http://");
    bench()
        .args(args("--mock --rate 5 --num-requests 5 --gpu-metrics-url"))
        .arg(format!("http://{}/metrics", mock.addr))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no DCGM_FI_ metrics"));
    mock.stop();
}
