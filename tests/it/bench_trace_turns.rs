//! Conversations started by a trace (`bench --trace FILE --turns N`) end to end against
//! the in-process mock. Each trace entry starts one conversation at its trace time; its
//! first turn is the entry's request (its lengths, its `hash_ids` blocks), later turns
//! are the synthetic ones of `--turns`: the history plus a new message of `--input-len`
//! tokens asking `--output-len`, after the think time.
//!
//! The mock's known truth: without a tokenizer a prompt's tokens are its words, each
//! answer token is one word, and its prefix cache reports the longest prefix seen
//! before in whole blocks of 16 words. A turn's prompt and answer are the next turn's
//! prefix, so turn k + 1 finds ⌊(prompt_k + answer_k) / 16⌋·16 tokens cached.

use std::path::Path;

use serde_json::Value;

use crate::support::bench as bench_support;
use bench_support::{bench, fixture, jsonl};

/// Every run: new messages of 30 tokens asking 8, 20 ms of think time.
const FLAGS: &str = "--mock --mock-ttft-ms 5 --mock-itl-ms 1 --mock-batch-slowdown 0 \
                     --turns 3 --think-time 20ms --think-time-dist constant \
                     --input-len 30 --output-len 8";

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A run of `trace` with `extra` flags: its --json-out line, its records per
/// conversation (turns in order) and stdout.
fn run(trace: &Path, extra: &[&str]) -> (Value, Vec<Vec<Value>>, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, records) = (dir.path().join("out.jsonl"), dir.path().join("r.jsonl"));
    let assert = bench()
        .args(FLAGS.split_whitespace())
        .arg("--trace")
        .arg(trace)
        .args(extra)
        .arg("--records")
        .arg(&records)
        .arg("--json-out")
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let mut recs = jsonl(&records);
    recs.sort_by_key(|r| (u(&r["id"]), u(&r["turn"])));
    let mut conversations: Vec<Vec<Value>> = Vec::new();
    for r in recs {
        match conversations.last_mut() {
            Some(c) if c[0]["id"] == r["id"] => c.push(r),
            _ => conversations.push(vec![r]),
        }
    }
    (jsonl(&out).remove(0), conversations, stdout)
}

/// Every conversation has three turns, all ok; its first turn went at `offsets_s` and
/// each later one 20 ms after the answer before it.
fn check_schedule(conversations: &[Vec<Value>], offsets_s: &[f64]) {
    assert_eq!(conversations.len(), offsets_s.len());
    for (c, want) in conversations.iter().zip(offsets_s) {
        let turns: Vec<u64> = c.iter().map(|r| u(&r["turn"])).collect();
        assert_eq!(turns, [1, 2, 3], "conversation {}", c[0]["id"]);
        assert!(c.iter().all(|r| r["outcome"] == "ok"), "{c:?}");
        let t_sched = f(&c[0]["t_sched"]);
        assert!(
            (t_sched - want).abs() < 1e-9,
            "t_sched {t_sched}, trace {want}"
        );
        for pair in c.windows(2) {
            let due = f(&pair[0]["t_end"]) + 0.020;
            assert!((f(&pair[1]["t_sched"]) - due).abs() < 1e-6, "{pair:?}");
        }
    }
}

/// Each turn's record figure `key`, per conversation.
fn per_turn(conversations: &[Vec<Value>], key: &str) -> Vec<[u64; 3]> {
    conversations
        .iter()
        .map(|c| [0, 1, 2].map(|t| u(&c[t][key])))
        .collect()
}

/// A Mooncake trace of four entries: the second shares the first's block 7 (512
/// tokens), the third has no blocks of its own to share, the fourth no `hash_ids`.
const MOONCAKE: &str = "\
{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [7, 8]}
{\"timestamp\": 1100, \"input_length\": 520, \"output_length\": 5, \"hash_ids\": [7, 9]}
{\"timestamp\": 1250, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": []}
{\"timestamp\": 1400, \"input_length\": 90, \"output_length\": 6}
";

#[test]
fn a_trace_starts_one_conversation_per_entry_at_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("mooncake.jsonl");
    std::fs::write(&trace, MOONCAKE).unwrap();
    let (line, conversations, stdout) = run(&trace, &[]);
    assert_eq!(conversations.iter().map(Vec::len).sum::<usize>(), 12);
    check_schedule(&conversations, &[0.0, 0.1, 0.25, 0.4]);

    // Turn 1 is the entry: its length and output; then + answer + 30, + 8 + 30.
    assert_eq!(
        per_turn(&conversations, "prompt_tokens_sent"),
        [
            [600, 634, 672],
            [520, 555, 593],
            [40, 73, 111],
            [90, 126, 164]
        ]
    );
    assert_eq!(
        per_turn(&conversations, "max_tokens"),
        [[4, 8, 8], [5, 8, 8], [3, 8, 8], [6, 8, 8]]
    );
    // The mock counts what the client counted.
    assert_eq!(
        per_turn(&conversations, "usage_prompt_tokens"),
        per_turn(&conversations, "prompt_tokens_sent")
    );
    // Turn 1 of the second conversation finds the shared block 7 (512 tokens); later
    // turns find their own conversation so far: ⌊604 / 16⌋·16 = 592, ⌊642 / 16⌋·16 = 640.
    assert_eq!(
        per_turn(&conversations, "usage_cached_tokens"),
        [[0, 592, 640], [512, 512, 560], [0, 32, 80], [0, 96, 128]]
    );

    let turns = &line["turns"];
    assert_eq!(u(&turns["first"]["requests"]), 4);
    assert_eq!(u(&turns["later"]["requests"]), 8);
    assert_eq!(f(&turns["first"]["prompt_tokens_mean"]), 1250.0 / 4.0);
    assert_eq!(f(&turns["first"]["cache_hit_share"]), 512.0 / 1250.0);
    let by_turn: Vec<(f64, f64)> = turns["by_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (f(&t["prompt_tokens_mean"]), f(&t["cache_hit_share"])))
        .collect();
    assert_eq!(
        by_turn,
        [
            (312.5, 512.0 / 1250.0),
            (347.0, 1232.0 / 1388.0),
            (385.0, 1408.0 / 1540.0)
        ]
    );
    assert_eq!(f(&turns["later"]["cache_hit_share"]), 2640.0 / 2928.0);
    assert_eq!(f(&line["cache_hit_share"]), 3152.0 / 4178.0);

    // The trace line gives the first turns' lag, measured from the trace's times.
    let first_lags: Vec<f64> = conversations
        .iter()
        .map(|c| f(&c[0]["derived"]["dispatch_lag_ms"]))
        .collect();
    let max = first_lags.iter().copied().fold(0.0, f64::max);
    assert!((f(&turns["first"]["dispatch_lag_ms"]["max"]) - max).abs() < 1e-9);
    let trace_line = stdout.lines().find(|l| l.starts_with("trace ")).unwrap();
    assert!(
        trace_line.contains(
            "(mooncake, speedup 1): 12 requests sent in conversations of up to 3 turns; \
             first turns' dispatch lag from the trace's times p99 "
        ) && trace_line.ends_with(&format!(", max {max:.3} ms")),
        "{stdout}"
    );
    assert!(stdout.contains("      2      4      0"), "{stdout}");
    assert_eq!(line["inputs"]["arrival"], "trace");
    assert_eq!(line["inputs"]["turns"]["turns"], 3);
}

/// With the fixture tokenizer every first turn is exactly its traced length, and the
/// later turns' new messages exactly --input-len: the history grows by the answer and
/// the new message, counted as sent. The mock counts words, not the tokenizer's tokens,
/// so its cached tokens are checked against its own prompt counts.
#[test]
fn with_a_tokenizer_first_turns_have_the_traced_lengths_exactly() {
    let trace = fixture("traces/mooncake-200.jsonl");
    let lines = jsonl(&trace);
    let (_, conversations, _) = run(
        &trace,
        &[
            "--num-requests",
            "20",
            "--trace-speedup",
            "4",
            "--tokenizer",
            fixture("tokenizer/tiny-bpe.json").to_str().unwrap(),
        ],
    );
    let t0 = f(&lines[0]["timestamp"]);
    let offsets: Vec<f64> = lines[..20]
        .iter()
        .map(|l| (f(&l["timestamp"]) - t0) / 1000.0 / 4.0)
        .collect();
    check_schedule(&conversations, &offsets);
    let sent = per_turn(&conversations, "prompt_tokens_sent");
    let usage = per_turn(&conversations, "usage_prompt_tokens");
    let cached = per_turn(&conversations, "usage_cached_tokens");
    for (i, l) in lines[..20].iter().enumerate() {
        let (input, output) = (u(&l["input_length"]), u(&l["output_length"]));
        assert_eq!(
            sent[i],
            [input, input + output + 30, input + output + 30 + 8 + 30],
            "entry {i}: {l}"
        );
        assert_eq!(u(&conversations[i][0]["max_tokens"]), output);
        assert!(usage[i][0] < usage[i][1] && usage[i][1] < usage[i][2]);
        let answers = [output, 8];
        for k in 1..3 {
            let seen = usage[i][k - 1] + answers[k - 1];
            assert_eq!(cached[i][k], seen / 16 * 16, "entry {i} turn {}", k + 1);
        }
    }
}

/// BurstGPT's CSV and the plain JSONL start conversations the same way: three entries
/// without blocks of their own, none cached on turn 1.
#[test]
fn every_trace_format_starts_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let burst = dir.path().join("burst.csv");
    std::fs::write(
        &burst,
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
         2.0,ChatGPT,40,3,43,Conversation log\n\
         2.05,ChatGPT,70,5,75,Conversation log\n\
         2.2,ChatGPT,25,4,29,Conversation log\n",
    )
    .unwrap();
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(
        &plain,
        "{\"offset_ms\": 0, \"input_tokens\": 40, \"output_tokens\": 3}\n\
         {\"offset_ms\": 50, \"input_tokens\": 70, \"output_tokens\": 5}\n\
         {\"offset_ms\": 200, \"input_tokens\": 25, \"output_tokens\": 4}\n",
    )
    .unwrap();
    for (trace, format) in [(burst, "burstgpt"), (plain, "jsonl")] {
        let (line, conversations, stdout) = run(&trace, &[]);
        check_schedule(&conversations, &[0.0, 0.05, 0.2]);
        assert_eq!(
            per_turn(&conversations, "prompt_tokens_sent"),
            [[40, 73, 111], [70, 105, 143], [25, 59, 97]],
            "{format}"
        );
        assert_eq!(
            per_turn(&conversations, "usage_cached_tokens"),
            [[0, 32, 80], [0, 64, 112], [0, 16, 64]],
            "{format}"
        );
        assert_eq!(line["inputs"]["trace"]["format"], format);
        assert_eq!(u(&line["turns"]["later"]["requests"]), 6);
        assert!(
            stdout.contains(&format!(
                "({format}, speedup 1): 9 requests sent in conversations of up to 3 turns"
            )),
            "{stdout}"
        );
    }
}

#[test]
fn a_dataset_does_not_combine_with_a_trace() {
    let trace = fixture("traces/mooncake-200.jsonl");
    let out = bench()
        .args(["--mock", "--turns", "3", "--dataset", "sharegpt", "--trace"])
        .arg(&trace)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("--trace builds each request from the trace's lengths: --dataset sharegpt does not apply"),
        "{stderr}"
    );
}
