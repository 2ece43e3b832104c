//! Exemplars: a scraper that asks for OpenMetrics gets, on each latency histogram
//! bucket, the newest probe that fell in it, by trace ID and probe ID; the probe ID
//! resolves at `/probe/ID` to the same probe (same trace ID, a value in that bucket).
//! A scraper that does not ask gets the classic format, without exemplars.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::mock::MockConfig;

const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// One bucket line of a histogram in the OpenMetrics text, with its exemplar if any.
#[derive(Debug)]
struct Bucket {
    series: String,
    le: f64,
    exemplar: Option<(String, u64, f64)>,
}

/// The bucket lines of `family` (series labels without `le`), in order.
fn buckets(text: &str, family: &str) -> Vec<Bucket> {
    let prefix = format!("{family}_bucket{{");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|l| {
            let (sample, exemplar) = match l.split_once(" # ") {
                Some((s, e)) => (s, Some(e)),
                None => (l, None),
            };
            let (labels, _count) = sample.rsplit_once("} ").unwrap();
            let (series, le) = labels.rsplit_once("le=\"").unwrap();
            let le = le.trim_end_matches('"');
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            let exemplar = exemplar.map(|e| {
                let (labels, rest) = e.trim_start_matches('{').split_once("} ").unwrap();
                let label = |k: &str| {
                    labels
                        .split(',')
                        .find_map(|p| p.strip_prefix(&format!("{k}=\"")))
                        .unwrap()
                        .trim_end_matches('"')
                        .to_string()
                };
                let value: f64 = rest.split(' ').next().unwrap().parse().unwrap();
                (label("trace_id"), label("probe_id").parse().unwrap(), value)
            });
            Bucket {
                series: series.to_string(),
                le,
                exemplar,
            }
        })
        .collect()
}

async fn scrape_as(addr: std::net::SocketAddr, accept: Option<&str>) -> (String, String) {
    let mut req = http().get(format!("http://{addr}/metrics"));
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let r = req.send().await.unwrap();
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    (ct, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exemplars_name_probes_whose_pages_hold_the_same_observation() {
    // TTFT spread over a few buckets: 20..80 ms jitter around the mock's 50 ms.
    let mock = MockConfig {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(2),
        ..MockConfig::default()
    };
    let (_mock, d) = with_mock(mock, |base| {
        format!(
            r#"
location: lab
targets:
  - name: ex
    base_url: {base}
    model: m
    rate: 20/s
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
"#
        )
    })
    .await;
    let addr = d.addr();
    let text = wait_for(Duration::from_secs(30), || async {
        let (_, text) = scrape_as(addr, Some(PROMETHEUS_ACCEPT)).await;
        let n = buckets(&text, "llmprobe_ttft_seconds")
            .iter()
            .filter(|b| b.exemplar.is_some())
            .count();
        (n >= 1).then_some(text)
    })
    .await;
    assert!(text.ends_with("# EOF\n"));
    for family in [
        "llmprobe_ttft_seconds",
        "llmprobe_ttfa_seconds",
        "llmprobe_tpot_seconds",
        "llmprobe_request_duration_seconds",
    ] {
        let bs = buckets(&text, family);
        assert!(!bs.is_empty(), "{family} has buckets");
        let mut checked = 0;
        for (i, b) in bs.iter().enumerate() {
            let Some((trace, probe, value)) = &b.exemplar else {
                continue;
            };
            assert!(b.series.contains("location=\"lab\""), "{}", b.series);
            // The bucket it names is the one the value falls in.
            let below = (i > 0 && bs[i - 1].series == b.series).then(|| bs[i - 1].le);
            assert!(
                *value <= b.le && below.is_none_or(|l| *value > l),
                "{family}: {value} in le={} (previous {below:?})",
                b.le
            );
            let (status, json) = get(&format!("http://{addr}/probe/{probe}?format=json")).await;
            if status == 404 {
                continue; // let go since: the page store keeps the newest
            }
            let page: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(page["trace_id"].as_str(), Some(trace.as_str()), "{json}");
            assert_eq!(page["target"], "ex");
            let key = match family {
                "llmprobe_ttft_seconds" => "ttft_ms",
                "llmprobe_ttfa_seconds" => "ttfa_ms",
                "llmprobe_tpot_seconds" => "tpot_ms",
                _ => "e2e_ms",
            };
            if let Some(ms) = page[key].as_f64() {
                assert!(
                    (ms / 1e3 - value).abs() < 1e-9,
                    "{family}: page {key} {ms} ms, exemplar {value} s"
                );
            }
            checked += 1;
        }
        assert!(
            family != "llmprobe_ttft_seconds" || checked >= 1,
            "a TTFT exemplar resolved to a page\n{text}"
        );
    }
    // ITL has many values per probe: no exemplars.
    assert!(
        buckets(&text, "llmprobe_inter_token_latency_seconds")
            .iter()
            .all(|b| b.exemplar.is_none())
    );
    let (ct, classic) = scrape_as(addr, None).await;
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    assert!(
        !classic.contains(" # {"),
        "no exemplars in the classic format"
    );
    let (ct, _) = scrape_as(addr, Some(PROMETHEUS_ACCEPT)).await;
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    d.shutdown().await.unwrap();
}
