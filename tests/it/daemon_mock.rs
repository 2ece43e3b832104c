//! The daemon against the mock engine on 127.0.0.1:0, in process: counts on /metrics
//! are exact (output lengths, samples per probe), latencies are never below the mock's
//! truth (TTFT 50 ms, 10 ms per token: a measurement can only be late) and far from
//! absurd, goodput follows the SLOs, failures carry their reason, the skip policy and
//! the token budget drop arrivals, and `promtool check metrics` is clean. How late the
//! client reads on a quiet machine is a benchmark (BENCHMARKS.md), not a test here: a
//! busy CI machine delays wake-ups whatever the client does.

use crate::support::daemon as daemon_support;

use std::net::SocketAddr;
use std::time::Duration;

use daemon_support::*;
use llmprobe::daemon::Daemon;
use llmprobe::mock::MockConfig;

/// The tests of this file each run a mock and a daemon at 10–20 probes/s; run them one
/// at a time so they do not slow each other's probes on a small CI machine.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits until `target`/`scenario` has completed at least `n` probes.
async fn until_requests(addr: SocketAddr, target: &str, scenario: &str, n: f64) -> Vec<Sample> {
    wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let done = value(
            &s,
            "llmprobe_requests_total",
            &[("target", target), ("scenario", scenario)],
        )
        .unwrap_or(0.0);
        // Probes go on while /metrics is read, and a scrape reads its series one after
        // another: a probe that ends in between tears it (its request counted, not yet
        // its TTFT). A scrape whose counts the next one repeats fell between two probes.
        (done >= n && counts(&s) == counts(&scrape(addr).await)).then_some(s)
    })
    .await
}

/// Every counter and histogram sample of the probes: what a probe ending changes.
fn counts(s: &[Sample]) -> Vec<(&str, &std::collections::BTreeMap<String, String>, f64)> {
    s.iter()
        .filter(|x| x.name.starts_with("llmprobe_"))
        // The engine's and the process' own series move with time, not with probes.
        .filter(|x| {
            !["llmprobe_engine_", "llmprobe_cgroup_"]
                .iter()
                .any(|p| x.name.starts_with(p))
        })
        .filter(|x| {
            ["_total", "_count", "_sum", "_bucket"]
                .iter()
                .any(|e| x.name.ends_with(e))
        })
        .map(|x| (x.name.as_str(), &x.labels, x.value))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_match_the_mock_truth() {
    let _serial = SERIAL.lock().await;
    let (m, d) = with_mock(MockConfig::default(), |base| {
        format!(
            r#"
engine_scrape_interval: 500ms
grace_period: 1s
targets:
  - name: good
    base_url: {base}
    model: mock-llm
    rate: 20/s
    max_inflight: 64
    price: {{input_per_million: 1, output_per_million: 2}}
    engine_metrics_url: {base}/metrics
    scenarios:
      - name: lenient
        input_tokens: 40
        output_tokens: 8
        slo: {{ttft: 2500ms, tpot: 500ms, e2e: 5s}}
      - name: strict
        input_tokens: 40
        output_tokens: 8
        slo: {{ttft: 30ms}}
  - name: broken
    base_url: {base}
    model: mock-llm
    rate: 10/s
    headers: {{x-mock-fault: http_500}}
"#
        )
    })
    .await;
    let addr = d.addr();
    until_requests(addr, "good", "lenient", 10.0).await;
    until_requests(addr, "good", "strict", 10.0).await;
    let s = until_requests(addr, "broken", "default", 5.0).await;
    let l = |scenario| [("target", "good"), ("scenario", scenario)];

    for scenario in ["lenient", "strict"] {
        let n = value(&s, "llmprobe_requests_total", &l(scenario)).unwrap();
        // TTFT: the mock sends the first token 50 ms after reading the body, and a
        // measured TTFT can only be late, never early: no observation at or below 40 ms.
        // How late is the machine's business (a busy CI box delays wake-ups by tens of
        // milliseconds), so above it only nonsense is ruled out: every TTFT within the
        // lenient SLO, 50 times the truth.
        let ttft_count = value(&s, "llmprobe_ttft_seconds_count", &l(scenario)).unwrap();
        assert_eq!(ttft_count, n, "{scenario}: one TTFT per probe");
        let le = |b: &str| {
            value(
                &s,
                "llmprobe_ttft_seconds_bucket",
                &[("target", "good"), ("scenario", scenario), ("le", b)],
            )
            .unwrap()
        };
        assert_eq!(le("0.04"), 0.0, "{scenario}: no TTFT at or below 40 ms");
        assert_eq!(le("2.5"), n, "{scenario}: every TTFT at or below 2.5 s");
        // Exactly 8 output tokens per probe (usage), 7 per-token ITL samples.
        assert_eq!(
            value(&s, "llmprobe_output_tokens_total", &l(scenario)).unwrap(),
            8.0 * n
        );
        assert_eq!(
            value(
                &s,
                "llmprobe_inter_token_latency_seconds_count",
                &l(scenario)
            )
            .unwrap(),
            7.0 * n
        );
        // 10 ms per token. A single gap can come out short (a token read late, the next
        // one on time), so the per-token figures have no floor of their own; what
        // cannot be early is the last token: per probe TTFT + the 7 gaps (= TPOT × 7)
        // is the time to the last token, at least 50 + 7 × 10 = 120 ms. Their means
        // are bounded above at ten times the truth.
        let sum = |family: &str| value(&s, &format!("{family}_sum"), &l(scenario)).unwrap();
        let mean = |family: &str| {
            sum(family) / value(&s, &format!("{family}_count"), &l(scenario)).unwrap()
        };
        let ttft_sum = sum("llmprobe_ttft_seconds");
        for family in [
            "llmprobe_inter_token_latency_seconds",
            "llmprobe_tpot_seconds",
        ] {
            let m = mean(family);
            assert!(m > 0.0 && m < 0.1, "{scenario}: {family} mean {m}");
            let to_last = (ttft_sum + 7.0 * m * n) / n;
            assert!(
                to_last >= 0.12 - 1e-6,
                "{scenario}: TTFT + 7 × {family} mean is {to_last} s, below 120 ms"
            );
        }
        // E2E: at least 50 ms + 7 × 10 ms = 120 ms, and not ten times that.
        let e2e = mean("llmprobe_request_duration_seconds");
        assert!(
            (0.12 - 1e-6..1.2).contains(&e2e),
            "{scenario}: e2e mean {e2e}"
        );
        assert_eq!(
            value(&s, "llmprobe_dispatch_lag_seconds_count", &l(scenario)).unwrap(),
            n
        );
        assert!(value(&s, "llmprobe_last_success_timestamp_seconds", &l(scenario)).unwrap() > 1e9);
        // Probe spend: prompt × $1 + output × $2 per million.
        let prompt = value(&s, "llmprobe_prompt_tokens_total", &l(scenario)).unwrap();
        assert!(prompt > 0.0);
        let cost = value(&s, "llmprobe_probe_cost_dollars_total", &l(scenario)).unwrap();
        assert!((cost - (prompt + 2.0 * 8.0 * n) / 1e6).abs() < 1e-9);
    }
    // Goodput follows each scenario's SLOs: a TTFT of 50 ms and more never meets 30 ms;
    // the lenient SLOs are 20–50 times the truth, so every probe meets them.
    assert_eq!(
        value(&s, "llmprobe_goodput_requests_total", &l("lenient")),
        value(&s, "llmprobe_requests_total", &l("lenient"))
    );
    assert_eq!(
        value(&s, "llmprobe_goodput_requests_total", &l("strict")),
        Some(0.0)
    );
    assert_eq!(
        value(&s, "llmprobe_slo_ttft_seconds", &l("strict")),
        Some(0.03)
    );
    assert_eq!(value(&s, "llmprobe_slo_tpot_seconds", &l("strict")), None);
    // Per-SLI attainment uses each scenario's own threshold: 50 ms meets 2.5 s always
    // and 30 ms never; only configured SLIs are exported.
    let met = |scenario: &str, sli: &str| {
        value(
            &s,
            "llmprobe_slo_met_requests_total",
            &[("target", "good"), ("scenario", scenario), ("sli", sli)],
        )
    };
    assert_eq!(
        met("lenient", "ttft"),
        value(&s, "llmprobe_requests_total", &l("lenient"))
    );
    assert_eq!(met("strict", "ttft"), Some(0.0));
    assert_eq!(met("strict", "tpot"), None);
    assert!(value(&s, "llmprobe_probe_rate_per_second", &l("strict")).unwrap() > 0.0);
    // Every SLO threshold is a bucket bound of its own scenario's series only (2.5 is
    // also one of vLLM's bounds, 0.03 is not).
    let bucket = |scenario: &str, le: &str| {
        value(
            &s,
            "llmprobe_ttft_seconds_bucket",
            &[("target", "good"), ("scenario", scenario), ("le", le)],
        )
    };
    assert!(bucket("lenient", "2.5").is_some() && bucket("strict", "2.5").is_some());
    assert!(bucket("strict", "0.03").is_some());
    assert!(bucket("lenient", "0.03").is_none());

    // The broken target: every probe fails with reason http_5xx, none is good.
    let b = [("target", "broken"), ("scenario", "default")];
    let n = value(&s, "llmprobe_requests_total", &b).unwrap();
    assert_eq!(
        value(
            &s,
            "llmprobe_request_failures_total",
            &[("target", "broken"), ("reason", "http_5xx")]
        ),
        Some(n)
    );
    assert_eq!(
        sum(&s, "llmprobe_request_failures_total", &[("target", "good")]),
        0.0
    );
    assert_eq!(value(&s, "llmprobe_goodput_requests_total", &b), Some(0.0));
    assert_eq!(value(&s, "llmprobe_ttft_seconds_count", &b), Some(0.0));

    // Labels: never a URL.
    let text = get(&format!("http://{addr}/metrics")).await.1;
    assert!(!text.contains(&m.base_url()), "a URL leaked into /metrics");
    for sample in &s {
        for k in sample.labels.keys() {
            assert!(
                [
                    "target", "model", "scenario", "reason", "sli", "le", "version", "index",
                    "count"
                ]
                .contains(&k.as_str()),
                "unexpected label {k} on {}",
                sample.name
            );
        }
    }

    // Self metrics.
    assert_eq!(value(&s, "llmprobe_targets", &[]), Some(2.0));
    assert_eq!(
        value(&s, "llmprobe_config_last_reload_successful", &[]),
        Some(1.0)
    );
    assert!(value(&s, "llmprobe_build_info", &[]).is_some());
    assert!(value(&s, "process_resident_memory_bytes", &[]).is_some());

    // Ready once every scenario has a result.
    assert_eq!(get(&format!("http://{addr}/-/ready")).await.0, 200);
    assert_eq!(get(&format!("http://{addr}/-/healthy")).await.0, 200);
    let page = get(&format!("http://{addr}/")).await.1;
    assert!(page.contains("\"/target/broken\">broken</a>") && page.contains("http_5xx"));

    d.shutdown().await.unwrap();
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_gauges_follow_the_mock() {
    let _serial = SERIAL.lock().await;
    // A TTFT long enough that the client/server gap (the client's own lateness, a few
    // ms, more on a busy machine) cannot be mistaken for the TTFT itself.
    let mock = MockConfig {
        ttft: Duration::from_millis(250),
        num_gpu_blocks: 1000,
        block_size: 16,
        ..MockConfig::default()
    };
    let (m, d) = with_mock(mock, |base| {
        format!(
            r#"
engine_scrape_interval: 300ms
targets:
  - name: eng
    base_url: {base}
    model: mock-llm
    rate: 20/s
    engine_metrics_url: {base}/metrics
    scenarios:
      - {{input_tokens: 40, output_tokens: 8}}
  - name: down
    base_url: {base}
    model: mock-llm
    rate: 1/min
    engine_metrics_url: http://127.0.0.1:9/metrics
"#
        )
    })
    .await;
    let addr = d.addr();
    let e = [("target", "eng")];
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let ready = value(&s, "llmprobe_engine_ttft_mean_seconds", &e).is_some()
            && value(&s, "llmprobe_ttft_client_server_gap_seconds", &e).is_some()
            && value(&s, "llmprobe_engine_scrape_success", &[("target", "down")]).is_some();
        ready.then_some(s)
    })
    .await;
    assert_eq!(value(&s, "llmprobe_engine_scrape_success", &e), Some(1.0));
    // KV capacity = num_gpu_blocks × block_size. Without a capacity block there is no
    // context to divide it by (the probes' 48 tokens are not production's).
    assert_eq!(
        value(&s, "llmprobe_engine_kv_cache_tokens", &e),
        Some(16000.0)
    );
    assert_eq!(
        value(&s, "llmprobe_engine_max_concurrent_sequences", &e),
        None
    );
    // The server's TTFT is what the mock did: its 250 ms or later (its timer is never
    // early; a busy machine makes it late), bounded at ten times that.
    let server = value(&s, "llmprobe_engine_ttft_mean_seconds", &e).unwrap();
    assert!((0.2499..2.5).contains(&server), "server ttft {server}");
    // The gap is the client's mean TTFT minus the server's over the last scrape
    // interval: the client's own lateness, judged against what the engine did. Client
    // and server windows need not hold the same probes, so it may come out a little
    // negative; it is a difference of two TTFTs, not a TTFT (250 ms).
    let gap = value(&s, "llmprobe_ttft_client_server_gap_seconds", &e).unwrap();
    assert!((-0.1..0.1).contains(&gap), "gap {gap}");
    assert!(value(&s, "llmprobe_engine_running_requests", &e).is_some());
    assert!(value(&s, "llmprobe_engine_generation_tokens_per_second", &e).unwrap() > 0.0);
    // Headroom is the free KV share (no queue: the mock admits everything).
    let headroom = value(&s, "llmprobe_capacity_headroom_ratio", &e).unwrap();
    assert!((0.9..=1.0).contains(&headroom), "headroom {headroom}");
    assert_eq!(value(&s, "llmprobe_engine_waiting_requests", &e), Some(0.0));
    // A dead engine endpoint is a gauge, not a crash; its live numbers are absent.
    let dn = [("target", "down")];
    assert_eq!(value(&s, "llmprobe_engine_scrape_success", &dn), Some(0.0));
    assert_eq!(value(&s, "llmprobe_engine_running_requests", &dn), None);
    d.shutdown().await.unwrap();
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_policy_drops_arrivals_beyond_max_inflight() {
    let _serial = SERIAL.lock().await;
    // Each probe takes ~1 s; 20 arrivals per second with one slot: most are skipped.
    let mock = MockConfig {
        ttft: Duration::from_millis(1000),
        ..MockConfig::default()
    };
    let (m, d) = with_mock(mock, |base| {
        format!(
            r#"
grace_period: 1s
targets:
  - name: slow
    base_url: {base}
    model: mock-llm
    rate: 20/s
    max_inflight: 1
    scenarios:
      - {{input_tokens: 40, output_tokens: 2}}
"#
        )
    })
    .await;
    let addr = d.addr();
    let l = [("target", "slow"), ("reason", "max_inflight")];
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let done = value(&s, "llmprobe_requests_total", &[("target", "slow")]).unwrap_or(0.0);
        (done >= 2.0).then_some(s)
    })
    .await;
    let skipped = value(&s, "llmprobe_probes_skipped_total", &l).unwrap();
    let done = value(&s, "llmprobe_requests_total", &[("target", "slow")]).unwrap();
    assert!(skipped > 5.0 * done, "skipped {skipped}, done {done}");
    let inflight = value(&s, "llmprobe_inflight_requests", &[("target", "slow")]).unwrap();
    assert!(inflight <= 1.0);
    assert_eq!(
        value(
            &s,
            "llmprobe_probes_skipped_total",
            &[("target", "slow"), ("reason", "token_budget")]
        ),
        Some(0.0)
    );
    d.shutdown().await.unwrap();
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_budget_stops_probes_once_spent() {
    let _serial = SERIAL.lock().await;
    // Each probe costs about 40 + 10 tokens; 200 tokens per hour pay for about four
    // (the refill of 200/h is negligible over the test).
    let (m, d) = with_mock(MockConfig::default(), |base| {
        format!(
            r#"
targets:
  - name: cheap
    base_url: {base}
    model: mock-llm
    rate: 20/s
    token_budget_per_hour: 200
    scenarios:
      - {{input_tokens: 40, output_tokens: 10}}
"#
        )
    })
    .await;
    let addr = d.addr();
    let l = [("target", "cheap"), ("reason", "token_budget")];
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        (value(&s, "llmprobe_probes_skipped_total", &l).unwrap_or(0.0) >= 20.0).then_some(s)
    })
    .await;
    let done = value(&s, "llmprobe_requests_total", &[("target", "cheap")]).unwrap();
    let spent = value(&s, "llmprobe_prompt_tokens_total", &[("target", "cheap")]).unwrap()
        + value(&s, "llmprobe_output_tokens_total", &[("target", "cheap")]).unwrap();
    assert!((2.0..=6.0).contains(&done), "probes sent: {done}");
    assert!(spent <= 200.0 + 60.0, "spent {spent} tokens");
    d.shutdown().await.unwrap();
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_finds_nothing_on_a_live_scrape() {
    let _serial = SERIAL.lock().await;
    let promtool = std::env::var("LLMPROBE_PROMTOOL").unwrap_or_else(|_| "promtool".into());
    if std::process::Command::new(&promtool)
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("LLMPROBE_REQUIRE_TOOLS").as_deref() != Ok("1"),
            "promtool not found and LLMPROBE_REQUIRE_TOOLS=1"
        );
        eprintln!("SKIPPED: promtool not found (set LLMPROBE_PROMTOOL or install prometheus)");
        return;
    }
    let (m, d) = with_mock(MockConfig::default(), |base| {
        llmprobe::daemon::demo::config_text(base, "mock-llm", &[])
    })
    .await;
    let addr = d.addr();
    // Wait for every family to have data, engine gauges included.
    let text = wait_for(Duration::from_secs(30), || async {
        let (_, t) = get(&format!("http://{addr}/metrics")).await;
        (t.contains("llmprobe_engine_ttft_mean_seconds{")
            && t.contains("llmprobe_tpot_seconds_count{"))
        .then_some(t)
    })
    .await;
    let file = d.dir().join("scrape.txt");
    std::fs::write(&file, &text).unwrap();
    let out = std::process::Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && report.trim().is_empty(),
        "promtool: {report}"
    );
    d.shutdown().await.unwrap();
    m.shutdown().await;
}

/// Every metric name in docs/metrics.md (backticked `llmprobe_…` words).
fn documented_families() -> Vec<String> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md")).unwrap();
    let mut names: Vec<String> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        // `llmprobe_` alone is the namespace, not a metric.
        .filter(|w| w.starts_with("llmprobe_") && w.len() > "llmprobe_".len())
        .map(|w| w.split('{').next().unwrap().to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_demo_populates_every_documented_family() {
    let _serial = SERIAL.lock().await;
    let (mock, source) = llmprobe::daemon::demo::start(&["http_500:0.3".to_string()])
        .await
        .unwrap();
    let d = Daemon::start(source, Some("127.0.0.1:0".into()))
        .await
        .unwrap();
    let addr = d.addr();
    let families = documented_families();
    assert!(families.len() >= 35, "{families:?}");
    let (status, headers_ok) = {
        let r = http()
            .get(format!("http://{addr}/metrics"))
            .send()
            .await
            .unwrap();
        let ct = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (r.status().as_u16(), ct == "text/plain; version=0.0.4")
    };
    assert_eq!(status, 200);
    assert!(headers_ok, "/metrics content type");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let s = scrape(addr).await;
        let has = |name: &str| {
            s.iter()
                .any(|x| x.name == name || x.name == format!("{name}_count"))
        };
        let missing: Vec<&String> = families.iter().filter(|f| !has(f)).collect();
        let failures = sum(
            &s,
            "llmprobe_request_failures_total",
            &[("reason", "http_5xx")],
        );
        if missing.is_empty() && failures > 0.0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "within 30 s: {failures} http_5xx failures, families without data: {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The demo engine is as big as its capacity block says: a few probes in flight
    // leave nearly all of it free (no false HeadroomLow).
    let s = scrape(addr).await;
    let t = [("target", "mock")];
    let headroom = value(&s, "llmprobe_capacity_headroom_ratio", &t).unwrap();
    assert!(headroom > 0.8, "headroom {headroom}");
    let seqs = value(&s, "llmprobe_engine_max_concurrent_sequences", &t).unwrap();
    let model = value(&s, "llmprobe_capacity_max_concurrent_sequences", &t).unwrap();
    assert!((seqs - model).abs() / model < 0.01, "{seqs} vs {model}");
    // The fleet's energy figures are the sums of its replicas' of the same round: one
    // scrape shows one round (publishing holds the exposition's batch lock).
    let fleet = [("target", "mock-fleet")];
    for suffix in [
        "gpus",
        "gpu_power_watts",
        "gpu_memory_used_bytes",
        "roofline_tokens_per_second",
    ] {
        let replicas = sum(&s, &format!("llmprobe_replica_{suffix}"), &fleet);
        let total = value(&s, &format!("llmprobe_fleet_{suffix}"), &fleet).unwrap();
        assert!(
            (total - replicas).abs() <= 1e-9 * total.abs().max(1.0),
            "{suffix}: fleet {total} vs replicas {replicas}"
        );
    }
    assert_eq!(value(&s, "llmprobe_fleet_gpus", &fleet), Some(2.0));
    d.shutdown().await.unwrap();
    mock.shutdown().await;
}
