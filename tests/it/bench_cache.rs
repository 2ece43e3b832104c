//! bench and the prefix cache: a run whose first prompt the engine already held warns
//! that its figures come from a warm cache, and `--prefix-hit-ratio` sets the share of
//! requests that start with the shared prefix (so the cache-hit share follows it).

use crate::support::bench::*;
use crate::support::process::{Process, llmprobe};

use serde_json::Value;

/// A prompt of 200 words: more than the mock's 16-word cache blocks.
fn long_prompt() -> String {
    (0..200)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One request at a time: two requests of the same prompt in flight together could reach
/// the engine out of order, and the run's first would then hit its own run's cache.
#[test]
fn a_run_against_a_cache_warmed_by_the_previous_one_warns() {
    let mut cmd = llmprobe();
    cmd.args(["mock", "--listen", "127.0.0.1:0"]);
    let mock = Process::spawn(cmd, "llmprobe mock listening on http://");
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| -> (String, Value) {
        let out = dir.path().join(name);
        let assert = bench()
            .args(args(
                "--model m --endpoint chat --no-nonce --rate 20 --num-requests 5 --output-len 2 --max-concurrency 1",
            ))
            .arg("--base-url")
            .arg(format!("http://{}", mock.addr))
            .arg("--prompt")
            .arg(long_prompt())
            .arg("--json-out")
            .arg(&out)
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
        (stdout, jsonl(&out).remove(0))
    };
    // The first run fills the cache: its own first request was cold.
    let (first, first_json) = run("first.jsonl");
    // Only the cache warning is asserted absent: a busy machine may add a dispatch-lag one.
    assert!(!first.contains("prefix cache already held"), "{first}");
    assert!(first_json.get("cache_warning").is_none(), "{first_json}");
    // The same prompts again: the engine answers the first from its cache.
    let (second, second_json) = run("second.jsonl");
    let warning =
        "the engine's prefix cache already held this run's first prompt (192 of 200 tokens)";
    assert!(
        second.contains(&format!("WARNING: rate 20: {warning}")),
        "{second}"
    );
    assert!(
        second_json["cache_warning"]
            .as_str()
            .is_some_and(|w| w.starts_with(warning)),
        "{second_json}"
    );
    mock.stop();
}

#[test]
fn the_prefix_hit_ratio_sets_the_share_of_prefixed_requests() {
    let share = |ratio: &str| -> f64 {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.jsonl");
        bench()
            .args(args(
                "--mock --rate 50 --num-requests 40 --input-len 256 --shared-prefix-len 192 --output-len 2",
            ))
            .args(["--prefix-hit-ratio", ratio])
            .arg("--json-out")
            .arg(&out)
            .assert()
            .success();
        let r = jsonl(&out).remove(0);
        assert_eq!(r["inputs"]["prefix_hit_ratio"].as_f64(), ratio.parse().ok());
        r["cache_hit_share"].as_f64().unwrap()
    };
    // The prefix is 192 of each prompt's 256 tokens: 12 whole blocks of the mock's 16.
    // Nothing shares it at 0; at 1 every request but the first reads it from the cache.
    assert_eq!(share("0"), 0.0);
    let all = share("1");
    assert!((all - 39.0 / 40.0 * 0.75).abs() < 1e-9, "{all}");
    let half = share("0.5");
    assert!(half > 0.2 && half < 0.55, "{half}");
    for (flags, message) in [
        (
            "--mock --rate 5 --prefix-hit-ratio 0.5",
            "needs --shared-prefix-len",
        ),
        (
            "--mock --rate 5 --shared-prefix-len 16 --prefix-hit-ratio 1.5",
            "between 0 and 1",
        ),
        (
            "--mock --rate 5 --shared-prefix-len 16 --prefix-hit-ratio 0.5 --prompt hello",
            "takes no --dataset, --prompt or --turns",
        ),
    ] {
        bench()
            .args(args(flags))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    }
}
