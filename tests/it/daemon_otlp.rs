//! The daemon's OTLP export against the mock and an in-test OTLP/HTTP receiver on
//! 127.0.0.1:0 that decodes the protobuf bodies: every probe is one client span with
//! the trace and span IDs the mock received in its `traceparent`, its timing equal to
//! its probe page's (the same record), and the metric points carry the GenAI names and
//! attributes, their totals equal to what the spans say.

use crate::support::daemon as daemon_support;
use crate::support::mock as mock_support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use daemon_support::*;
use llmprobe::mock::MockConfig;
use llmprobe::mock::trace_log::Counts;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value::Value};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric::Data, number_data_point};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

type Shared = Arc<Mutex<Received>>;

async fn traces(State(r): State<Shared>, body: Bytes) -> &'static str {
    let req = ExportTraceServiceRequest::decode(body).expect("a protobuf trace export");
    r.lock().unwrap().traces.push(req);
    ""
}

async fn metrics(State(r): State<Shared>, body: Bytes) -> &'static str {
    let req = ExportMetricsServiceRequest::decode(body).expect("a protobuf metrics export");
    r.lock().unwrap().metrics.push(req);
    ""
}

async fn receiver() -> (String, Shared) {
    let received = Shared::default();
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), received)
}

fn spans(r: &Shared) -> Vec<Span> {
    let r = r.lock().unwrap();
    let mut out = Vec::new();
    for req in &r.traces {
        for rs in &req.resource_spans {
            for ss in &rs.scope_spans {
                assert_eq!(ss.scope.as_ref().unwrap().name, "llmprobe");
                assert_eq!(ss.schema_url, "https://opentelemetry.io/schemas/1.41.0");
                out.extend(ss.spans.iter().cloned());
            }
        }
    }
    out
}

/// The metrics of the last export (cumulative: it holds every probe's points).
fn last_metrics(r: &Shared) -> Vec<Metric> {
    let r = r.lock().unwrap();
    let last = r.metrics.last().expect("some metrics were exported");
    last.resource_metrics
        .iter()
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| sm.metrics.iter().cloned())
        .collect()
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn string(attrs: &[KeyValue], key: &str) -> String {
    match attr(attrs, key) {
        Some(Value::StringValue(s)) => s.clone(),
        other => panic!("{key}: {other:?}"),
    }
}

fn int(attrs: &[KeyValue], key: &str) -> i64 {
    match attr(attrs, key) {
        Some(Value::IntValue(i)) => *i,
        other => panic!("{key}: {other:?}"),
    }
}

fn double(attrs: &[KeyValue], key: &str) -> f64 {
    match attr(attrs, key) {
        Some(Value::DoubleValue(v)) => *v,
        other => panic!("{key}: {other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A histogram's (count, sum) over its points whose attributes include `want`.
fn histogram(metrics: &[Metric], name: &str, unit: &str, want: &[(&str, &str)]) -> (u64, f64) {
    let m = metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no metric {name}"));
    assert_eq!(m.unit, unit, "{name}");
    let Some(Data::Histogram(h)) = &m.data else {
        panic!("{name} is not a histogram")
    };
    let mut total = (0, 0.0);
    for p in &h.data_points {
        for key in [
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "server.address",
            "server.port",
            "llmprobe.target",
            "llmprobe.scenario",
        ] {
            assert!(attr(&p.attributes, key).is_some(), "{name} lacks {key}");
        }
        if want.iter().all(|(k, v)| string(&p.attributes, k) == *v) {
            total.0 += p.count;
            total.1 += p.sum.unwrap_or(0.0);
        }
    }
    total
}

fn ms(page: &serde_json::Value, key: &str) -> f64 {
    page[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}: {page}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_are_exported_as_client_spans_and_genai_metrics() {
    let (endpoint, received) = receiver().await;
    let mock = MockConfig {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(2),
        ..MockConfig::default()
    };
    let (mock, d) = with_mock(mock, |base| {
        format!(
            r#"
otlp:
  endpoint: {endpoint}
  protocol: http/protobuf
  headers: {{X-Collector-Key: k}}
  interval: 200ms
targets:
  - name: traced
    base_url: {base}
    model: m
    rate: 10/s
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
"#
        )
    })
    .await;
    let addr = d.addr();
    wait_for(Duration::from_secs(30), || async {
        (spans(&received).len() >= 4).then_some(())
    })
    .await;
    // Each span against its probe's page, while the daemon keeps the pages.
    let seen: Counts = mock_support::client()
        .get(format!("{}/mock/traceparents", mock.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let port = i64::from(mock.addr().port());
    for span in spans(&received) {
        assert_eq!(span.name, "chat m");
        assert_eq!(span.kind, 3, "CLIENT");
        assert!(span.parent_span_id.is_empty(), "a root span");
        let a = &span.attributes;
        assert_eq!(string(a, "gen_ai.operation.name"), "chat");
        assert_eq!(string(a, "gen_ai.provider.name"), "openai");
        assert_eq!(string(a, "gen_ai.request.model"), "m");
        assert_eq!(string(a, "server.address"), "127.0.0.1");
        assert_eq!(int(a, "server.port"), port);
        assert_eq!(string(a, "llmprobe.target"), "traced");
        assert_eq!(string(a, "llmprobe.scenario"), "s");
        assert_eq!(string(a, "llmprobe.outcome"), "ok");
        assert!(attr(a, "error.type").is_none());
        // Exactly the IDs the engine was sent.
        let sent = format!("00-{}-{}-01", hex(&span.trace_id), hex(&span.span_id));
        assert!(
            seen.recent.contains(&sent),
            "{sent} not received by the mock"
        );
        let id = int(a, "llmprobe.probe.id");
        let (status, json) = get(&format!("http://{addr}/probe/{id}?format=json")).await;
        assert_eq!(status, 200, "{json}");
        let page: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            page["trace_id"].as_str(),
            Some(hex(&span.trace_id).as_str())
        );
        // The span's timing is the record's: send to end, events at their offsets
        // (the page's milliseconds are floats of the same durations).
        let sent_ms = ms(&page, "sent_ms");
        let offset = |ns: u64| (ns - span.start_time_unix_nano) as f64 / 1e6;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(
            close(
                offset(span.end_time_unix_nano),
                ms(&page, "end_ms") - sent_ms
            ),
            "{span:?} vs {page}"
        );
        let events: Vec<(&str, f64)> = span
            .events
            .iter()
            .map(|e| (e.name.as_str(), offset(e.time_unix_nano)))
            .collect();
        let want = [
            ("llmprobe.response.headers", "headers_ms"),
            ("llmprobe.response.first_token", "first_token_ms"),
            (
                "llmprobe.response.first_answer_token",
                "first_answer_token_ms",
            ),
        ];
        assert_eq!(events.len(), want.len(), "{events:?}");
        for ((name, at), (want_name, key)) in events.iter().zip(want) {
            assert_eq!(*name, want_name);
            assert!(
                close(*at, ms(&page, key) - sent_ms),
                "{name}: {at} vs {page}"
            );
        }
        assert!(close(
            double(a, "gen_ai.response.time_to_first_chunk") * 1e3,
            ms(&page, "ttft_ms")
        ));
        assert_eq!(int(a, "gen_ai.usage.output_tokens"), 4);
    }
    // Shutdown sends the rest: then the spans are every probe, and the cumulative
    // metrics' totals are theirs.
    d.shutdown().await.unwrap();
    let spans = spans(&received);
    let ids: BTreeSet<Vec<u8>> = spans.iter().map(|s| s.span_id.clone()).collect();
    assert_eq!(ids.len(), spans.len(), "one span per probe");
    let metrics = last_metrics(&received);
    let n = spans.len() as u64;
    let (count, _) = histogram(&metrics, "gen_ai.client.operation.duration", "s", &[]);
    assert_eq!(count, n);
    let (count, sum) = histogram(
        &metrics,
        "gen_ai.client.operation.time_to_first_chunk",
        "s",
        &[],
    );
    let ttfc: f64 = spans
        .iter()
        .map(|s| double(&s.attributes, "gen_ai.response.time_to_first_chunk"))
        .sum();
    assert_eq!(count, n);
    assert!((sum - ttfc).abs() < 1e-9, "{sum} vs {ttfc}");
    // Four tokens in four chunks: three gaps per probe.
    let (count, _) = histogram(
        &metrics,
        "gen_ai.client.operation.time_per_output_chunk",
        "s",
        &[],
    );
    assert_eq!(count, 3 * n);
    for (kind, attr_key) in [
        ("input", "gen_ai.usage.input_tokens"),
        ("output", "gen_ai.usage.output_tokens"),
    ] {
        let (count, sum) = histogram(
            &metrics,
            "gen_ai.client.token.usage",
            "{token}",
            &[("gen_ai.token.type", kind)],
        );
        let total: i64 = spans.iter().map(|s| int(&s.attributes, attr_key)).sum();
        assert_eq!((count, sum), (n, total as f64), "{kind}");
    }
    for name in [
        "llmprobe.client.time_to_first_answer_chunk",
        "llmprobe.client.time_per_output_token",
        "llmprobe.client.inter_token_latency",
        "llmprobe.client.dispatch_lag",
    ] {
        assert!(histogram(&metrics, name, "s", &[]).0 > 0, "{name}");
    }
    let probes = metrics
        .iter()
        .find(|m| m.name == "llmprobe.client.probes")
        .expect("the probe counter");
    let Some(Data::Sum(s)) = &probes.data else {
        panic!("a sum")
    };
    let total: i64 = s
        .data_points
        .iter()
        .map(|p| match p.value {
            Some(number_data_point::Value::AsInt(v)) => v,
            other => panic!("{other:?}"),
        })
        .sum();
    assert_eq!(total as u64, n);
}

/// The names of the metrics in the last export of a daemon started with
/// `OTEL_SEMCONV_STABILITY_OPT_IN` as `opt_in`, after a few probes of `endpoint`.
async fn exported_names(opt_in: Option<&str>, endpoint: &str) -> BTreeSet<String> {
    let (endpoint_url, received) = receiver().await;
    let mock = mock_support::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    })
    .await;
    let config = format!(
        r#"
otlp:
  endpoint: {endpoint_url}
  interval: 200ms
targets:
  - name: named
    base_url: {}
    model: m
    endpoint: {endpoint}
    rate: 10/s
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
"#,
        mock.base_url()
    );
    let overrides = llmprobe::config::Overrides {
        semconv_opt_in: opt_in.map(str::to_string),
        ..Default::default()
    };
    let d = TestDaemon::start_full(&config, overrides).await;
    wait_for(Duration::from_secs(30), || async {
        (spans(&received).len() >= 2).then_some(())
    })
    .await;
    d.shutdown().await.unwrap();
    last_metrics(&received)
        .into_iter()
        .map(|m| m.name)
        .filter(|n| n.starts_with("gen_ai."))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opt_in_chooses_the_genai_names_of_the_export() {
    let old = [
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_per_output_chunk",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.client.token.usage",
    ];
    let new = [
        "gen_ai.client.inference.duration",
        "gen_ai.client.inference.operation.input_tokens",
        "gen_ai.client.inference.operation.output_tokens",
        "gen_ai.client.inference.time_per_output_chunk",
        "gen_ai.client.inference.time_to_first_chunk",
        // The mock's usage says how many prompt tokens its prefix cache held.
        "gen_ai.client.inference.usage.cache_read.input_tokens",
        "gen_ai.client.inference.usage.input_tokens",
        "gen_ai.client.inference.usage.output_tokens",
    ];
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(exported_names(None, "chat").await, set(&old));
    assert_eq!(
        exported_names(Some("http,gen_ai_latest_experimental"), "chat").await,
        set(&new)
    );
    let both: Vec<&str> = old.iter().chain(&new).copied().collect();
    assert_eq!(
        exported_names(Some("gen_ai_latest_experimental/dup"), "chat").await,
        set(&both)
    );
    // An embedding is no inference: its duration keeps the operation's name.
    let embeddings = [
        "gen_ai.client.inference.operation.input_tokens",
        "gen_ai.client.inference.operation.output_tokens",
        "gen_ai.client.inference.usage.input_tokens",
        "gen_ai.client.inference.usage.output_tokens",
        "gen_ai.client.operation.duration",
    ];
    assert_eq!(
        exported_names(Some("gen_ai_latest_experimental"), "embeddings").await,
        set(&embeddings)
    );
}
