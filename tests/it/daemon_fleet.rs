//! Replica discovery in the daemon, end to end on loopback: three `llmprobe mock`
//! replicas on 127.0.0.2–4 (one slow), found through file_sd or a real dnsmasq; each
//! probed and scraped under its own `replica` label, the fleet gauges the sums of the
//! replicas' own in one round, and churn that removes and adds a replica's series.

use crate::support::daemon as daemon_support;
use crate::support::dnsmasq::Dnsmasq;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use daemon_support::*;
use llmprobe::mock::{MockConfig, MockServer};

/// Generous bound for conditions that take a few probe or scrape intervals.
const LIMIT: Duration = Duration::from_secs(60);

/// A mock on `ip:port` (`port` 0: any) with `blocks` KV blocks of 16 tokens.
async fn replica(ip: &str, port: u16, ttft_ms: u64, blocks: u32) -> anyhow::Result<MockServer> {
    let config = MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(1),
        output_tokens: Some(4),
        num_gpu_blocks: blocks,
        ..MockConfig::default()
    };
    llmprobe::mock::start(config, format!("{ip}:{port}").parse()?).await
}

/// Three replicas on one port (DNS A records carry no port): 127.0.0.2 fast with 8
/// sequences of room at a 4096-token context, 127.0.0.3 slow with 4, 127.0.0.4 fast
/// with 2.
async fn three_replicas() -> Vec<MockServer> {
    for _ in 0..20 {
        let first = replica("127.0.0.2", 0, 5, 2048).await.unwrap();
        let port = first.addr().port();
        let (Ok(slow), Ok(third)) = (
            replica("127.0.0.3", port, 400, 1024).await,
            replica("127.0.0.4", port, 5, 512).await,
        ) else {
            continue;
        };
        return vec![first, slow, third];
    }
    panic!("no port free on 127.0.0.2, .3 and .4 at once");
}

fn names(mocks: &[MockServer]) -> Vec<String> {
    mocks.iter().map(|m| m.addr().to_string()).collect()
}

fn config(replicas_from: &str) -> String {
    format!(
        r#"
engine_scrape_interval: 200ms
targets:
  - name: fleet
    base_url: http://127.0.0.1:9
    model: mock-llm
    rate: 1/h
    scenarios:
      - {{name: default, input_tokens: 32, output_tokens: 4}}
    capacity: {{preset: llama-3.1-8b, gpu: h100, tp: 2, gpu_hourly: 3.6, context: 4096}}
    replica_rate: 5/s
    replicas_from:
{replicas_from}
"#
    )
}

/// Writes a file_sd file by rename, as config management does: one target group per
/// replica, with a `zone` label (allowed) and a `pod` label (not).
fn write_sd(path: &Path, replicas: &[String]) {
    let tmp = path.with_extension("tmp");
    let groups: Vec<String> = replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(r#"{{"targets": [{r:?}], "labels": {{"zone": "z{i}", "pod": "p{i}"}}}}"#)
        })
        .collect();
    std::fs::write(&tmp, format!("[{}]", groups.join(", "))).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The `replica` label values of every series in `s`.
fn replicas_seen(s: &[Sample]) -> BTreeSet<String> {
    s.iter()
        .filter_map(|x| x.labels.get("replica").cloned())
        .collect()
}

/// A scrape once every replica in `want` (and no other) has `n` probes and a
/// successful engine scrape, and the fleet counts them all.
async fn until_probed(addr: SocketAddr, want: &[String], n: f64) -> Vec<Sample> {
    wait_for(LIMIT, || async {
        let s = scrape(addr).await;
        let all = want.iter().all(|r| {
            let l = [("target", "fleet"), ("replica", r.as_str())];
            sum(&s, "llmprobe_replica_requests_total", &l) >= n
                && value(&s, "llmprobe_replica_engine_scrape_success", &l) == Some(1.0)
        });
        let counted = value(
            &s,
            "llmprobe_fleet_scraped_replicas",
            &[("target", "fleet")],
        ) == Some(want.len() as f64);
        let only = replicas_seen(&s) == want.iter().cloned().collect();
        (all && counted && only).then_some(s)
    })
    .await
}

/// Mean TTFT of a replica's probes.
fn mean_ttft(s: &[Sample], replica: &str) -> f64 {
    let l = [("target", "fleet"), ("replica", replica)];
    sum(s, "llmprobe_replica_ttft_seconds_sum", &l)
        / sum(s, "llmprobe_replica_ttft_seconds_count", &l)
}

/// Two scrapes in a row with the same fleet figures: both are of one scrape round.
async fn one_round(addr: SocketAddr) -> Vec<Sample> {
    let fleet_figures = |s: &[Sample]| -> Vec<Option<f64>> {
        [
            "running_requests",
            "waiting_requests",
            "max_concurrent_sequences",
            "generation_tokens_per_second",
        ]
        .iter()
        .map(|n| value(s, &format!("llmprobe_fleet_{n}"), &[("target", "fleet")]))
        .collect()
    };
    wait_for(LIMIT, || async {
        let a = scrape(addr).await;
        let b = scrape(addr).await;
        (fleet_figures(&a) == fleet_figures(&b) && replica_figures(&a) == replica_figures(&b))
            .then_some(b)
    })
    .await
}

fn replica_figures(s: &[Sample]) -> Vec<(String, f64)> {
    s.iter()
        .filter(|x| x.name.starts_with("llmprobe_replica_engine_"))
        .map(|x| (format!("{}{:?}", x.name, x.labels), x.value))
        .collect()
}

/// The fleet's sums equal the replicas' own gauges of the same round, exactly.
fn assert_fleet_is_the_sum(s: &[Sample], replicas: &[String]) {
    let t = [("target", "fleet")];
    for (fleet, own) in [
        (
            "llmprobe_fleet_running_requests",
            "llmprobe_replica_engine_running_requests",
        ),
        (
            "llmprobe_fleet_waiting_requests",
            "llmprobe_replica_engine_waiting_requests",
        ),
        (
            "llmprobe_fleet_max_concurrent_sequences",
            "llmprobe_replica_engine_max_concurrent_sequences",
        ),
        (
            "llmprobe_fleet_generation_tokens_per_second",
            "llmprobe_replica_engine_generation_tokens_per_second",
        ),
    ] {
        let parts: f64 = replicas
            .iter()
            .map(|r| value(s, own, &[("target", "fleet"), ("replica", r)]).unwrap())
            .sum();
        assert_eq!(value(s, fleet, &t), Some(parts), "{fleet}");
    }
    assert_eq!(
        value(s, "llmprobe_fleet_replicas", &t),
        Some(replicas.len() as f64)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_sd_replicas_are_probed_named_summed_and_follow_churn() {
    let mocks = three_replicas().await;
    let all = names(&mocks);
    let dir = tempfile::tempdir().unwrap();
    let sd = dir.path().join("replicas.json");
    write_sd(&sd, &all);
    let d = TestDaemon::start(&config(&format!(
        "      file_sd: {{files: {:?}, interval: 200ms}}\n      labels: [zone]",
        sd.display().to_string()
    )))
    .await;
    let addr = d.addr();

    let s = until_probed(addr, &all, 5.0).await;
    // The slow replica is the one its own series name: its TTFT is at least 400 ms
    // (the mock's), the others' 5 ms.
    let slowest = all
        .iter()
        .max_by(|a, b| mean_ttft(&s, a).total_cmp(&mean_ttft(&s, b)))
        .unwrap();
    assert_eq!(slowest, &all[1]);
    assert!(mean_ttft(&s, &all[1]) >= 0.4);
    // SD labels reach the series only through the allow-list, on the info series.
    for (i, r) in all.iter().enumerate() {
        let info = s
            .iter()
            .find(|x| x.name == "llmprobe_replica_info" && x.labels.get("replica") == Some(r));
        let info = info.unwrap_or_else(|| panic!("no llmprobe_replica_info for {r}"));
        assert_eq!(info.labels.get("zone"), Some(&format!("z{i}")));
        assert_eq!(info.labels.get("pod"), None);
        assert_eq!(info.value, 1.0);
    }
    assert!(!s.iter().any(|x| x.labels.contains_key("pod")));
    // The status page lists the replicas worst first: the slow one on top.
    let (status, page) = get(&format!("http://{addr}/")).await;
    assert_eq!(status, 200);
    let rows: Vec<&str> = page.split("<tr class=\"replica\"").skip(1).collect();
    assert_eq!(rows.len(), 3, "{page}");
    assert!(rows[0].contains(&all[1]), "{}", rows[0]);
    // Above them, what the fleet's engines hold: the sums of the replicas' last round,
    // not the front door's engine, which this target does not scrape.
    assert!(
        page.contains(
            "<p class=\"engine\">Fleet engines: <span class=\"ok\">3 of 3 scraped</span> · running "
        ),
        "{page}"
    );
    assert!(!page.contains("not scraped"), "{page}");
    // Live room per replica: KV blocks × 16 tokens / 4096-token context.
    let s = one_round(addr).await;
    assert_fleet_is_the_sum(&s, &all);
    assert_eq!(
        value(
            &s,
            "llmprobe_fleet_max_concurrent_sequences",
            &[("target", "fleet")]
        ),
        Some(8.0 + 4.0 + 2.0)
    );
    // The front door keeps its own series, without a replica label.
    assert!(value(&s, "llmprobe_requests_total", &[("target", "fleet")]).is_some());

    // The slow replica leaves: all its series go within an interval or so.
    let two = vec![all[0].clone(), all[2].clone()];
    write_sd(&sd, &two);
    until_probed(addr, &two, 0.0).await;
    let s = one_round(addr).await;
    assert_fleet_is_the_sum(&s, &two);
    assert_eq!(
        value(
            &s,
            "llmprobe_fleet_max_concurrent_sequences",
            &[("target", "fleet")]
        ),
        Some(8.0 + 2.0)
    );

    // A broken file is a failed look: counted, and the last good set stays.
    std::fs::write(&sd, "[{").unwrap();
    let s = wait_for(LIMIT, || async {
        let s = scrape(addr).await;
        (value(
            &s,
            "llmprobe_discovery_errors_total",
            &[("target", "fleet")],
        ) >= Some(1.0))
        .then_some(s)
    })
    .await;
    assert_eq!(replicas_seen(&s), two.iter().cloned().collect());

    // It comes back.
    write_sd(&sd, &all);
    until_probed(addr, &all, 1.0).await;
    d.shutdown().await.unwrap();
    for m in mocks {
        m.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_replicas_follow_a_dnsmasq_reload() {
    let Some(bin) = Dnsmasq::binary() else { return };
    let mocks = three_replicas().await;
    let all = names(&mocks);
    let port = mocks[0].addr().port();
    let hosts = |ips: &[&str]| -> String {
        ips.iter()
            .map(|ip| format!("{ip} replicas.test\n"))
            .collect()
    };
    let mut dns = Dnsmasq::start(&bin, &hosts(&["127.0.0.2", "127.0.0.3", "127.0.0.4"]), &[]);
    let d = TestDaemon::start(&config(&format!(
        "      dns: {{name: replicas.test, port: {port}, interval: 200ms}}\n      resolver: {}",
        dns.server()
    )))
    .await;
    let addr = d.addr();
    let s = until_probed(addr, &all, 3.0).await;
    dns.assert_running();
    let slowest = all
        .iter()
        .max_by(|a, b| mean_ttft(&s, a).total_cmp(&mean_ttft(&s, b)))
        .unwrap();
    assert_eq!(slowest, &all[1]);
    let s = one_round(addr).await;
    assert_fleet_is_the_sum(&s, &all);

    // 127.0.0.3 leaves the name, then comes back.
    dns.reload(&hosts(&["127.0.0.2", "127.0.0.4"]));
    until_probed(addr, &[all[0].clone(), all[2].clone()], 0.0).await;
    dns.reload(&hosts(&["127.0.0.2", "127.0.0.3", "127.0.0.4"]));
    until_probed(addr, &all, 1.0).await;
    dns.assert_running();
    d.shutdown().await.unwrap();
    for m in mocks {
        m.shutdown().await;
    }
}
