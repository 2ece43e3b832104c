//! Multi-turn conversations (`bench --turns`) end to end against the in-process mock.
//! The mock's known truth: a prompt's tokens are its words, each answer token is one
//! word, and its prefix cache reports the longest previously seen prefix in whole
//! blocks of 16 words. With 100-word user messages and 20-token answers, turn k sends
//! k·100 + (k−1)·20 tokens, of which the previous turn's prompt and answer,
//! (k−1)·120 words, were seen: ⌊(k−1)·120 / 16⌋·16 are cached.

use std::path::Path;

use serde_json::Value;

use crate::support::bench as bench_support;
use bench_support::{args, bench, jsonl};

/// A multi-turn run; its --json-out line, its records and stdout.
fn turns_run(dir: &Path, extra: &str) -> (Value, Vec<Value>, String) {
    let (out, records) = (dir.join("out.jsonl"), dir.join("records.jsonl"));
    let assert = bench()
        .args(args(&format!(
            "--mock --mock-ttft-ms 40 --mock-itl-ms 2 --mock-batch-slowdown 0 \
             --rate 10 --num-requests 6 --input-len 100 --output-len 20 --seed 5 \
             --turns 4 --think-time 50ms --think-time-dist constant {extra}"
        )))
        .arg("--json-out")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let mut lines = jsonl(&out);
    assert_eq!(lines.len(), 1);
    (lines.remove(0), jsonl(&records), stdout)
}

fn prompt_tokens(turn: u64) -> u64 {
    turn * 100 + (turn - 1) * 20
}

fn cached_tokens(turn: u64) -> u64 {
    (turn - 1) * 120 / 16 * 16
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Every generating API: chat, responses and messages send the history as a message
/// list, completions as one text; the mock counts and caches the same words.
#[test]
fn prompts_grow_per_turn_and_later_turns_hit_the_prefix_cache() {
    for endpoint in ["completions", "chat", "responses", "messages"] {
        let dir = tempfile::tempdir().unwrap();
        let (line, records, stdout) = turns_run(dir.path(), &format!("--endpoint {endpoint}"));
        check_turns(&line, &records, &stdout);
    }
}

fn check_turns(line: &Value, records: &[Value], stdout: &str) {
    // Six conversations of four turns: 24 requests, 6 arrivals.
    assert_eq!(records.len(), 24);
    assert_eq!(
        (line["requests"].as_u64(), line["completed"].as_u64()),
        (Some(24), Some(24))
    );
    for r in records {
        let turn = r["turn"].as_u64().unwrap();
        assert!((1..=4).contains(&turn), "{r}");
        assert_eq!(r["outcome"], "ok");
        // The server's count and the client's own count of the history agree.
        assert_eq!(
            r["usage_prompt_tokens"].as_u64(),
            Some(prompt_tokens(turn)),
            "{r}"
        );
        assert_eq!(
            r["prompt_tokens_sent"].as_u64(),
            Some(prompt_tokens(turn)),
            "{r}"
        );
        assert_eq!(
            r["usage_cached_tokens"].as_u64(),
            Some(cached_tokens(turn)),
            "{r}"
        );
    }
    // Each later turn is due when the previous answer ended plus the 50 ms think time,
    // and its dispatch lag is measured from then.
    for id in 0..6 {
        let mut conv: Vec<&Value> = records.iter().filter(|r| r["id"] == id).collect();
        conv.sort_by_key(|r| r["turn"].as_u64());
        assert_eq!(conv.len(), 4, "conversation {id}");
        for pair in conv.windows(2) {
            let due = f(&pair[0]["t_end"]) + 0.050;
            assert!(
                (f(&pair[1]["t_sched"]) - due).abs() < 1e-6,
                "{} then {}",
                pair[0],
                pair[1]
            );
            assert!(f(&pair[1]["t_send"]) >= f(&pair[1]["t_sched"]));
        }
    }

    let turns = &line["turns"];
    assert_eq!(turns["first"]["turn"], 1);
    assert_eq!(f(&turns["first"]["prompt_tokens_mean"]), 100.0);
    assert_eq!(f(&turns["later"]["prompt_tokens_mean"]), 340.0);
    assert_eq!(f(&turns["first"]["cache_hit_share"]), 0.0);
    assert_eq!(turns["later"]["requests"], 18);
    let by_turn = turns["by_turn"].as_array().unwrap();
    assert_eq!(by_turn.len(), 4);
    for t in by_turn {
        let k = t["turn"].as_u64().unwrap();
        assert_eq!(t["completed"], 6);
        assert_eq!(f(&t["prompt_tokens_mean"]), prompt_tokens(k) as f64);
        let share = cached_tokens(k) as f64 / prompt_tokens(k) as f64;
        assert!((f(&t["cache_hit_share"]) - share).abs() < 1e-12, "{t}");
        // The mock's TTFT is 40 ms from when it has read the request: a floor; the
        // upper bound, ten times it, only guards against nonsense on a loaded machine.
        let p50 = f(&t["ttft_ms"]["p50"]);
        assert!((40.0..400.0).contains(&p50), "turn {k}: TTFT p50 {p50}");
    }
    let all: u64 = (1..=4).map(cached_tokens).sum();
    let prompts: u64 = (1..=4).map(prompt_tokens).sum();
    assert!((f(&line["cache_hit_share"]) - all as f64 / prompts as f64).abs() < 1e-12);
    assert_eq!(
        line["inputs"]["turns"],
        serde_json::json!({"turns": 4, "think_time_s": 0.05, "think_time_dist": "constant"})
    );
    assert!(stdout.contains("rate 10: per turn"), "{stdout}");
    assert!(stdout.contains("   >=2     18      0"), "{stdout}");
    assert!(
        stdout.contains("    70.6 %"),
        "turn 3's share, 240 / 340:\n{stdout}"
    );
}

#[test]
fn without_reported_cached_tokens_there_is_no_cache_hit_share() {
    let dir = tempfile::tempdir().unwrap();
    let (line, records, _) = turns_run(dir.path(), "--mock-no-usage");
    assert!(
        records
            .iter()
            .all(|r| r.get("usage_cached_tokens").is_none())
    );
    assert!(line.get("cache_hit_share").is_none(), "{line}");
    assert!(line["turns"]["later"].get("cache_hit_share").is_none());
    // The client's own count of the history still grows per turn (answers counted
    // one token per chunk, 20 each).
    assert_eq!(f(&line["turns"]["later"]["prompt_tokens_mean"]), 340.0);
}

/// Open loop: conversations overlap (each lasts about half a second at 20 new ones a
/// second), yet every conversation starts on its own schedule. A closed loop would
/// start the second about half a second late and the tenth seconds late; an open loop
/// on a busy machine is late by milliseconds, so 500 ms tells them apart.
#[test]
fn a_conversation_in_progress_does_not_delay_the_next_ones_start() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("r.jsonl");
    bench()
        .args(args(
            "--mock --mock-ttft-ms 40 --mock-itl-ms 2 --rate 20 --num-requests 10 \
             --input-len 50 --output-len 10 --turns 3 --think-time 200ms",
        ))
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let records = jsonl(&records);
    assert_eq!(records.len(), 30);
    let firsts: Vec<&Value> = records.iter().filter(|r| r["turn"] == 1).collect();
    assert_eq!(firsts.len(), 10);
    for r in firsts {
        let lag = f(&r["t_send"]) - f(&r["t_sched"]);
        assert!(lag < 0.5, "conversation {} started {lag} s late", r["id"]);
    }
}

#[test]
fn bad_turn_flags_are_usage_errors() {
    for (flags, says) in [
        ("--turns 0", "--turns 0"),
        (
            "--turns 2 --endpoint embeddings",
            "--turns: --endpoint embeddings answers nothing",
        ),
        ("--think-time 1s", "add --turns N"),
        ("--turns 2 --think-time=-1s", "--think-time"),
        (
            "--turns 2 --think-time-dist gamma",
            "exponential or constant",
        ),
    ] {
        let out = bench()
            .args(args(&format!("--mock --rate 1 --num-requests 1 {flags}")))
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(says), "{flags}: {stderr}");
    }
}

/// `--dataset sharegpt --turns N` replays each conversation's own human turns, in order,
/// and ends a conversation when it has no more: the fixture's first conversation has two
/// human turns, its second (after one skipped entry) one.
#[test]
fn sharegpt_conversations_are_replayed_turn_by_turn() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.jsonl");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/datasets/sharegpt.json"
    );
    bench()
        .args(args(&format!(
            "--mock --mock-ttft-ms 5 --mock-itl-ms 1 --rate 10 --num-requests 2 --seed 1 \
             --dataset sharegpt --dataset-path {fixture} --turns 4 --think-time 10ms"
        )))
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let recs: Vec<Value> = jsonl(&records)
        .into_iter()
        .filter(|r| r.get("outcome").is_some())
        .collect();
    let mut turns: Vec<(u64, u64)> = recs
        .iter()
        .map(|r| (r["id"].as_u64().unwrap(), r["turn"].as_u64().unwrap()))
        .collect();
    turns.sort_unstable();
    // Two conversations; which fixture entry each gets follows the seeded order, so
    // count: one has turns 1 and 2, the other turn 1 only.
    let per_conversation = |id| turns.iter().filter(|(i, _)| *i == id).count();
    let mut sizes = [per_conversation(0), per_conversation(1)];
    sizes.sort_unstable();
    assert_eq!(sizes, [1, 2], "{turns:?}");
    // The second turn carries the first exchange: its prompt is longer than "And of
    // Spain?" (3 words) by the first question, its nonce and the answer.
    let second = recs.iter().find(|r| r["turn"] == 2).unwrap();
    assert!(
        second["usage_prompt_tokens"].as_u64().unwrap() > 3 + 6 + 8,
        "{second}"
    );
}
