//! `llmprobe bench --golden`: the built-in set asked of the in-process mock, which
//! knows its answers and answers a seeded share wrongly under `wrong_answer:P`. Every
//! request draws once from the mock's fault RNG (seeded by `--seed`), so the count of
//! correct answers is the count of the mock's own draws that missed, replayed here,
//! whatever order the requests arrived in. A failed request is a failure, never a
//! wrong answer; `--min-golden-accuracy` fails the run (exit 3) by the alert's rule;
//! the flags that cannot go with a golden set are refused (exit 2).

use std::path::Path;
use std::process::Output;

use llmprobe::check::accuracy::{Z, wilson};
use rand::{RngExt, SeedableRng};
use serde_json::Value;

use crate::support::bench::{bench, jsonl};

const REQUESTS: usize = 200;

/// `bench --mock --golden builtin` with `extra` flags: its output and its one
/// `--json-out` line (null when none was written).
fn golden_bench(extra: &[&str], dir: &Path) -> (Output, Value) {
    let json = dir.join("r.jsonl");
    let _ = std::fs::remove_file(&json);
    let n = REQUESTS.to_string();
    let out = bench()
        .args([
            "--mock",
            "--no-progress",
            "--golden",
            "builtin",
            "--rate",
            "inf",
        ])
        .args(["--num-requests", &n, "--output-len", "16", "--seed", "3"])
        .args(["--mock-ttft-ms", "1", "--mock-itl-ms", "0.2"])
        .args(extra)
        .arg("--json-out")
        .arg(&json)
        .output()
        .unwrap();
    let summary = if json.exists() {
        jsonl(&json).into_iter().next().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    (out, summary)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Of the mock's first `REQUESTS` fault draws at seed 3, those at or above `p`: the
/// requests the fault of probability `p` missed.
fn missed_draws(p: f64) -> u64 {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    (0..REQUESTS).filter(|_| rng.random::<f64>() >= p).count() as u64
}

#[test]
fn without_the_fault_every_judged_answer_is_correct() {
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = golden_bench(&["--min-golden-accuracy", "0.99"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (lo, hi) = wilson(REQUESTS, REQUESTS, Z).unwrap();
    assert_eq!(
        s["golden"],
        serde_json::json!({
            "judged": REQUESTS, "correct": REQUESTS, "accuracy": 1.0, "lower": lo, "upper": hi
        })
    );
    assert_eq!(s["inputs"]["dataset"], "golden:builtin");
    // A wrong answer would still be good: only the golden figures judge it.
    assert_eq!(
        (s["completed"].as_u64(), s["good"].as_u64()),
        (Some(200), Some(200))
    );
    let text = stdout(&out);
    assert!(
        text.contains(
            "rate inf: golden accuracy 1.000 (200 of 200 judged answers correct), 95 % \
             Wilson interval [0.981, 1.000]; as a daemon baseline (the lower bound, rounded \
             down): golden.baseline: 0.981"
        ),
        "{text}"
    );
    assert!(
        text.contains("gate golden-accuracy-upper>=0.99: pass at inf (1.000)"),
        "{text}"
    );
}

#[test]
fn a_seeded_share_of_wrong_answers_is_counted_exactly_and_gated_by_the_alerts_rule() {
    let dir = tempfile::tempdir().unwrap();
    let fault = ["--mock-fault", "wrong_answer:0.2"];
    let (out, s) = golden_bench(&fault, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let correct = missed_draws(0.2);
    let g = &s["golden"];
    assert_eq!(g["judged"].as_u64(), Some(REQUESTS as u64));
    assert_eq!(g["correct"].as_u64(), Some(correct));
    assert_eq!(
        g["accuracy"].as_f64(),
        Some(correct as f64 / REQUESTS as f64)
    );
    let (lo, hi) = wilson(correct as usize, REQUESTS, Z).unwrap();
    assert_eq!(
        (g["lower"].as_f64(), g["upper"].as_f64()),
        (Some(lo), Some(hi))
    );
    assert!(lo <= 0.8 && 0.8 <= hi, "0.8 outside [{lo}, {hi}]");
    // A wrong answer is an answer: the request completed.
    assert_eq!(s["failed"], 0);

    // Fails when the whole interval lies below the minimum, passes when its upper
    // bound reaches it.
    let above = format!("{:.3}", hi + 0.001);
    let failing = [&fault[..], &["--min-golden-accuracy", &above]].concat();
    let (out, s) = golden_bench(&failing, dir.path());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(s["gates"][0]["passed"], false);
    assert_eq!(s["gates"][0]["observed"].as_f64(), Some(hi));
    assert!(
        stderr(&out).contains(&format!(
            "SLO gate failed at rate inf: golden-accuracy-upper>={above}"
        )),
        "{}",
        stderr(&out)
    );
    let gate = format!("golden-accuracy-upper>={:.3}", hi - 0.001);
    let passing = [&fault[..], &["--gate", &gate]].concat();
    let (out, s) = golden_bench(&passing, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s["gates"][0]["passed"], true);
}

#[test]
fn a_failed_request_is_a_failure_not_a_wrong_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = golden_bench(&["--mock-fault", "http_500:0.25"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let completed = missed_draws(0.25);
    assert_eq!(s["completed"].as_u64(), Some(completed));
    assert_eq!(s["failed"].as_u64(), Some(REQUESTS as u64 - completed));
    assert_eq!(s["golden"]["judged"].as_u64(), Some(completed));
    assert_eq!(s["golden"]["correct"].as_u64(), Some(completed));
    assert_eq!(s["golden"]["accuracy"], 1.0);
}

#[test]
fn flags_that_cannot_go_with_a_golden_set_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, message) in [
        (
            &["--prompt", "hi"][..],
            "--golden asks the golden set's questions: drop --prompt",
        ),
        (
            &["--dataset", "sharegpt", "--dataset-path", "d.json"][..],
            "--golden asks the golden set's questions: drop --dataset",
        ),
        (
            &["--shared-prefix-len", "16"][..],
            "--golden asks the golden set's questions: drop --shared-prefix-len",
        ),
        (
            &["--endpoint", "embeddings"][..],
            "--golden: --endpoint embeddings answers no text to judge",
        ),
        (
            &["--turns", "2"][..],
            "--golden: a golden question is one request; --turns makes conversations",
        ),
        (
            &["--min-golden-accuracy", "2"][..],
            "--min-golden-accuracy \"2\": expected an accuracy in [0, 1] (0.9) or a percentage (90%)",
        ),
    ] {
        let (out, _) = golden_bench(extra, dir.path());
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(message),
            "{extra:?}: {}",
            stderr(&out)
        );
    }
    let out = bench()
        .args(["--mock", "--rate", "1", "--min-golden-accuracy", "0.9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--golden"), "{}", stderr(&out));
}
