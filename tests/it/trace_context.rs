//! W3C trace context on the wire: every request of a client carries a `traceparent`
//! header with a fresh, sampled trace ID that its record keeps, and a target with
//! `traceparent: false` sends none. The mock notes what it received
//! (`GET /mock/traceparents`).

use crate::support::daemon as daemon_support;
use crate::support::mock as mock_support;

use std::collections::BTreeSet;
use std::time::Duration;

use daemon_support::*;
use llmprobe::client::trace::TraceContext;
use llmprobe::client::{Client, ClientConfig};
use llmprobe::mock::MockConfig;
use llmprobe::mock::trace_log::Counts;
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

fn fast_mock() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    }
}

async fn seen(base_url: &str) -> Counts {
    mock_support::client()
        .get(format!("{base_url}/mock/traceparents"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn spec() -> RequestSpec {
    RequestSpec {
        prompt: "hello".into(),
        prompt_tokens: 1,
        max_tokens: 4,
        history: Vec::new(),
        system: None,
        model: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_carries_its_own_sampled_trace_id_and_the_record_keeps_it() {
    let mock = mock_support::start(fast_mock()).await;
    let client = Client::new(
        ClientConfig {
            base_url: mock.base_url(),
            model: "m".into(),
            ..ClientConfig::default()
        },
        None,
    )
    .unwrap();
    let mut ids = Vec::new();
    for i in 0..5 {
        let rec = client
            .send(&spec(), i, Duration::ZERO, Instant::now())
            .await;
        assert!(rec.is_success(), "{:?}", rec.error);
        ids.push(rec.trace_id.expect("the record keeps the trace ID"));
    }
    let got = seen(&mock.base_url()).await;
    assert_eq!((got.with, got.without), (5, 0));
    let sent: Vec<String> = got
        .recent
        .iter()
        .map(|v| {
            assert!(v.ends_with("-01"), "sampled flag: {v}");
            TraceContext::parse(v)
                .unwrap_or_else(|| panic!("a valid traceparent: {v}"))
                .trace_id_hex()
        })
        .collect();
    assert_eq!(
        sent, ids,
        "the mock saw the trace IDs the records keep, in order"
    );
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        5,
        "a fresh ID per request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_with_traceparent_off_sends_none() {
    let traced = mock_support::start(fast_mock()).await;
    let plain = mock_support::start(fast_mock()).await;
    let d = TestDaemon::start(&format!(
        r#"
targets:
  - name: traced
    base_url: {}
    model: m
    rate: 20/s
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
  - name: plain
    base_url: {}
    model: m
    rate: 20/s
    traceparent: false
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
"#,
        traced.base_url(),
        plain.base_url()
    ))
    .await;
    let (t, p) = (traced.base_url(), plain.base_url());
    wait_for(Duration::from_secs(30), || async {
        (seen(&t).await.with >= 5 && seen(&p).await.without >= 5).then_some(())
    })
    .await;
    let (t, p) = (seen(&t).await, seen(&p).await);
    assert_eq!(
        t.without, 0,
        "every probe of `traced` carries a traceparent"
    );
    assert!(
        t.recent.iter().all(|v| TraceContext::parse(v).is_some()),
        "{:?}",
        t.recent
    );
    assert_eq!(p.with, 0, "no traceparent reaches `plain`: {:?}", p.recent);
    d.shutdown().await.unwrap();
}

/// The number after the first `/probe/` link of a page.
fn first_probe_link(html: &str) -> Option<u64> {
    let at = html.find("href=\"/probe/")? + "href=\"/probe/".len();
    html[at..].split('"').next()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_page_shows_the_record_and_its_trace_id_the_engine_received() {
    let mock = MockConfig {
        ttft: Duration::from_millis(30),
        itl: Duration::from_millis(2),
        ..MockConfig::default()
    };
    let (mock, d) = with_mock(mock, |base| {
        format!(
            r#"
probe_pages: 4
targets:
  - name: paged
    base_url: {base}
    model: m
    rate: 20/s
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4, slo: {{ttft: 10s}}}}]
"#
        )
    })
    .await;
    let addr = d.addr();
    // Enough probes that the first pages were let go (4 kept).
    let id = wait_for(Duration::from_secs(30), || async {
        let (_, html) = get(&format!("http://{addr}/target/paged")).await;
        first_probe_link(&html).filter(|id| *id > 8)
    })
    .await;
    let (status, html) = get(&format!("http://{addr}/probe/{id}")).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains(&format!("Probe {id}")) && html.contains("first token"),
        "{html}"
    );
    let (status, json) = get(&format!("http://{addr}/probe/{id}?format=json")).await;
    assert_eq!(status, 200);
    let page: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(page["id"], id);
    assert_eq!(
        (page["target"].as_str(), page["scenario"].as_str()),
        (Some("paged"), Some("s"))
    );
    assert_eq!(page["outcome"], "ok");
    // The mock's TTFT is a floor: the client never sees the first token earlier.
    let ttft = page["ttft_ms"].as_f64().unwrap();
    assert!(ttft >= 30.0, "TTFT {ttft} ms below the mock's 30 ms");
    // One definition: the page's TTFT is its first token after its send, both read from
    // the same record (only float rounding between them).
    let first = page["first_token_ms"].as_f64().unwrap();
    let sent = page["sent_ms"].as_f64().unwrap();
    assert!(
        (first - sent - ttft).abs() < 1e-6,
        "{first} - {sent} != {ttft}"
    );
    let trace = page["trace_id"].as_str().unwrap().to_string();
    let seen = seen(&mock.base_url()).await;
    assert!(
        seen.recent
            .iter()
            .any(|v| TraceContext::parse(v).is_some_and(|t| t.trace_id_hex() == trace)),
        "trace {trace} not among those the mock received"
    );
    assert!(html.contains(&trace), "the HTML page shows the trace ID");
    // Let go pages and bad IDs say so.
    let (status, body) = get(&format!("http://{addr}/probe/1")).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("only the latest are kept"), "{body}");
    assert_eq!(get(&format!("http://{addr}/probe/x")).await.0, 404);
    assert_eq!(
        get(&format!("http://{addr}/probe/{id}?format=xml")).await.0,
        400
    );
    d.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_sends_trace_ids_it_records_unless_told_not_to() {
    for (flag, traced) in [(None, true), (Some("--no-traceparent"), false)] {
        let mock = mock_support::start(fast_mock()).await;
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("records.jsonl");
        let base = mock.base_url();
        let mut cmd = crate::support::bench::bench();
        cmd.args(["--base-url", &base, "--model", "m", "--rate", "50"])
            .args([
                "--num-requests",
                "4",
                "--input-len",
                "16",
                "--output-len",
                "4",
            ])
            .args(["--no-progress", "--records"])
            .arg(&records);
        if let Some(f) = flag {
            cmd.arg(f);
        }
        // The mock runs on this runtime: the command waits on a blocking thread.
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ids: Vec<Option<String>> = crate::support::bench::jsonl(&records)
            .iter()
            .filter(|r| r.get("outcome").is_some())
            .map(|r| r["trace_id"].as_str().map(str::to_string))
            .collect();
        assert_eq!(ids.len(), 4);
        let got = seen(&base).await;
        if traced {
            assert_eq!((got.with, got.without), (4, 0));
            let sent: BTreeSet<String> = got
                .recent
                .iter()
                .filter_map(|v| TraceContext::parse(v).map(|t| t.trace_id_hex()))
                .collect();
            let kept: BTreeSet<String> = ids.into_iter().map(Option::unwrap).collect();
            assert_eq!(
                sent, kept,
                "the records keep the trace IDs the mock received"
            );
        } else {
            assert_eq!((got.with, got.without), (0, 4));
            assert!(ids.iter().all(Option::is_none), "{ids:?}");
        }
    }
}
