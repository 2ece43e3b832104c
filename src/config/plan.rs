//! Turns a validated [`Config`] into the [`Plan`] the daemon runs: secrets read from
//! their files and environment variables, defaults applied, rates split per scenario,
//! seeds derived, SLOs and buckets merged, the capacity model evaluated. Everything a
//! running daemon could trip over is found here, so `--config.check` catches it and a
//! bad reload never touches the running targets.

use std::path::Path as FsPath;
use std::time::Duration;

use super::error::ConfigError;
use super::locate::Path;
use super::validate::validate;
use super::{Config, HeaderSource, HeaderValue, Scenario, Target};
use crate::client::ClientConfig;
use crate::export::{Buckets, CapacityGauges, TokenPrice};
use crate::record::Slo;
use crate::secret::Secret;
use crate::workload::prompt::PromptGenerator;

/// A checked, resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub listen: String,
    pub grace_period: Duration,
    pub engine_scrape_interval: Duration,
    /// Configured (or vLLM's) buckets ∪ every SLO threshold of every scenario.
    pub buckets: Buckets,
    pub targets: Vec<TargetPlan>,
    /// The config as YAML with every secret shown as `<secret>` (for `/config`).
    pub redacted_yaml: String,
}

/// One target, ready to run. Two plans of the same target compare equal exactly when
/// nothing that changes its probes changed, which is what reload diffs on.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetPlan {
    pub name: String,
    pub model: String,
    /// Carries the resolved API key and headers.
    pub client: ClientConfig,
    pub scenarios: Vec<ScenarioPlan>,
    pub max_inflight: u32,
    pub token_budget_per_hour: Option<u64>,
    pub price: Option<TokenPrice>,
    pub capacity: Option<CapacityPlan>,
    pub engine_metrics_url: Option<String>,
    /// Tokens per sequence used to turn live KV tokens into max sequences: the
    /// capacity block's context, else the largest scenario (input + output).
    pub context_tokens: u32,
    /// Every secret value of this target, to scrub from error texts before they are
    /// logged or shown.
    pub secrets: Vec<Secret>,
}

/// What the capacity model says about a target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityPlan {
    pub gauges: CapacityGauges,
    /// GPUs per replica (tensor parallel size), for the live cost.
    pub gpus_per_replica: u32,
    pub gpu_hourly: Option<f64>,
}

/// One runner: a target × scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioPlan {
    pub name: String,
    /// Poisson arrival rate (probes per second).
    pub rate_hz: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub shared_prefix_tokens: u32,
    pub ignore_eos: bool,
    pub slo: Slo,
    /// Seed of this runner's arrivals and prompts: derived from the global seed and the
    /// names, so it does not change when other targets come and go.
    pub seed: u64,
}

/// Reads, parses, validates and resolves a config file.
pub fn load(path: &FsPath) -> Result<Plan, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::file(&file, format!("cannot read the config file: {e}")))?;
    load_str(&text, &file)
}

/// Parses, validates and resolves config text; `file` names it in errors.
pub fn load_str(text: &str, file: &str) -> Result<Plan, ConfigError> {
    let cfg = parse(text, file)?;
    validate(&cfg).map_err(|(path, msg)| ConfigError::at(file, text, &path, msg))?;
    resolve(&cfg).map_err(|(path, msg)| ConfigError::at(file, text, &path, msg))
}

/// Parses config text (types, unknown fields, per-field formats).
pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
    serde_yaml_ng::from_str(text).map_err(|e| ConfigError::from_yaml(file, &e))
}

/// Resolves a validated config. Errors carry the path of the field to blame.
pub fn resolve(cfg: &Config) -> Result<Plan, (Path, String)> {
    let root = Path::root();
    let mut targets = Vec::with_capacity(cfg.targets.len());
    for (i, t) in cfg.targets.iter().enumerate() {
        targets.push(target(cfg, t, &root.key("targets").index(i))?);
    }
    let mut buckets = Buckets::vllm();
    let b = &cfg.buckets;
    for (dst, src) in [
        (&mut buckets.ttft, &b.ttft),
        (&mut buckets.tpot, &b.tpot),
        (&mut buckets.itl, &b.itl),
        (&mut buckets.e2e, &b.e2e),
        (&mut buckets.dispatch_lag, &b.dispatch_lag),
    ] {
        if let Some(v) = src {
            dst.clone_from(v);
        }
    }
    let buckets = buckets.with_slos(
        targets
            .iter()
            .flat_map(|t| t.scenarios.iter().map(|s| &s.slo)),
    );
    let redacted_yaml = serde_yaml_ng::to_string(cfg)
        .map_err(|e| (root.clone(), format!("cannot print the config: {e}")))?;
    Ok(Plan {
        listen: cfg.listen.clone(),
        grace_period: cfg.grace_period,
        engine_scrape_interval: cfg.engine_scrape_interval,
        buckets,
        targets,
        redacted_yaml,
    })
}

fn target(cfg: &Config, t: &Target, path: &Path) -> Result<TargetPlan, (Path, String)> {
    let mut secrets = Vec::new();
    let api_key = match (&t.api_key_file, &t.api_key_env) {
        (Some(file), _) => Some(
            Secret::from_file(file).map_err(|e| (path.key("api_key_file"), format!("{e:#}")))?,
        ),
        (None, Some(var)) => Some(Secret::from_env(var).ok_or_else(|| {
            (
                path.key("api_key_env"),
                format!("environment variable {var} is not set or empty"),
            )
        })?),
        (None, None) => None,
    };
    secrets.extend(api_key.clone());
    let mut headers = Vec::with_capacity(t.headers.len());
    for (name, value) in &t.headers {
        let hp = path.key("headers").key(name);
        let v = match value {
            HeaderValue::Literal(s) => s.clone(),
            HeaderValue::From(HeaderSource::File(file)) => {
                Secret::from_file(file).map_err(|e| (hp.clone(), format!("{e:#}")))?
            }
            HeaderValue::From(HeaderSource::Env(var)) => {
                Secret::from_env(var).ok_or_else(|| {
                    (
                        hp.clone(),
                        format!("environment variable {var} is not set or empty"),
                    )
                })?
            }
        };
        secrets.push(v.clone());
        headers.push((name.clone(), v));
    }
    let client = ClientConfig {
        base_url: t.base_url.clone(),
        endpoint: t.endpoint,
        model: t.model.clone(),
        api_key,
        headers,
        extra_body: t.extra_body.clone(),
        temperature: 0.0,
        // Per scenario: set on each scenario's client when the target starts.
        ignore_eos: false,
        min_tokens: false,
        include_usage: t.include_usage,
        continuous_usage_stats: t.continuous_usage_stats,
        max_completion_tokens: false,
        reuse_connections: t.reuse_connections,
        timeouts: t.timeouts,
        tls: t.tls.clone(),
        limits: t.limits,
    };
    client
        .validate()
        .map_err(|e| (path.clone(), format!("{e:#}")))?;
    // Reads the CA, certificate and key files now, so a missing one is a config error
    // and not a target that silently fails to start.
    crate::client::tls::client_config(&t.tls).map_err(|e| (path.key("tls"), format!("{e:#}")))?;

    let rate = t.rate.unwrap_or(cfg.defaults.rate);
    let shared = t.scenarios.iter().filter(|s| s.rate.is_none()).count();
    let mut scenarios = Vec::with_capacity(t.scenarios.len());
    for (i, s) in t.scenarios.iter().enumerate() {
        // The prompt must hold the shared prefix, the unique nonce and one more token.
        PromptGenerator::approximate(s.shared_prefix_tokens)
            .check_fits(s.input_tokens)
            .map_err(|e| {
                (
                    path.key("scenarios").index(i).key("input_tokens"),
                    e.to_string(),
                )
            })?;
        scenarios.push(scenario(cfg, t, s, rate.split(shared).hz()));
    }

    let capacity = match &t.capacity {
        None => None,
        Some(inputs) => {
            let report = crate::capacity::evaluate(inputs)
                .map_err(|e| (path.key("capacity"), e.to_string()))?;
            let replicas = f64::from(t.replicas);
            Some(CapacityPlan {
                gauges: CapacityGauges {
                    max_concurrent_sequences: report.max_concurrent_sequences,
                    kv_cache_tokens: report.kv_pool_tokens as f64,
                    kv_bytes_per_token: report.kv_bytes_per_token_per_gpu,
                    weight_bytes: report.weight_bytes_per_gpu,
                    decode_tokens_per_second: report.decode_tokens_per_second_aggregate * replicas,
                    cost_per_million_output_tokens: Some(report.cost_per_million_output_tokens),
                },
                gpus_per_replica: report.inputs.tp.max(1),
                gpu_hourly: Some(report.inputs.gpu_hourly),
            })
        }
    };
    let context_tokens = match &t.capacity {
        Some(c) => u32::try_from(c.context).unwrap_or(u32::MAX),
        None => t
            .scenarios
            .iter()
            .map(|s| s.input_tokens.saturating_add(s.output_tokens))
            .max()
            .unwrap_or(1),
    };
    Ok(TargetPlan {
        name: t.name.clone(),
        model: t.model.clone(),
        client,
        scenarios,
        max_inflight: t.max_inflight.unwrap_or(cfg.defaults.max_inflight),
        token_budget_per_hour: t.token_budget_per_hour,
        price: t.price.map(|p| TokenPrice {
            input_per_million: p.input_per_million,
            output_per_million: p.output_per_million,
        }),
        capacity,
        engine_metrics_url: t.engine_metrics_url.clone(),
        context_tokens,
        secrets,
    })
}

fn scenario(cfg: &Config, t: &Target, s: &Scenario, shared_hz: f64) -> ScenarioPlan {
    let slo = s.slo.or(cfg.defaults.slo);
    ScenarioPlan {
        name: s.name.clone(),
        rate_hz: s.rate.map_or(shared_hz, |r| r.hz()),
        input_tokens: s.input_tokens,
        output_tokens: s.output_tokens,
        shared_prefix_tokens: s.shared_prefix_tokens,
        ignore_eos: s.ignore_eos,
        slo: Slo {
            ttft: slo.ttft,
            tpot: slo.tpot,
            e2e: slo.e2e,
        },
        seed: derive_seed(cfg.seed, &t.name, &s.name),
    }
}

/// FNV-1a over the global seed and the names: stable across Rust versions and
/// platforms (std's hasher is not guaranteed to be).
pub fn derive_seed(seed: u64, target: &str, scenario: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(&seed.to_le_bytes());
    eat(target.as_bytes());
    eat(&[0xff]);
    eat(scenario.as_bytes());
    h
}
