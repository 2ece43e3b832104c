//! The engine scraper against SGLang-, llama.cpp- and TGI-format `/metrics` (the
//! fixtures, with counters advancing between scrapes like a live server's):
//! running/waiting, KV usage and capacity, llama.cpp's slots from `/props`, generation
//! rate, server TTFT, live cost and headroom.

use crate::support::daemon as daemon_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use daemon_support::*;

/// Serves the SGLang fixture; every scrape advances the generation counter by 1000
/// tokens and the TTFT histogram by 10 requests of 150 ms.
async fn sglang_server() -> SocketAddr {
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/engine/sglang.txt"
    ))
    .unwrap();
    let n = Arc::new(AtomicU64::new(0));
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let k = n.fetch_add(1, Ordering::SeqCst) as f64;
            let body = fixture
                .replace(
                    "} 7.557572e+06",
                    &format!("}} {}", 7_557_572.0 + 1000.0 * k),
                )
                .replace(
                    "time_to_first_token_seconds_sum{model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 6.4",
                    &format!(
                        "time_to_first_token_seconds_sum{{model_name=\"meta-llama/Llama-3.1-8B-Instruct\"}} {}",
                        6.4 + 1.5 * k
                    ),
                )
                .replace(
                    "time_to_first_token_seconds_count{model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 40.0",
                    &format!(
                        "time_to_first_token_seconds_count{{model_name=\"meta-llama/Llama-3.1-8B-Instruct\"}} {}",
                        40.0 + 10.0 * k
                    ),
                );
            async move { body }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_metrics_become_engine_gauges() {
    let engine = sglang_server().await;
    let d = TestDaemon::start(&format!(
        r#"
engine_scrape_interval: 200ms
targets:
  - name: sg
    base_url: http://127.0.0.1:9
    model: llama
    rate: 1/h
    capacity: {{preset: llama-3.1-8b, gpu: h100, tp: 2, gpu_hourly: 3.6, context: 8192}}
    engine_metrics_url: http://{engine}/metrics
"#
    ))
    .await;
    let addr = d.addr();
    let t = [("target", "sg")];
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        value(&s, "llmprobe_engine_ttft_mean_seconds", &t).map(|_| s)
    })
    .await;
    assert_eq!(value(&s, "llmprobe_engine_scrape_success", &t), Some(1.0));
    assert_eq!(value(&s, "llmprobe_engine_running_requests", &t), Some(7.0));
    assert_eq!(value(&s, "llmprobe_engine_waiting_requests", &t), Some(1.0));
    assert_eq!(
        value(&s, "llmprobe_engine_kv_cache_usage_ratio", &t),
        Some(0.28)
    );
    assert_eq!(
        value(&s, "llmprobe_engine_kv_cache_tokens", &t),
        Some(161721.0)
    );
    let live_seqs = 161721.0 / 8192.0;
    let seqs = value(&s, "llmprobe_engine_max_concurrent_sequences", &t).unwrap();
    assert!((seqs - live_seqs).abs() < 1e-9, "{seqs}");
    // 10 requests of 150 ms between two scrapes.
    let ttft = value(&s, "llmprobe_engine_ttft_mean_seconds", &t).unwrap();
    assert!((ttft - 0.15).abs() < 1e-9, "{ttft}");
    // 1000 tokens per scrape interval: 200 ms at the earliest (the ticker delays, never
    // hurries), so at most 5000 tok/s; a busy machine stretches the interval, so the
    // floor allows ten times 200 ms.
    let tps = value(&s, "llmprobe_engine_generation_tokens_per_second", &t).unwrap();
    assert!((500.0..=6000.0).contains(&tps), "{tps}");
    // Live cost: $3.6/h × 2 GPUs / 3600 / tps × 1e6.
    let cost = value(
        &s,
        "llmprobe_engine_cost_per_million_output_tokens_dollars",
        &t,
    )
    .unwrap();
    assert!(
        (cost - 3.6 * 2.0 / 3600.0 / tps * 1e6).abs() / cost < 0.05,
        "{cost} vs {tps}"
    );
    // One request waits in SGLang's queue: no headroom, whatever the free share.
    assert_eq!(value(&s, "llmprobe_capacity_headroom_ratio", &t), Some(0.0));
    // The capacity model's own gauges are there too.
    assert!(value(&s, "llmprobe_capacity_kv_bytes_per_token", &t).unwrap() > 0.0);
    // No client TTFT (the target itself is unreachable), so no gap.
    assert_eq!(
        value(&s, "llmprobe_ttft_client_server_gap_seconds", &t),
        None
    );
    d.shutdown().await.unwrap();
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/engine/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Serves `/metrics` with `metrics(k)` at the k-th scrape, and `/props` when given.
async fn engine_server(
    metrics: impl Fn(u64) -> String + Clone + Send + Sync + 'static,
    props: Option<String>,
) -> SocketAddr {
    let n = Arc::new(AtomicU64::new(0));
    let mut app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let body = metrics(n.fetch_add(1, Ordering::SeqCst));
            async move { body }
        }),
    );
    if let Some(props) = props {
        app = app.route("/props", axum::routing::get(move || async move { props }));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// A daemon probing nothing reachable, scraping `engine`.
async fn daemon_on(engine: SocketAddr, name: &str) -> TestDaemon {
    TestDaemon::start(&format!(
        r#"
engine_scrape_interval: 200ms
targets:
  - name: {name}
    base_url: http://127.0.0.1:9
    model: m
    rate: 1/h
    engine_metrics_url: http://{engine}/metrics
"#
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_slots_from_props_give_headroom() {
    // The real capture (2 slots busy, 1 deferred), then one slot frees and nothing
    // waits; each scrape adds 300 generated tokens.
    let captured = fixture("llamacpp.txt");
    let metrics = move |k: u64| {
        captured
            .replace(
                "llamacpp:requests_processing 2",
                if k == 0 {
                    "llamacpp:requests_processing 2"
                } else {
                    "llamacpp:requests_processing 1"
                },
            )
            .replace(
                "llamacpp:requests_deferred 1",
                if k == 0 {
                    "llamacpp:requests_deferred 1"
                } else {
                    "llamacpp:requests_deferred 0"
                },
            )
            .replace(
                "llamacpp:tokens_predicted_total 900",
                &format!("llamacpp:tokens_predicted_total {}", 900 + 300 * k),
            )
    };
    let engine = engine_server(metrics, Some(fixture("llamacpp-props.json"))).await;
    let d = daemon_on(engine, "llama").await;
    let t = [("target", "llama")];
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(d.addr()).await;
        value(&s, "llmprobe_engine_generation_tokens_per_second", &t).map(|_| s)
    })
    .await;
    assert_eq!(value(&s, "llmprobe_engine_scrape_success", &t), Some(1.0));
    assert_eq!(value(&s, "llmprobe_engine_running_requests", &t), Some(1.0));
    assert_eq!(value(&s, "llmprobe_engine_waiting_requests", &t), Some(0.0));
    // total_slots of the real /props (--parallel 2).
    assert_eq!(
        value(&s, "llmprobe_engine_max_concurrent_sequences", &t),
        Some(2.0)
    );
    assert_eq!(value(&s, "llmprobe_capacity_headroom_ratio", &t), Some(0.5));
    // llama.cpp exports neither KV capacity nor a TTFT histogram.
    assert_eq!(value(&s, "llmprobe_engine_kv_cache_tokens", &t), None);
    assert_eq!(value(&s, "llmprobe_engine_ttft_mean_seconds", &t), None);
    // 300 tokens per scrape interval (200 ms at the earliest, up to ten times that on
    // a busy machine).
    let tps = value(&s, "llmprobe_engine_generation_tokens_per_second", &t).unwrap();
    assert!((150.0..=1800.0).contains(&tps), "{tps}");
    d.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_without_props_still_scrapes() {
    let captured = fixture("llamacpp.txt");
    let engine = engine_server(move |_| captured.clone(), None).await;
    let d = daemon_on(engine, "llama").await;
    let t = [("target", "llama")];
    // A scrape that timed out on a busy machine shows success 0; judge one that worked
    // (and was not caught half published).
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(d.addr()).await;
        let ok = value(&s, "llmprobe_engine_scrape_success", &t) == Some(1.0)
            && value(&s, "llmprobe_engine_running_requests", &t).is_some();
        ok.then_some(s)
    })
    .await;
    assert_eq!(value(&s, "llmprobe_engine_waiting_requests", &t), Some(1.0));
    // No slot count and no capacity block: no max sequences; a deferred request
    // still means no headroom.
    assert_eq!(
        value(&s, "llmprobe_engine_max_concurrent_sequences", &t),
        None
    );
    assert_eq!(value(&s, "llmprobe_capacity_headroom_ratio", &t), Some(0.0));
    d.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tgi_metrics_become_engine_gauges() {
    // Each scrape: 1000 more generated tokens, and the queue drained after the first.
    let text = fixture("tgi.txt");
    let metrics = move |k: u64| {
        let t = text.replace(
            "tgi_request_generated_tokens_sum 44800",
            &format!("tgi_request_generated_tokens_sum {}", 44_800 + 1000 * k),
        );
        if k == 0 {
            t
        } else {
            t.replace("tgi_queue_size 2", "tgi_queue_size 0")
        }
    };
    let engine = engine_server(metrics, None).await;
    let d = daemon_on(engine, "tgi").await;
    let t = [("target", "tgi")];
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(d.addr()).await;
        value(&s, "llmprobe_engine_generation_tokens_per_second", &t).map(|_| s)
    })
    .await;
    assert_eq!(value(&s, "llmprobe_engine_scrape_success", &t), Some(1.0));
    assert_eq!(value(&s, "llmprobe_engine_running_requests", &t), Some(6.0));
    assert_eq!(value(&s, "llmprobe_engine_waiting_requests", &t), Some(0.0));
    assert_eq!(
        value(&s, "llmprobe_engine_kv_cache_tokens", &t),
        Some(155_648.0)
    );
    assert_eq!(
        value(&s, "llmprobe_engine_kv_cache_usage_ratio", &t),
        Some(0.25)
    );
    // No capacity block: headroom is the free share of the token budget.
    assert_eq!(
        value(&s, "llmprobe_capacity_headroom_ratio", &t),
        Some(0.75)
    );
    // 1000 tokens per scrape interval, as for SGLang.
    let tps = value(&s, "llmprobe_engine_generation_tokens_per_second", &t).unwrap();
    assert!((500.0..=6000.0).contains(&tps), "{tps}");
    d.shutdown().await.unwrap();
}
