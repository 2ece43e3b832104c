//! Reload: a good file is applied by diffing targets (unchanged ones keep running and
//! keep their series, removed ones lose theirs, new ones start); a bad file changes
//! nothing but `llmprobe_config_last_reload_successful`.

use crate::support::daemon as daemon_support;
use crate::support::mock as mock_support;

use std::net::SocketAddr;
use std::time::Duration;

use daemon_support::*;
use llmprobe::daemon::Daemon;
use llmprobe::mock::MockConfig;

fn target(name: &str, base: &str, rate: &str, ttft_slo: &str) -> String {
    format!(
        "  - name: {name}\n    base_url: {base}\n    model: mock-llm\n    rate: {rate}\n    scenarios:\n      - {{input_tokens: 40, output_tokens: 4, slo: {{ttft: {ttft_slo}}}}}\n"
    )
}

async fn requests(addr: SocketAddr, target: &str) -> Option<f64> {
    value(
        &scrape(addr).await,
        "llmprobe_requests_total",
        &[("target", target)],
    )
}

async fn post_reload(addr: SocketAddr) -> (u16, String) {
    let r = http()
        .post(format!("http://{addr}/-/reload"))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_diffs_targets_and_a_bad_file_keeps_the_old_config() {
    let m = mock_support::start(MockConfig::default()).await;
    let base = m.base_url();
    let head = "grace_period: 1s\ntargets:\n";
    let v1 = format!(
        "{head}{}{}",
        target("keep", &base, "20/s", "500ms"),
        target("gone", &base, "20/s", "500ms")
    );
    let d = TestDaemon::start(&v1).await;
    let path = d.path().to_path_buf();
    let addr = d.addr();
    wait_for(Duration::from_secs(20), || async {
        (requests(addr, "keep").await? >= 5.0 && requests(addr, "gone").await? >= 1.0).then_some(())
    })
    .await;
    let config_v1 = get(&format!("http://{addr}/config")).await.1;
    assert!(config_v1.contains("name: gone"));

    // Good reload: "gone" leaves, "new" arrives, "keep" is untouched.
    let before = requests(addr, "keep").await.unwrap();
    let v2 = format!(
        "{head}{}{}",
        target("keep", &base, "20/s", "500ms"),
        target("new", &base, "20/s", "500ms")
    );
    std::fs::write(&path, &v2).unwrap();
    assert_eq!(post_reload(addr).await, (200, "OK\n".to_string()));
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        (value(&s, "llmprobe_requests_total", &[("target", "new")]).unwrap_or(0.0) >= 1.0)
            .then_some(s)
    })
    .await;
    let after = value(&s, "llmprobe_requests_total", &[("target", "keep")]).unwrap();
    assert!(
        after >= before,
        "the unchanged target's counter went from {before} to {after}"
    );
    assert!(
        s.iter()
            .all(|x| x.labels.get("target").map(String::as_str) != Some("gone")),
        "series of a removed target remain"
    );
    assert_eq!(value(&s, "llmprobe_targets", &[]), Some(2.0));
    assert_eq!(
        value(&s, "llmprobe_config_last_reload_successful", &[]),
        Some(1.0)
    );
    let page = get(&format!("http://{addr}/")).await.1;
    assert!(!page.contains("\"/target/gone\"") && page.contains("\"/target/new\">new</a>"));

    // Bad reload: the error names file, line and field; nothing else changes.
    std::fs::write(&path, format!("{v2}    rate: 0/s\n")).unwrap();
    let (status, body) = post_reload(addr).await;
    assert_eq!(status, 500);
    let want = format!("failed to reload config: {}:", path.display());
    assert!(body.starts_with(&want), "{body}");
    assert!(body.contains("targets[1]"), "{body}");
    let s = scrape(addr).await;
    assert_eq!(
        value(&s, "llmprobe_config_last_reload_successful", &[]),
        Some(0.0)
    );
    let still = value(&s, "llmprobe_requests_total", &[("target", "keep")]).unwrap();
    wait_for(Duration::from_secs(20), || async {
        (requests(addr, "keep").await? > still + 3.0).then_some(())
    })
    .await;
    assert!(
        get(&format!("http://{addr}/config"))
            .await
            .1
            .contains("name: new")
    );

    // A new SLO threshold changes the bucket layout: histograms restart with the new
    // bound, counters continue.
    let counted = requests(addr, "keep").await.unwrap();
    let v3 = format!(
        "{head}{}{}",
        target("keep", &base, "20/s", "123ms"),
        target("new", &base, "20/s", "500ms")
    );
    std::fs::write(&path, &v3).unwrap();
    assert_eq!(post_reload(addr).await.0, 200);
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        value(
            &s,
            "llmprobe_ttft_seconds_bucket",
            &[("target", "keep"), ("le", "0.123")],
        )
        .filter(|v| *v >= 0.0)
        .map(|_| s)
    })
    .await;
    assert_eq!(
        value(&s, "llmprobe_config_last_reload_successful", &[]),
        Some(1.0)
    );
    assert!(value(&s, "llmprobe_requests_total", &[("target", "keep")]).unwrap() >= counted);
    assert_eq!(
        value(&s, "llmprobe_slo_ttft_seconds", &[("target", "keep")]),
        Some(0.123)
    );

    d.shutdown().await.unwrap();
    m.shutdown().await;
}

/// A reload that removes a target while also changing the bucket layout (a
/// new SLO threshold on a kept target) must still delete the removed target's series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_with_new_buckets_still_removes_gone_targets() {
    let m = mock_support::start(MockConfig::default()).await;
    let base = m.base_url();
    let head = "grace_period: 1s\ntargets:\n";
    let v1 = format!(
        "{head}{}{}",
        target("a", &base, "20/s", "500ms"),
        target("gone", &base, "20/s", "500ms")
    );
    let d = TestDaemon::start(&v1).await;
    let path = d.path().to_path_buf();
    let addr = d.addr();
    wait_for(Duration::from_secs(20), || async {
        (requests(addr, "a").await? >= 1.0 && requests(addr, "gone").await? >= 1.0).then_some(())
    })
    .await;
    let v2 = format!("{head}{}", target("a", &base, "20/s", "123ms"));
    std::fs::write(&path, &v2).unwrap();
    assert_eq!(post_reload(addr).await, (200, "OK\n".to_string()));
    // Let the stopped runner's in-flight probes end, then look.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = scrape(addr).await;
    let left: Vec<_> = s
        .iter()
        .filter(|x| x.labels.get("target").map(String::as_str) == Some("gone"))
        .map(|x| x.name.clone())
        .collect();
    assert!(
        left.is_empty(),
        "series of the removed target remain: {left:?}"
    );
    assert_eq!(value(&s, "llmprobe_targets", &[]), Some(1.0));
    let page = get(&format!("http://{addr}/")).await.1;
    assert!(!page.contains("\"/target/gone\""), "{page}");
    d.shutdown().await.unwrap();
    m.shutdown().await;
}

/// A new SLO threshold on a new target, and new shared settings (grace
/// period, scrape interval), leave an unchanged target running: its histograms continue
/// and carry no bound of the other target's threshold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_threshold_elsewhere_does_not_reset_unchanged_histograms() {
    let m = mock_support::start(MockConfig::default()).await;
    let base = m.base_url();
    let v1 = format!(
        "grace_period: 1s\nengine_scrape_interval: 15s\ntargets:\n{}",
        target("a", &base, "20/s", "500ms")
    );
    let d = TestDaemon::start(&v1).await;
    let path = d.path().to_path_buf();
    let addr = d.addr();
    let ttft_count = |s: &[Sample]| value(s, "llmprobe_ttft_seconds_count", &[("target", "a")]);
    let before = wait_for(Duration::from_secs(20), || async {
        ttft_count(&scrape(addr).await).filter(|c| *c >= 10.0)
    })
    .await;
    let v2 = format!(
        "grace_period: 2s\nengine_scrape_interval: 5s\ntargets:\n{}{}",
        target("a", &base, "20/s", "500ms"),
        target("b", &base, "20/s", "123ms")
    );
    std::fs::write(&path, &v2).unwrap();
    assert_eq!(post_reload(addr).await, (200, "OK\n".to_string()));
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        value(
            &s,
            "llmprobe_ttft_seconds_bucket",
            &[("target", "b"), ("le", "0.123")],
        )
        .map(|_| s)
    })
    .await;
    let after = ttft_count(&s).unwrap();
    assert!(
        after >= before,
        "a's TTFT histogram restarted: count {before} -> {after}"
    );
    assert_eq!(
        value(
            &s,
            "llmprobe_ttft_seconds_bucket",
            &[("target", "a"), ("le", "0.123")]
        ),
        None,
        "a's layout gained b's threshold"
    );
    assert!(
        value(
            &s,
            "llmprobe_ttft_seconds_bucket",
            &[("target", "a"), ("le", "0.5")]
        )
        .is_some()
    );
    d.shutdown().await.unwrap();
    m.shutdown().await;
}

/// A removed target's engine scraper cannot bring its gauges back (it is
/// cancelled before the series go, and checks that under the same lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_scraper_never_republishes() {
    let m = mock_support::start(MockConfig::default()).await;
    let base = m.base_url();
    let engine = |name: &str| {
        format!(
            "  - name: {name}\n    base_url: {base}\n    model: mock-llm\n    rate: 1/h\n    engine_metrics_url: {base}/metrics\n"
        )
    };
    let head = "grace_period: 1s\nengine_scrape_interval: 10ms\ntargets:\n";
    let d = TestDaemon::start(&format!("{head}{}{}", engine("keep"), engine("gone"))).await;
    let path = d.path().to_path_buf();
    let addr = d.addr();
    let scraped = |t: &'static str| async move {
        value(
            &scrape(addr).await,
            "llmprobe_engine_scrape_success",
            &[("target", t)],
        )
    };
    wait_for(Duration::from_secs(20), || async {
        scraped("gone").await.filter(|v| *v == 1.0)
    })
    .await;
    std::fs::write(&path, format!("{head}{}", engine("keep"))).unwrap();
    assert_eq!(post_reload(addr).await.0, 200);
    // Many scrape intervals later, nothing of "gone" is back.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = scrape(addr).await;
    assert!(
        s.iter()
            .all(|x| x.labels.get("target").map(String::as_str) != Some("gone")),
        "series of the removed target came back"
    );
    // The kept target's scraper still runs. With a 10 ms interval its scrapes time out
    // after 10 ms, which a busy machine can exceed now and then: wait for a good one.
    wait_for(Duration::from_secs(20), || async {
        scraped("keep").await.filter(|v| *v == 1.0)
    })
    .await;
    d.shutdown().await.unwrap();
    m.shutdown().await;
}

/// A rotated (here: vanished) key file is noticed within a minute and goes
/// through the normal reload path, without SIGHUP.
#[tokio::test(start_paused = true)]
async fn secret_files_are_checked_every_minute() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "sk-first\n").unwrap();
    let text = format!(
        "targets:\n  - name: t\n    base_url: http://127.0.0.1:9\n    model: m\n    rate: 1/h\n    api_key_file: {}\n",
        key.display()
    );
    let d = TestDaemon::start(&text).await;
    let reload_ok = |d: &Daemon| {
        let text = d.metrics().render().unwrap();
        value(&parse(&text), "llmprobe_config_last_reload_successful", &[])
    };
    assert_eq!(reload_ok(&d), Some(1.0));
    std::fs::remove_file(&key).unwrap();
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(reload_ok(&d), Some(1.0), "checked too early");
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(
        reload_ok(&d),
        Some(0.0),
        "the missing key file went unnoticed"
    );
    // A new key: the next check reloads successfully.
    std::fs::write(&key, "sk-second\n").unwrap();
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(reload_ok(&d), Some(1.0));
    d.shutdown().await.unwrap();
}
