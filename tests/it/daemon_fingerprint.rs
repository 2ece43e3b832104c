//! The daemon's fingerprint scenario against two mocks: one is the model its baseline
//! was recorded on (no drift), the other answers the same tokens with other
//! probabilities (`logprob_seed`: drift). And the config errors of a fingerprint block.

use crate::support::daemon as daemon_support;

use std::net::SocketAddr;
use std::time::Duration;

use daemon_support::*;
use llmprobe::client::ClientConfig;
use llmprobe::config::plan::load_str;
use llmprobe::fingerprint::{Ask, Sampler, default_prompts};
use llmprobe::mock::MockConfig;

async fn mock(logprob_seed: u64) -> llmprobe::mock::MockServer {
    llmprobe::mock::start(
        MockConfig {
            ttft: Duration::from_millis(1),
            itl: Duration::from_millis(1),
            logprob_seed,
            ..MockConfig::default()
        },
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .unwrap()
}

async fn record(base: &str, path: &std::path::Path) {
    llmprobe::client::tls::install_crypto_provider();
    let cfg = ClientConfig {
        base_url: base.to_string(),
        ..ClientConfig::default()
    };
    let ask = Ask {
        endpoint: llmprobe::client::Endpoint::Chat,
        model: "m".into(),
        top_logprobs: 5,
        max_tokens: 8,
    };
    let b = Sampler::new(cfg, ask)
        .unwrap()
        .record(&default_prompts(), 2)
        .await
        .unwrap();
    b.save(path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_model_is_quiet_and_another_drifts() {
    let same = mock(0).await;
    let other = mock(7).await;
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    record(&same.base_url(), &baseline).await;
    let target = |name: &str, base: String| {
        format!(
            "  - name: {name}\n    base_url: {base}\n    model: m\n    endpoint: chat\n    scenarios:\n      \
             - name: fp\n        fingerprint: {{baseline: {}, every: 1h}}\n",
            baseline.display()
        )
    };
    // Nothing listens on a port that was bound and dropped: every run of "down" fails.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let d = TestDaemon::start(&format!(
        "self_check: {{enabled: false}}\ntargets:\n{}{}{}",
        target("same", same.base_url()),
        target("other", other.base_url()),
        target("down", down)
    ))
    .await;
    let addr = d.addr();
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let ran = |t| {
            value(
                &s,
                "llmprobe_fingerprint_last_run_timestamp_seconds",
                &[("target", t)],
            )
        };
        let failed = value(
            &s,
            "llmprobe_fingerprint_failures_total",
            &[("target", "down")],
        );
        (ran("same").is_some() && ran("other").is_some() && failed >= Some(1.0)).then_some(s)
    })
    .await;
    let at = |t: &'static str, name: &str| value(&s, name, &[("target", t), ("scenario", "fp")]);
    assert_eq!(at("same", "llmprobe_fingerprint_divergence"), Some(0.0));
    assert_eq!(
        at("same", "llmprobe_fingerprint_token_agreement_ratio"),
        Some(1.0)
    );
    assert_eq!(at("same", "llmprobe_fingerprint_drift"), Some(0.0));
    assert_eq!(
        at("same", "llmprobe_fingerprint_first_divergence_position"),
        Some(-1.0)
    );
    assert_eq!(
        at("same", "llmprobe_fingerprint_noise_divergence"),
        Some(0.0)
    );
    assert_eq!(
        at("same", "llmprobe_fingerprint_threshold_divergence"),
        Some(0.02)
    );
    assert_eq!(at("same", "llmprobe_fingerprint_failures_total"), Some(0.0));
    assert_eq!(at("other", "llmprobe_fingerprint_drift"), Some(1.0));
    assert_eq!(
        at("other", "llmprobe_fingerprint_token_agreement_ratio"),
        Some(1.0)
    );
    assert!(at("other", "llmprobe_fingerprint_divergence").unwrap() > 0.02);
    // A fingerprint scenario sends no ordinary probes.
    assert_eq!(
        sum(&s, "llmprobe_requests_total", &[("scenario", "fp")]),
        0.0
    );
    // The status page: one fingerprint row per scenario, its state and figures against
    // the limits, on `/` and on the target's page.
    let (code, page) = get(&format!("http://{addr}/")).await;
    assert_eq!(code, 200);
    let section = |t: &str| {
        let start = page
            .find(&format!(">{t}</a>"))
            .unwrap_or_else(|| panic!("{t}: {page}"));
        let end = page[start..].find("</section>").unwrap() + start;
        page[start..end].to_string()
    };
    let same_row = section("same");
    assert!(
        same_row.contains("<span class=\"ok\">same model</span>"),
        "{same_row}"
    );
    assert!(same_row.contains(">0.0000 <small class=\"covered\">limit 0.0200</small>"));
    assert!(same_row.contains(">100.0 % <small class=\"covered\">limit 90.0 %</small>"));
    assert!(same_row.contains(">none</td>"));
    let other_row = section("other");
    assert!(
        other_row.contains("<span class=\"bad\">drift</span>"),
        "{other_row}"
    );
    let down_row = section("down");
    assert!(
        down_row.contains("<span class=\"bad\">run failing</span>"),
        "{down_row}"
    );
    assert!(down_row.contains(" ago: "), "the last error: {down_row}");
    let (code, target) = get(&format!("http://{addr}/target/other")).await;
    assert_eq!(code, 200);
    assert!(target.contains("<tr class=\"fingerprint\">") && target.contains(">drift</span>"));
    d.shutdown().await.unwrap();
}

#[test]
fn bad_fingerprint_blocks_are_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let cfg = |endpoint: &str, extra: &str, file: &std::path::Path| {
        format!(
            "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    endpoint: {endpoint}\n    \
             scenarios:\n      - name: fp\n{extra}        fingerprint: {{baseline: {}}}\n",
            file.display()
        )
    };
    let err = load_str(&cfg("chat", "", &missing), "c.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "c.yaml:8:33: targets[0].scenarios[0].fingerprint.baseline: cannot read baseline"
        ) && err.contains("nope.json"),
        "{err}"
    );
    let err = load_str(&cfg("messages", "", &missing), "c.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("target endpoint messages: the messages API has no logprobs"),
        "{err}"
    );
    let err = load_str(&cfg("chat", "        rate: 1/s\n", &missing), "c.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("it takes only name, kind and fingerprint"),
        "{err}"
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let err = load_str(&cfg("chat", "", &bad), "c.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.json: missing field"), "{err}");
}
