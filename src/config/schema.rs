//! The config file's types with their defaults: they are the schema
//! (`docs/config.schema.json` is generated from them) and what `/config` prints.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::rate::ProbeRate;
use crate::check::CheckSpec;
use crate::client::{AwsConfig, Endpoint, GoogleConfig, Limits, Provider, Timeouts, TlsConfig};
use crate::schedule::ThinkDist;
use crate::secret::Secret;

/// Default listen address of the exporter (the port is llmprobe's own, next to
/// Prometheus' OpenTelemetry range).
pub const DEFAULT_LISTEN: &str = "0.0.0.0:9464";

/// The whole config file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address of the HTTP server (`/metrics`, `/-/ready`, ...). `--listen` overrides it.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Where this prober runs (`eu-west-1`): a `location` label on every `llmprobe_*`
    /// series, so alerts can tell a failing endpoint from one location's network.
    /// `--location` overrides it; a change takes effect on restart. Default: no label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// This prober's share when several split the targets: `{index, count}`; it probes
    /// only the targets, and discovered replicas, whose stable hash mod `count` is
    /// `index`. `--shard I/N` overrides it. Default: every target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::shard::Shard>,
    /// Seed of every random choice (arrival times, prompts). Each target × scenario
    /// derives its own stream from it, so adding a target does not change the others.
    #[serde(default)]
    pub seed: u64,
    /// How long in-flight probes may run on shutdown before they are cancelled.
    #[serde(default = "default_grace_period", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub grace_period: Duration,
    /// How often engines with `engine_metrics_url` are scraped.
    #[serde(default = "default_scrape_interval", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub engine_scrape_interval: Duration,
    /// How often a failure that keeps repeating (a target's probes, its engine scrapes)
    /// is summarised in the log: its first occurrence is logged at once, then one line
    /// per interval while it lasts, and one when it recovers.
    #[serde(
        default = "default_failure_summary_interval",
        with = "crate::duration::human"
    )]
    #[schemars(with = "String")]
    pub failure_summary_interval: Duration,
    /// Extra histogram bucket upper bounds in seconds, per metric. They extend vLLM's own
    /// buckets (never replace them); every configured SLO threshold is added in any case.
    #[serde(default)]
    pub buckets: BucketsConfig,
    /// Values every target inherits unless it sets its own.
    #[serde(default)]
    pub defaults: Defaults,
    /// The daemon measuring itself: probes of an in-process reference engine whose
    /// timing is known, through the same client as every target, exported as the
    /// prober's own error bar (`llmprobe_self_check_*`).
    #[serde(default)]
    pub self_check: SelfCheckConfig,
    /// Probe pages (`/probe/ID`) kept in all, shared out evenly over the target ×
    /// scenario (and replica) keys, at least one each.
    #[serde(default = "default_probe_pages")]
    pub probe_pages: usize,
    /// OpenTelemetry export: each probe as a client span (with the trace and span IDs
    /// of its `traceparent`) and as GenAI metric points, over OTLP/HTTP. A change takes
    /// effect on restart. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<OtlpConfig>,
    /// The endpoints to probe.
    pub targets: Vec<Target>,
}

fn default_probe_pages() -> usize {
    crate::status::probe_pages::DEFAULT_KEEP
}

fn default_listen() -> String {
    DEFAULT_LISTEN.to_string()
}

fn default_grace_period() -> Duration {
    Duration::from_secs(10)
}

fn default_scrape_interval() -> Duration {
    Duration::from_secs(15)
}

fn default_failure_summary_interval() -> Duration {
    Duration::from_secs(60)
}

/// How often spans and metrics are sent unless `interval` says.
pub const DEFAULT_OTLP_INTERVAL: Duration = Duration::from_secs(10);

/// `otlp: {endpoint, protocol, headers, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OtlpConfig {
    /// The collector's OTLP/HTTP base URL (`http://otel-collector:4318`): spans go to
    /// `ENDPOINT/v1/traces`, metrics to `ENDPOINT/v1/metrics`.
    pub endpoint: String,
    /// The wire protocol; only `http/protobuf` (OTLP over HTTP, protobuf bodies).
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// Extra request headers (a collector's API key): a literal value, or
    /// `{file: PATH}` / `{env: VAR}`, read at start.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, HeaderValue>,
    /// How often finished spans and the metrics are sent (default 10s).
    #[serde(default = "default_otlp_interval", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub interval: Duration,
}

fn default_otlp_interval() -> Duration {
    DEFAULT_OTLP_INTERVAL
}

/// OTLP's transports, by the names of `OTEL_EXPORTER_OTLP_PROTOCOL`; llmprobe speaks one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum OtlpProtocol {
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

/// Histogram buckets (seconds) per latency metric.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BucketsConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_lag: Option<Vec<f64>>,
}

/// Defaults for every target.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Probe rate of a target, shared evenly by its scenarios (Poisson arrivals).
    #[serde(default = "default_rate")]
    pub rate: ProbeRate,
    /// Most probes in flight per target × scenario; arrivals beyond it are skipped
    /// (`llmprobe_probes_skipped_total{reason="max_inflight"}`).
    #[serde(default = "default_max_inflight")]
    pub max_inflight: u32,
    /// Objectives of every scenario that does not set its own (per field).
    #[serde(default)]
    pub slo: super::slo::SloConfig,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            rate: default_rate(),
            max_inflight: default_max_inflight(),
            slo: super::slo::SloConfig::default(),
        }
    }
}

/// The self-check's reference engine and how often it is probed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelfCheckConfig {
    /// On by default: an instrument should say when it is wrong.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Self-probes per second, minute or hour (Poisson arrivals, like a target's).
    #[serde(default = "default_self_check_rate")]
    pub rate: ProbeRate,
    /// The reference engine's time to first token (its truth for the TTFT error).
    #[serde(default = "default_self_check_ttft", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub ttft: Duration,
    /// The reference engine's gap between tokens (its truth for the ITL error).
    #[serde(default = "default_self_check_itl", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub itl: Duration,
    /// Tokens of each self-probe's answer.
    #[serde(default = "default_self_check_output_tokens")]
    pub output_tokens: u32,
}

impl Default for SelfCheckConfig {
    fn default() -> Self {
        SelfCheckConfig {
            enabled: true,
            rate: default_self_check_rate(),
            ttft: default_self_check_ttft(),
            itl: default_self_check_itl(),
            output_tokens: default_self_check_output_tokens(),
        }
    }
}

fn default_self_check_rate() -> ProbeRate {
    ProbeRate::SIX_PER_MINUTE
}

fn default_self_check_ttft() -> Duration {
    Duration::from_millis(50)
}

fn default_self_check_itl() -> Duration {
    Duration::from_millis(5)
}

fn default_self_check_output_tokens() -> u32 {
    16
}

fn default_rate() -> ProbeRate {
    ProbeRate::ONE_PER_MINUTE
}

fn default_max_inflight() -> u32 {
    4
}

/// One endpoint to probe.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Unique name; the `target` label of every series (never the URL).
    pub name: String,
    /// Server base URL, with or without a trailing `/v1`.
    pub base_url: String,
    /// The `model` field of requests; the `model` label.
    pub model: String,
    /// The API: chat, completions, responses, messages (Anthropic) or embeddings.
    #[serde(default)]
    pub endpoint: Endpoint,
    /// A hosted API: `azure` (chat, responses, embeddings), `bedrock`, `gemini` or
    /// `vertex` (chat). Absent: the plain OpenAI/Anthropic shape of `endpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    /// Azure: the `api-version` of the deployment path; absent or `v1`: the v1 API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Bedrock: `region`, and credentials from files (else the AWS environment
    /// variables, else the shared credentials file's `profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws: Option<AwsConfig>,
    /// Vertex: `project`, `location`, and `service_account_file` or `token_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google: Option<GoogleConfig>,
    /// The `anthropic-version` header of `messages` requests (default 2023-06-01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anthropic_version: Option<String>,
    /// File holding the API key (sent as `Authorization: Bearer`, or `x-api-key` for
    /// `messages`), e.g. a mounted Kubernetes Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<PathBuf>,
    /// Environment variable holding the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Extra request headers: a literal value, or `{file: PATH}` / `{env: VAR}`.
    /// Values are secrets: `/config` shows literal ones as `<secret>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, HeaderValue>,
    #[serde(default)]
    pub tls: TlsConfig,
    #[serde(default)]
    pub timeouts: Timeouts,
    #[serde(default)]
    pub limits: Limits,
    /// Probe rate of this target, shared evenly by its scenarios (default:
    /// `defaults.rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<ProbeRate>,
    /// Most probes in flight per scenario (default: `defaults.max_inflight`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_inflight: Option<u32>,
    /// Tokens (prompt + output) the probes of this target may spend per hour; arrivals
    /// beyond it are skipped (`reason="token_budget"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget_per_hour: Option<u64>,
    /// Price of the target's tokens, for the probes' own spend
    /// (`llmprobe_probe_cost_dollars_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<PriceConfig>,
    /// Dollars the probes of this target may spend per UTC day at its `price:`
    /// (needed). `--config.check` refuses a config whose expected daily spend exceeds
    /// it; once the day's spend reaches it, arrivals are skipped
    /// (`reason="cost_budget"`) until the next UTC day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_per_day: Option<f64>,
    /// Send `stream_options.continuous_usage_stats` (vLLM; exact tokens per chunk).
    /// Turn off for servers that reject unknown fields.
    #[serde(default = "yes")]
    pub continuous_usage_stats: bool,
    /// Send `stream_options.include_usage`.
    #[serde(default = "yes")]
    pub include_usage: bool,
    /// Keep connections open between probes (default). `false` opens a new connection
    /// per probe, so TTFT includes TCP and TLS setup as a brand-new client sees it.
    #[serde(default = "yes")]
    pub reuse_connections: bool,
    /// Send a W3C `traceparent` header with every probe (default), so the engine's own
    /// span of it shares the probe's trace ID. `false` for strict gateways.
    #[serde(default = "yes")]
    pub traceparent: bool,
    /// JSON fields merged into every request body last.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// What to send; one runner each. Default: one scenario named `default`.
    #[serde(default = "default_scenarios")]
    pub scenarios: Vec<Scenario>,
    /// Replicas behind `base_url` (multiplies the aggregate capacity gauges); default 1.
    /// A target counts its replicas here or discovers them with `replicas_from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", default = "one_replica")]
    pub replicas: Option<u32>,
    /// Where the replicas behind `base_url` are discovered: exactly one of `dns`, `srv`,
    /// `file_sd`, `http_sd`, `static`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas_from: Option<super::replicas_from::ReplicasFrom>,
    /// Probes to each discovered replica, besides the front door's `rate` (default:
    /// `defaults.rate`). Needs `replicas_from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_rate: Option<ProbeRate>,
    /// The engine metrics path scraped on every discovered replica (default `/metrics`).
    /// Needs `replicas_from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_metrics_path: Option<String>,
    /// Which series each discovered replica exports: `slim` (default: TTFT and E2E
    /// histograms and the outcome counters) or `full` (every latency histogram).
    /// Needs `replicas_from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_series: Option<ReplicaSeries>,
    /// The capacity model of this deployment, published as `llmprobe_capacity_*`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "capacity_yaml::serialize"
    )]
    pub capacity: Option<crate::capacity::CapacityInputs>,
    /// The engine's own Prometheus endpoint (vLLM, SGLang, llama.cpp or TGI `/metrics`),
    /// scraped every `engine_scrape_interval` for live load, KV capacity and server-side
    /// TTFT; for llama.cpp, `/props` on the same server gives its slot count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_metrics_url: Option<String>,
    /// The `/metrics` of the llm-d / Gateway API Inference Extension endpoint picker
    /// in front of the target's engines, scraped every `engine_scrape_interval` for
    /// its pool's view: ready endpoints, mean KV-cache use and queue, flow-control
    /// saturation and queue, prefix-index hit ratio, SLO violations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_metrics_url: Option<String>,
    /// The llm-d gateway headers the probes carry (latency objectives, objective,
    /// fairness ID); none unless asked for here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_d: Option<super::llm_d::LlmdConfig>,
    /// GPU telemetry (NVIDIA dcgm-exporter) of the engine's GPUs: power, energy per
    /// output token, tokens per joule, live cost by part and efficiency against the
    /// capacity model's roofline. Needs `engine_metrics_url` or `replicas_from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_metrics: Option<super::gpu::GpuMetricsConfig>,
    /// LoRA adapters served on `model`, each probed as its own `model`: a list of
    /// `{name, weight}` (the base model gets 1 − their sum of the probes), or
    /// `{discover: true, weight: W}` to find them in `/v1/models` (adapters list the
    /// base as their `parent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapters: Option<AdaptersConfig>,
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// The replica count's default as the schema shows it.
fn one_replica() -> Option<u32> {
    Some(1)
}

fn default_scenarios() -> Vec<Scenario> {
    vec![Scenario::default()]
}

/// A header value: literal, from a file, or from an environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HeaderValue {
    /// A literal value (shown as `<secret>` in `/config`).
    Literal(Secret),
    /// `{file: PATH}` or `{env: VAR}`.
    From(HeaderSource),
}

/// Where a header value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum HeaderSource {
    File(PathBuf),
    Env(String),
}

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    #[serde(default)]
    pub input_per_million: f64,
    #[serde(default)]
    pub output_per_million: f64,
}

/// What a conversation scenario's name gets for its later turns' series
/// (`scenario="NAME:later"`); turn 1 keeps the scenario's own name.
pub const LATER_SUFFIX: &str = ":later";

/// One kind of probe request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Unique within the target; the `scenario` label.
    #[serde(default = "default_scenario_name")]
    pub name: String,
    /// What the scenario does: `probe` (requests at its rate, the default), `golden`
    /// (a golden set's questions, judged; needs `golden:`), `fingerprint` (logprob
    /// fingerprints against a baseline; needs `fingerprint:`) or `model_list` (the
    /// endpoint's model list read; needs `model_list:`). Unset: what its blocks say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<KindName>,
    /// Prompt length in tokens (approximate without a tokenizer).
    #[serde(default = "default_input_tokens")]
    pub input_tokens: u32,
    /// Output tokens asked for (`max_tokens`).
    #[serde(default = "default_output_tokens")]
    pub output_tokens: u32,
    /// Tokens of a fixed prefix shared by every prompt of this scenario (measures the
    /// prefix cache on purpose); 0 = every prompt unique from its first token.
    #[serde(default)]
    pub shared_prefix_tokens: u32,
    /// Send `ignore_eos` so every probe generates exactly `output_tokens` (comparable
    /// TPOT and E2E from probe to probe).
    #[serde(default = "yes")]
    pub ignore_eos: bool,
    /// Ask for a streamed answer (default). `false` measures the whole answer only:
    /// no TTFT, TPOT or ITL exist then, so only an `e2e` objective applies.
    /// Embeddings are never streamed.
    #[serde(default = "yes")]
    pub stream: bool,
    /// Objectives of this scenario; unset fields fall back to `defaults.slo`.
    #[serde(default)]
    pub slo: super::slo::SloConfig,
    /// A fixed rate for this scenario instead of its share of the target's rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<ProbeRate>,
    /// Answer checks: what a correct answer looks like. A failed check makes the probe
    /// not good (`llmprobe_check_failures_total`), never a request failure.
    #[serde(default, skip_serializing_if = "CheckSpec::is_empty")]
    pub checks: CheckSpec,
    /// A fixed question for every probe (a deterministic prompt for answer checks)
    /// instead of synthetic text of `input_tokens`; the unique nonce still starts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Like `prompt`, read from this file when the config loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_file: Option<PathBuf>,
    /// A fixed question as a chat message list: an optional `system` message first, then
    /// `user` and `assistant` messages in turn (examples), ending with the `user`
    /// question. Chat, Responses and Anthropic Messages send it as a list (the system
    /// message as chat's first message, Responses' `instructions`, Anthropic's
    /// `system`); the unique nonce starts the last user message unless `nonce: false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<ChatMessage>>,
    /// The documents a `rerank` or `score` target's probes rank against the prompt (the
    /// query, `text_1`), in order: the first is document 0 (`checks.expect_top_document`).
    /// Needed by those endpoints, refused by the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<String>,
    /// Rerank's `top_n`: how many results to ask for (default: the server's, all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_n: Option<u32>,
    /// Images generated for each probe (PNG `data:` URLs in the user message), for a
    /// vision-language model on `chat`, `responses` or `messages`; each probe's differ
    /// (drawn from its prompt, nonce included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesConfig>,
    /// One image file (PNG, JPEG, GIF or WebP) sent with every probe instead, read when
    /// the config loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_file: Option<PathBuf>,
    /// Sampling temperature of this scenario's requests (default: the target's, 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sampling `seed` sent in this scenario's requests, for servers that honour it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Put the unique nonce in front of the fixed question (default; prefix-cache
    /// hygiene). `false` sends `prompt` byte for byte the same on every probe, for
    /// exact-match questions; it needs `prompt` or `prompt_file`. A golden set's
    /// questions never carry one.
    #[serde(default = "yes")]
    pub nonce: bool,
    /// Turns per probe: with 2 or more each probe is a conversation whose later turns
    /// resend the history (the warm prefix-cache path), observed as scenario
    /// `NAME:later`.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub turns: u32,
    /// Mean think time between an answer and the conversation's next turn, e.g. `2s`;
    /// default 1s.
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub think_time: Option<Duration>,
    /// How think times are drawn around `think_time`: `exponential` (default) or
    /// `constant`, as `bench --think-time-dist`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time_dist: Option<ThinkDist>,
    /// Ask a golden set's questions (in a seeded random order, at the scenario's rate)
    /// instead of a prompt, judge each answer by its own expected answer, and export
    /// the rolling accuracy with its Wilson interval (`llmprobe_golden_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden: Option<GoldenConfig>,
    /// Makes this a fingerprint scenario: every `every`, the baseline's prompts are
    /// asked at temperature 0 with logprobs and the answers compared with the baseline's
    /// (`llmprobe_fingerprint_*`); it sends no other probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<FingerprintConfig>,
    /// Makes this a model-list scenario: every `every`, the endpoint's model list
    /// (`GET /v1/models`) is read and whether it names the target's model is exported
    /// (`llmprobe_model_list_*`); it sends no probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_list: Option<ModelListConfig>,
    /// Makes this a prefix-cache scenario: every `every`, a session of a cold probe (a
    /// prefix the engine cannot have seen) and warm probes reusing it, through the front
    /// door with an optional affinity header or cookie (`llmprobe_prefix_cache_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCacheConfig>,
}

/// A scenario's `golden:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldenConfig {
    /// A JSONL file of questions with expected answers, or `builtin` for the set
    /// shipped in the binary.
    pub file: String,
    /// Judged answers the rolling accuracy covers (the last N).
    #[serde(default = "default_golden_window")]
    pub window: u32,
    /// The validated model's accuracy on this set (0..1): the alert fires when the
    /// interval's upper bound stays below it. Unset: no baseline series, no alert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
}

/// Judged answers in the rolling window unless `window` says otherwise.
pub const DEFAULT_GOLDEN_WINDOW: u32 = 200;

fn default_golden_window() -> u32 {
    DEFAULT_GOLDEN_WINDOW
}

/// What a scenario does: the values of its `kind:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KindName {
    /// Requests at the scenario's rate through the probe pipeline.
    Probe,
    /// A golden set's questions through the probe pipeline, each answer judged.
    Golden,
    /// Logprob fingerprints compared with a recorded baseline.
    Fingerprint,
    /// The endpoint's model list read, and the target's model looked for in it.
    ModelList,
    /// Cold and warm probes of one prefix: is the prefix cache (and the router that
    /// should keep a session on its replica) doing its job?
    PrefixCache,
}

impl KindName {
    /// Every kind, in the order the docs list them.
    pub const ALL: [KindName; 5] = [
        KindName::Probe,
        KindName::Golden,
        KindName::Fingerprint,
        KindName::ModelList,
        KindName::PrefixCache,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            KindName::Probe => "probe",
            KindName::Golden => "golden",
            KindName::Fingerprint => "fingerprint",
            KindName::ModelList => "model_list",
            KindName::PrefixCache => "prefix_cache",
        }
    }

    /// Whether its scenarios are probes of the open-loop runner (and share the
    /// target's rate).
    pub fn is_probed(self) -> bool {
        matches!(self, KindName::Probe | KindName::Golden)
    }
}

/// `fingerprint: {baseline: FILE, every: 10m}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FingerprintConfig {
    /// The file `llmprobe fingerprint record` wrote.
    pub baseline: PathBuf,
    /// How often the baseline's prompts are asked again, e.g. `10m` (default).
    #[serde(default = "default_every", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub every: Duration,
}

fn default_every() -> Duration {
    Duration::from_secs(600)
}

/// `model_list: {every: 1m}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelListConfig {
    /// How often the endpoint's model list is read, e.g. `1m` (default).
    #[serde(default = "default_model_list_every", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub every: Duration,
}

fn default_model_list_every() -> Duration {
    Duration::from_secs(60)
}

/// `prefix_cache: {prefix_tokens: 1024, every: 30s, affinity: {header: x-session-token}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrefixCacheConfig {
    /// Tokens of the prefix each session shares (approximate without a tokenizer: one
    /// word each); a fresh nonce starts it.
    pub prefix_tokens: u32,
    /// How often a session starts, e.g. `30s` (default).
    #[serde(
        default = "default_prefix_cache_every",
        with = "crate::duration::human"
    )]
    #[schemars(with = "String")]
    pub every: Duration,
    /// Tokens of each probe's question after the prefix (default 32).
    #[serde(default = "default_question_tokens")]
    pub question_tokens: u32,
    /// Output tokens each probe asks for (default 8).
    #[serde(default = "default_prefix_cache_output")]
    pub output_tokens: u32,
    /// Warm probes after each cold one (default 1).
    #[serde(default = "one")]
    pub warm_probes: u32,
    /// Sessions the ratios cover (the last N; default 10).
    #[serde(default = "default_prefix_cache_window")]
    pub window: u32,
    /// How production traffic keeps a session on its replica: `{header: NAME}` (e.g.
    /// llm-d's `x-session-token`) or `{cookie: NAME}`, with a fresh value per session.
    /// Unset: no affinity sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<AffinityConfig>,
    /// The objective: warm probes' cached share of their prompt tokens at least this
    /// (default 0.8).
    #[serde(default = "default_min_hit_ratio")]
    pub min_hit_ratio: f64,
    /// The objective: warm mean TTFT at most this share of cold mean TTFT (default 0.3).
    #[serde(default = "default_max_ttft_ratio")]
    pub max_ttft_ratio: f64,
}

/// `affinity: {header: NAME}` or `{cookie: NAME}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AffinityConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
}

fn default_prefix_cache_every() -> Duration {
    Duration::from_secs(30)
}

fn default_question_tokens() -> u32 {
    32
}

fn default_prefix_cache_output() -> u32 {
    8
}

fn default_prefix_cache_window() -> u32 {
    10
}

fn default_min_hit_ratio() -> f64 {
    0.8
}

fn default_max_ttft_ratio() -> f64 {
    0.3
}

/// One message of a scenario's `messages:`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            name: default_scenario_name(),
            input_tokens: default_input_tokens(),
            output_tokens: default_output_tokens(),
            shared_prefix_tokens: 0,
            ignore_eos: true,
            stream: true,
            slo: super::slo::SloConfig::default(),
            rate: None,
            checks: CheckSpec::default(),
            prompt: None,
            prompt_file: None,
            messages: None,
            documents: Vec::new(),
            top_n: None,
            images: None,
            image_file: None,
            temperature: None,
            seed: None,
            nonce: true,
            turns: 1,
            think_time: None,
            think_time_dist: None,
            golden: None,
            fingerprint: None,
            kind: None,
            model_list: None,
            prefix_cache: None,
        }
    }
}

/// `images:` of a scenario: how many generated images each probe carries, and their
/// size in pixels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImagesConfig {
    /// Images per probe (1 to 16).
    #[serde(default = "one")]
    pub count: u32,
    /// Width in pixels (1 to 4096).
    #[serde(default = "image_side")]
    pub width: u32,
    /// Height in pixels (1 to 4096).
    #[serde(default = "image_side")]
    pub height: u32,
}

fn image_side() -> u32 {
    512
}

fn default_scenario_name() -> String {
    "default".to_string()
}

fn default_input_tokens() -> u32 {
    128
}

fn default_output_tokens() -> u32 {
    32
}

/// `CapacityInputs` is deserialize-only (the capacity module reads it, never writes it);
/// `/config` still shows it, so its fields are written out here.
mod capacity_yaml {
    use serde::ser::{SerializeMap, Serializer};

    use crate::capacity::CapacityInputs;

    pub fn serialize<S: Serializer>(c: &Option<CapacityInputs>, s: S) -> Result<S::Ok, S::Error> {
        let Some(c) = c else {
            return s.serialize_none();
        };
        let mut m = s.serialize_map(None)?;
        if let Some(p) = &c.preset {
            m.serialize_entry("preset", p)?;
        }
        if let Some(p) = &c.hf_config {
            m.serialize_entry("hf_config", p)?;
        }
        m.serialize_entry("gpu", &c.gpu)?;
        m.serialize_entry("tp", &c.tp)?;
        for (k, v) in [
            ("weight_bytes", c.weight_bytes),
            ("kv_bytes", c.kv_bytes),
            ("gpu_hourly", c.gpu_hourly),
            ("gpu_mem_gib", c.gpu_mem_gib),
            ("gpu_bandwidth_tbs", c.gpu_bandwidth_tbs),
            ("gpu_tflops", c.gpu_tflops),
        ] {
            if let Some(v) = v {
                m.serialize_entry(k, &v)?;
            }
        }
        m.serialize_entry("context", &c.context)?;
        m.serialize_entry("util", &c.util)?;
        m.serialize_entry("activation_gib", &c.activation_gib)?;
        m.serialize_entry("mbu", &c.mbu)?;
        m.serialize_entry("mfu", &c.mfu)?;
        m.serialize_entry("block_size", &c.block_size)?;
        m.serialize_entry("max_num_seqs", &c.max_num_seqs)?;
        m.end()
    }
}

/// The JSON Schema of the config file (committed as `docs/config.schema.json`).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Config);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// How many series a discovered replica exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplicaSeries {
    /// TTFT and E2E histograms and the outcome counters.
    #[default]
    Slim,
    /// Every latency histogram a probe measures.
    Full,
}

/// How often `/v1/models` is read for adapters unless `interval` says.
pub const DEFAULT_ADAPTER_DISCOVERY_INTERVAL: Duration = Duration::from_secs(30);

/// `adapters:` as written: a list, or a discovery block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AdaptersConfig {
    /// Adapters named here, each with its share of the probes.
    List(Vec<AdapterConfig>),
    /// Adapters found in the target's `/v1/models`.
    Discover(DiscoverAdapters),
}

/// One adapter and its share of each scenario's probes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdapterConfig {
    /// The adapter's name: the `model` field of its requests and its `model` label.
    pub name: String,
    /// Its share of the probes, in (0, 1]; the adapters' weights add up to at most 1.
    pub weight: f64,
}

/// Adapters discovered from `/v1/models`: every model whose `parent` is the target's
/// `model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverAdapters {
    /// Must be true.
    pub discover: bool,
    /// Each discovered adapter's share, in (0, 1]; when they are too many for it
    /// (count × weight > 1) each gets 1/count and the base model none. Unset: the base
    /// model and every adapter get equal shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// How often `/v1/models` is read again (default 30s).
    #[serde(
        default = "default_interval",
        with = "crate::duration::human",
        skip_serializing_if = "is_default_interval"
    )]
    #[schemars(with = "String")]
    pub interval: Duration,
}

fn default_interval() -> Duration {
    DEFAULT_ADAPTER_DISCOVERY_INTERVAL
}

fn is_default_interval(d: &Duration) -> bool {
    *d == DEFAULT_ADAPTER_DISCOVERY_INTERVAL
}
