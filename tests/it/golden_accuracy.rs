//! Golden-set accuracy end to end: the built-in set asked through the shared prober
//! of the in-process mock that knows it (`--golden builtin`) and answers a seeded
//! fraction wrongly (`wrong_answer:P`). Each verdict is the mock's own draw, so the
//! count is exact and the Wilson interval contains the injected truth; the daemon
//! exports the figures and shows them on its status page.

use crate::support::daemon as daemon_support;
use crate::support::mock as mock_support;

use std::sync::Arc;
use std::time::Duration;

use daemon_support::*;
use llmprobe::check::accuracy::{AccuracyWindow, Z, wilson};
use llmprobe::check::golden::{BUILTIN, GoldenSet};
use llmprobe::client::{Client, ClientConfig, Endpoint};
use llmprobe::mock::{FaultSpec, MockConfig};
use llmprobe::probe::Prober;
use llmprobe::record::Outcome;
use llmprobe::runner::Dispatch;
use llmprobe::workload::Workload;
use llmprobe::workload::lengths::Lengths;
use llmprobe::workload::prompt::PromptGenerator;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;

const SEED: u64 = 11;
const WRONG_SHARE: f64 = 0.2;
const PROBES: u64 = 400;

fn golden_mock(faults: Vec<FaultSpec>) -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        seed: SEED,
        faults,
        golden: Some(Arc::new(GoldenSet::load(BUILTIN).unwrap())),
        ..MockConfig::default()
    }
}

#[tokio::test(start_paused = true)]
async fn measured_accuracy_and_its_interval_contain_the_injected_truth() {
    let fault: FaultSpec = format!("wrong_answer:{WRONG_SHARE}").parse().unwrap();
    let mock = mock_support::start(golden_mock(vec![fault])).await;
    let client = Client::new(
        ClientConfig {
            base_url: mock.base_url(),
            endpoint: Endpoint::Chat,
            model: "m".into(),
            ..ClientConfig::default()
        },
        None,
    )
    .unwrap();
    let set = Arc::new(GoldenSet::load(BUILTIN).unwrap());
    let questions = set.questions().len() as u64;
    let prober = Prober {
        client: Arc::new(client),
        workload: Arc::new(
            Workload::golden(
                set,
                Lengths::fixed(32).unwrap(),
                PromptGenerator::approximate(0),
                5,
            )
            .unwrap(),
        ),
        conversations: None,
    };
    let run_start = Instant::now();
    let mut window = AccuracyWindow::new(PROBES as usize);
    let mut verdicts = Vec::new();
    let mut lines = std::collections::BTreeSet::new();
    // One at a time, so the mock draws its faults in the probes' order.
    for id in 0..PROBES {
        let d = Dispatch {
            id,
            t_sched: Duration::ZERO,
            run_start,
        };
        let r = prober.send(d, None).await.unwrap();
        assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
        let v = r.golden.expect("a golden question's answer is judged");
        lines.insert(v.line);
        window.push(v.correct);
        verdicts.push(v.correct);
    }
    mock.shutdown().await;
    // The mock's fault draws, replayed: one uniform number per request from its seed.
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED);
    let injected: Vec<bool> = (0..PROBES)
        .map(|_| rng.random::<f64>() >= WRONG_SHARE)
        .collect();
    assert_eq!(
        verdicts, injected,
        "every answer judged as the mock gave it"
    );
    let correct = injected.iter().filter(|c| **c).count();
    assert_eq!(window.correct(), correct);
    // Every question was asked (a shuffled order, cycling).
    assert_eq!(lines.len() as u64, questions);
    let (lo, hi) = window.interval().unwrap();
    assert_eq!((lo, hi), wilson(correct, PROBES as usize, Z).unwrap());
    let truth = 1.0 - WRONG_SHARE;
    assert!(lo <= truth && truth <= hi, "{truth} outside [{lo}, {hi}]");
    let acc = window.accuracy().unwrap();
    assert!((acc - truth).abs() < 0.05, "{acc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_exports_accuracy_with_its_interval_and_baseline() {
    let scenario = "    max_inflight: 1\n    scenarios:\n      - name: qa\n        output_tokens: 16\n        ignore_eos: false\n        golden: {file: builtin, window: 50, baseline: 0.9}\n";
    let (mock, d) = with_mock(golden_mock(Vec::new()), |base| {
        format!(
            "targets:\n  - name: right\n    base_url: {base}\n    model: m\n    rate: 20/s\n{scenario}  - name: wrong\n    base_url: {base}\n    model: m\n    rate: 20/s\n    headers: {{x-mock-fault: wrong_answer}}\n{scenario}"
        )
    })
    .await;
    let addr = d.addr();
    let judged = |s: &[Sample], t: &str| {
        value(s, "llmprobe_golden_window_answers", &[("target", t)]).unwrap_or(0.0)
    };
    wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        (judged(&s, "right") >= 10.0 && judged(&s, "wrong") >= 10.0).then_some(())
    })
    .await;
    // With the mock gone every later probe fails, and a failure is not judged: the
    // figures hold still (one probe in flight at a time, so none lands later).
    mock.shutdown().await;
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let failed = |t| sum(&s, "llmprobe_request_failures_total", &[("target", t)]);
        (failed("right") >= 1.0 && failed("wrong") >= 1.0).then_some(s)
    })
    .await;
    let (_, page) = get(&format!("http://{addr}/")).await;
    d.shutdown().await.unwrap();
    let g = |name: &str, t: &str| value(&s, name, &[("target", t)]);
    let answers = |t: &str, verdict: &str| {
        value(
            &s,
            "llmprobe_golden_answers_total",
            &[("target", t), ("verdict", verdict)],
        )
        .unwrap()
    };
    for (t, correct) in [("right", true), ("wrong", false)] {
        let total = answers(t, "correct") + answers(t, "wrong");
        let n = judged(&s, t);
        assert_eq!(n, total.min(50.0), "{t}");
        let k = if correct { n } else { 0.0 };
        let (lo, hi) = wilson(k as usize, n as usize, Z).unwrap();
        assert_eq!(g("llmprobe_golden_accuracy_ratio", t), Some(k / n), "{t}");
        assert_eq!(
            g("llmprobe_golden_accuracy_lower_ratio", t),
            Some(lo),
            "{t}"
        );
        assert_eq!(
            g("llmprobe_golden_accuracy_upper_ratio", t),
            Some(hi),
            "{t}"
        );
        assert_eq!(g("llmprobe_golden_baseline_ratio", t), Some(0.9), "{t}");
        // A wrong answer is neither a failure nor a missed objective.
        assert_eq!(
            g("llmprobe_goodput_requests_total", t),
            Some(
                sum(&s, "llmprobe_requests_total", &[("target", t)])
                    - sum(&s, "llmprobe_request_failures_total", &[("target", t)])
            ),
            "{t}"
        );
    }
    assert_eq!(answers("right", "wrong"), 0.0);
    assert_eq!(answers("wrong", "correct"), 0.0);
    // The wrong target's interval lies wholly below the baseline: what the alert reads.
    assert!(g("llmprobe_golden_accuracy_upper_ratio", "wrong").unwrap() < 0.9);
    assert!(page.contains("golden accuracy"), "{page}");
    assert!(
        page.contains("100.0 % [") && page.contains("baseline 90.0 %"),
        "{page}"
    );
    assert!(
        page.contains("last wrong: builtin:") && page.contains("got «I do not know.»"),
        "{page}"
    );
}
