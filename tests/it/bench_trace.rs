//! `llmprobe bench --trace` end to end against its in-process mock: every request goes
//! at its trace time (the records' `t_sched` are the trace's offsets exactly), with the
//! traced input length exactly (with a tokenizer) and output length; bad traces exit 2
//! naming FILE:LINE before anything is sent.

use std::path::Path;

use serde_json::Value;

use crate::support::bench as bench_support;
use bench_support::{bench, fixture, jsonl};

fn sorted_records(path: &Path) -> Vec<Value> {
    let mut recs = jsonl(path);
    recs.sort_by_key(|r| r["id"].as_u64().unwrap());
    recs
}

#[test]
fn a_mooncake_trace_is_replayed_at_its_times_with_its_exact_lengths() {
    let trace = fixture("traces/mooncake-200.jsonl");
    let lines = jsonl(&trace);
    assert_eq!(lines.len(), 200);
    let dir = tempfile::tempdir().unwrap();
    let (records, out) = (dir.path().join("r.jsonl"), dir.path().join("s.jsonl"));
    let assert = bench()
        .args(["--mock", "--mock-ttft-ms", "5", "--mock-itl-ms", "1"])
        .arg("--trace")
        .arg(&trace)
        .args(["--trace-speedup", "4", "--tokenizer"])
        .arg(fixture("tokenizer/tiny-bpe.json"))
        .arg("--records")
        .arg(&records)
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(
        stdout.contains(
            "(mooncake, speedup 4): 200 requests replayed; dispatch lag from the trace's times p99"
        ),
        "{stdout}"
    );
    let recs = sorted_records(&records);
    assert_eq!(recs.len(), 200);
    let t0 = lines[0]["timestamp"].as_f64().unwrap();
    for (r, l) in recs.iter().zip(&lines) {
        let want = (l["timestamp"].as_f64().unwrap() - t0) / 1000.0 / 4.0;
        let t_sched = r["t_sched"].as_f64().unwrap();
        assert!(
            (t_sched - want).abs() < 1e-6,
            "id {}: t_sched {t_sched} want {want}",
            r["id"]
        );
        assert!(r["t_send"].as_f64().unwrap() >= t_sched);
        assert_eq!(r["outcome"], "ok");
        assert_eq!(r["prompt_tokens_sent"], l["input_length"], "id {}", r["id"]);
        assert_eq!(r["max_tokens"], l["output_length"]);
        assert_eq!(r["derived"]["output_tokens"], l["output_length"]);
    }
    let s = &jsonl(&out)[0];
    assert_eq!(s["requests"], 200);
    assert_eq!(s["inputs"]["arrival"], "trace");
    assert_eq!(s["inputs"]["trace"]["format"], "mooncake");
    assert_eq!(s["inputs"]["trace"]["requests"], 200);
    assert_eq!(s["inputs"]["trace"]["speedup"], 4.0);
    assert!(s["dispatch_lag_ms"]["max"].as_f64().is_some());
}

#[test]
fn burstgpt_window_model_filter_and_request_cap() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("burst.csv");
    std::fs::write(
        &trace,
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
         0.5,ChatGPT,40,3,43,Conversation log\n\
         1.0,ChatGPT,50,4,54,Conversation log\n\
         1.2,GPT-4,60,5,65,Conversation log\n\
         1.5,ChatGPT,70,0,70,Conversation log\n\
         1.75,ChatGPT,80,6,86,Conversation log\n\
         2.5,ChatGPT,90,7,97,Conversation log\n\
         9.0,ChatGPT,99,8,107,Conversation log\n",
    )
    .unwrap();
    let records = dir.path().join("r.jsonl");
    let assert = bench()
        .args(["--mock", "--mock-ttft-ms", "2", "--mock-itl-ms", "1"])
        .arg("--trace")
        .arg(&trace)
        .args(["--trace-window", "1..5", "--trace-model", "ChatGPT"])
        .args(["--num-requests", "2", "--warmup", "1"])
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains(
            "1 requests with a zero input or output length are left out (the first on line 5)"
        ),
        "{stderr}"
    );
    let recs = sorted_records(&records);
    // Rows at 1.0 (warmup), 1.75, 2.5 s: the row at 1.5 s has no output, 1.2 s is GPT-4.
    let got: Vec<(f64, u64, bool)> = recs
        .iter()
        .map(|r| {
            (
                r["t_sched"].as_f64().unwrap(),
                r["max_tokens"].as_u64().unwrap(),
                r["warmup"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, vec![(0.0, 4, true), (0.75, 6, false), (1.5, 7, false)]);
}

#[test]
fn bad_traces_exit_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\"offset_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 2}\n{\"offset_ms\": 5, \"input_tokens\": \"x\", \"output_tokens\": 2}\n",
            ":2: field \"input_tokens\": expected a token count",
        ),
        (
            "{\"offset_ms\": 50, \"input_tokens\": 10, \"output_tokens\": 2}\n{\"offset_ms\": 5, \"input_tokens\": 10, \"output_tokens\": 2}\n",
            ":2: timestamp 0.005 s is earlier than line 1's 0.050 s",
        ),
        ("not a trace\n", ":1: cannot tell the trace format"),
    ];
    for (i, (text, want)) in cases.into_iter().enumerate() {
        let trace = dir.path().join(format!("t{i}.jsonl"));
        std::fs::write(&trace, text).unwrap();
        let records = dir.path().join(format!("r{i}.jsonl"));
        let assert = bench()
            .args(["--mock", "--trace"])
            .arg(&trace)
            .arg("--records")
            .arg(&records)
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        let place = format!("{}{want}", trace.display());
        assert!(stderr.contains(&place), "{stderr}\nwanted {place}");
        // Nothing was sent: the records file was never written.
        assert!(!records.exists() || jsonl(&records).is_empty());
    }
    let trace = dir.path().join("t0.jsonl");
    bench()
        .args(["--mock", "--rate", "5", "--trace"])
        .arg(&trace)
        .assert()
        .code(2);
    let ok = fixture("traces/mooncake-200.jsonl");
    let assert = bench()
        .args(["--mock", "--trace"])
        .arg(&ok)
        .args(["--trace-window", "9..3"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains("END must be after START"), "{stderr}");
}
