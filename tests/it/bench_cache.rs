//! bench and the prefix cache: a run whose first prompt the engine already held warns
//! that its figures come from a warm cache, and `--prefix-hit-ratio` sets the share of
//! requests that start with the shared prefix (so the cache-hit share follows it), one
//! pass of the rates per ratio of a list, each on a prefix of its own.

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
            "takes no --dataset, --prompt, --trace or --turns",
        ),
    ] {
        bench()
            .args(args(flags))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    }
}

/// The mock's truth of one run of `requests` prompts of 256 words at hit ratio `ratio`
/// (seed `seed`): of the requests the seeded draw gives the run's 192-word prefix, all
/// but the first find its 12 blocks cached; no other block of the run is cached.
fn predicted_share(seed: u64, requests: u64, ratio: f64) -> f64 {
    let prefixed = (0..requests)
        .filter(|&i| llmprobe::workload::shares_prefix(seed, i, ratio))
        .count() as f64;
    (prefixed - 1.0).max(0.0) * 192.0 / (requests as f64 * 256.0)
}

#[test]
fn a_hit_ratio_sweep_runs_each_ratio_on_a_prefix_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (out, records) = (dir.path().join("hits.jsonl"), dir.path().join("rec.jsonl"));
    let (plot, result) = (dir.path().join("hits.svg"), dir.path().join("vllm.json"));
    let assert = bench()
        .args(args(
            "--mock --rate 50 --num-requests 40 --input-len 256 --shared-prefix-len 192 \
             --output-len 2 --seed 5 --prefix-hit-ratio 0,0.5,1",
        ))
        .arg("--json-out")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .arg("--plot")
        .arg(&plot)
        .arg("--save-result")
        .arg(&result)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let rows = jsonl(&out);
    let ratios: Vec<f64> = rows
        .iter()
        .map(|r| r["prefix_hit_ratio"].as_f64().unwrap())
        .collect();
    assert_eq!(ratios, [0.0, 0.5, 1.0]);
    for (r, ratio) in rows.iter().zip(ratios) {
        assert_eq!(r["rate"].as_f64(), Some(50.0));
        assert_eq!(r["inputs"]["prefix_hit_ratio"].as_f64(), Some(ratio));
        // Exactly the draw's prediction: at 1 the first request misses, so the run did
        // not find the previous ratio's prefix in the engine's cache.
        let share = r["cache_hit_share"].as_f64().unwrap();
        let truth = predicted_share(5, 40, ratio);
        assert!((share - truth).abs() < 1e-12, "{ratio}: {share} != {truth}");
        assert!(r.get("cache_warning").is_none(), "{r}");
    }
    assert_eq!(rows[0]["cache_hit_share"], 0.0);
    assert!((rows[2]["cache_hit_share"].as_f64().unwrap() - 39.0 / 40.0 * 0.75).abs() < 1e-12);
    let shares: Vec<f64> = rows
        .iter()
        .map(|r| r["cache_hit_share"].as_f64().unwrap())
        .collect();
    assert!(shares[0] < shares[1] && shares[1] < shares[2], "{shares:?}");

    // The table tells the rows apart.
    assert!(stdout.contains("rate  hit ratio  offered"), "{stdout}");
    assert!(
        stdout.contains("rate 50 (hit ratio 0.5): cache-hit share"),
        "{stdout}"
    );
    // Every record says its ratio; the plot is drawn against the ratio; a vLLM file per
    // row.
    let lines = jsonl(&records);
    assert_eq!(lines.len(), 120);
    for (k, ratio) in [0.0, 0.5, 1.0].into_iter().enumerate() {
        let of_row = &lines[k * 40..(k + 1) * 40];
        assert!(
            of_row
                .iter()
                .all(|l| l["prefix_hit_ratio"].as_f64() == Some(ratio))
        );
    }
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("prefix hit ratio") && svg.contains("cache-hit share"));
    for ratio in ["0", "0.5", "1"] {
        let f = dir.path().join(format!("vllm-50qps-hit{ratio}.json"));
        assert!(f.exists(), "{}", f.display());
    }

    // Compared with itself row by row, (rate, ratio) with (rate, ratio).
    let compared = llmprobe()
        .args(["report", "compare"])
        .arg(&out)
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(compared.status.success(), "{text}");
    for ratio in ["0", "0.5", "1"] {
        assert!(
            text.contains(&format!(
                "rate 50 (hit ratio {ratio}): base 1 run, new 1 run"
            )),
            "{text}"
        );
    }
    assert!(text.contains("0 regressions"), "{text}");

    // Merged, each ratio's records stay a row of their own with the same figures.
    let merged_out = dir.path().join("merged.jsonl");
    let merged = llmprobe()
        .args(["report", "merge"])
        .arg(&records)
        .arg("--json-out")
        .arg(&merged_out)
        .output()
        .unwrap();
    assert!(merged.status.success(), "{merged:?}");
    let merged = jsonl(&merged_out);
    assert_eq!(merged.len(), 3);
    for (m, r) in merged.iter().zip(&rows) {
        assert_eq!(m["prefix_hit_ratio"], r["prefix_hit_ratio"]);
        assert_eq!(m["cache_hit_share"], r["cache_hit_share"]);
        assert_eq!(m["requests"], 40);
    }
}

#[test]
fn bad_hit_ratio_lists_are_refused_naming_the_flag() {
    for (flags, message) in [
        (
            "--rate 5 --prefix-hit-ratio 0,0.5,0.5",
            "--prefix-hit-ratio: 0.5 is listed twice",
        ),
        (
            "--rate 5 --prefix-hit-ratio 0,2",
            "--prefix-hit-ratio 2: must be a share between 0 and 1",
        ),
        (
            "--rate 5 --prefix-hit-ratio 0,,1",
            "--prefix-hit-ratio: \"\" is not a number",
        ),
        (
            "--sweep 2,4 --prefix-hit-ratio 0,1 --plot p.svg",
            "--plot draws one curve",
        ),
        (
            "--find-max-rate --min-goodput-ratio 0.9 --prefix-hit-ratio 0,1",
            "--find-max-rate: the search finds one rate",
        ),
    ] {
        bench()
            .args(args("--mock --shared-prefix-len 16"))
            .args(args(flags))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    }
}
