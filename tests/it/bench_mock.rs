//! `llmprobe bench` end to end: the binary against its in-process mock (`--mock`, bound
//! to 127.0.0.1:0). Counts are exact. The mock's configured TTFT/ITL are a floor, not a
//! value: TTFT and the time to the last token can only come out above it (the mock
//! starts its clock when it has read the request and is never early), by however much
//! the machine delays the mock and the client, which a busy CI box makes tens of
//! milliseconds. So timings are checked against that floor, against ten times the truth
//! (nonsense), and against the records (the summary's figures are the records'); how
//! close to the truth they come on a quiet machine is a benchmark (BENCHMARKS.md).

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
use serde_json::Value;

use crate::support::bench as bench_support;
use bench_support::{args, bench, derived, jsonl, mean, percentile, same};

#[test]
fn one_rate_exact_counts_keys_and_latency_near_the_mock_truth() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.jsonl");
    let records = dir.path().join("records.jsonl");
    let vllm = dir.path().join("vllm.json");
    let assert = bench()
        .args(args(
            "--mock --mock-ttft-ms 40 --mock-itl-ms 5 --mock-batch-slowdown 0 \
             --rate 25 --num-requests 30 --warmup 3 --input-len 32 --output-len 8 --seed 7",
        ))
        .arg("--json-out")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .arg("--save-result")
        .arg(&vllm)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(stdout.contains("TTFT ms"), "{stdout}");

    let lines = jsonl(&out);
    assert_eq!(lines.len(), 1);
    let s = &lines[0];
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["rate"], 25.0);
    assert_eq!(s["requests"], 30);
    assert_eq!(s["completed"], 30);
    assert_eq!(s["failed"], 0);
    assert_eq!(s["warmup_excluded"], 3);
    // The mock honours max_tokens exactly: 30 × 8 output tokens.
    assert_eq!(s["total_output_tokens"], 240);
    assert_eq!(s["token_sources"]["continuous_usage"], 30);
    assert_eq!(s["goodput_ratio"], 1.0);
    for key in [
        "offered_rate",
        "achieved_rate",
        "duration_s",
        "output_throughput",
        "total_token_throughput",
        "goodput",
        "dispatch_lag_ms",
        "client_behind",
        "inputs",
        "gates",
    ] {
        assert!(s.get(key).is_some(), "missing {key}");
    }
    for metric in ["ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"] {
        for k in ["count", "mean", "std", "p50", "p90", "p99"] {
            assert!(s[metric].get(k).is_some(), "missing {metric}.{k}");
        }
    }
    // Records: one line per request sent, warmup included and flagged.
    let recs = jsonl(&records);
    assert_eq!(recs.len(), 33);
    assert_eq!(recs.iter().filter(|r| r["warmup"] == true).count(), 3);
    // Truth: TTFT 40 ms, 5 ms per token, 8 tokens → the last token 75 ms after the
    // mock read the request. Every request's TTFT and E2E are at least that.
    for r in &recs {
        assert_eq!(r["outcome"], "ok");
        assert_eq!(r["derived"]["output_tokens"], 8);
        assert!(r["t_first"].as_f64().unwrap() > r["t_send"].as_f64().unwrap());
        let d = &r["derived"];
        assert!(d["ttft_ms"].as_f64().unwrap() >= 40.0, "{r}");
        assert!(d["e2el_ms"].as_f64().unwrap() >= 75.0, "{r}");
    }
    // The summary's figures are the records' (numpy percentiles, warmup left out).
    let (ttfts, e2es) = (derived(&recs, "ttft_ms"), derived(&recs, "e2el_ms"));
    let ttft = s["ttft_ms"]["p50"].as_f64().unwrap();
    assert!(same(ttft, percentile(&ttfts, 50.0)), "TTFT p50 {ttft}");
    let e2e = s["e2el_ms"]["p50"].as_f64().unwrap();
    assert!(same(e2e, percentile(&e2es, 50.0)), "E2E p50 {e2e}");
    let tpot = s["tpot_ms"]["mean"].as_f64().unwrap();
    assert!(
        same(tpot, mean(&derived(&recs, "tpot_ms"))),
        "TPOT mean {tpot}"
    );
    // And nothing absurd: within ten times the truth.
    assert!(ttft < 400.0, "TTFT p50 {ttft}");
    assert!(e2e < 750.0, "E2E p50 {e2e}");
    // (A gap can be 0: two tokens read at once by a client woken late.)
    let itl = s["itl_ms"]["p50"].as_f64().unwrap();
    assert!((0.0..50.0).contains(&itl), "ITL p50 {itl}");
    assert!((0.0..50.0).contains(&tpot), "TPOT mean {tpot}");

    // The vLLM-compatible file.
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&vllm).unwrap()).unwrap();
    assert_eq!(v["completed"], 30);
    assert_eq!(v["num_prompts"], 30);
    assert_eq!(v["request_rate"], 25.0);
    assert_eq!(v["backend"], "openai");
    assert_eq!(v["output_lens"].as_array().unwrap().len(), 30);
    assert!(v["median_ttft_ms"].as_f64().unwrap() >= 40.0);
}

#[test]
fn a_too_strict_slo_fails_the_gate_with_exit_3_and_a_loose_one_passes() {
    let common = "--mock --mock-ttft-ms 30 --mock-itl-ms 2 --rate 50 --num-requests 20 \
                  --input-len 16 --output-len 4";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("strict.jsonl");
    let assert = bench()
        .args(args(common))
        .args([
            "--slo-ttft-ms",
            "5",
            "--min-goodput-ratio",
            "0.9",
            "--json-out",
        ])
        .arg(&out)
        .assert()
        .code(3);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains("SLO gate failed at rate 50: goodput-ratio>=0.9"),
        "{stderr}"
    );
    let s = &jsonl(&out)[0];
    assert_eq!(s["completed"], 20);
    assert_eq!(s["good"], 0);
    assert_eq!(s["goodput_ratio"], 0.0);
    assert_eq!(s["gates"][0]["passed"], false);
    assert_eq!(s["gates"][0]["observed"], 0.0);

    let out = dir.path().join("loose.jsonl");
    bench()
        .args(args(common))
        .args([
            "--goodput",
            "ttft:1000",
            "tpot:100",
            "--gate",
            "goodput-ratio>=0.9",
        ])
        .args(["--gate", "ttft-p99<=1000ms", "--json-out"])
        .arg(&out)
        .assert()
        .success();
    let s = &jsonl(&out)[0];
    assert_eq!(s["good"], 20);
    assert_eq!(s["gates"].as_array().unwrap().len(), 2);
    assert!(
        s["gates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["passed"] == true)
    );
}

#[test]
fn a_latency_gate_names_the_failing_rate() {
    bench()
        .args(args(
            "--mock --mock-ttft-ms 30 --mock-itl-ms 1 --sweep 40,80 --num-requests 10 \
             --input-len 16 --output-len 2 --gate ttft-p50<=10ms",
        ))
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "SLO gate failed at rate 40: ttft-p50<=10ms",
        ));
}

#[test]
fn sweep_gives_one_row_and_one_summary_per_rate_and_the_mock_slows_with_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.jsonl");
    let records = dir.path().join("records.jsonl");
    let plot = dir.path().join("sweep.svg");
    let assert = bench()
        .args(args(
            "--mock --mock-ttft-ms 20 --mock-itl-ms 5 --mock-batch-slowdown 0.1 \
             --sweep 5,80 --num-requests 40 --input-len 16 --output-len 16",
        ))
        .arg("--json-out")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .arg("--plot")
        .arg(&plot)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("5 ") || l.trim_start().starts_with("80 "))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    let s = jsonl(&out);
    assert_eq!(s.len(), 2);
    assert_eq!(
        (s[0]["rate"].as_f64(), s[1]["rate"].as_f64()),
        (Some(5.0), Some(80.0))
    );
    assert!(s.iter().all(|r| r["completed"] == 40));
    // More requests in flight at 80 req/s: every token costs more.
    let itl = |r: &Value| r["itl_ms"]["mean"].as_f64().unwrap();
    assert!(
        itl(&s[1]) > itl(&s[0]) * 1.3,
        "{} vs {}",
        itl(&s[1]),
        itl(&s[0])
    );
    assert_eq!(jsonl(&records).len(), 80);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("TTFT p99"));
}

#[test]
fn failures_are_counted_by_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.jsonl");
    bench()
        .args(args(
            "--mock --mock-ttft-ms 5 --mock-itl-ms 1 --mock-fault http_500:0.5 --rate 100 \
             --num-requests 40 --input-len 16 --output-len 4 --seed 3",
        ))
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let s = &jsonl(&out)[0];
    let failed = s["failed"].as_u64().unwrap();
    assert_eq!(s["completed"].as_u64().unwrap() + failed, 40);
    assert!(failed > 5 && failed < 35, "{failed}");
    assert_eq!(s["failed_by_reason"]["http_5xx"].as_u64(), Some(failed));
    assert_eq!(s["total_output_tokens"].as_u64(), Some(4 * (40 - failed)));
}

#[test]
fn max_concurrency_makes_arrivals_wait_and_the_wait_shows_as_lag() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.jsonl");
    let records = dir.path().join("r.jsonl");
    bench()
        .args(args(
            "--mock --mock-ttft-ms 20 --mock-itl-ms 1 --rate inf --num-requests 6 \
             --max-concurrency 1 --input-len 16 --output-len 1",
        ))
        .arg("--json-out")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let s = &jsonl(&out)[0];
    assert_eq!(s["completed"], 6);
    assert_eq!(s["rate"], "inf");
    assert_eq!(s["offered_rate"], Value::Null);
    // One at a time: the last of six waits for five requests of >= 20 ms each.
    let lag_max = s["dispatch_lag_ms"]["max"].as_f64().unwrap();
    assert!(lag_max >= 100.0, "{lag_max}");
    assert_eq!(s["client_behind"], true);
    // TTFT from the send excludes the wait (at least the server's 20 ms, however late
    // the machine made it); from the schedule it includes the wait: per request, the
    // two differ by exactly the dispatch lag.
    let recs = jsonl(&records);
    assert_eq!(recs.len(), 6);
    for r in &recs {
        let t = |k: &str| r[k].as_f64().unwrap() * 1e3;
        let d = |k: &str| r["derived"][k].as_f64().unwrap();
        assert!(
            (d("ttft_ms") - (t("t_first") - t("t_send"))).abs() < 1e-6,
            "{r}"
        );
        assert!(
            (d("ttft_from_sched_ms") - (t("t_first") - t("t_sched"))).abs() < 1e-6,
            "{r}"
        );
        assert!(
            (d("dispatch_lag_ms") - (t("t_send") - t("t_sched"))).abs() < 1e-6,
            "{r}"
        );
        assert!(d("ttft_ms") >= 20.0, "{r}");
    }
    let ttft = s["ttft_ms"]["p50"].as_f64().unwrap();
    assert!(
        same(ttft, percentile(&derived(&recs, "ttft_ms"), 50.0)),
        "{ttft}"
    );
    let from_sched = s["ttft_from_sched_ms"]["p99"].as_f64().unwrap();
    assert!(
        same(
            from_sched,
            percentile(&derived(&recs, "ttft_from_sched_ms"), 99.0)
        ),
        "{from_sched}"
    );
    assert!(from_sched >= 100.0, "{from_sched}");
}

#[test]
fn duration_stop_and_chat_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.jsonl");
    bench()
        .args(args(
            "--mock --mock-ttft-ms 5 --mock-itl-ms 1 --rate 40 --duration 1s \
             --endpoint chat --input-len 16 --output-len 4",
        ))
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let s = &jsonl(&out)[0];
    let n = s["requests"].as_u64().unwrap();
    // Poisson at 40/s for 1 s: 40 expected; 15..70 is beyond 4 standard deviations.
    assert!((15..70).contains(&n), "{n}");
    assert_eq!(s["completed"].as_u64(), Some(n));
    assert_eq!(s["inputs"]["endpoint"], "chat");
    assert_eq!(s["inputs"]["duration_s"], 1.0);
}

#[test]
fn bad_input_exits_2_before_sending_anything() {
    for (flags, message) in [
        ("--mock --rate 5 --gate ttft-p99<=fast", "--gate"),
        ("--mock --rate 5 --goodput ttft=5", "METRIC:MS"),
        ("--mock --sweep 1,x", "--sweep"),
        ("--mock --rate 5 --shard 2/2", "--shard"),
        ("--rate 5", "--model is required"),
        ("--mock --rate 5 --metric-percentiles 0", "(0, 100]"),
        ("--mock --rate 5 --input-len 2000000", "--input-len"),
        (
            "--mock --rate 5 --output-len 2000000",
            "more than the client accepts",
        ),
    ] {
        bench()
            .args(args(flags))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    }
}

#[test]
fn shards_split_the_requests_and_report_merge_recombines_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for i in 0..2 {
        let records = dir.path().join(format!("shard{i}.jsonl"));
        let out = dir.path().join(format!("summary{i}.jsonl"));
        bench()
            .args(args(
                "--mock --mock-ttft-ms 10 --mock-itl-ms 1 --rate 60 --num-requests 21 \
                 --input-len 16 --output-len 3 --seed 9",
            ))
            .arg("--shard")
            .arg(format!("{i}/2"))
            .arg("--records")
            .arg(&records)
            .arg("--json-out")
            .arg(&out)
            .assert()
            .success();
        let s = &jsonl(&out)[0];
        assert_eq!(s["shard"]["index"], i);
        assert_eq!(s["shard"]["count"], 2);
        assert_eq!(s["rate"], 60.0);
        assert_eq!(s["process_rate"], 30.0);
        // 21 requests over 2 shards: 11 and 10.
        assert_eq!(s["requests"], if i == 0 { 11 } else { 10 });
        files.push(records);
    }
    // Distinct seeds per shard: different arrival times.
    let arrivals = |p: &Path| -> Vec<(u64, f64)> {
        let mut v: Vec<(u64, f64)> = jsonl(p)
            .iter()
            .map(|r| (r["id"].as_u64().unwrap(), r["t_sched"].as_f64().unwrap()))
            .collect();
        v.sort_by_key(|a| a.0);
        v
    };
    assert_ne!(arrivals(&files[0])[1..5], arrivals(&files[1])[1..5]);

    let merged = dir.path().join("merged.jsonl");
    let mut cmd = Command::cargo_bin("llmprobe").unwrap();
    cmd.args(["report", "merge"])
        .args(&files)
        .args([
            "--slo-ttft-ms",
            "1000",
            "--gate",
            "goodput-ratio>=0.9",
            "--json-out",
        ])
        .arg(&merged)
        .assert()
        .success();
    let m = &jsonl(&merged)[0];
    assert_eq!(m["requests"], 21);
    assert_eq!(m["completed"], 21);
    assert_eq!(m["total_output_tokens"], 63);
    assert_eq!(m["shard"], Value::Null);
    assert_eq!(m["good"], 21);

    // A gate that fails on the merged figures exits 3.
    let mut cmd = Command::cargo_bin("llmprobe").unwrap();
    cmd.args(["report", "merge"])
        .args(&files)
        .args(["--gate", "ttft-p99<=1ms"])
        .assert()
        .code(3);
}

#[test]
fn report_merge_of_sequential_runs_keeps_their_rate() {
    // Two runs at 20 req/s one after the other, written to one --records file each:
    // the merge offers and achieves about 20 req/s (between the two runs' own
    // figures), not the 40 a union of their windows would claim.
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    for i in 0..2 {
        let records = dir.path().join(format!("run{i}.jsonl"));
        let out = dir.path().join(format!("summary{i}.jsonl"));
        bench()
            .args(args(
                "--mock --mock-ttft-ms 5 --mock-itl-ms 1 --rate 20 --num-requests 40 \
                 --input-len 16 --output-len 3 --warmup 2",
            ))
            .arg("--records")
            .arg(&records)
            .arg("--json-out")
            .arg(&out)
            .assert()
            .success();
        summaries.push(jsonl(&out).remove(0));
        files.push(records);
    }
    let merged = dir.path().join("merged.jsonl");
    let mut cmd = Command::cargo_bin("llmprobe").unwrap();
    cmd.args(["report", "merge"])
        .args(&files)
        .arg("--json-out")
        .arg(&merged)
        .assert()
        .success()
        .stderr(predicates::str::contains("shards").not());
    let m = &jsonl(&merged)[0];
    assert_eq!(m["requests"], 80);
    assert_eq!(m["warmup_excluded"], 4);
    for key in ["offered_rate", "achieved_rate"] {
        let each: Vec<f64> = summaries.iter().map(|s| s[key].as_f64().unwrap()).collect();
        let (lo, hi) = (each[0].min(each[1]), each[0].max(each[1]));
        let v = m[key].as_f64().unwrap();
        assert!(
            lo - 1e-6 <= v && v <= hi + 1e-6,
            "{key}: {v} not in [{lo}, {hi}]"
        );
    }
    let d: f64 = summaries
        .iter()
        .map(|s| s["duration_s"].as_f64().unwrap())
        .sum();
    assert!((m["duration_s"].as_f64().unwrap() - d).abs() < 1e-3);
}

#[test]
fn find_max_rate_brackets_the_mock_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("search.jsonl");
    // 2 slots × (10 ms + 15 × 2 ms) = 50 req/s of capacity. At 20 req/s the median
    // request does not queue: TTFT 10 ms, a tenth of the gate. Well beyond capacity the
    // median of 30 requests queues behind 7 pairs of 40 ms (the mock is never early):
    // far past 100 ms, however quiet the machine.
    let assert = bench()
        .args(args(
            "--mock --mock-ttft-ms 10 --mock-itl-ms 2 --mock-max-running 2 \
             --mock-batch-slowdown 0 --input-len 16 --output-len 16 --num-requests 30 \
             --find-max-rate --rate 20 --max-rate-precision 50% --max-rate-limit 2000 \
             --gate ttft-p50<=100ms",
        ))
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stdout.contains("max rate: "), "{stdout}");
    assert!(stderr.contains("probe 20 req/s: pass"), "{stderr}");
    let probes = jsonl(&out);
    assert!(probes.len() >= 3, "{stderr}");
    // The highest passing probe passed every gate and the lowest failing one did not.
    let pass_max = probes
        .iter()
        .filter(|p| p["gates"][0]["passed"] == true)
        .map(|p| p["rate"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let fail_min = probes
        .iter()
        .filter(|p| p["gates"][0]["passed"] == false)
        .map(|p| p["rate"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert!(
        pass_max >= 20.0 && fail_min > pass_max,
        "{pass_max} {fail_min}"
    );
    assert!(fail_min < 2000.0);
    assert!(
        stdout.contains(&format!("max rate: {pass_max} req/s")),
        "{stdout}"
    );
}

#[test]
fn find_max_rate_with_no_passing_rate_exits_3() {
    bench()
        .args(args(
            "--mock --mock-ttft-ms 20 --mock-itl-ms 1 --input-len 16 --output-len 2 \
             --num-requests 4 --find-max-rate --rate 8 --max-rate-precision 4 \
             --gate ttft-p50<=1ms",
        ))
        .assert()
        .code(3)
        .stderr(predicates::str::contains("probe 4 req/s: FAIL"))
        .stderr(predicates::str::contains("no rate"));
}

/// loadgen.py's first example, verbatim with `llmprobe bench` in its place.
#[test]
fn loadgen_example_runs_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("example.jsonl");
    let records = dir.path().join("records.jsonl");
    let assert = bench()
        .args(args(
            "--mock --rate 8 --num-requests 100 --slo-ttft-ms 200 --slo-tpot-ms 20",
        ))
        .arg("--json-out")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(stdout.contains("good%"), "{stdout}");
    let s = &jsonl(&out)[0];
    assert_eq!(s["completed"], 100);
    assert_eq!(s["total_output_tokens"], 100 * 128);
    assert_eq!(s["inputs"]["slo"]["ttft_ms"], 200.0);
    assert_eq!(s["inputs"]["slo"]["tpot_ms"], 20.0);
    // The mock's TTFT is 50 ms and its ITL ~10–13 ms at this load, so on a quiet machine
    // nearly every request is good; how many is the machine's business. What is tested:
    // a request is good exactly when it met both objectives, and the summary counts them.
    let recs = jsonl(&records);
    assert_eq!(recs.len(), 100);
    let mut good = 0;
    for r in &recs {
        let d = &r["derived"];
        let (ttft, tpot) = (
            d["ttft_ms"].as_f64().unwrap(),
            d["tpot_ms"].as_f64().unwrap(),
        );
        assert!(ttft >= 50.0, "{r}");
        assert_eq!(d["good"], ttft <= 200.0 && tpot <= 20.0, "{r}");
        good += u64::from(d["good"] == true);
    }
    assert_eq!(s["good"].as_u64(), Some(good));
    assert!(same(
        s["goodput_ratio"].as_f64().unwrap(),
        good as f64 / 100.0
    ));
}

#[test]
fn jsonl_dataset_lengths_are_honoured_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("prompts.jsonl");
    std::fs::write(
        &data,
        "{\"prompt\": \"What is the capital of France?\", \"output_len\": 3}\n\
         {\"prompt\": \"Name three primes.\", \"output_len\": 5}\n\
         {\"prompt\": \"Say hello.\"}\n",
    )
    .unwrap();
    let out = dir.path().join("d.jsonl");
    bench()
        .args(args(
            "--mock --mock-ttft-ms 5 --mock-itl-ms 1 --rate 100 --num-requests 6 \
             --output-len 7 --dataset jsonl",
        ))
        .arg("--dataset-path")
        .arg(&data)
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let s = &jsonl(&out)[0];
    assert_eq!(s["completed"], 6);
    // Each entry twice (the order cycles): 2 × (3 + 5 + 7, the default for the third).
    assert_eq!(s["total_output_tokens"], 30);
    assert!(
        s["inputs"]["dataset"]
            .as_str()
            .unwrap()
            .starts_with("jsonl:")
    );
}

#[test]
fn a_missing_dataset_is_a_usage_error() {
    bench()
        .args(args(
            "--mock --rate 5 --num-requests 2 --dataset sharegpt --dataset-path /nonexistent.json",
        ))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("/nonexistent.json"));
}

#[test]
fn token_sources_without_usage_tokenizer_and_chunks() {
    let tokenizer =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer/tiny-bpe.json");
    let dir = tempfile::tempdir().unwrap();
    for (with_tokenizer, source) in [(true, "tokenizer"), (false, "chunks")] {
        let out = dir.path().join(format!("{source}.jsonl"));
        let mut cmd = bench();
        cmd.args(args(
            "--mock --mock-no-usage --mock-ttft-ms 5 --mock-itl-ms 1 --rate 100 \
             --num-requests 5 --input-len 40 --output-len 6",
        ))
        .arg("--json-out")
        .arg(&out);
        if with_tokenizer {
            cmd.arg("--tokenizer").arg(&tokenizer);
        }
        cmd.assert().success();
        let s = &jsonl(&out)[0];
        assert_eq!(s["completed"], 5);
        assert_eq!(s["token_sources"][source], 5, "{}", s["token_sources"]);
        if with_tokenizer {
            // Prompts built to exactly --input-len tokens, and no usage to override them.
            assert_eq!(s["total_input_tokens"], 5 * 40);
        } else {
            // One token per chunk: the mock streams one token per chunk.
            assert_eq!(s["total_output_tokens"], 5 * 6);
        }
    }
}

#[test]
fn ctrl_c_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("r.jsonl");
    let out = dir.path().join("s.jsonl");
    let bin = assert_cmd::cargo::cargo_bin("llmprobe");
    let mut child = std::process::Command::new(bin)
        .args(args(
            "bench --mock --mock-ttft-ms 5 --mock-itl-ms 1 --rate 50 --duration 60s \
             --input-len 16 --output-len 4",
        ))
        .arg("--records")
        .arg(&records)
        .arg("--json-out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once more than ten requests are on disk (each line is flushed as it is
    // written), not after a fixed time a busy machine may spend starting up.
    let complete_lines = || {
        std::fs::read_to_string(&records)
            .map(|t| t.matches('\n').count())
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while complete_lines() <= 10 {
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            panic!("fewer than 11 records after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("interrupted"), "{stderr}");
    // Every finished request is on disk, and the partial rate was summarised.
    let lines = jsonl(&records);
    assert!(lines.len() > 10, "{}", lines.len());
    let s = &jsonl(&out)[0];
    assert_eq!(s["requests"].as_u64().unwrap() as usize, lines.len());
}

/// The embedded engine keeps its configured timing, and bench reproduces it: judged by
/// the engine's own notes (`--mock-notes`), so neither a busy machine's late wake-ups
/// (the engine's) nor anything else outside the client can fail it. Every deadline is
/// exactly the absolute schedule (TTFT 50 ms, then 5 ms a token, the answer due at
/// 50 + 20 × 5 = 150 ms: no batch slowdown by default, nothing relative), no chunk
/// leaves before its deadline, and the client's TPOT and TTFA are the engine's actual
/// ones, give or take the client's own lateness: TPOT within 0.1 ms on the mean, TTFA
/// never shorter, its shortest within 2 ms of the engine's shortest (a systematic error
/// moves every request; a busy machine's late reads move only some), its mean at most
/// 50 ms longer (how close the mean comes is a benchmark, not a test).
#[test]
fn bench_mock_reproduces_the_configured_tpot_and_ttfa_in_every_reasoning_protocol() {
    const TTFT: f64 = 50.0;
    const ITL: f64 = 5.0;
    const REASONING: usize = 20;
    const OUTPUT: usize = 30;
    const REQUESTS: usize = 20;
    for endpoint in ["chat", "responses", "messages"] {
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("records.jsonl");
        let notes = dir.path().join("notes.jsonl");
        bench()
            .args(args(&format!(
                "--mock --mock-ttft-ms {TTFT} --mock-itl-ms {ITL} \
                 --mock-reasoning-tokens {REASONING} --endpoint {endpoint} --rate 10 \
                 --num-requests {REQUESTS} --output-len {OUTPUT} --seed 3"
            )))
            .arg("--records")
            .arg(&records)
            .arg("--mock-notes")
            .arg(&notes)
            .assert()
            .success();
        let notes = jsonl(&notes);
        assert_eq!(notes.len(), REQUESTS, "{endpoint}: one note per answer");
        let (mut engine_tpot, mut engine_ttfa) = (Vec::new(), Vec::new());
        for n in &notes {
            let arrival = n["arrival_ms"].as_f64().unwrap();
            let chunks = n["chunks"].as_array().unwrap();
            assert_eq!(chunks.len(), OUTPUT, "{endpoint}: one token a chunk");
            let at = |i: usize, key: &str| chunks[i][key].as_f64().unwrap();
            for (i, chunk) in chunks.iter().enumerate() {
                assert_eq!(chunk["tokens"], 1);
                let due = TTFT + ITL * i as f64;
                assert!(
                    (at(i, "due_ms") - arrival - due).abs() < 0.01,
                    "{endpoint}: token {i} due {} ms after arrival, the schedule says {due}",
                    at(i, "due_ms") - arrival
                );
                assert!(
                    at(i, "out_ms") >= at(i, "due_ms"),
                    "{endpoint}: token {i} early"
                );
            }
            engine_tpot.push((at(OUTPUT - 1, "out_ms") - at(0, "out_ms")) / (OUTPUT - 1) as f64);
            engine_ttfa.push(at(REASONING, "out_ms") - arrival);
        }
        let records = jsonl(&records);
        assert_eq!(records.len(), REQUESTS);
        let figure = |key: &str| -> Vec<f64> {
            records
                .iter()
                .map(|r| {
                    r["derived"][key]
                        .as_f64()
                        .unwrap_or_else(|| panic!("{key}: {r}"))
                })
                .collect()
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let tpot_gap = mean(&figure("tpot_ms")) - mean(&engine_tpot);
        assert!(
            tpot_gap.abs() < 0.1,
            "{endpoint}: client TPOT {:.3} ms, engine's {:.3} ms",
            mean(&figure("tpot_ms")),
            mean(&engine_tpot)
        );
        // The client's TTFA starts when it sends, the engine's when it has read the
        // request: each request's is longer, so the shortest client TTFA is too. A busy
        // machine delays some requests' reads by milliseconds (the mean's excess is a
        // benchmark), but a systematic client error delays every request, the least
        // delayed one included: the shortest TTFAs must agree within 2 ms.
        let shortest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let best_gap = shortest(&figure("ttfa_ms")) - shortest(&engine_ttfa);
        assert!(
            (0.0..2.0).contains(&best_gap),
            "{endpoint}: shortest client TTFA {:.3} ms, shortest engine TTFA {:.3} ms",
            shortest(&figure("ttfa_ms")),
            shortest(&engine_ttfa)
        );
        let mean_gap = mean(&figure("ttfa_ms")) - mean(&engine_ttfa);
        assert!(
            (0.0..50.0).contains(&mean_gap),
            "{endpoint}: client TTFA {:.3} ms, engine's {:.3} ms",
            mean(&figure("ttfa_ms")),
            mean(&engine_ttfa)
        );
    }
}
