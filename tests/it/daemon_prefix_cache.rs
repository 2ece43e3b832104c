//! The prefix-cache kind against the mock: a cache that works (warm probes read their
//! prefix from it and answer sooner), a cache that is off, the status rows, and the
//! config errors of its block. The mock's
//! TTFT is 5 ms plus 300 µs per prompt token its cache does not hold, so a cold probe of
//! 1,056 words takes about 322 ms and a warm one (1,024 words cached) about 15 ms: a gap
//! wide enough that a busy machine's delays of tens of milliseconds cannot close it.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::config::plan::load_str;
use llmprobe::daemon::{ConfigSource, Daemon};
use llmprobe::mock::MockConfig;

fn target(name: &str, base: &str) -> String {
    format!(
        "  - name: {name}\n    base_url: {base}\n    model: m\n    endpoint: chat\n    scenarios:\n      \
         - name: cache\n        prefix_cache: {{prefix_tokens: 1024, every: 500ms, warm_probes: 2, \
         affinity: {{header: x-session-token}}}}\n"
    )
}

fn mock(prefix_cache: bool) -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        prefill_per_token: Duration::from_micros(300),
        prefix_cache,
        ..MockConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_probes_hit_a_working_cache_and_miss_one_that_is_off() {
    let on = crate::support::mock::start(mock(true)).await;
    let off = crate::support::mock::start(mock(false)).await;
    let text = format!(
        "self_check: {{enabled: false}}\ntargets:\n{}{}",
        target("on", &on.base_url()),
        target("off", &off.base_url())
    );
    let (_dir, path) = config_file(&text);
    let d = Daemon::start(ConfigSource::File(path), Some("127.0.0.1:0".into()))
        .await
        .unwrap();
    let addr = d.addr();
    let s = wait_for(Duration::from_secs(60), || async {
        let s = scrape(addr).await;
        let warm = |t| {
            value(
                &s,
                "llmprobe_prefix_cache_probes_total",
                &[("target", t), ("phase", "warm")],
            )
        };
        (warm("on") >= Some(6.0) && warm("off") >= Some(6.0)).then_some(s)
    })
    .await;
    let at = |t: &str, name: &str| value(&s, name, &[("target", t), ("scenario", "cache")]);
    // The mock caches whole blocks of 16 words: the 1,024-word prefix (nonce included)
    // of each warm prompt's 1,056 words, and nothing of a cold one.
    let hit = at("on", "llmprobe_prefix_cache_hit_ratio").unwrap();
    assert!((hit - 1024.0 / 1056.0).abs() < 1e-9, "{hit}");
    let cold_cached = value(
        &s,
        "llmprobe_prefix_cache_cached_tokens_total",
        &[("target", "on"), ("phase", "cold")],
    );
    assert_eq!(cold_cached, Some(0.0));
    let ratio = at("on", "llmprobe_prefix_cache_ttft_ratio").unwrap();
    assert!(ratio < 0.5, "warm/cold TTFT {ratio}");
    // Without a cache the warm probes pay the whole prefill too.
    assert_eq!(at("off", "llmprobe_prefix_cache_hit_ratio"), None);
    let off_ratio = at("off", "llmprobe_prefix_cache_ttft_ratio").unwrap();
    assert!(
        off_ratio > 0.8,
        "warm/cold TTFT without a cache {off_ratio}"
    );
    assert_eq!(
        at("on", "llmprobe_prefix_cache_objective_hit_ratio"),
        Some(0.8)
    );
    assert_eq!(
        at("on", "llmprobe_prefix_cache_objective_ttft_ratio"),
        Some(0.3)
    );
    // No gateway names an endpoint here.
    assert_eq!(at("on", "llmprobe_prefix_cache_same_endpoint_ratio"), None);
    for t in ["on", "off"] {
        assert_eq!(
            value(
                &s,
                "llmprobe_prefix_cache_failures_total",
                &[("target", t), ("phase", "cold")]
            ),
            Some(0.0)
        );
    }
    // Its probes take no share of a rate and are no probe-series requests.
    assert_eq!(sum(&s, "llmprobe_requests_total", &[]), 0.0);

    let (code, page) = get(&format!("http://{addr}/target/on")).await;
    assert_eq!(code, 200);
    assert!(page.contains("cache effective"), "{page}");
    let (_, page) = get(&format!("http://{addr}/target/off")).await;
    assert!(
        page.contains("ineffective: the cache is off or the prefix changes"),
        "{page}"
    );
    d.shutdown().await.unwrap();
    on.shutdown().await;
    off.shutdown().await;
}

#[test]
fn bad_prefix_cache_blocks_are_config_errors() {
    let head = "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    scenarios:\n      - name: cache\n";
    for (block, want) in [
        (
            "        prefix_cache: {prefix_tokens: 8}\n",
            "scenarios[0].prefix_cache.prefix_tokens: 8 must be between 16 and 131072",
        ),
        (
            "        prefix_cache: {prefix_tokens: 64, affinity: {}}\n",
            "scenarios[0].prefix_cache.affinity: needs exactly one of header or cookie",
        ),
        (
            "        prefix_cache: {prefix_tokens: 64, affinity: {header: \"bad header\"}}\n",
            "scenarios[0].prefix_cache.affinity.header: \"bad header\" is not a valid HTTP header name",
        ),
        (
            "        prefix_cache: {prefix_tokens: 64, min_hit_ratio: 2}\n",
            "scenarios[0].prefix_cache.min_hit_ratio: 2 must be between 0 and 1",
        ),
        (
            "        prefix_cache: {prefix_tokens: 64}\n        input_tokens: 99\n",
            "it takes only name, kind and prefix_cache",
        ),
        (
            "        kind: prefix_cache\n",
            "kind: prefix_cache needs a prefix_cache: block",
        ),
    ] {
        let e = load_str(&format!("{head}{block}"), "p.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "want {want:?} in\n{e}");
    }
}
