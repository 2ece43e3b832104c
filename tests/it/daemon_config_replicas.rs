//! A target's `replicas_from:` as the fleet issue writes it: it parses, resolves into the
//! discovery source and set rules the daemon will run, and each source's defaults hold.
//! The bad cases are fixtures in `daemon_config.rs`.

use std::time::Duration;

use llmprobe::config::plan::load_str;
use llmprobe::config::replicas::ReplicaPlan;
use llmprobe::discovery::{DnsFrom, SourceBlock};

const HEAD: &str = "targets:\n  - name: llama-70b\n    base_url: https://llm.example.internal\n    model: meta-llama/Llama-3.3-70B-Instruct\n";

fn replicas(tail: &str) -> ReplicaPlan {
    let text = format!("{HEAD}{tail}");
    let plan = load_str(&text, "c.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    plan.targets[0].replicas.clone().expect("a replica plan")
}

/// The client an http_sd source is handed (reqwest needs a crypto provider first).
fn http_client() -> reqwest::Client {
    llmprobe::client::tls::install_crypto_provider();
    reqwest::Client::new()
}

#[tokio::test]
async fn the_documented_example_resolves_to_a_dns_source() {
    let r = replicas(
        "    replicas_from:
      dns: {name: vllm-headless.inference.svc.cluster.local, port: 8000, interval: 30s}
      resolver: 10.96.0.10:53
    replica_rate: 1/min
    engine_metrics_path: /metrics
",
    );
    assert_eq!(
        r.source,
        SourceBlock::Dns(DnsFrom {
            name: "vllm-headless.inference.svc.cluster.local".into(),
            port: 8000,
            interval: Some(Duration::from_secs(30)),
        })
    );
    assert_eq!(r.resolver.as_deref(), Some("10.96.0.10:53"));
    assert_eq!(r.interval, Duration::from_secs(30));
    assert!((r.rate_hz - 1.0 / 60.0).abs() < 1e-12);
    assert_eq!(r.engine_metrics_path, "/metrics");
    assert_eq!(r.rules.scheme, "https");
    assert_eq!(r.rules.max_replicas, 64);
    let source = r.source(&http_client()).unwrap();
    assert_eq!(source.kind(), "dns");
}

#[tokio::test]
async fn every_source_has_its_default_interval_and_builds() {
    let cases = [
        (
            "srv: _http._tcp.vllm.inference.svc.cluster.local",
            30,
            "srv",
        ),
        ("srv: {name: _http._tcp.vllm.svc, interval: 5s}", 5, "srv"),
        ("file_sd: /etc/llmprobe/replicas/*.json", 30, "file_sd"),
        (
            "file_sd: {files: /etc/llmprobe/r.yml, interval: 2m}",
            120,
            "file_sd",
        ),
        (
            "http_sd: {url: \"http://discovery:8080/targets\"}",
            60,
            "http_sd",
        ),
        (
            "http_sd: {url: \"http://discovery:8080/targets\", interval: 1m}",
            60,
            "http_sd",
        ),
        (
            "static: [\"https://10.0.0.5:8000\", \"https://10.0.0.6:8000\"]",
            30,
            "static",
        ),
    ];
    for (source, secs, kind) in cases {
        // A resolver of its own, so that the test does not read the system's.
        let resolver = if kind == "srv" {
            "      resolver: 127.0.0.1:53\n"
        } else {
            ""
        };
        let r = replicas(&format!("    replicas_from:\n      {source}\n{resolver}"));
        assert_eq!(r.interval, Duration::from_secs(secs), "{source}");
        assert_eq!(r.engine_metrics_path, "/metrics", "{source}");
        let built = r.source(&http_client()).unwrap();
        assert_eq!(built.kind(), kind, "{source}");
    }
}

#[test]
fn labels_and_the_bound_reach_the_set_rules() {
    let r = replicas(
        "    rate: 2/min
    replicas_from:
      file_sd: /etc/llmprobe/replicas/*.json
      labels: [zone, pool]
      max_replicas: 3
",
    );
    assert_eq!(r.rules.max_replicas, 3);
    let expected = llmprobe::discovery::LabelAllowList::new(["pool", "zone"]).unwrap();
    assert_eq!(r.rules.allow, expected);
    // Without replica_rate each replica gets defaults.rate, not the front door's rate.
    assert!((r.rate_hz - 1.0 / 60.0).abs() < 1e-12);
}

#[test]
fn a_target_without_replicas_from_prints_and_plans_as_before() {
    let plan = load_str(HEAD, "c.yaml").unwrap();
    assert!(plan.targets[0].replicas.is_none());
    assert!(
        plan.redacted_yaml.contains("  replicas: 1\n"),
        "{}",
        plan.redacted_yaml
    );
    let discovered = load_str(
        &format!("{HEAD}    replicas_from:\n      static: [\"https://10.0.0.5:8000\"]\n"),
        "c.yaml",
    )
    .unwrap();
    assert!(!discovered.redacted_yaml.contains("replicas: 1"));
    assert!(discovered.redacted_yaml.contains("replicas_from:"));
}
