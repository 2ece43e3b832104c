//! A daemon probing the mock's rerank and score APIs: the scenario's documents are
//! ranked against its fixed question, the top-document check passes where the mock's
//! word overlap puts the expected document first and fails where it does not, and the
//! probes have an E2E latency and no TTFT series. A `documents:` on a chat target, and a
//! rerank target without documents, are config errors at their line.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::mock::MockConfig;

const SCENARIOS: &str = r#"
      - name: right
        prompt: Which planet has rings?
        documents: [The Moon orbits the Earth., Saturn is a planet with rings., Cats sleep a lot.]
        checks: {expect_top_document: 1, expect_model: m}
      - name: wrong
        prompt: Which planet has rings?
        documents: [The Moon orbits the Earth., Saturn is a planet with rings., Cats sleep a lot.]
        top_n: 2
        checks: {expect_top_document: 0}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_top_document_check_follows_the_ranking() {
    let mock = MockConfig {
        ttft: Duration::from_millis(2),
        ..MockConfig::default()
    };
    let (mock, d) = with_mock(mock, |base| {
        let target = |name: &str, endpoint: &str| {
            format!("  - name: {name}\n    base_url: {base}\n    model: m\n    endpoint: {endpoint}\n    rate: 20/s\n    scenarios:{SCENARIOS}\n")
        };
        format!("targets:\n{}{}", target("cohere", "rerank"), target("vllm", "score"))
    })
    .await;
    let addr = d.addr();
    let runs = |s: &[Sample], target: &str, scenario: &str| {
        value(
            s,
            "llmprobe_check_runs_total",
            &[
                ("target", target),
                ("scenario", scenario),
                ("check", "expect_top_document"),
            ],
        )
        .unwrap_or(0.0)
    };
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        let enough = ["cohere", "vllm"]
            .iter()
            .all(|t| runs(&s, t, "right") >= 3.0 && runs(&s, t, "wrong") >= 3.0);
        enough.then_some(s)
    })
    .await;
    let (_, page) = get(&format!("http://{addr}/")).await;
    d.shutdown().await.unwrap();
    mock.shutdown().await;
    assert!(
        page.contains("expect_top_document: document 1 ranked first, not document 0"),
        "{page}"
    );
    for target in ["cohere", "vllm"] {
        let failures = |scenario: &str| {
            value(
                &s,
                "llmprobe_check_failures_total",
                &[
                    ("target", target),
                    ("scenario", scenario),
                    ("check", "expect_top_document"),
                ],
            )
        };
        assert_eq!(failures("right"), Some(0.0), "{target}");
        assert_eq!(
            failures("wrong"),
            Some(runs(&s, target, "wrong")),
            "{target}"
        );
        assert_eq!(
            sum(
                &s,
                "llmprobe_request_failures_total",
                &[("target", target), ("scenario", "wrong")]
            ),
            0.0,
            "a failed check is no request failure ({target})"
        );
        let e2e = value(
            &s,
            "llmprobe_request_duration_seconds_count",
            &[("target", target), ("scenario", "right")],
        );
        assert!(e2e.is_some_and(|n| n >= 3.0), "{target}: {e2e:?}");
        let ttft = value(
            &s,
            "llmprobe_ttft_seconds_count",
            &[("target", target), ("scenario", "right")],
        );
        assert!(ttft.is_none_or(|n| n == 0.0), "{target}: {ttft:?}");
    }
}

#[test]
fn documents_go_only_where_they_are_ranked() {
    let config = |endpoint: &str, scenario: &str| {
        format!(
            "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    endpoint: {endpoint}\n    scenarios:\n      - {scenario}\n"
        )
    };
    let err = |text: String| {
        llmprobe::config::plan::load_str(&text, "c.yaml")
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(config("chat", "{name: s, documents: [a, b]}")),
        "c.yaml:7:30: targets[0].scenarios[0].documents: endpoint chat sends no documents (only rerank and score do)"
    );
    assert_eq!(
        err(config("rerank", "{name: s}")),
        "c.yaml:7:9: targets[0].scenarios[0].documents: endpoint rerank needs documents to rank"
    );
    assert_eq!(
        err(config(
            "score",
            "{name: s, documents: [a], checks: {expect_top_document: 1}}"
        )),
        "c.yaml:7:65: targets[0].scenarios[0].checks.expect_top_document: document 1 is not among the 1 documents (numbered from 0)"
    );
}
