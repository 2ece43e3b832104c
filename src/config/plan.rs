//! Turns a validated [`Config`] into the [`Plan`] the daemon runs: secrets read from
//! their files and environment variables, defaults applied, rates split per scenario,
//! seeds derived, SLOs and buckets merged, the capacity model evaluated. Everything a
//! running daemon could trip over is found here, so `--config.check` catches it and a
//! bad reload never touches the running targets.

use crate::conversation::Turns;
use crate::schedule::{ThinkDist, ThinkTime};
use std::path::Path as FsPath;
use std::time::Duration;

use super::checks::{PlannedChecks, plan_checks, plan_prompt};
use super::error::ConfigError;
use super::messages::plan_messages;
use super::otlp::OtlpPlan;
use super::probe::check_probe;
use super::replicas::ReplicaPlan;
use super::schema::{Config, HeaderSource, HeaderValue, Scenario, SelfCheckConfig, Target};
use super::shard::{Overrides, Shard};
use super::validate::validate;
use crate::client::ClientConfig;
use crate::exposition::{Buckets, CapacityGauges, TokenPrice};
use crate::latency::Slo;
use crate::probe::ProbeSpec;
use crate::secret::{Secret, redact_url};
use crate::workload::Preamble;
use crate::yaml_locate::Path;

/// A checked, resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub listen: String,
    /// The `location` label of every series, if any.
    pub location: Option<String>,
    /// Which targets and replicas this prober probes.
    pub shard: Shard,
    pub grace_period: Duration,
    pub engine_scrape_interval: Duration,
    /// How often the log summarises a failure that keeps repeating.
    pub failure_summary_interval: Duration,
    /// The self-check, when enabled.
    pub self_check: Option<SelfCheckConfig>,
    /// Probe pages kept in all (`/probe/ID`).
    pub probe_pages: usize,
    /// Where every probe is exported as a span and metric points, if anywhere; a change
    /// takes effect on restart.
    pub otlp: Option<OtlpPlan>,
    /// vLLM's buckets ∪ configured extra buckets; each scenario adds its own SLO
    /// thresholds ([`ScenarioPlan::buckets`]).
    pub buckets: Buckets,
    pub targets: Vec<TargetPlan>,
    /// The config as YAML with every secret shown as `<secret>` (for `/config`).
    pub redacted_yaml: String,
    /// Every secret file read (API keys, header files) with the value it held, so the
    /// daemon can notice a rotated key (`daemon::SECRET_CHECK_INTERVAL`).
    pub secret_files: Vec<(std::path::PathBuf, Secret)>,
}

/// One target, ready to run. Two plans of the same target compare equal exactly when
/// nothing that changes its probes changed, which is what reload diffs on.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetPlan {
    pub name: String,
    pub model: String,
    /// The prober's shard: which of this target's parts it probes (a changed shard
    /// restarts the target, whose replicas may move).
    pub shard: Shard,
    /// Carries the resolved API key and headers.
    pub client: ClientConfig,
    pub scenarios: Vec<ScenarioPlan>,
    /// The scenarios of the kinds that run on their own, not through the probe runner
    /// (never in `scenarios`).
    pub kinds: super::kinds::KindPlans,
    pub max_inflight: u32,
    pub token_budget_per_hour: Option<u64>,
    pub price: Option<TokenPrice>,
    /// Dollars per UTC day the probes may spend (with a price: the config checks it).
    pub budget_per_day: Option<f64>,
    pub capacity: Option<CapacityPlan>,
    pub engine_metrics_url: Option<String>,
    /// The endpoint picker's `/metrics` in front of the engines.
    pub router_metrics_url: Option<String>,
    /// Whether each scenario's TTFT and TPOT objectives go to the gateway as llm-d
    /// headers (the target's objective and fairness ID are in `client.llm_d`).
    pub llm_d_slo_headers: bool,
    /// Where the engine's GPU telemetry is read, and which GPUs are its.
    pub gpu: Option<super::gpu::GpuPlan>,
    /// How the replicas behind the front door are discovered and probed (the daemon's
    /// fleet, `src/daemon/fleet/`).
    pub replicas: Option<ReplicaPlan>,
    /// The LoRA adapters probed beside the model (`src/daemon/adapters.rs`).
    pub adapters: Option<super::adapters::AdapterPlan>,
    /// Tokens per sequence used to turn live KV tokens into max sequences: the
    /// capacity block's context. Never a probe scenario's size: production traffic,
    /// not the probes, fills the engine.
    pub context_tokens: Option<u32>,
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
    /// The engine scheduler's limit on running sequences (`max_num_seqs`): the live
    /// max sequences never exceed it, whatever room the KV cache has.
    pub max_num_seqs: u32,
    /// The decode step of one replica, for the roofline at the live batch.
    pub step: crate::capacity::StepModel,
}

impl CapacityPlan {
    /// The roofline's tokens per second of one replica at a batch of `running`
    /// sequences (rounded; at least one: an idle engine is measured against what one
    /// sequence could get): the capacity model's own figure.
    pub fn roofline_tokens_per_second(&self, running: f64) -> f64 {
        let batch = running.round().max(1.0);
        self.step
            .point(batch as u64, u64::from(self.gpus_per_replica), 0.0)
            .tokens_per_second_aggregate
    }
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
    /// Ask for a streamed answer.
    pub stream: bool,
    pub slo: Slo,
    /// This scenario's histogram bucket layout: vLLM's ∪ configured extras ∪ its own
    /// SLO thresholds (so `le="<threshold>"` is exact and other series are untouched
    /// when another scenario's threshold changes).
    pub buckets: Buckets,
    /// Seed of this runner's arrivals and prompts: derived from the global seed and the
    /// names, so it does not change when other targets come and go.
    pub seed: u64,
    /// The answer checks every successful probe is judged by.
    pub checks: PlannedChecks,
    /// A fixed question instead of synthetic prompts.
    pub prompt: Option<String>,
    /// Whether the unique nonce goes in front of the fixed question.
    pub nonce: bool,
    /// What a `messages:` question sends before its last user message.
    pub preamble: Option<Preamble>,
    /// What rerank and score probes rank (`documents:`, `top_n:`).
    pub documents: crate::client::Documents,
    /// The images each probe carries (`images:`, `image_file:`).
    pub images: crate::workload::image::Images,
    /// Sampling temperature, when the scenario sets one.
    pub temperature: Option<f64>,
    /// The request's sampling `seed`, when the scenario sets one.
    pub sampling_seed: Option<u64>,
    /// Each probe a conversation of this shape (`turns` ≥ 2).
    pub turns: Option<Turns>,
    /// Golden-set questions instead of a prompt.
    pub golden: Option<super::golden::PlannedGolden>,
}

impl ScenarioPlan {
    /// The scenario label of a conversation's later turns (`NAME:later`); `None`
    /// without conversations.
    pub fn later_name(&self) -> Option<String> {
        self.turns
            .map(|_| format!("{}{}", self.name, super::schema::LATER_SUFFIX))
    }
}

/// A conversation scenario's think time when it sets none.
pub const DEFAULT_THINK_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads, parses, validates and resolves a config file.
pub fn load(path: &FsPath) -> Result<Plan, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::file(&file, format!("cannot read the config file: {e}")))?;
    load_str(&text, &file)
}

/// [`load`] with the command line's overrides.
pub fn load_with(path: &FsPath, overrides: &Overrides) -> Result<Plan, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::file(&file, format!("cannot read the config file: {e}")))?;
    load_str_with(&text, &file, overrides)
}

/// Parses, validates and resolves config text; `file` names it in errors.
pub fn load_str(text: &str, file: &str) -> Result<Plan, ConfigError> {
    load_str_with(text, file, &Overrides::default())
}

/// [`load_str`] with the command line's overrides, applied before the checks.
pub fn load_str_with(text: &str, file: &str, overrides: &Overrides) -> Result<Plan, ConfigError> {
    load_text(text, file, overrides, &mut Unread::default())
}

/// A config checked on a machine it may not run on (`--config.check`): the plan, and
/// every secret it names that this machine cannot read, each located like an error.
#[derive(Debug)]
pub struct Checked {
    pub plan: Plan,
    /// Secret files and TLS files that are not here (or may not be read), environment
    /// variables that are not set: in file order.
    pub unread: Vec<ConfigError>,
}

/// Reads, parses, validates and resolves a config file like [`load_with`], except that
/// a secret this machine cannot read is noted in [`Checked::unread`] and stood in for,
/// so one run lists them all and still checks everything else. A secret that is here
/// but unusable (an empty file, a bad certificate) is an error as always.
pub fn check_with(path: &FsPath, overrides: &Overrides) -> Result<Checked, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::file(&file, format!("cannot read the config file: {e}")))?;
    let mut unread = Unread {
        noting: true,
        ..Unread::default()
    };
    let plan = load_text(&text, &file, overrides, &mut unread)?;
    let unread = unread
        .notes
        .into_iter()
        .map(|(path, msg)| ConfigError::at(&file, &text, &path, msg))
        .collect();
    Ok(Checked { plan, unread })
}

fn load_text(
    text: &str,
    file: &str,
    overrides: &Overrides,
    unread: &mut Unread,
) -> Result<Plan, ConfigError> {
    let mut cfg = parse(text, file)?;
    if let Some(location) = &overrides.location {
        cfg.location = Some(location.clone());
    }
    if let Some(shard) = overrides.shard {
        cfg.shard = Some(shard);
    }
    validate(&cfg).map_err(|(path, msg)| ConfigError::at(file, text, &path, msg))?;
    resolve_with(&cfg, unread).map_err(|(path, msg)| ConfigError::at(file, text, &path, msg))
}

/// What resolving does with a secret this machine cannot read (a file that is not
/// here, an unset environment variable): an error, or, for a check run where only the
/// deployment has them, a note and a stand-in value.
#[derive(Debug, Default)]
struct Unread {
    noting: bool,
    notes: Vec<(Path, String)>,
}

/// What stands in for a secret that could not be read; never sent (a checked plan does
/// not run).
const STAND_IN: &str = "unread";

impl Unread {
    /// The stand-in after noting `message`, or the error.
    fn note(&mut self, at: &Path, message: String) -> Result<Secret, (Path, String)> {
        if self.noting {
            self.notes.push((at.clone(), message));
            Ok(Secret::new(STAND_IN))
        } else {
            Err((at.clone(), message))
        }
    }

    /// The secret in `file`.
    fn file(&mut self, file: &FsPath, at: &Path) -> Result<Secret, (Path, String)> {
        match Secret::from_file(file) {
            Ok(s) => Ok(s),
            Err(e) if not_here(&e) => self.note(at, format!("{e:#}")),
            Err(e) => Err((at.clone(), format!("{e:#}"))),
        }
    }

    /// The secret in environment variable `var`.
    fn env(&mut self, var: &str, at: &Path) -> Result<Secret, (Path, String)> {
        match Secret::from_env(var) {
            Some(s) => Ok(s),
            None => self.note(
                at,
                format!("environment variable {var} is not set or empty"),
            ),
        }
    }

    /// The TLS settings with every file this machine cannot open left out (noted), so
    /// the rest is still checked; a client certificate goes with its key.
    fn tls(
        &mut self,
        tls: &crate::client::TlsConfig,
        at: &Path,
    ) -> Result<crate::client::TlsConfig, (Path, String)> {
        let mut kept = tls.clone();
        if !self.noting {
            return Ok(kept);
        }
        let mut drop_pair = false;
        for (field, file) in [
            ("ca_file", &tls.ca_file),
            ("client_cert_file", &tls.client_cert_file),
            ("client_key_file", &tls.client_key_file),
        ] {
            let Some(file) = file else { continue };
            let Err(e) = std::fs::File::open(file) else {
                continue;
            };
            if !io_not_here(&e) {
                continue;
            }
            let message = format!("cannot read {}: {e}", file.display());
            self.note(&at.key(field), message)?;
            match field {
                "ca_file" => kept.ca_file = None,
                _ => drop_pair = true,
            }
        }
        if drop_pair {
            kept.client_cert_file = None;
            kept.client_key_file = None;
        }
        Ok(kept)
    }
}

/// Whether an error reading a file says the file is not on this machine (or not for
/// this user), rather than that its content is wrong.
fn not_here(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(io_not_here)
}

fn io_not_here(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
    )
}

/// Parses config text (types, unknown fields, per-field formats).
pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
    serde_yaml_ng::from_str(text).map_err(|e| ConfigError::from_yaml(file, &e))
}

/// Resolves a validated config. Errors carry the path of the field to blame.
pub fn resolve(cfg: &Config) -> Result<Plan, (Path, String)> {
    resolve_with(cfg, &mut Unread::default())
}

fn resolve_with(cfg: &Config, unread: &mut Unread) -> Result<Plan, (Path, String)> {
    let root = Path::root();
    let mut buckets = Buckets::vllm();
    let b = &cfg.buckets;
    for (dst, src) in [
        (&mut buckets.ttft, &b.ttft),
        (&mut buckets.tpot, &b.tpot),
        (&mut buckets.itl, &b.itl),
        (&mut buckets.e2e, &b.e2e),
        (&mut buckets.dispatch_lag, &b.dispatch_lag),
    ] {
        // Configured buckets extend vLLM's, never replace them: the recording rules
        // and dashboards rely on vLLM's bounds (le="0.5" for TTFT) being there.
        if let Some(v) = src {
            dst.extend_from_slice(v);
        }
    }
    let buckets = buckets.normalized();
    let mut targets = Vec::with_capacity(cfg.targets.len());
    for (i, t) in cfg.targets.iter().enumerate() {
        let at = root.key("targets").index(i);
        targets.push(target(cfg, t, &at, &buckets, unread)?);
    }
    let otlp = match &cfg.otlp {
        Some(o) => {
            let mut headers = Vec::with_capacity(o.headers.len());
            for (name, value) in &o.headers {
                let path = root.key("otlp").key("headers").key(name);
                headers.push((name.clone(), header_value(value, &path, unread)?));
            }
            Some(super::otlp::resolve(o, headers))
        }
        None => None,
    };
    let mut shown = cfg.clone();
    if let Some(o) = &mut shown.otlp {
        o.endpoint = redact_url(&o.endpoint);
    }
    for t in &mut shown.targets {
        t.base_url = redact_url(&t.base_url);
        t.engine_metrics_url = t.engine_metrics_url.as_deref().map(redact_url);
        t.router_metrics_url = t.router_metrics_url.as_deref().map(redact_url);
        if let Some(g) = &mut t.gpu_metrics {
            g.url = match &g.url {
                super::gpu::OneOrMore::One(u) => super::gpu::OneOrMore::One(redact_url(u)),
                super::gpu::OneOrMore::More(us) => {
                    super::gpu::OneOrMore::More(us.iter().map(|u| redact_url(u)).collect())
                }
            };
        }
        // `/config` shows the replica count as it always has, unless they are discovered.
        if t.replicas_from.is_none() {
            t.replicas = Some(t.replicas.unwrap_or(1));
        }
    }
    let redacted_yaml = serde_yaml_ng::to_string(&shown)
        .map_err(|e| (root.clone(), format!("cannot print the config: {e}")))?;
    Ok(Plan {
        listen: cfg.listen.clone(),
        location: cfg.location.clone(),
        shard: cfg.shard.unwrap_or_default(),
        grace_period: cfg.grace_period,
        engine_scrape_interval: cfg.engine_scrape_interval,
        failure_summary_interval: cfg.failure_summary_interval,
        self_check: cfg.self_check.enabled.then(|| cfg.self_check.clone()),
        probe_pages: cfg.probe_pages,
        otlp,
        buckets,
        targets,
        redacted_yaml,
        secret_files: secret_files(cfg),
    })
}

/// Reads the provider's credential files now (a Vertex token file may change later),
/// so a missing one is a config error at its key, or a note of `--config.check
/// --config.check.allow-missing-secrets`, not a target that fails when it starts.
fn provider_files(t: &Target, path: &Path, unread: &mut Unread) -> Result<(), (Path, String)> {
    let mut files: Vec<(&FsPath, Path)> = Vec::new();
    if let Some(aws) = &t.aws {
        let at = path.key("aws");
        for (file, key) in [
            (&aws.access_key_id_file, "access_key_id_file"),
            (&aws.secret_access_key_file, "secret_access_key_file"),
            (&aws.session_token_file, "session_token_file"),
        ] {
            if let Some(f) = file {
                files.push((f, at.key(key)));
            }
        }
    }
    if let Some(g) = &t.google {
        let at = path.key("google");
        for (file, key) in [
            (&g.service_account_file, "service_account_file"),
            (&g.token_file, "token_file"),
        ] {
            if let Some(f) = file {
                files.push((f, at.key(key)));
            }
        }
    }
    for (file, at) in files {
        unread.file(file, &at)?;
    }
    Ok(())
}

/// Where a provider error points: the block or key it names, else `provider`.
fn provider_path(t: &Target, path: &Path, msg: &str) -> Path {
    for key in ["api_version", "aws", "google", "api_key"] {
        if msg.starts_with(key) || msg.contains(&format!(" {key}")) {
            let present = match key {
                "api_version" => t.api_version.is_some(),
                "aws" => t.aws.is_some(),
                "google" => t.google.is_some(),
                _ => t.api_key_file.is_some() || t.api_key_env.is_some(),
            };
            if present {
                let block = path.key(if key == "api_key" {
                    if t.api_key_file.is_some() {
                        "api_key_file"
                    } else {
                        "api_key_env"
                    }
                } else {
                    key
                });
                // `aws.region …`: the key inside the block.
                if let Some(inner) = msg
                    .strip_prefix(key)
                    .and_then(|r| r.strip_prefix('.'))
                    .and_then(|r| r.split_whitespace().next())
                {
                    return block.key(inner);
                }
                return block;
            }
        }
    }
    if msg.contains("endpoint") {
        return path.key("endpoint");
    }
    path.key("provider")
}

/// The target's `gpu_metrics:` block, planned.
fn gpu_plan(t: &Target, path: &Path) -> Result<Option<super::gpu::GpuPlan>, (Path, String)> {
    t.gpu_metrics
        .as_ref()
        .map(|g| {
            let labels = t.replicas_from.as_ref().map(|f| f.labels.as_slice());
            super::gpu::plan(
                g,
                t.engine_metrics_url.is_some(),
                labels,
                path.key("gpu_metrics"),
            )
        })
        .transpose()
}

fn target(
    cfg: &Config,
    t: &Target,
    path: &Path,
    buckets: &Buckets,
    unread: &mut Unread,
) -> Result<TargetPlan, (Path, String)> {
    let mut secrets = Vec::new();
    let api_key = match (&t.api_key_file, &t.api_key_env) {
        (Some(file), _) => Some(unread.file(file, &path.key("api_key_file"))?),
        (None, Some(var)) => Some(unread.env(var, &path.key("api_key_env"))?),
        (None, None) => None,
    };
    secrets.extend(api_key.clone());
    let mut headers = Vec::with_capacity(t.headers.len());
    for (name, value) in &t.headers {
        let v = header_value(value, &path.key("headers").key(name), unread)?;
        secrets.push(v.clone());
        headers.push((name.clone(), v));
    }
    let client = ClientConfig {
        base_url: t.base_url.clone(),
        endpoint: t.endpoint,
        provider: t.provider,
        api_version: t.api_version.clone(),
        aws: t.aws.clone(),
        google: t.google.clone(),
        model: t.model.clone(),
        api_key,
        headers,
        extra_body: t.extra_body.clone(),
        // Per scenario, like `ignore_eos`.
        stream: true,
        anthropic_version: t
            .anthropic_version
            .clone()
            .unwrap_or_else(|| crate::client::config::DEFAULT_ANTHROPIC_VERSION.to_string()),
        temperature: 0.0,
        // Per scenario: set on each scenario's client when the target starts.
        ignore_eos: false,
        min_tokens: false,
        include_usage: t.include_usage,
        continuous_usage_stats: t.continuous_usage_stats,
        max_completion_tokens: false,
        traceparent: t.traceparent,
        reuse_connections: t.reuse_connections,
        timeouts: t.timeouts,
        tls: t.tls.clone(),
        limits: t.limits,
        response_schema: None,
        tool: None,
        // Per scenario: its `documents:`.
        documents: Default::default(),
        images: Default::default(),
        llm_d: super::llm_d::headers(t.llm_d.as_ref()),
    };
    // The client's message quotes the URL; show it as `/config` would.
    client.validate().map_err(|e| {
        let msg = format!("{e:#}").replace(&t.base_url, &redact_url(&t.base_url));
        (path.clone(), msg)
    })?;
    crate::client::provider::check(&client).map_err(|e| (provider_path(t, path, &e), e))?;
    provider_files(t, path, unread)?;
    // Reads the CA, certificate and key files now, so a missing one is a config error
    // and not a target that silently fails to start.
    let tls = unread.tls(&t.tls, &path.key("tls"))?;
    crate::client::tls::client_config(&tls).map_err(|e| (path.key("tls"), format!("{e:#}")))?;

    let kinds = super::kinds::KindPlans::plan(t, &path.key("scenarios"))?;
    let scenarios = scenarios(cfg, t, path, buckets)?;
    let price = t.price.map(|p| TokenPrice {
        input_per_million: p.input_per_million,
        output_per_million: p.output_per_million,
    });
    super::cost_budget::check(t.budget_per_day, price.as_ref(), &scenarios, path)?;

    let replicas = super::replicas::plan(cfg, t, path)?;
    let adapters = super::adapters::plan(t, path)?;
    let capacity = capacity_plan(t, path)?;
    let context_tokens = t
        .capacity
        .as_ref()
        .map(|c| u32::try_from(c.context).unwrap_or(u32::MAX).max(1));
    Ok(TargetPlan {
        name: t.name.clone(),
        model: t.model.clone(),
        shard: cfg.shard.unwrap_or_default(),
        client,
        scenarios,
        kinds,
        max_inflight: t.max_inflight.unwrap_or(cfg.defaults.max_inflight),
        token_budget_per_hour: t.token_budget_per_hour,
        price,
        budget_per_day: t.budget_per_day,
        capacity,
        engine_metrics_url: t.engine_metrics_url.clone(),
        router_metrics_url: t.router_metrics_url.clone(),
        llm_d_slo_headers: t.llm_d.as_ref().is_some_and(|l| l.slo_headers),
        gpu: gpu_plan(t, path)?,
        replicas,
        adapters,
        context_tokens,
        secrets,
    })
}

/// Every scenario of a target, each checked as a probe.
fn scenarios(
    cfg: &Config,
    t: &Target,
    path: &Path,
    buckets: &Buckets,
) -> Result<Vec<ScenarioPlan>, (Path, String)> {
    let rate = t.rate.unwrap_or(cfg.defaults.rate);
    // Kinds were checked by `KindPlans::plan` first.
    let probed =
        |s: &Scenario| super::kinds::kind_of(s, path).is_ok_and(super::kinds::KindName::is_probed);
    let shared = t
        .scenarios
        .iter()
        .filter(|s| probed(s))
        .filter(|s| s.rate.is_none())
        .count();
    let mut scenarios = Vec::with_capacity(t.scenarios.len());
    for (i, s) in t.scenarios.iter().enumerate() {
        if !probed(s) {
            continue;
        }
        let sp = path.key("scenarios").index(i);
        let probe = check_probe(cfg, t, s, path, &sp)?;
        let mut plan = scenario(cfg, t, s, &probe, rate.split(shared).hz(), buckets);
        plan.checks = plan_checks(s, &sp)?;
        plan.golden = super::golden::plan_golden(s, &sp)?;
        plan.prompt = plan_prompt(s, &sp)?;
        plan.images = plan_images(s, &sp)?;
        if t.provider.is_some() && !plan.images.is_none() {
            // The provider's wire format decides whether images can go: checked as the
            // client will check it, at the scenario's `images:`.
            let client = crate::client::ClientConfig {
                endpoint: t.endpoint,
                provider: t.provider,
                api_version: t.api_version.clone(),
                aws: t.aws.clone(),
                google: t.google.clone(),
                images: plan.images.clone(),
                ..crate::client::ClientConfig::default()
            };
            crate::client::provider::check(&client).map_err(|e| (sp.key("images"), e))?;
        }
        if let Some((question, preamble)) = plan_messages(s, &sp)? {
            plan.prompt = Some(question);
            plan.preamble = Some(preamble);
        }
        scenarios.push(plan);
    }
    Ok(scenarios)
}

/// The images of scenario `s`: generated, or its `image_file` read (bounded).
fn plan_images(
    s: &Scenario,
    path: &Path,
) -> Result<crate::workload::image::Images, (Path, String)> {
    use crate::workload::image::Images;
    match (&s.images, &s.image_file) {
        (Some(_), Some(_)) => Err((
            path.key("image_file"),
            "set images or image_file, not both".into(),
        )),
        (Some(i), None) => {
            Images::generated(i.count, i.width, i.height).map_err(|e| (path.key("images"), e))
        }
        (None, Some(file)) => Images::file(file).map_err(|e| (path.key("image_file"), e)),
        (None, None) => Ok(Images::None),
    }
}

/// The capacity model of a target, evaluated once when the config loads.
fn capacity_plan(t: &Target, path: &Path) -> Result<Option<CapacityPlan>, (Path, String)> {
    Ok(match &t.capacity {
        None => None,
        Some(inputs) => {
            let report = crate::capacity::evaluate(inputs)
                .map_err(|e| (path.key("capacity"), e.to_string()))?;
            let replicas = f64::from(t.replicas.unwrap_or(1));
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
                max_num_seqs: report.inputs.max_num_seqs,
                step: report.step,
            })
        }
    })
}

fn scenario(
    cfg: &Config,
    t: &Target,
    s: &Scenario,
    probe: &ProbeSpec,
    shared_hz: f64,
    buckets: &Buckets,
) -> ScenarioPlan {
    let slo = probe.slo;
    ScenarioPlan {
        name: s.name.clone(),
        rate_hz: s.rate.map_or(shared_hz, |r| r.hz()),
        input_tokens: s.input_tokens,
        output_tokens: s.output_tokens,
        shared_prefix_tokens: s.shared_prefix_tokens,
        ignore_eos: s.ignore_eos,
        stream: probe.streamed(),
        buckets: buckets.clone().with_slos([&slo]),
        slo,
        seed: derive_seed(cfg.seed, &t.name, &s.name),
        checks: PlannedChecks::default(),
        prompt: None,
        nonce: s.nonce,
        preamble: None,
        documents: crate::client::Documents {
            texts: std::sync::Arc::new(s.documents.clone()),
            top_n: s.top_n,
        },
        images: crate::workload::image::Images::None,
        temperature: s.temperature,
        sampling_seed: s.seed,
        turns: (s.turns > 1).then(|| Turns {
            count: s.turns,
            think: ThinkTime {
                mean: s.think_time.unwrap_or(DEFAULT_THINK_TIME),
                dist: s.think_time_dist.unwrap_or(ThinkDist::Exponential),
            },
        }),
        golden: None,
    }
}

/// A header's value: literal, or read from its file or environment variable.
fn header_value(
    value: &HeaderValue,
    path: &Path,
    unread: &mut Unread,
) -> Result<Secret, (Path, String)> {
    match value {
        HeaderValue::Literal(s) => Ok(s.clone()),
        HeaderValue::From(HeaderSource::File(file)) => unread.file(file, path),
        HeaderValue::From(HeaderSource::Env(var)) => unread.env(var, path),
    }
}

/// The secret files of a config with their current values (read again: `resolve`
/// already read each once, so they exist and are readable; one that vanished in
/// between is simply not watched).
fn secret_files(cfg: &Config) -> Vec<(std::path::PathBuf, Secret)> {
    let mut out = Vec::new();
    for t in &cfg.targets {
        let files = t
            .api_key_file
            .iter()
            .chain(t.headers.values().filter_map(|v| match v {
                HeaderValue::From(HeaderSource::File(f)) => Some(f),
                _ => None,
            }));
        for f in files {
            if let Ok(v) = Secret::from_file(f) {
                out.push((f.clone(), v));
            }
        }
    }
    out
}

/// Which secret files of `plan` hold a different value now (or cannot be read).
pub fn changed_secret_files(plan: &Plan) -> Vec<std::path::PathBuf> {
    plan.secret_files
        .iter()
        .filter(|(path, old)| Secret::from_file(path).map_or(true, |now| now != *old))
        .map(|(path, _)| path.clone())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_secret_files_are_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        let header = dir.path().join("header");
        std::fs::write(&key, "sk-old\n").unwrap();
        std::fs::write(&header, "h-old").unwrap();
        let text = format!(
            "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    api_key_file: {}\n    headers:\n      X-Gw: {{file: {}}}\n",
            key.display(),
            header.display()
        );
        let plan = load_str(&text, "c.yaml").unwrap();
        assert_eq!(plan.secret_files.len(), 2);
        assert!(changed_secret_files(&plan).is_empty());
        std::fs::write(&key, "sk-new\n").unwrap();
        assert_eq!(changed_secret_files(&plan), vec![key.clone()]);
        std::fs::remove_file(&header).unwrap();
        assert_eq!(changed_secret_files(&plan), vec![key, header]);
        // The plan's Debug never shows the values it watches.
        assert!(!format!("{plan:?}").contains("sk-old"));
    }

    #[test]
    fn a_check_lists_every_secret_not_on_this_machine_and_checks_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let text = "targets:\n  - name: a\n    base_url: http://127.0.0.1:1\n    model: m\n    \
                    api_key_file: /nonexistent/key\n    headers:\n      X-Gw: {env: LLMPROBE_TEST_UNSET_VARIABLE}\n    \
                    tls: {ca_file: /nonexistent/ca.pem, client_cert_file: /nonexistent/c.pem, client_key_file: /nonexistent/c.key}\n  \
                    - name: b\n    base_url: http://127.0.0.1:1\n    model: m\n    api_key_env: LLMPROBE_TEST_UNSET_VARIABLE\n";
        let path = dir.path().join("c.yaml");
        std::fs::write(&path, text).unwrap();
        let file = path.display().to_string();
        let checked = check_with(&path, &Overrides::default()).unwrap();
        assert_eq!(checked.plan.targets.len(), 2);
        let unread: Vec<String> = checked.unread.iter().map(ToString::to_string).collect();
        let enoent = "No such file or directory (os error 2)";
        assert_eq!(
            unread,
            [
                format!(
                    "{file}:5:19: targets[0].api_key_file: reading secret file /nonexistent/key: {enoent}"
                ),
                format!(
                    "{file}:7:13: targets[0].headers.X-Gw: environment variable LLMPROBE_TEST_UNSET_VARIABLE is not set or empty"
                ),
                format!(
                    "{file}:8:20: targets[0].tls.ca_file: cannot read /nonexistent/ca.pem: {enoent}"
                ),
                format!(
                    "{file}:8:59: targets[0].tls.client_cert_file: cannot read /nonexistent/c.pem: {enoent}"
                ),
                format!(
                    "{file}:8:96: targets[0].tls.client_key_file: cannot read /nonexistent/c.key: {enoent}"
                ),
                format!(
                    "{file}:12:18: targets[1].api_key_env: environment variable LLMPROBE_TEST_UNSET_VARIABLE is not set or empty"
                ),
            ]
        );
        // The daemon itself stops at the first.
        let err = load_with(&path, &Overrides::default()).unwrap_err();
        assert_eq!(err, checked.unread[0]);

        // A secret that is here but unusable, and any other mistake, is still an error.
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        std::fs::write(
            &path,
            text.replace("/nonexistent/key", &empty.display().to_string()),
        )
        .unwrap();
        let err = check_with(&path, &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("is empty"), "{err}");
        std::fs::write(
            &path,
            text.replace(
                "model: m\n    api_key_env",
                "model: m\n    rate: fast\n    api_key_env",
            ),
        )
        .unwrap();
        let err = check_with(&path, &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("targets[1].rate"), "{err}");
    }

    #[test]
    fn every_objective_refuses_zero_and_needs_streaming_where_its_latency_does() {
        for l in crate::latency::Latency::objectives() {
            let name = l.name();
            let zero = format!(
                "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    scenarios:\n      - name: s\n        slo: {{{name}: 0s}}\n"
            );
            let err = load_str(&zero, "c.yaml").unwrap_err().to_string();
            assert!(
                err.contains(&format!("slo.{name}: must be greater than zero")),
                "{err}"
            );
            let unstreamed = zero.replace(": 0s}", ": 1s}") + "        stream: false\n";
            let refused = load_str(&unstreamed, "c.yaml").is_err();
            assert_eq!(refused, l.needs_streaming(), "{name}");
        }
    }
}
