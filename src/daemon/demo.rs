//! `llmprobe daemon --mock`: the embedded mock engine and a demo config that probes it
//! at a demo rate and fills every metric family of docs/metrics.md (two scenarios with
//! SLOs, one with answer checks, one asking the built-in golden set, a price, a capacity block, the mock's vLLM-format
//! `/metrics` as the engine, its GPU telemetry for the energy figures), a second target on the Responses API whose answers reason
//! first (TTFA and reasoning tokens), a third whose two replicas (two more mocks, one
//! slower) are discovered from a static list (the replica and fleet series) behind the
//! mock gateway as their front door (an llm-d gateway's headers and its endpoint
//! picker's `/metrics`: the router series), and a
//! fingerprint scenario on the first replica against a baseline recorded from it at
//! start (the fingerprint series; the same engine, so no drift).

use std::net::SocketAddr;

use super::source::ConfigSource;
use crate::mock::gateway::{GatewayConfig, GatewayServer, Route};
use crate::mock::{MockConfig, MockFlags, MockServer};

/// Probes per second of the demo target (shared by its scenarios): enough for
/// `rate()` over a minute to be smooth, little enough for a laptop.
pub const DEMO_RATE: &str = "4/s";

/// How much slower the demo's second replica answers than the first: the replica table
/// and the per-replica series then have a slow replica to show.
const SLOW_REPLICA_FACTOR: u32 = 3;

/// The demo's mock engines: the one every target's front door probes, and the two
/// replicas of the fleet target.
pub struct DemoMocks {
    pub engine: MockServer,
    pub replicas: Vec<MockServer>,
    /// The gateway in front of the replicas: the fleet target's front door.
    pub gateway: GatewayServer,
    /// The fingerprint baseline recorded at start, removed at shutdown.
    pub baseline: std::path::PathBuf,
}

impl DemoMocks {
    pub fn base_url(&self) -> String {
        self.engine.base_url()
    }

    pub async fn shutdown(self) {
        let _ = std::fs::remove_file(&self.baseline);
        self.gateway.shutdown().await;
        self.engine.shutdown().await;
        for r in self.replicas {
            r.shutdown().await;
        }
    }
}

/// Starts the mocks on 127.0.0.1:0 with `faults` (`KIND[=PARAM][:P]`, as `llmprobe mock
/// --fault`; the replicas have none) and returns them with the demo config.
pub async fn start(faults: &[String]) -> anyhow::Result<(DemoMocks, ConfigSource)> {
    let mut cfg = MockConfig::from_flags(MockFlags {
        faults: crate::mock::parse_fault_flags("--mock-fault", faults)?,
        // The demo's golden scenario asks the built-in set, whose answers the mock knows.
        golden: Some("builtin".to_string()),
        // GPU telemetry from the mock's power model, for the energy figures.
        gpu: Some(crate::mock::gpu::PowerModel::default()),
        // Prefill costs time per prompt token the prefix cache does not hold, so the
        // prefix-cache scenario's warm probes are faster than its cold ones.
        prefill_per_token: Some(std::time::Duration::from_micros(20)),
        ..MockFlags::default()
    })?;
    let model = cfg.model.clone();
    cfg.num_gpu_blocks = demo_kv_blocks(&model, cfg.block_size)?;
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut replicas = Vec::new();
    for slower in [1, SLOW_REPLICA_FACTOR] {
        let replica = MockConfig {
            faults: Vec::new(),
            ttft: cfg.ttft * slower,
            ..cfg.clone()
        };
        replicas.push(crate::mock::start(replica, loopback).await?);
    }
    let seed = cfg.seed;
    let engine = crate::mock::start(cfg, loopback).await?;
    let replica_urls: Vec<String> = replicas.iter().map(MockServer::base_url).collect();
    let gateway = crate::mock::gateway::start(
        GatewayConfig {
            upstreams: replica_urls.clone(),
            route: Route::Header("x-session-token".to_string()),
            drops: Vec::new(),
            model: model.clone(),
            seed,
        },
        loopback,
    )
    .await?;
    let mut text = demo_text(
        &engine.base_url(),
        &model,
        &replica_urls,
        Some(&gateway.base_url()),
    );
    let baseline = record_baseline(&replica_urls[0], &model).await?;
    text.push_str(&fingerprint_target(&replica_urls[0], &model, &baseline));
    Ok((
        DemoMocks {
            engine,
            replicas,
            gateway,
            baseline,
        },
        ConfigSource::Inline {
            name: "<--mock demo config>".to_string(),
            text,
        },
    ))
}

/// Records a short fingerprint baseline of the mock at `base_url` into a file of the
/// temporary directory named after the mock's address (one per demo).
async fn record_baseline(base_url: &str, model: &str) -> anyhow::Result<std::path::PathBuf> {
    use crate::fingerprint::{Ask, Sampler, default_prompts};
    let cfg = crate::client::ClientConfig {
        base_url: base_url.to_string(),
        ..crate::client::ClientConfig::default()
    };
    let ask = Ask {
        endpoint: crate::client::Endpoint::Chat,
        model: model.to_string(),
        top_logprobs: 5,
        max_tokens: 8,
    };
    let baseline = Sampler::new(cfg, ask)?
        .record(&default_prompts(), 2)
        .await?;
    let port = base_url.rsplit(':').next().unwrap_or("0");
    let path = std::env::temp_dir().join(format!(
        "llmprobe-demo-fingerprint-{}-{port}.json",
        std::process::id()
    ));
    baseline.save(&path)?;
    Ok(path)
}

/// A target with one fingerprint scenario against `baseline`.
fn fingerprint_target(base_url: &str, model: &str, baseline: &std::path::Path) -> String {
    let file = serde_json::Value::from(baseline.display().to_string());
    format!(
        r#"  - name: mock-fingerprint
    base_url: {base_url}
    model: {model}
    endpoint: chat
    timeouts: {{connect: 2s, first_token: 5s, idle: 5s, total: 30s}}
    scenarios:
      - name: fingerprint
        fingerprint: {{baseline: {file}, every: 30s}}
"#
    )
}

/// The mock's KV cache in blocks: the pool the demo's capacity block predicts, so the
/// live max sequences (KV tokens / context) and headroom agree with the model instead of
/// showing a tiny engine that looks half full with one request.
fn demo_kv_blocks(model: &str, block_size: u32) -> anyhow::Result<u32> {
    let plan =
        crate::config::plan::load_str(&config_text("http://127.0.0.1:9", model, &[]), "demo")?;
    let tokens = plan
        .targets
        .first()
        .and_then(|t| t.capacity.as_ref())
        .map_or(0.0, |c| c.gauges.kv_cache_tokens);
    let blocks = (tokens / f64::from(block_size.max(1))).floor();
    Ok(if blocks >= 1.0 {
        blocks.min(f64::from(u32::MAX)) as u32
    } else {
        crate::mock::DEFAULT_NUM_GPU_BLOCKS
    })
}

/// The demo config for a mock at `base_url`, with a fleet target when there are
/// `replicas` (their base URLs), its front door the first mock.
pub fn config_text(base_url: &str, model: &str, replicas: &[String]) -> String {
    demo_text(base_url, model, replicas, None)
}

/// [`config_text`], the fleet's front door the mock `gateway` when there is one.
fn demo_text(base_url: &str, model: &str, replicas: &[String], gateway: Option<&str>) -> String {
    // Each kind that runs on its own shows its series with a scenario of its own.
    let kind_scenarios = super::kinds::demo_scenarios();
    let mut text = format!(
        r#"# The --mock demo: the embedded mock engine (TTFT 50 ms, 10 ms per token).
grace_period: 2s
engine_scrape_interval: 2s
defaults:
  max_inflight: 8
targets:
  - name: mock
    base_url: {base_url}
    model: {model}
    rate: {DEMO_RATE}
    token_budget_per_hour: 50000000
    price: {{input_per_million: 0.15, output_per_million: 0.60}}
    budget_per_day: 100
    timeouts: {{connect: 2s, first_token: 5s, idle: 5s, total: 30s}}
    scenarios:
      - name: chat-short
        input_tokens: 64
        output_tokens: 16
        slo: {{ttft: 100ms, tpot: 20ms, e2e: 500ms}}
        # Answer checks: the right model, and no output looping on itself.
        checks: {{expect_model: {model}, max_repetition: 0.5}}
      - name: chat-long
        input_tokens: 512
        output_tokens: 64
        slo: {{ttft: 200ms, tpot: 20ms, e2e: 1s}}
      # Golden-set accuracy: the built-in questions, judged answer by answer.
      - name: golden
        output_tokens: 16
        golden: {{file: builtin, baseline: 0.9}}
{kind_scenarios}    capacity:
      preset: llama-3.1-8b
      gpu: h100
      tp: 1
      gpu_hourly: 2.5
    engine_metrics_url: {base_url}/metrics
    # The mock's GPU telemetry (dcgm-exporter's format, from its power model).
    gpu_metrics:
      url: {base_url}/gpu/metrics
      energy_price_per_kwh: 0.12
      grams_co2_per_kwh: 400
  - name: mock-responses
    base_url: {base_url}
    model: {model}
    endpoint: responses
    rate: 1/s
    # The mock reasons for 8 tokens before each answer of this target.
    headers: {{x-mock-reasoning-tokens: "8"}}
    timeouts: {{connect: 2s, first_token: 5s, idle: 5s, total: 30s}}
    scenarios:
      - name: reasoning
        input_tokens: 64
        output_tokens: 24
        slo: {{ttft: 100ms, ttfa: 200ms, e2e: 500ms}}
"#
    );
    if !replicas.is_empty() {
        text.push_str(&fleet_target(base_url, model, replicas, gateway));
    }
    text
}

/// A target whose replicas are discovered from a static list; the front door is the
/// mock gateway in front of them (else the first mock), as a router would be.
fn fleet_target(base_url: &str, model: &str, replicas: &[String], gateway: Option<&str>) -> String {
    let front = match gateway {
        Some(g) => format!(
            r#"base_url: {g}
    # The gateway's endpoint picker, and the llm-d headers it reads.
    router_metrics_url: {g}/metrics
    llm_d: {{slo_headers: true, objective: demo-probes, fairness_id: llmprobe}}"#
        ),
        None => format!("base_url: {base_url}"),
    };
    // Prefix-cache sessions through the gateway, which keeps each on one replica by its
    // `x-session-token`. The mocks' TTFT is theirs (50 or 150 ms) plus 20 µs per prompt
    // token their cache does not hold: a 4,096-token prefix adds about 82 ms to a cold
    // probe and about 1 ms to a warm one.
    let cache = if gateway.is_some() {
        "      - name: cache\n        prefix_cache: {prefix_tokens: 4096, every: 5s, \
         max_ttft_ratio: 0.7, affinity: {header: x-session-token}}\n"
    } else {
        ""
    };
    format!(
        r#"  - name: mock-fleet
    {front}
    model: {model}
    rate: 1/s
    timeouts: {{connect: 2s, first_token: 5s, idle: 5s, total: 30s}}
    scenarios:
      - name: chat
        input_tokens: 64
        output_tokens: 16
        slo: {{ttft: 100ms, e2e: 500ms}}
{cache}    capacity:
      preset: llama-3.1-8b
      gpu: h100
      tp: 1
      gpu_hourly: 2.5
    replica_rate: 2/s
    # Every latency histogram per replica, so the demo fills every documented family.
    replica_series: full
    replicas_from:
      static: [{}]
    # Each replica's GPUs are those whose `pod` is its host:port (the mock's own).
    gpu_metrics:
      url: [{}]
      replica_match: {{pod: replica}}
      energy_price_per_kwh: 0.12
      grams_co2_per_kwh: 400
"#,
        replicas.join(", "),
        replicas
            .iter()
            .map(|r| format!("{r}/gpu/metrics"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_config_is_valid() {
        let plan = crate::config::plan::load_str(
            &demo_text(
                "http://127.0.0.1:9",
                "mock-llm",
                &["http://127.0.0.1:10".into(), "http://127.0.0.1:11".into()],
                Some("http://127.0.0.1:12"),
            ),
            "demo",
        )
        .unwrap();
        let t = &plan.targets[0];
        assert_eq!(t.scenarios.len(), 3);
        let r = &plan.targets[1];
        assert_eq!(r.client.endpoint, crate::client::Endpoint::Responses);
        assert!(
            r.scenarios[0]
                .slo
                .limit(crate::latency::Latency::Ttfa)
                .is_some()
        );
        assert!(t.capacity.is_some() && t.price.is_some() && t.engine_metrics_url.is_some());
        assert!(t.budget_per_day.is_some());
        assert!((t.scenarios.iter().map(|s| s.rate_hz).sum::<f64>() - 4.0).abs() < 1e-9);
        let fleet = &plan.targets[2];
        assert!(fleet.replicas.is_some());
        assert_eq!(
            fleet.router_metrics_url.as_deref(),
            Some("http://127.0.0.1:12/metrics")
        );
        assert!(fleet.llm_d_slo_headers);
        assert_eq!(fleet.client.llm_d.objective.as_deref(), Some("demo-probes"));
    }

    #[test]
    fn the_demo_mock_has_the_modelled_kv_pool() {
        // llama-3.1-8b on one H100: about 421k tokens (see `llmprobe capacity`).
        let blocks = demo_kv_blocks("mock-llm", 16).unwrap();
        assert!((20_000..40_000).contains(&blocks), "{blocks}");
    }
}
