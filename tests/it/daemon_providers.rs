//! The daemon probing each hosted API's mock routes (Vertex with a token file the mock
//! takes as its key) from its YAML (`provider:` with its
//! keys and blocks): every probe succeeds with the mock's token counts, a TTFT that can
//! only be late (never at or below 40 ms against the mock's 50 ms), and a provider's
//! rate limit counted as `http_429`.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::mock::{MockAws, MockConfig};
use llmprobe::secret::Secret;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_provider_is_probed_from_its_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, value: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("{value}\n")).unwrap();
        p.display().to_string()
    };
    let key = file("key", "daemon-provider-key-6");
    let id = file("aws-id", "AKIDDAEMON");
    let secret = file("aws-secret", "daemon-aws-secret-7");
    let mock = MockConfig {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(5),
        api_key: Some("daemon-provider-key-6".into()),
        aws: Some(MockAws {
            access_key_id: "AKIDDAEMON".into(),
            secret_access_key: Secret::new("daemon-aws-secret-7"),
            region: "eu-west-1".into(),
        }),
        ..MockConfig::default()
    };
    let scenario = "scenarios: [{name: s, input_tokens: 16, output_tokens: 8}]";
    let (mock, d) = with_mock(mock, |url| {
        format!(
            r#"
defaults: {{rate: 20/s}}
targets:
  - name: azure
    provider: azure
    base_url: {url}
    model: my-deployment
    api_version: 2024-10-21
    api_key_file: {key}
    {scenario}
  - name: gemini
    provider: gemini
    base_url: {url}
    model: gemini-2.0-flash
    api_key_file: {key}
    {scenario}
  - name: bedrock
    provider: bedrock
    base_url: {url}
    model: anthropic.claude-3-haiku-20240307-v1:0
    aws: {{region: eu-west-1, access_key_id_file: {id}, secret_access_key_file: {secret}}}
    {scenario}
  - name: vertex
    provider: vertex
    base_url: {url}
    model: gemini-2.0-flash
    google: {{project: p1, location: us-central1, token_file: {key}}}
    {scenario}
  - name: limited
    provider: gemini
    base_url: {url}
    model: gemini-2.0-flash
    api_key_file: {key}
    headers: {{x-mock-fault: "http_429=1"}}
    {scenario}
"#
        )
    })
    .await;
    let addr = d.addr();
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let n = |t| value(&s, "llmprobe_requests_total", &[("target", t)]).unwrap_or(0.0);
        let limited = value(
            &s,
            "llmprobe_request_failures_total",
            &[("target", "limited"), ("reason", "http_429")],
        )
        .unwrap_or(0.0);
        (["azure", "gemini", "bedrock", "vertex"]
            .iter()
            .all(|t| n(t) >= 3.0)
            && limited >= 2.0)
            .then_some(s)
    })
    .await;
    d.shutdown().await.unwrap();
    mock.shutdown().await;
    for t in ["azure", "gemini", "bedrock", "vertex"] {
        let l = [("target", t)];
        let failures: f64 = s
            .iter()
            .filter(|x| x.name == "llmprobe_request_failures_total")
            .filter(|x| x.labels.get("target").map(String::as_str) == Some(t))
            .map(|x| x.value)
            .sum();
        assert_eq!(failures, 0.0, "{t}: no failed probe");
        let n = value(&s, "llmprobe_ttft_seconds_count", &l).unwrap();
        assert!(n >= 3.0, "{t}");
        let at_most_40ms = value(
            &s,
            "llmprobe_ttft_seconds_bucket",
            &[("target", t), ("le", "0.04")],
        )
        .unwrap();
        assert_eq!(at_most_40ms, 0.0, "{t}: a TTFT can only be late");
        let out = value(&s, "llmprobe_output_tokens_total", &l).unwrap();
        assert!(
            out >= 8.0 * 3.0 && out % 8.0 == 0.0,
            "{t}: 8 tokens per probe, {out}"
        );
    }
}
