//! llm-d / Gateway API Inference Extension gateways, against the mock gateway
//! (`mock --gateway`): the served endpoint in the record, dropped requests as their
//! failure reasons, the llm-d request headers sent only when a target asks, and the
//! endpoint picker's `/metrics` as the `llmprobe_router_*` series.

use crate::support::daemon as daemon_support;
use crate::support::mock as mock_support;

use std::net::SocketAddr;
use std::time::Duration;

use daemon_support::*;
use llmprobe::client::{Client, ClientConfig};
use llmprobe::mock::gateway::{self, Drop, GatewayConfig, GatewayLog, GatewayServer, Route};
use llmprobe::mock::{MockConfig, MockServer};
use llmprobe::record::{Outcome, RequestRecord};
use llmprobe::secret::Secret;
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

fn fast_mock() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    }
}

/// Two mock engines behind a gateway routing by `x-session-token`, dropping by `drops`.
async fn pool(drops: &[&str]) -> (Vec<MockServer>, GatewayServer) {
    let engines = vec![
        mock_support::start(fast_mock()).await,
        mock_support::start(fast_mock()).await,
    ];
    let gw = gateway::start(
        GatewayConfig {
            upstreams: engines.iter().map(MockServer::base_url).collect(),
            route: Route::Header("x-session-token".into()),
            drops: drops.iter().map(|d| d.parse::<Drop>().unwrap()).collect(),
            model: "m".into(),
            seed: 0,
        },
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .unwrap();
    (engines, gw)
}

async fn send(base_url: &str, session: Option<&str>) -> RequestRecord {
    let headers = session
        .map(|s| vec![("x-session-token".to_string(), Secret::new(s.to_string()))])
        .unwrap_or_default();
    let client = Client::new(
        ClientConfig {
            base_url: base_url.to_string(),
            model: "m".into(),
            headers,
            ..ClientConfig::default()
        },
        None,
    )
    .unwrap();
    let spec = RequestSpec {
        prompt: "hello".into(),
        prompt_tokens: 1,
        max_tokens: 4,
        history: Vec::new(),
        system: None,
        model: None,
    };
    client.send(&spec, 0, Duration::ZERO, Instant::now()).await
}

async fn log(gw: &GatewayServer) -> GatewayLog {
    mock_support::client()
        .get(format!("{}/mock/gateway", gw.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_names_the_engine_the_gateway_says_served_it() {
    let (engines, gw) = pool(&[]).await;
    let hosts: Vec<String> = engines
        .iter()
        .map(|e| e.base_url().trim_start_matches("http://").to_string())
        .collect();
    let first = send(&gw.base_url(), Some("session-1")).await;
    assert!(first.is_success(), "{:?}", first.error);
    let served = first.served_endpoint.clone().expect("a served endpoint");
    assert!(hosts.contains(&served), "{served} not in {hosts:?}");
    // One session stays on its engine.
    for _ in 0..3 {
        let r = send(&gw.base_url(), Some("session-1")).await;
        assert_eq!(r.served_endpoint.as_deref(), Some(served.as_str()));
    }
    // Without the header, round-robin: both engines serve.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..2 {
        seen.insert(send(&gw.base_url(), None).await.served_endpoint.unwrap());
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    // An engine reached directly names none.
    let direct = send(&engines[0].base_url(), None).await;
    assert!(direct.is_success() && direct.served_endpoint.is_none());
    // It goes into the --records line as it is.
    let json = serde_json::to_value(&first).unwrap();
    assert_eq!(json["served_endpoint"], served.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_requests_fail_with_the_gateways_reason() {
    for (drop, outcome, status) in [
        ("rejected-saturated", Outcome::GatewayRejected, 429),
        ("rejected-no-endpoints", Outcome::GatewayRejected, 503),
        ("evicted-priority", Outcome::GatewayEvicted, 429),
        // A newer router's value still lands in its family.
        ("evicted-budget", Outcome::GatewayEvicted, 429),
        // Neither family: the HTTP status decides.
        ("throttled", Outcome::Http429, 429),
    ] {
        let (_engines, gw) = pool(&[drop]).await;
        let r = send(&gw.base_url(), Some("Z9-session")).await;
        assert_eq!(r.outcome, outcome, "{drop}: {:?}", r.error);
        assert_eq!(r.http_status, Some(status), "{drop}");
        let error = r.error.unwrap_or_default();
        assert!(
            error.contains(&format!("x-llm-d-request-dropped-reason: {drop}"))
                && error.contains("inference error:"),
            "{drop}: {error}"
        );
        assert!(r.served_endpoint.is_none(), "{drop}: no engine served it");
        assert_eq!(log(&gw).await.dropped, 1, "{drop}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_d_headers_go_only_where_asked_and_the_picker_feeds_the_router_series() {
    let (_a, asked) = pool(&[]).await;
    let (_b, plain) = pool(&[]).await;
    let engine = mock_support::start(fast_mock()).await;
    let d = TestDaemon::start(&format!(
        r#"
engine_scrape_interval: 200ms
targets:
  - name: asked
    base_url: {asked}
    model: m
    rate: 20/s
    router_metrics_url: {asked}/metrics
    llm_d: {{slo_headers: true, objective: probes, fairness_id: llmprobe}}
    scenarios:
      - {{name: s, input_tokens: 16, output_tokens: 4, slo: {{ttft: 250ms, tpot: 2500us}}}}
      - {{name: no-slo, input_tokens: 16, output_tokens: 4}}
  - name: plain
    base_url: {plain}
    model: m
    rate: 20/s
    # An engine's page, not a picker's: the scrape fails.
    router_metrics_url: {engine}/metrics
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4, slo: {{ttft: 250ms}}}}]
"#,
        asked = asked.base_url(),
        plain = plain.base_url(),
        engine = engine.base_url(),
    ))
    .await;
    let addr = d.addr();
    let samples = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let routed: u64 = log(&asked).await.routed.iter().sum();
        let ready = value(
            &s,
            "llmprobe_router_ready_endpoints",
            &[("target", "asked")],
        );
        let failed = value(&s, "llmprobe_router_scrape_success", &[("target", "plain")]);
        (routed >= 10 && ready.is_some() && failed.is_some()).then_some(s)
    })
    .await;

    let seen = log(&asked).await;
    let routed: u64 = seen.routed.iter().sum();
    for h in [
        "x-llm-d-inference-objective",
        "x-llm-d-inference-fairness-id",
    ] {
        assert_eq!(seen.with_header.get(h), Some(&routed), "{h}: {seen:?}");
    }
    // Only scenario `s` has objectives; both of its are sent, in whole ms rounded up.
    let ttft = seen.with_header["x-llm-d-slo-ttft-ms"];
    assert!(ttft > 0 && ttft < routed, "{seen:?}");
    assert_eq!(seen.with_header.get("x-llm-d-slo-tpot-ms"), Some(&ttft));
    let last: std::collections::BTreeMap<_, _> = seen.last.iter().cloned().collect();
    assert_eq!(last["x-llm-d-inference-objective"], "probes");
    assert_eq!(last["x-llm-d-inference-fairness-id"], "llmprobe");
    if let Some(v) = last.get("x-llm-d-slo-ttft-ms") {
        assert_eq!(
            (v.as_str(), last["x-llm-d-slo-tpot-ms"].as_str()),
            ("250", "3")
        );
    }
    let none = log(&plain).await;
    assert!(none.routed.iter().sum::<u64>() > 0);
    assert!(none.with_header.is_empty(), "{none:?}");

    let at = |name: &str, target: &str| value(&samples, name, &[("target", target)]);
    assert_eq!(at("llmprobe_router_scrape_success", "asked"), Some(1.0));
    assert_eq!(at("llmprobe_router_ready_endpoints", "asked"), Some(2.0));
    assert_eq!(
        at("llmprobe_router_flow_control_queue_size", "asked"),
        Some(0.0)
    );
    let kv = at("llmprobe_router_kv_cache_usage_ratio", "asked").unwrap();
    assert!((0.0..=1.0).contains(&kv), "{kv}");
    assert_eq!(at("llmprobe_router_scrape_success", "plain"), Some(0.0));
    assert_eq!(at("llmprobe_router_ready_endpoints", "plain"), None);
    d.shutdown().await.unwrap();
}
