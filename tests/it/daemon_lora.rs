//! LoRA adapters in the daemon against the mock (`--lora-adapters`): listed adapters
//! split each scenario's rate and label their series with their own `model`; discovered
//! ones start when the mock loads them at run time and lose their series when it
//! unloads them; the engine's LoRA gauges come from the mock's `vllm:lora_requests_info`;
//! `adapters:` errors name their key.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::config::plan::load_str;
use llmprobe::mock::MockConfig;

/// Generous bound for conditions that take a few probe or discovery intervals.
const LIMIT: Duration = Duration::from_secs(60);

fn mock(adapters: &[&str]) -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: Some(2),
        lora_adapters: adapters.iter().map(|a| (*a).to_string()).collect(),
        ..MockConfig::default()
    }
}

fn config(url: &str, adapters: &str) -> String {
    format!(
        r#"
engine_scrape_interval: 200ms
targets:
  - name: lora
    base_url: {url}
    model: mock-llm
    rate: 8/s
    engine_metrics_url: {url}/metrics
    scenarios:
      - {{name: default, input_tokens: 16, output_tokens: 2}}
    adapters: {adapters}
"#
    )
}

/// The `model` label values that have probes on target `lora`.
fn models(s: &[Sample]) -> Vec<String> {
    let mut m: Vec<String> = s
        .iter()
        .filter(|x| x.name == "llmprobe_requests_total")
        .filter(|x| x.labels.get("target").map(String::as_str) == Some("lora"))
        .filter_map(|x| x.labels.get("model").cloned())
        .collect();
    m.sort();
    m.dedup();
    m
}

fn requests(s: &[Sample], model: &str) -> f64 {
    sum(
        s,
        "llmprobe_requests_total",
        &[("target", "lora"), ("model", model)],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_adapters_split_the_rate_and_name_their_series() {
    let (mock, d) = with_mock(mock(&["ad1", "ad2"]), |url| {
        config(url, "[{name: ad1, weight: 0.25}, {name: ad2, weight: 0.5}]")
    })
    .await;
    let s = wait_for(LIMIT, || async {
        let s = scrape(d.addr()).await;
        let all = ["mock-llm", "ad1", "ad2"]
            .iter()
            .all(|m| requests(&s, m) >= 2.0);
        let engine = value(
            &s,
            "llmprobe_engine_lora_adapters_max",
            &[("target", "lora")],
        )
        .is_some();
        (all && engine).then_some(s)
    })
    .await;
    // Each model's probes run at the scenario's rate × its share: exact, as configured.
    for (model, rate) in [("mock-llm", 2.0), ("ad1", 2.0), ("ad2", 4.0)] {
        let l = [
            ("target", "lora"),
            ("model", model),
            ("scenario", "default"),
        ];
        assert_eq!(
            value(&s, "llmprobe_probe_rate_per_second", &l),
            Some(rate),
            "{model}"
        );
    }
    // The mock answered every probe by its own model name: no failure anywhere.
    assert_eq!(sum(&s, "llmprobe_request_failures_total", &[]), 0.0);
    // The mock holds at most its two adapters at once, as vLLM's max_lora says.
    let l = [("target", "lora"), ("model", "mock-llm")];
    assert_eq!(
        value(&s, "llmprobe_engine_lora_adapters_max", &l),
        Some(2.0)
    );
    let running = value(&s, "llmprobe_engine_lora_adapters_running", &l).unwrap();
    assert!((0.0..=2.0).contains(&running), "{running}");
    assert_eq!(
        value(&s, "llmprobe_engine_lora_adapters_waiting", &l),
        Some(0.0)
    );
    // The status page has a row per adapter.
    let (status, page) = get(&format!("http://{}/target/lora", d.addr())).await;
    assert_eq!(status, 200);
    assert!(page.contains("default@ad1") && page.contains("default@ad2"));
    d.shutdown().await.unwrap();
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovered_adapters_start_when_loaded_and_go_when_unloaded() {
    let (mock, d) = with_mock(mock(&["ad1"]), |url| {
        config(url, "{discover: true, weight: 0.25, interval: 200ms}")
    })
    .await;
    let url = mock.base_url();
    let http = http();
    let until_models = |want: &'static [&'static str]| {
        let addr = d.addr();
        async move {
            wait_for(LIMIT, || async {
                let s = scrape(addr).await;
                let have = models(&s);
                (have == want && want.iter().all(|m| requests(&s, m) >= 1.0)).then_some(s)
            })
            .await
        }
    };
    let s = until_models(&["ad1", "mock-llm"]).await;
    let rate = |s: &[Sample], model: &str| {
        value(
            s,
            "llmprobe_probe_rate_per_second",
            &[("target", "lora"), ("model", model)],
        )
    };
    assert_eq!(rate(&s, "ad1"), Some(2.0));
    assert_eq!(rate(&s, "mock-llm"), Some(6.0));

    let load = http
        .post(format!("{url}/v1/load_lora_adapter"))
        .json(&serde_json::json!({"lora_name": "ad2", "lora_path": "/adapters/ad2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(load.status(), 200);
    let s = until_models(&["ad1", "ad2", "mock-llm"]).await;
    // Two adapters of 0.25 each leave the base model half.
    assert_eq!(rate(&s, "ad2"), Some(2.0));
    assert_eq!(rate(&s, "mock-llm"), Some(4.0));

    let unload = http
        .post(format!("{url}/v1/unload_lora_adapter"))
        .json(&serde_json::json!({"lora_name": "ad1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unload.status(), 200);
    // ad1's series go: no family keeps a series with its model label.
    let s = wait_for(LIMIT, || async {
        let s = scrape(d.addr()).await;
        let gone = !s
            .iter()
            .any(|x| x.labels.get("model").map(String::as_str) == Some("ad1"));
        gone.then_some(s)
    })
    .await;
    assert_eq!(rate(&s, "ad2"), Some(2.0));
    assert_eq!(rate(&s, "mock-llm"), Some(6.0));
    let (_, page) = get(&format!("http://{}/target/lora", d.addr())).await;
    assert!(!page.contains("default@ad1") && page.contains("default@ad2"));
    d.shutdown().await.unwrap();
    mock.shutdown().await;
}

#[test]
fn adapter_errors_name_their_key() {
    let target = "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n";
    for (block, want) in [
        (
            "    adapters: [{name: a, weight: 1.5}]\n",
            "l.yaml:5:34: targets[0].adapters[0].weight: weight 1.5 is outside (0, 1]",
        ),
        (
            "    adapters: [{name: a, weight: 0.5}, {name: a, weight: 0.1}]\n",
            "targets[0].adapters[1].name: adapter \"a\" is listed twice",
        ),
        (
            "    adapters: [{name: a, weight: 0.6}, {name: b, weight: 0.6}]\n",
            "targets[0].adapters: the adapters' weights add up to 1.2",
        ),
        (
            "    adapters: [{name: m, weight: 0.5}]\n",
            "targets[0].adapters[0].name: \"m\" is the base model",
        ),
        (
            "    adapters: {discover: false}\n",
            "targets[0].adapters.discover: must be true",
        ),
        (
            "    adapters: {discover: true, weight: 0}\n",
            "targets[0].adapters.weight: weight 0 is outside (0, 1]",
        ),
        (
            "    adapters: {discover: true, interval: 0s}\n",
            "targets[0].adapters.interval: must be greater than zero",
        ),
    ] {
        let e = load_str(&format!("{target}{block}"), "l.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "want {want:?} in\n{e}");
    }
    let ok = format!("{target}    adapters: {{discover: true}}\n");
    assert!(load_str(&ok, "l.yaml").is_ok());
}
