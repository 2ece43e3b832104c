//! What the daemon's probes put on the wire: per-scenario `ignore_eos`, lengths,
//! headers and the API key, streaming with usage.

use crate::support::daemon as daemon_support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use daemon_support::*;

type Seen = Arc<Mutex<Vec<(HeaderMap, serde_json::Value)>>>;

/// Records every request and answers 503 (the body is what this test is about).
async fn recording_server() -> (SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let s = s.clone();
            async move {
                let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                s.lock().unwrap().push((headers, json));
                (StatusCode::SERVICE_UNAVAILABLE, "busy")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_shape_their_requests() {
    let (server, seen) = recording_server().await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "sk-wire-test\n").unwrap();
    let d = TestDaemon::start(&format!(
        r#"
targets:
  - name: wire
    base_url: http://{server}/v1
    model: my-model
    rate: 20/s
    api_key_file: {}
    headers: {{X-Team: infra}}
    scenarios:
      - {{name: fixed, input_tokens: 64, output_tokens: 7, ignore_eos: true}}
      - {{name: natural, input_tokens: 64, output_tokens: 9, ignore_eos: false}}
"#,
        key.display()
    ))
    .await;
    let addr = d.addr();
    wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        let failed = |sc| {
            value(
                &s,
                "llmprobe_request_failures_total",
                &[("scenario", sc), ("reason", "http_5xx")],
            )
            .unwrap_or(0.0)
        };
        (failed("fixed") >= 2.0 && failed("natural") >= 2.0).then_some(())
    })
    .await;
    d.shutdown().await.unwrap();
    let seen = seen.lock().unwrap();
    let mut fixed = 0;
    let mut natural = 0;
    for (headers, body) in seen.iter() {
        assert_eq!(body["model"], "my-model");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(headers["authorization"], "Bearer sk-wire-test");
        assert_eq!(headers["x-team"], "infra");
        match body["max_tokens"].as_u64() {
            Some(7) => {
                fixed += 1;
                assert_eq!(body["ignore_eos"], true, "{body}");
            }
            Some(9) => {
                natural += 1;
                assert!(body.get("ignore_eos").is_none_or(|v| v == false), "{body}");
            }
            other => panic!("unexpected max_tokens {other:?}"),
        }
    }
    assert!(
        fixed >= 2 && natural >= 2,
        "fixed {fixed}, natural {natural}"
    );
}
