//! `BenchOptions`: the flags of `llmprobe bench` parsed once into checked, typed values
//! (hyperfine's habit). Every user mistake becomes a [`UsageError`] naming the flag, so
//! nothing after this module re-checks strings, and no request is sent before the whole
//! command line is known to be valid.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::bench::args::BenchArgs;
use crate::bench::golden::{check_golden_gates, min_accuracy_gate, parse_golden};
use crate::bench::trace::{TraceOptions, parse_trace, trace_rate};
use crate::check::{
    CheckSpec, Checks, GoldenSet, ModelMatch, SchemaSource, ToolCallSpec, ToolChoice, ToolOffer,
};
use crate::client::{Endpoint, valid_header_name};
use crate::conversation::Turns;
use crate::duration::DurationError;
use crate::exit::UsageError;

use crate::latency::{Latency, Slo};
use crate::probe::{Origin, Part, ProbeSpec, PromptSource, Refusal, Syntax};
pub use crate::rate::Rate;
use crate::report::gate::{Gate, GateBasis, GateMetric, parse_ratio};
use crate::report::stop::MaxErrorRate;
pub use crate::schedule::{ArrivalProcess, Shard};
use crate::schedule::{ThinkDist, ThinkTime};

type Result<T> = std::result::Result<T, UsageError>;

/// How narrow the max-rate search's bracket must get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    /// Absolute, in requests per second.
    PerSecond(f64),
    /// A fraction of the rate (0.05 = 5 %).
    Relative(f64),
}

impl Precision {
    /// The tolerance in req/s at `rate`.
    pub fn at(self, rate: f64) -> f64 {
        match self {
            Precision::PerSecond(v) => v,
            Precision::Relative(f) => f * rate,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Precision::PerSecond(v) => write!(f, "{v} req/s"),
            Precision::Relative(r) => write!(f, "{}%", r * 100.0),
        }
    }
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Precision, String> {
        let t = s.trim();
        let bad = || format!("{s:?} is not a precision: use req/s (0.5) or a percentage (5%)");
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad())?;
            if !(v > 0.0 && v < 100.0) {
                return Err(format!("{s:?}: a percentage must be in (0, 100)"));
            }
            return Ok(Precision::Relative(v / 100.0));
        }
        let v: f64 = t.parse().map_err(|_| bad())?;
        if !(v > 0.0 && v.is_finite()) {
            return Err(format!("{s:?}: the precision must be greater than 0"));
        }
        Ok(Precision::PerSecond(v))
    }
}

/// Input/output length distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LenDist {
    Fixed,
    /// Uniform in [n(1−r), n(1+r)].
    Uniform {
        range_ratio: f64,
    },
    Lognormal,
}

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum Dataset {
    /// Synthetic prompts of --input-len tokens.
    Random,
    ShareGpt(PathBuf),
    Jsonl(PathBuf),
    /// One question (`--prompt`, `--prompt-file`) for every request.
    Fixed(String),
    /// A golden set's questions (`--golden`), each answer judged.
    Golden(Arc<GoldenSet>),
}

impl PartialEq for Dataset {
    fn eq(&self, other: &Dataset) -> bool {
        match (self, other) {
            (Dataset::Random, Dataset::Random) => true,
            (Dataset::ShareGpt(a), Dataset::ShareGpt(b))
            | (Dataset::Jsonl(a), Dataset::Jsonl(b)) => a == b,
            (Dataset::Fixed(a), Dataset::Fixed(b)) => a == b,
            (Dataset::Golden(a), Dataset::Golden(b)) => a.same_as(b),
            _ => false,
        }
    }
}

/// Which rates to run.
#[derive(Debug, Clone, PartialEq)]
pub enum RatePlan {
    /// One run per rate, in the order given.
    Fixed(Vec<Rate>),
    /// Doubling from `start`, then bisection, up to `limit`.
    FindMax {
        start: Rate,
        precision: Precision,
        limit: f64,
    },
}

/// When a run at one rate stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After this many counted requests (warmup not included).
    Count(u64),
    /// After this long.
    Duration(Duration),
}

/// Settings of the in-process mock engine (`--mock`); `None` fields keep the mock's
/// defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MockOptions {
    pub ttft: Option<Duration>,
    pub itl: Option<Duration>,
    pub batch_slowdown: Option<f64>,
    pub max_running: Option<u32>,
    pub tokens_per_chunk: Option<u32>,
    pub reasoning_tokens: Option<u32>,
    /// Send no usage in streams.
    pub no_usage: bool,
    pub faults: Vec<String>,
    pub answer: Option<String>,
    /// Where the engine's emission notes go (`--mock-notes`).
    pub notes: Option<std::path::PathBuf>,
}

/// Everything `bench` needs to know, checked.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub base_url: String,
    pub model: String,
    pub api: Endpoint,
    pub api_key: Option<String>,
    /// `--provider` and its settings (a hosted API's URL, auth and framing).
    pub hosted: Hosted,
    pub headers: Vec<(String, String)>,
    /// Send a W3C `traceparent` with each request (`--no-traceparent` turns it off).
    pub traceparent: bool,
    pub timeout: Duration,
    pub ignore_eos: bool,
    /// Ask for streamed answers (`--no-stream` turns it off; embeddings never stream).
    pub stream: bool,
    /// Pause new requests for a server's Retry-After (429/503).
    pub respect_retry_after: bool,
    /// `--max-error-rate`: a run stops once its failed share passes it.
    pub max_error_rate: Option<MaxErrorRate>,
    /// `--self-check`: measure the client's own error before and after each rate.
    pub self_check: bool,
    /// `--gpu-metrics-url`: the GPU telemetry read around each rate.
    pub gpu_metrics: Vec<GpuSource>,
    pub tokenizer: Option<PathBuf>,

    pub rates: RatePlan,
    pub stop: Stop,
    /// Requests left out at the start of each run (0 with `warmup_auto`).
    pub warmup: u64,
    /// `--warmup auto`: the start-up transient is found by MSER-5 after each run.
    pub warmup_auto: bool,
    /// Runs per rate (`--repeat`), folded into one row with 95 % intervals.
    pub repeat: u32,
    /// What gates compare (`--gate-on`).
    pub gate_basis: GateBasis,
    pub max_concurrency: Option<u32>,
    pub burstiness: f64,
    /// The arrival process of a schedule (`--arrival`, with `--burstiness` for gamma).
    pub arrival: ArrivalProcess,
    /// `--trace`: replay a trace instead of a schedule.
    pub trace: Option<TraceOptions>,
    /// `--turns N` (N ≥ 2): each arrival is a conversation of N turns.
    pub turns: Option<Turns>,
    /// The seed of this process's streams (already derived from the shard index).
    pub seed: u64,
    /// The seed the user gave.
    pub base_seed: u64,
    pub shard: Option<Shard>,

    pub input_len: u32,
    pub output_len: u32,
    pub len_dist: LenDist,
    pub shared_prefix_len: u32,
    /// `--prefix-hit-ratio`: the shares of requests that start with the shared prefix,
    /// one pass of the rate plan each, in the order given (empty without the flag).
    pub prefix_hit_ratios: Vec<f64>,
    /// `--lora-split`: the base model and its adapters, one per request.
    pub lora_split: Option<crate::workload::lora::ModelSplit>,
    pub dataset: Dataset,
    /// `--no-nonce`: fixed and dataset prompts go out without the unique nonce.
    pub no_nonce: bool,

    pub slo: Slo,
    /// The answer checks, compiled (empty: none).
    pub checks: Arc<Checks>,
    /// `--structured-output`: the schema the requests ask for.
    pub response_schema: Option<serde_json::Value>,
    /// `--expect-tool-call`: the function the requests offer.
    pub tool: Option<ToolOffer>,
    /// `--document` and `--top-n`: what rerank and score requests rank.
    pub documents: crate::client::Documents,
    /// `--images`/`--image-size` or `--image-file`: what each prompt carries.
    pub images: crate::workload::image::Images,
    pub gates: Vec<Gate>,

    pub percentile_metrics: Vec<Latency>,
    pub percentiles: Vec<f64>,
    pub json_out: Option<PathBuf>,
    pub records: Option<PathBuf>,
    /// Where to write the vLLM-compatible result (a file name decided up front).
    pub save_result: Option<PathBuf>,
    pub plot: Option<PathBuf>,
    pub dispatch_lag_warn: Duration,
    pub progress: bool,

    pub mock: Option<MockOptions>,
}

impl BenchOptions {
    /// Checks every flag. `now_compact` is the `YYYYMMDD-HHMMSS` stamp used in a
    /// generated `--save-result` file name.
    pub fn from_args(a: &BenchArgs, now_compact: &str) -> Result<BenchOptions> {
        let (base_url, model, api) = parse_target(a)?;
        let lora_split = parse_lora_split(a, &model)?;
        let headers = parse_headers(a)?;
        let timeout = parse_timeout(a)?;
        let shard = parse_shard(a)?;
        let warmup = parse_warmup(&a.warmup)?;
        check_load_shape(a)?;
        let arrival = parse_arrival(a)?;
        let gates = parse_gates(a)?;
        check_golden_gates(&gates, a.golden.is_some())?;
        let len_dist = parse_len_dist(a)?;
        let turns = parse_turns(a)?;
        let slo = parse_slo(&a.slo_flags(), &a.goodput)?;
        let parsed = parse_checks(a, &gates)?;
        // Before any prompt, golden set or trace is read: a refused combination is
        // refused whatever the files hold.
        let probe = probe_spec(a, api, &parsed.checks, &slo, turns);
        probe.validate(&Flags)?;
        let stream = probe.streamed();

        let trace = parse_trace(a, warmup.count())?;
        let stop = match &trace {
            // The survey stopped at warmup + --num-requests; what is left is counted.
            Some(t) => Stop::Count(t.survey.requests - warmup.count()),
            None => parse_stop(a, shard)?,
        };
        let rates = match &trace {
            Some(t) => RatePlan::Fixed(vec![trace_rate(&t.survey)]),
            None => parse_rate_plan(a, &gates, stop)?,
        };
        let dataset = match parse_golden(a)? {
            Some(set) => Dataset::Golden(set),
            None => parse_dataset(a)?,
        };
        let percentile_metrics = parse_metrics(&a.percentile_metrics)?;
        let percentiles = parse_percentiles(&a.metric_percentiles)?;
        let save_result = save_result_path(a, &rates, &model, api, now_compact)?;
        let prefix_hit_ratios = parse_prefix_hit_ratios(a, &dataset, &rates)?;
        check_plot(a)?;
        let dispatch_lag_warn = parse_dispatch_lag_warn(a.dispatch_lag_warn_ms)?;
        let mock = a.mock.then(|| parse_mock(a)).transpose()?;

        let seed = match shard {
            Some(s) => s.seed(a.seed),
            None => a.seed,
        };
        Ok(BenchOptions {
            base_url,
            model,
            api,
            api_key: a.api_key.clone().filter(|k| !k.is_empty()),
            hosted: parse_hosted(a, api)?,
            headers,
            traceparent: !a.no_traceparent,
            timeout,
            ignore_eos: a.ignore_eos,
            stream,
            self_check: a.self_check,
            gpu_metrics: parse_gpu_sources(&a.gpu_metrics_url, a.mock)?,
            respect_retry_after: a.respect_retry_after,
            max_error_rate: parse_max_error_rate(a.max_error_rate.as_deref())?,
            tokenizer: a.tokenizer.clone(),
            rates,
            stop,
            warmup: warmup.count(),
            warmup_auto: warmup == Warmup::Auto,
            repeat: parse_repeat(a.repeat)?,
            gate_basis: a.gate_on.parse().map_err(|e| flag("--gate-on", e))?,
            max_concurrency: a.max_concurrency,
            burstiness: a.burstiness,
            arrival,
            trace,
            turns,
            seed,
            base_seed: a.seed,
            shard,
            input_len: a.input_len,
            output_len: a.output_len,
            len_dist,
            shared_prefix_len: a.shared_prefix_len,
            prefix_hit_ratios,
            lora_split,
            dataset,
            no_nonce: a.no_nonce,
            slo,
            checks: parsed.checks,
            response_schema: parsed.response_schema,
            tool: parsed.tool,
            documents: documents(a),
            images: parse_images(a)?,
            gates,
            percentile_metrics,
            percentiles,
            json_out: a.json_out.clone(),
            records: a.records.clone(),
            save_result,
            plot: a.plot.clone(),
            dispatch_lag_warn,
            progress: !a.no_progress,
            mock,
        })
    }

    /// The percentiles to compute: the reported ones plus any a gate reads, sorted.
    pub fn computed_percentiles(&self) -> Vec<f64> {
        computed_percentiles(&self.percentiles, &self.gates)
    }
}

/// `--dispatch-lag-warn-ms`: a finite, non-negative number of milliseconds.
fn parse_dispatch_lag_warn(ms: f64) -> Result<Duration> {
    if !(ms >= 0.0 && ms.is_finite()) {
        return Err(UsageError::new(
            "--dispatch-lag-warn-ms must be a finite number of ms >= 0",
        ));
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// The reported percentiles plus any a gate reads, plus the median (vLLM's result file
/// always has `median_*_ms`) and p99 (the dispatch-lag check), sorted and deduplicated.
pub fn computed_percentiles(reported: &[f64], gates: &[Gate]) -> Vec<f64> {
    let mut all: Vec<f64> = reported
        .iter()
        .copied()
        .chain(gates.iter().filter_map(Gate::percentile))
        .chain([50.0, 99.0])
        .collect();
    all.sort_by(f64::total_cmp);
    all.dedup();
    all
}

/// The server to load: base URL (or vLLM's `--host`/`--port`), model and API.
fn parse_target(a: &BenchArgs) -> Result<(String, String, Endpoint)> {
    // A hosted API's generating operation is its chat; vLLM's bench defaults to completions.
    let default = if a.provider.is_some() {
        "chat"
    } else {
        "completions"
    };
    let api: Endpoint = (a.endpoint.as_deref().unwrap_or(default))
        .parse()
        .map_err(|e| flag("--endpoint", e))?;
    let model = match (&a.model, a.mock) {
        (Some(m), _) if !m.trim().is_empty() => m.clone(),
        (Some(_), _) => return Err(UsageError::new("--model must not be empty")),
        (None, true) => "mock-llm".to_string(),
        (None, false) => {
            return Err(UsageError::new(
                "--model is required (the model name the server serves), unless --mock",
            ));
        }
    };
    let base_url = match &a.base_url {
        Some(url) => url.clone(),
        // vLLM's --host/--port form.
        None => format!(
            "http://{}:{}",
            a.host.as_deref().unwrap_or("localhost"),
            a.port.unwrap_or(8000)
        ),
    };
    if a.mock && (a.base_url.is_some() || a.host.is_some() || a.port.is_some()) {
        return Err(UsageError::new(
            "--mock starts its own server: drop --base-url/--host/--port",
        ));
    }
    if !a.mock && !base_url.starts_with("http://") && !base_url.starts_with("https://") {
        return Err(UsageError::new(format!(
            "--base-url {base_url:?} must start with http:// or https://"
        )));
    }
    Ok((base_url, model, api))
}

/// A hosted API's settings as the flags give them.
#[derive(Debug, Clone, Default)]
pub struct Hosted {
    pub provider: Option<crate::client::Provider>,
    pub api_version: Option<String>,
    pub aws: Option<crate::client::AwsConfig>,
    pub google: Option<crate::client::GoogleConfig>,
}

/// `--provider` and the flags of its settings, checked as the client will.
fn parse_hosted(a: &BenchArgs, api: Endpoint) -> Result<Hosted> {
    let aws_set = a.aws_region.is_some()
        || a.aws_profile.is_some()
        || a.aws_access_key_id_file.is_some()
        || a.aws_secret_access_key_file.is_some()
        || a.aws_session_token_file.is_some();
    let google_set = a.google_project.is_some()
        || a.google_location.is_some()
        || a.google_service_account_file.is_some()
        || a.google_token_file.is_some();
    let hosted = Hosted {
        provider: a.provider,
        api_version: a.api_version.clone(),
        aws: aws_set.then(|| crate::client::AwsConfig {
            region: a.aws_region.clone().unwrap_or_default(),
            access_key_id_file: a.aws_access_key_id_file.clone(),
            secret_access_key_file: a.aws_secret_access_key_file.clone(),
            session_token_file: a.aws_session_token_file.clone(),
            profile: a.aws_profile.clone(),
        }),
        google: google_set.then(|| crate::client::GoogleConfig {
            project: a.google_project.clone().unwrap_or_default(),
            location: a.google_location.clone().unwrap_or_default(),
            service_account_file: a.google_service_account_file.clone(),
            token_file: a.google_token_file.clone(),
        }),
    };
    let cfg = crate::client::ClientConfig {
        endpoint: api,
        // Whether the provider's format carries image parts.
        images: match hosted.provider {
            Some(_) => parse_images(a)?,
            None => crate::workload::image::Images::None,
        },
        provider: hosted.provider,
        api_version: hosted.api_version.clone(),
        aws: hosted.aws.clone(),
        google: hosted.google.clone(),
        ..crate::client::ClientConfig::default()
    };
    crate::client::provider::check(&cfg).map_err(|e| flag("--provider", bench_names(&e)))?;
    Ok(hosted)
}

/// A provider error in the flags' names (`aws.region` → `--aws-region`).
fn bench_names(msg: &str) -> String {
    let mut out = msg.to_string();
    for (key, flag) in [
        ("aws.access_key_id_file", "--aws-access-key-id-file"),
        ("aws.secret_access_key_file", "--aws-secret-access-key-file"),
        ("aws.session_token_file", "--aws-session-token-file"),
        ("aws.region", "--aws-region"),
        (
            "google.service_account_file",
            "--google-service-account-file",
        ),
        ("google.token_file", "--google-token-file"),
        ("google.project", "--google-project"),
        ("google.location", "--google-location"),
        ("api_version", "--api-version"),
    ] {
        out = out.replace(key, flag);
    }
    out
}

/// When a run at one rate stops: `--num-requests` (shared among shards) or `--duration`.
fn parse_stop(a: &BenchArgs, shard: Option<Shard>) -> Result<Stop> {
    let stop = match (a.num_requests, &a.duration) {
        (Some(_), Some(_)) => {
            return Err(UsageError::new(
                "--num-requests and --duration both set: choose one stop condition",
            ));
        }
        (Some(0), None) => return Err(UsageError::new("--num-requests must be at least 1")),
        (Some(n), None) => Stop::Count(n),
        (None, Some(d)) => {
            let d = parse_duration(d).map_err(|e| flag("--duration", e))?;
            if d.is_zero() {
                return Err(UsageError::new("--duration must be greater than 0"));
            }
            Stop::Duration(d)
        }
        // loadgen.py's default.
        (None, None) => Stop::Count(200),
    };
    if let (Some(s), Stop::Count(n)) = (shard, stop)
        && s.share_of(n) == 0
    {
        return Err(UsageError::new(format!(
            "--num-requests {n} over {} shards leaves shard {} with no request",
            s.count, s.index
        )));
    }
    Ok(stop)
}

/// `--burstiness` and `--max-concurrency`.
fn check_load_shape(a: &BenchArgs) -> Result<()> {
    if !(a.burstiness > 0.0 && a.burstiness.is_finite()) {
        return Err(UsageError::new(format!(
            "--burstiness {} must be a finite number greater than 0 (1 = Poisson)",
            a.burstiness
        )));
    }
    if a.max_concurrency == Some(0) {
        return Err(UsageError::new("--max-concurrency must be at least 1"));
    }
    Ok(())
}

/// `--warmup`: a count or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Warmup {
    Count(u64),
    Auto,
}

impl Warmup {
    fn count(self) -> u64 {
        match self {
            Warmup::Count(n) => n,
            Warmup::Auto => 0,
        }
    }
}

fn parse_warmup(s: &str) -> Result<Warmup> {
    if s.trim() == "auto" {
        return Ok(Warmup::Auto);
    }
    s.trim().parse().map(Warmup::Count).map_err(|_| {
        UsageError::new(format!(
            "--warmup {s:?}: expected a number of requests or auto"
        ))
    })
}

/// The most `--repeat` runs: beyond it the interval hardly narrows (it shrinks as
/// 1/√n) while the run time grows linearly.
pub const MAX_REPEAT: u32 = 1000;

/// `--max-error-rate`: a ratio, as gates write one.
fn parse_max_error_rate(v: Option<&str>) -> Result<Option<MaxErrorRate>> {
    v.map(|v| parse_ratio(v.trim()).map(MaxErrorRate))
        .transpose()
        .map_err(|e| flag("--max-error-rate", e))
}

fn parse_repeat(n: u32) -> Result<u32> {
    if !(1..=MAX_REPEAT).contains(&n) {
        return Err(UsageError::new(format!(
            "--repeat {n} must be between 1 and {MAX_REPEAT}"
        )));
    }
    Ok(n)
}

/// `--arrival` with `--burstiness`: without `--arrival`, a burstiness other than 1
/// means gamma (as before the flag existed); with it, burstiness belongs to gamma only.
fn parse_arrival(a: &BenchArgs) -> Result<ArrivalProcess> {
    let gamma = ArrivalProcess::Gamma {
        burstiness: a.burstiness,
    };
    let process = match a.arrival.as_deref() {
        None if a.burstiness == 1.0 => ArrivalProcess::Poisson,
        None | Some("gamma") => gamma,
        Some("poisson") => ArrivalProcess::Poisson,
        Some("constant") => ArrivalProcess::Constant,
        Some(other) => {
            return Err(UsageError::new(format!(
                "--arrival {other:?}: expected poisson, gamma or constant"
            )));
        }
    };
    if a.burstiness != 1.0 && !matches!(process, ArrivalProcess::Gamma { .. }) {
        return Err(UsageError::new(format!(
            "--burstiness {} shapes gamma arrivals: drop it or use --arrival gamma",
            a.burstiness
        )));
    }
    Ok(process)
}

/// Think time when `--turns` is given without `--think-time`.
pub const DEFAULT_THINK_TIME: Duration = Duration::from_secs(1);

/// `--turns` with `--think-time` and `--think-time-dist`; one turn is a single request.
fn parse_turns(a: &BenchArgs) -> Result<Option<Turns>> {
    let Some(count) = a.turns else {
        if a.think_time.is_some() || a.think_time_dist.is_some() {
            return Err(UsageError::new(
                "--think-time and --think-time-dist shape multi-turn conversations: add --turns N",
            ));
        }
        return Ok(None);
    };
    if count == 0 {
        return Err(UsageError::new(
            "--turns 0: a conversation has at least one turn",
        ));
    }
    let mean = match &a.think_time {
        Some(t) => parse_duration(t).map_err(|e| flag("--think-time", e))?,
        None => DEFAULT_THINK_TIME,
    };
    let dist = match &a.think_time_dist {
        Some(d) => d
            .parse()
            .map_err(|e: UsageError| flag("--think-time-dist", e.0))?,
        None => ThinkDist::Exponential,
    };
    Ok((count > 1).then_some(Turns {
        count,
        think: ThinkTime { mean, dist },
    }))
}

/// `--gate`s, then `--min-goodput-ratio R` as the gate `goodput-ratio>=R` and
/// `--min-golden-accuracy A` as `golden-accuracy-upper>=A`.
fn parse_gates(a: &BenchArgs) -> Result<Vec<Gate>> {
    let gates_text: Vec<String> = a
        .gates
        .iter()
        .cloned()
        .chain(
            a.min_goodput_ratio
                .iter()
                .map(|r| format!("goodput-ratio>={r}")),
        )
        .collect();
    let mut gates = gates_text
        .iter()
        .map(|g| g.parse::<Gate>().map_err(|e| flag("--gate", e)))
        .collect::<Result<Vec<_>>>()?;
    gates.extend(min_accuracy_gate(a)?);
    Ok(gates)
}

/// Which rates to run: `--find-max-rate`, or `--rate`/`--sweep`.
fn parse_rate_plan(a: &BenchArgs, gates: &[Gate], stop: Stop) -> Result<RatePlan> {
    let rates = if a.find_max_rate {
        parse_find_max(a, gates)?
    } else {
        match (&a.rate, &a.sweep) {
            (Some(_), Some(_)) => {
                return Err(UsageError::new(
                    "--rate and --sweep both set: give one rate or a list",
                ));
            }
            (Some(r), None) => RatePlan::Fixed(vec![r.parse().map_err(|e| flag("--rate", e))?]),
            (None, Some(list)) => RatePlan::Fixed(parse_list(list, "--sweep")?),
            (None, None) => {
                return Err(UsageError::new(
                    "no rate: give --rate R (req/s or inf), --sweep R1,R2,.. or --find-max-rate",
                ));
            }
        }
    };
    if let (Stop::Duration(_), RatePlan::Fixed(rates)) = (stop, &rates)
        && rates.iter().any(|r| r.is_infinite())
    {
        return Err(UsageError::new(
            "an infinite rate sends everything at once: it needs --num-requests, not --duration",
        ));
    }
    Ok(rates)
}

/// `--find-max-rate` with its starting `--rate`, precision and limit.
fn parse_find_max(a: &BenchArgs, gates: &[Gate]) -> Result<RatePlan> {
    if a.sweep.is_some() {
        return Err(UsageError::new(
            "--find-max-rate and --sweep both set: the search chooses its own rates",
        ));
    }
    if gates.is_empty() {
        return Err(UsageError::new(
            "--find-max-rate needs at least one --gate (or --min-goodput-ratio) to search against",
        ));
    }
    let start = match &a.rate {
        Some(r) => r.parse::<Rate>().map_err(|e| flag("--rate", e))?,
        None => Rate::ONE_PER_SECOND,
    };
    if start.is_infinite() {
        return Err(UsageError::new(
            "--find-max-rate needs a finite starting --rate",
        ));
    }
    let precision: Precision = a
        .max_rate_precision
        .parse()
        .map_err(|e| flag("--max-rate-precision", e))?;
    if !(a.max_rate_limit.is_finite() && a.max_rate_limit >= start.per_second()) {
        return Err(UsageError::new(format!(
            "--max-rate-limit {} must be a finite rate at least the starting rate {start}",
            a.max_rate_limit
        )));
    }
    Ok(RatePlan::FindMax {
        start,
        precision,
        limit: a.max_rate_limit,
    })
}

/// `--len-dist` and `--random-range-ratio`.
fn parse_len_dist(a: &BenchArgs) -> Result<LenDist> {
    Ok(match (a.len_dist.as_deref(), a.random_range_ratio) {
        (_, Some(r)) if !(0.0..1.0).contains(&r) => {
            return Err(UsageError::new(format!(
                "--random-range-ratio {r} must be in [0, 1)"
            )));
        }
        (None, None) | (Some("fixed"), None) => LenDist::Fixed,
        (None, Some(r)) | (Some("uniform"), Some(r)) => LenDist::Uniform { range_ratio: r },
        // vLLM's documented default range for uniform lengths.
        (Some("uniform"), None) => LenDist::Uniform { range_ratio: 0.5 },
        (Some("lognormal"), None) => LenDist::Lognormal,
        (Some(d @ ("fixed" | "lognormal")), Some(_)) => {
            return Err(UsageError::new(format!(
                "--random-range-ratio applies to uniform lengths, not --len-dist {d}"
            )));
        }
        (Some(other), _) => {
            return Err(UsageError::new(format!(
                "unknown --len-dist {other:?}: expected fixed, uniform or lognormal"
            )));
        }
    })
}

/// The answer checks and what the requests carry for them.
struct ParsedChecks {
    checks: Arc<Checks>,
    response_schema: Option<serde_json::Value>,
    tool: Option<ToolOffer>,
}

/// `--expect-tool-call` and its `--tool-*` flags, with the parameter schema inline.
fn parse_tool_call(a: &BenchArgs) -> Result<Option<ToolCallSpec>> {
    let Some(name) = &a.expect_tool_call else {
        return Ok(None);
    };
    let tool_choice = a
        .tool_choice
        .as_deref()
        .map(str::parse::<ToolChoice>)
        .transpose()
        .map_err(|e| flag("--tool-choice", e))?;
    let parameters = match &a.tool_schema {
        Some(file) => Some(SchemaSource::Inline(
            SchemaSource::File { file: file.clone() }
                .load()
                .map_err(|e| flag("--tool-schema", e.message))?,
        )),
        None => None,
    };
    Ok(Some(ToolCallSpec {
        name: name.clone(),
        description: a.tool_description.clone(),
        parameters,
        tool_choice,
    }))
}

/// `--document` and `--top-n`.
fn documents(a: &BenchArgs) -> crate::client::Documents {
    crate::client::Documents {
        texts: Arc::new(a.documents.clone()),
        top_n: a.top_n,
    }
}

/// `--images N --image-size WxH`, or `--image-file F` read.
fn parse_images(a: &BenchArgs) -> Result<crate::workload::image::Images> {
    use crate::workload::image::Images;
    if let Some(file) = &a.image_file {
        return Images::file(file).map_err(|e| flag("--image-file", e));
    }
    let Some(count) = a.images else {
        return Ok(Images::None);
    };
    let (w, h) = a
        .image_size
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)))
        .ok_or_else(|| {
            flag(
                "--image-size",
                format!("{:?} is not WxH (e.g. 512x512)", a.image_size),
            )
        })?;
    Images::generated(count, w, h).map_err(|e| flag("--images", e))
}

/// The answer-check flags, compiled. A check the protocol cannot carry, and a
/// `check-failure-ratio` gate without any check, are refused.
fn parse_checks(a: &BenchArgs, gates: &[Gate]) -> Result<ParsedChecks> {
    let spec = CheckSpec {
        expect_tool_call: parse_tool_call(a)?,
        expect_regex: a.expect_regex.clone(),
        expect_not_regex: a.expect_not_regex.clone(),
        expect_json_schema: a
            .expect_json_schema
            .clone()
            .map(|file| SchemaSource::File { file }),
        expect_model: match (&a.expect_model, &a.expect_model_regex) {
            (Some(m), _) => Some(ModelMatch::Exact(m.clone())),
            (None, Some(r)) => Some(ModelMatch::Regex { regex: r.clone() }),
            (None, None) => None,
        },
        expect_finish_reason: a.expect_finish_reason.clone(),
        min_output_tokens: a.min_output_tokens,
        max_repetition: a.max_repetition,
        structured_output: a.structured_output,
        expect_top_document: a.expect_top_document,
    };
    let checks = spec.compile().map_err(|e| {
        let name = match e.field {
            "expect_model" if a.expect_model_regex.is_some() => "expect_model_regex",
            other => other,
        };
        flag(&format!("--{}", name.replace('_', "-")), e.message)
    })?;
    if checks.is_empty()
        && let Some(g) = gates
            .iter()
            .find(|g| g.metric == GateMetric::CheckFailureRatio)
    {
        return Err(UsageError::new(format!(
            "--gate {g} needs an answer check (--expect-regex, --max-repetition, …)"
        )));
    }
    let response_schema = match (&spec.expect_json_schema, a.structured_output) {
        (Some(src), true) => Some(
            src.load()
                .map_err(|e| flag("--expect-json-schema", e.message))?,
        ),
        _ => None,
    };
    let tool = match &spec.expect_tool_call {
        Some(t) => Some(
            t.offer(
                t.parameters()
                    .map_err(|e| flag("--tool-schema", e.message))?,
            ),
        ),
        None => None,
    };
    Ok(ParsedChecks {
        checks: Arc::new(checks),
        response_schema,
        tool,
    })
}

fn parse_dataset(a: &BenchArgs) -> Result<Dataset> {
    if let Some(text) = &a.prompt {
        if text.trim().is_empty() {
            return Err(UsageError::new("--prompt must not be empty"));
        }
        return Ok(Dataset::Fixed(text.clone()));
    }
    if let Some(path) = &a.prompt_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError::new(format!("--prompt-file {}: {e}", path.display())))?;
        if text.trim().is_empty() {
            return Err(UsageError::new(format!(
                "--prompt-file {} is empty",
                path.display()
            )));
        }
        return Ok(Dataset::Fixed(text));
    }
    Ok(match (a.dataset.as_str(), &a.dataset_path) {
        ("random", None) => Dataset::Random,
        ("random", Some(_)) => {
            return Err(UsageError::new(
                "--dataset-path needs --dataset sharegpt or jsonl",
            ));
        }
        ("sharegpt", Some(p)) => Dataset::ShareGpt(p.clone()),
        ("jsonl", Some(p)) => Dataset::Jsonl(p.clone()),
        ("sharegpt" | "jsonl", None) => {
            return Err(UsageError::new(format!(
                "--dataset {} needs --dataset-path FILE",
                a.dataset
            )));
        }
        (other, _) => {
            return Err(UsageError::new(format!(
                "unknown --dataset {other:?}: expected random, sharegpt or jsonl"
            )));
        }
    })
}

/// Where `--save-result` writes: the given file or `--result-filename`, else vLLM's
/// name (backend, rate, model, date), under `--result-dir`.
fn save_result_path(
    a: &BenchArgs,
    rates: &RatePlan,
    model: &str,
    api: Endpoint,
    now_compact: &str,
) -> Result<Option<PathBuf>> {
    let given = match (&a.save_result, &a.result_filename) {
        (None, None) => return Ok(None),
        (None, Some(_)) => {
            return Err(UsageError::new("--result-filename needs --save-result"));
        }
        (Some(given), _) => given,
    };
    let file = match (&a.result_filename, given) {
        (Some(n), _) => n.clone(),
        (None, Some(f)) => f.clone(),
        // vLLM's naming: backend, rate, model, date.
        (None, None) => {
            let rate = match rates {
                RatePlan::Fixed(r) if r.len() == 1 => format!("{}qps", r[0]),
                RatePlan::Fixed(_) => "sweep".to_string(),
                RatePlan::FindMax { .. } => "max-rate".to_string(),
            };
            let model_tail = model.rsplit('/').next().unwrap_or(model);
            PathBuf::from(format!(
                "{}-{rate}-{model_tail}-{now_compact}.json",
                api.vllm_backend()
            ))
        }
    };
    Ok(Some(match &a.result_dir {
        Some(dir) => dir.join(file),
        None => file,
    }))
}

/// `--plot` writes SVG only.
fn check_plot(a: &BenchArgs) -> Result<()> {
    if let Some(p) = &a.plot {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !ext.eq_ignore_ascii_case("svg") {
            return Err(UsageError::new(format!(
                "--plot {}: only .svg output is supported",
                p.display()
            )));
        }
    }
    Ok(())
}

/// The `--mock-*` settings of the in-process mock.
fn parse_mock(a: &BenchArgs) -> Result<MockOptions> {
    Ok(MockOptions {
        ttft: a
            .mock_ttft_ms
            .map(|v| ms_to_duration(v, "--mock-ttft-ms"))
            .transpose()?,
        itl: a
            .mock_itl_ms
            .map(|v| ms_to_duration(v, "--mock-itl-ms"))
            .transpose()?,
        batch_slowdown: match a.mock_batch_slowdown {
            Some(f) if !(f >= 0.0 && f.is_finite()) => {
                return Err(UsageError::new(
                    "--mock-batch-slowdown must be a finite number >= 0",
                ));
            }
            other => other,
        },
        max_running: match a.mock_max_running {
            Some(0) => {
                return Err(UsageError::new("--mock-max-running must be at least 1"));
            }
            other => other,
        },
        tokens_per_chunk: match a.mock_tokens_per_chunk {
            Some(0) => {
                return Err(UsageError::new(
                    "--mock-tokens-per-chunk must be at least 1",
                ));
            }
            other => other,
        },
        reasoning_tokens: a.mock_reasoning_tokens,
        no_usage: a.mock_no_usage,
        faults: a.mock_faults.clone(),
        answer: a.mock_answer.clone(),
        notes: a.mock_notes.clone(),
    })
}

/// The bench flags' spelling of each part of a probe.
pub(crate) struct Flags;

impl Syntax for Flags {
    fn name(&self, part: Part) -> String {
        match part {
            Part::Endpoint => "--endpoint".into(),
            Part::InputTokens => "--input-len".into(),
            Part::OutputTokens => "--output-len".into(),
            Part::SharedPrefix => "--shared-prefix-len".into(),
            Part::NoStream => "--no-stream".into(),
            Part::Objective(l) => slo_flag(l),
            Part::Check(kind) => format!("--{}", kind.as_str().replace('_', "-")),
            Part::StructuredOutput => "--structured-output".into(),
            Part::Prompt => "--prompt".into(),
            Part::PromptFile => "--prompt-file".into(),
            Part::Messages => "a message list".into(),
            Part::Dataset => "--dataset".into(),
            Part::DatasetPath => "--dataset-path".into(),
            Part::Trace => "--trace".into(),
            Part::NoNonce => "--no-nonce".into(),
            Part::Turns => "--turns".into(),
            Part::Golden => "--golden".into(),
            Part::Documents => "--document".into(),
            Part::Images => "--images".into(),
        }
    }

    fn offers(&self, part: Part) -> bool {
        // No flag gives a message list.
        part != Part::Messages
    }
}

impl From<Refusal> for UsageError {
    fn from(r: Refusal) -> UsageError {
        UsageError::new(r.message(&Flags))
    }
}

/// The run's probe, as far as the rules between its parts go.
fn probe_spec(
    a: &BenchArgs,
    api: Endpoint,
    checks: &Checks,
    slo: &Slo,
    turns: Option<Turns>,
) -> ProbeSpec {
    ProbeSpec {
        endpoint: api,
        input_tokens: a.input_len,
        output_tokens: a.output_len,
        stream: !a.no_stream,
        slo: *slo,
        checks: checks.kinds().collect(),
        structured_output: a.structured_output,
        prompt: prompt_source(a),
        turns: turns.map_or(1, |t| t.count),
        documents: a.documents.len(),
        top_document: a.expect_top_document,
        images: a.images.is_some() || a.image_file.is_some(),
    }
}

/// Where the flags ask the prompts to come from, every origin named, in the order a
/// refusal names them.
fn prompt_source(a: &BenchArgs) -> PromptSource {
    let dataset = match (a.dataset.as_str(), &a.dataset_path) {
        ("random", None) => None,
        ("random", Some(_)) => Some(Origin::Dataset(None)),
        (format, _) => Some(Origin::Dataset(Some(format.to_string()))),
    };
    let given = [
        a.prompt.is_some().then_some(Origin::Prompt),
        a.prompt_file.is_some().then_some(Origin::PromptFile),
        dataset,
        a.trace.is_some().then_some(Origin::Trace),
        a.golden.is_some().then_some(Origin::Golden),
    ];
    PromptSource {
        given: given.into_iter().flatten().collect(),
        nonce: !a.no_nonce,
        shared_prefix_tokens: a.shared_prefix_len,
    }
}

fn flag(name: &str, msg: String) -> UsageError {
    UsageError::new(format!("{name}: {msg}"))
}

fn ms_to_duration(v: f64, name: &str) -> Result<Duration> {
    if !(v >= 0.0 && v.is_finite()) {
        return Err(UsageError::new(format!(
            "{name} {v} must be a finite number of ms >= 0"
        )));
    }
    Ok(Duration::from_secs_f64(v / 1000.0))
}

/// A duration by [`crate::duration::parse`]'s rule, with the message naming the text.
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    crate::duration::parse(s).map_err(|e| match e {
        DurationError::Seconds => format!("{s:?} is not a duration >= 0"),
        DurationError::Span(e) => format!("{s:?} is not a duration (e.g. 30s, 2m, 1h): {e}"),
    })
}

/// `K:V` → (K, V), both trimmed; the name must be a valid HTTP header name.
pub fn parse_header(s: &str) -> Result<(String, String)> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| UsageError::new(format!("--header {s:?}: expected Name:Value")))?;
    let k = k.trim();
    if !valid_header_name(k) {
        return Err(UsageError::new(format!(
            "--header {s:?}: {k:?} is not a valid header name"
        )));
    }
    let v = v.trim();
    if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(UsageError::new(format!(
            "--header {k}: the value must not contain CR, LF or NUL"
        )));
    }
    Ok((k.to_string(), v.to_string()))
}

fn parse_list(s: &str, name: &str) -> Result<Vec<Rate>> {
    let rates = s
        .split(',')
        .map(|p| p.parse::<Rate>().map_err(|e| flag(name, e)))
        .collect::<Result<Vec<_>>>()?;
    if rates.is_empty() {
        return Err(UsageError::new(format!("{name}: empty list")));
    }
    // A rate is the key of its row, its records and its result file: once per sweep.
    for (i, r) in rates.iter().enumerate() {
        if rates[..i].contains(r) {
            return Err(UsageError::new(format!("{name}: rate {r} is listed twice")));
        }
    }
    Ok(rates)
}

/// `ttft,tpot,itl,e2el` → metrics in the order given, without repeats.
pub fn parse_metrics(s: &str) -> Result<Vec<Latency>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let m: Latency = part.parse().map_err(|e| flag("--percentile-metrics", e))?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(UsageError::new(
            "--percentile-metrics: give at least one of ttft, tpot, itl, e2el",
        ));
    }
    Ok(out)
}

/// `50,90,99` → sorted percentiles in (0, 100].
pub fn parse_percentiles(s: &str) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let t = part.trim().trim_start_matches(['p', 'P']);
        let v: f64 = t.parse().map_err(|_| {
            UsageError::new(format!(
                "--metric-percentiles: {part:?} is not a number in (0, 100]"
            ))
        })?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(UsageError::new(format!(
                "--metric-percentiles: {v} is not in (0, 100]"
            )));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(UsageError::new(
            "--metric-percentiles: give at least one percentile",
        ));
    }
    out.sort_by(f64::total_cmp);
    out.dedup();
    Ok(out)
}

/// The goodput objectives from the `--slo-METRIC-ms` flags (`flags`: each latency with
/// its flag's value) and vLLM-style `--goodput METRIC:MS` items, e.g. `ttft:500 tpot:40
/// e2el:2000`. Both may be used; the same metric given twice with different values is
/// an error rather than a silent choice.
pub fn parse_slo(flags: &[(Latency, Option<f64>)], goodput: &[String]) -> Result<Slo> {
    let mut values: Vec<(Latency, Option<f64>)> = flags.to_vec();
    for item in goodput.iter().flat_map(|g| g.split_whitespace()) {
        let (name, v) = item.split_once(':').ok_or_else(|| {
            UsageError::new(format!(
                "--goodput {item:?}: expected METRIC:MS, e.g. ttft:500 tpot:40 e2el:2000"
            ))
        })?;
        let metric: Latency = name.parse().map_err(|e| flag("--goodput", e))?;
        let ms: f64 = v.trim().parse().map_err(|_| {
            UsageError::new(format!("--goodput {item:?}: {v:?} is not a number of ms"))
        })?;
        if metric.objective().is_none() {
            let names: Vec<&str> = Latency::objectives().map(Latency::user_name).collect();
            return Err(UsageError::new(format!(
                "--goodput {item:?}: goodput objectives exist for {} (vLLM has none for {metric})",
                crate::exit::listed(&names, "and")
            )));
        }
        match values.iter_mut().find(|(m, _)| *m == metric) {
            Some((_, Some(prev))) if *prev != ms => {
                return Err(UsageError::new(format!(
                    "--goodput {item:?} contradicts {} {prev}",
                    slo_flag(metric)
                )));
            }
            Some((_, slot)) => *slot = Some(ms),
            None => values.push((metric, Some(ms))),
        }
    }
    let mut slo = Slo::default();
    for (metric, v) in values {
        let d = v
            .map(|ms| ms_to_duration(ms, &slo_flag(metric)))
            .transpose()?;
        slo.set(metric, d).map_err(|e| flag("--goodput", e))?;
    }
    Ok(slo)
}

/// The flag of an objective on latency `l`: `--slo-e2el-ms`.
pub fn slo_flag(l: Latency) -> String {
    format!("--slo-{}-ms", l.user_name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn opts(line: &str) -> Result<BenchOptions> {
        let argv = std::iter::once("bench").chain(line.split_whitespace());
        let w = Wrap::try_parse_from(argv).map_err(|e| UsageError::new(e.to_string()))?;
        BenchOptions::from_args(&w.args, "20261129-183437")
    }

    fn err(line: &str) -> String {
        match opts(line) {
            Ok(_) => panic!("{line:?} should have been refused"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn streaming_choices_and_the_objectives_they_allow() {
        let o = opts("--mock --rate 1 --endpoint messages --slo-ttfa-ms 300").unwrap();
        assert_eq!((o.api, o.stream), (Endpoint::Messages, true));
        assert_eq!(o.slo.limit(Latency::Ttfa), Some(Duration::from_millis(300)));
        let o = opts("--mock --rate 1 --endpoint responses --no-stream --slo-e2el-ms 900").unwrap();
        assert!(!o.stream);
        // Embeddings never stream, whatever the flags say.
        assert!(
            !opts("--mock --rate 1 --endpoint embeddings")
                .unwrap()
                .stream
        );
        assert!(err("--mock --rate 1 --no-stream --slo-ttft-ms 100").contains("--no-stream"));
        assert!(
            err("--mock --rate 1 --endpoint embeddings --goodput tpot:5")
                .contains("never streamed")
        );
        assert!(
            err("--mock --rate 1 --endpoint chat --no-stream --slo-ttfa-ms 5")
                .contains("--slo-ttfa-ms")
        );
    }

    #[test]
    fn input_len_has_a_sane_maximum() {
        assert!(opts("--mock --rate 1 --input-len 1048576").is_ok());
        assert!(err("--mock --rate 1 --input-len 1048577").contains("--input-len: 1048577"));
    }

    #[test]
    fn loadgen_examples_parse() {
        let o =
            opts("--mock --rate 8 --num-requests 100 --slo-ttft-ms 200 --slo-tpot-ms 20").unwrap();
        assert_eq!(o.rates, RatePlan::Fixed(vec![Rate::new(8.0).unwrap()]));
        assert_eq!(o.stop, Stop::Count(100));
        assert_eq!(o.slo.limit(Latency::Ttft), Some(Duration::from_millis(200)));
        assert_eq!(o.slo.limit(Latency::Tpot), Some(Duration::from_millis(20)));
        assert_eq!(o.model, "mock-llm");
        let o = opts("--mock --sweep 2,8,32 --num-requests 120 --output-len 48").unwrap();
        assert_eq!(
            o.rates,
            RatePlan::Fixed(vec![
                Rate::new(2.0).unwrap(),
                Rate::new(8.0).unwrap(),
                Rate::new(32.0).unwrap()
            ])
        );
        assert_eq!(o.output_len, 48);
    }

    #[test]
    fn vllm_aliases_mean_the_same() {
        let o = opts(
            "--model m --request-rate inf --num-prompts 10 --random-input-len 64 \
             --random-output-len 8 --random-range-ratio 0.25 --endpoint /v1/chat/completions \
             --goodput ttft:500 tpot:40 e2el:2000 --percentile-metrics ttft,e2el \
             --metric-percentiles 50,99.9 --dataset-name random",
        )
        .unwrap();
        assert_eq!(o.rates, RatePlan::Fixed(vec![Rate::INFINITE]));
        assert_eq!(o.stop, Stop::Count(10));
        assert_eq!((o.input_len, o.output_len), (64, 8));
        assert_eq!(o.len_dist, LenDist::Uniform { range_ratio: 0.25 });
        assert_eq!(o.api, Endpoint::Chat);
        assert_eq!(o.slo.limit(Latency::E2e), Some(Duration::from_secs(2)));
        assert_eq!(o.percentile_metrics, vec![Latency::Ttft, Latency::E2e]);
        assert_eq!(o.percentiles, vec![50.0, 99.9]);
    }

    #[test]
    fn bad_input_is_refused_with_the_flag_named() {
        assert!(err("--mock").contains("no rate"));
        assert!(err("--rate 8").contains("--model is required"));
        assert!(err("--mock --rate 0").contains("--rate"));
        assert!(err("--mock --rate fast").contains("--rate"));
        assert!(err("--mock --rate 1 --sweep 1,2").contains("both set"));
        assert!(err("--mock --sweep 1,,2").contains("--sweep"));
        assert!(err("--mock --sweep 2,8,2").contains("listed twice"));
        assert!(err("--mock --rate 1 --num-requests 5 --duration 10s").contains("stop condition"));
        assert!(err("--mock --rate inf --duration 10s").contains("infinite rate"));
        assert!(err("--mock --rate 1 --goodput ttft=5").contains("METRIC:MS"));
        assert!(err("--mock --rate 1 --goodput itl:5").contains("itl"));
        assert!(
            err("--mock --rate 1 --slo-ttft-ms 100 --goodput ttft:200").contains("contradicts")
        );
        assert!(err("--mock --rate 1 --percentile-metrics ttft,foo").contains("foo"));
        assert!(err("--mock --rate 1 --metric-percentiles 0").contains("(0, 100]"));
        assert!(err("--mock --rate 1 --metric-percentiles 101").contains("(0, 100]"));
        assert!(err("--mock --rate 1 --header NoColon").contains("Name:Value"));
        assert!(err("--mock --rate 1 --header B@d:v").contains("not a valid header name"));
        assert!(err("--mock --rate 1 --shard 4/4").contains("0..4"));
        assert!(err("--mock --rate 1 --shard a/b").contains("I/N"));
        assert!(err("--mock --rate 1 --len-dist zipf").contains("zipf"));
        assert!(err("--mock --rate 1 --random-range-ratio 1.5").contains("[0, 1)"));
        assert!(err("--mock --rate 1 --dataset sharegpt").contains("--dataset-path"));
        assert!(err("--mock --rate 1 --gate ttft-p99<=fast").contains("--gate"));
        assert!(err("--mock --rate 1 --find-max-rate").contains("--gate"));
        assert!(err("--mock --rate 1 --plot a.png").contains(".svg"));
        assert!(err("--mock --rate 1 --timeout soon").contains("--timeout"));
        assert!(err("--mock --rate 1 --burstiness 0").contains("--burstiness"));
        assert!(err("--mock --rate 1 --max-concurrency 0").contains("--max-concurrency"));
        assert!(err("--mock --rate 1 --endpoint rerank").contains("rerank"));
        assert!(err("--rate 1 --model m --base-url localhost:8000").contains("http://"));
        assert!(err("--mock --rate 1 --base-url http://x:1").contains("--mock starts"));
        assert!(err("--mock --rate 1 --num-requests 2 --shard 2/3").contains("no request"));
    }

    #[test]
    fn host_port_and_backend_like_vllm() {
        let o = opts("--model m --rate 1 --host gpu-1 --port 30000 --backend openai-chat").unwrap();
        assert_eq!(o.base_url, "http://gpu-1:30000");
        assert_eq!(o.api, Endpoint::Chat);
        let o = opts("--model m --rate 1").unwrap();
        assert_eq!(o.base_url, "http://localhost:8000");
        assert_eq!(o.api, Endpoint::Completions);
        let o =
            opts("--model m --rate 1 --base-url https://api.example/v1 --backend vllm").unwrap();
        assert_eq!(o.base_url, "https://api.example/v1");
        assert!(opts("--model m --rate 1 --base-url http://a:1 --port 2").is_err());
    }

    #[test]
    fn headers_and_durations() {
        assert_eq!(
            parse_header("X-Tenant: a:b").unwrap(),
            ("X-Tenant".to_string(), "a:b".to_string())
        );
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn shards_split_requests_exactly_and_get_distinct_seeds() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        let parts: Vec<u64> = shards.iter().map(|s| s.share_of(100)).collect();
        assert_eq!(parts, vec![34, 33, 33]);
        let seeds: std::collections::HashSet<u64> = shards.iter().map(|s| s.seed(7)).collect();
        assert_eq!(seeds.len(), 3);
        // Deterministic: the same shard and base seed give the same seed.
        assert_eq!(shards[1].seed(7), shards[1].seed(7));
        assert_ne!(shards[1].seed(7), shards[1].seed(8));
        let o = opts("--mock --rate 8 --shard 1/4 --seed 7").unwrap();
        assert_eq!(o.seed, Shard { index: 1, count: 4 }.seed(7));
        assert_eq!(o.base_seed, 7);
    }

    #[test]
    fn poisson_shards_superpose_into_the_full_rate() {
        // What `--shard I/4` runs: the rate divided by 4, each with its shard's seed.
        let full = Rate::new(100.0).unwrap();
        let mut all: Vec<f64> = Vec::new();
        for index in 0..4 {
            let part = full.divided(4);
            assert_eq!(part.per_second(), 25.0);
            let seed = Shard { index, count: 4 }.seed(1);
            all.extend(
                crate::schedule::Schedule::poisson(part.per_second())
                    .unwrap()
                    .arrivals(seed)
                    .take_while(|t| t.as_secs() < 2000)
                    .map(|t| t.as_secs_f64()),
            );
        }
        all.sort_by(f64::total_cmp);
        let g: Vec<f64> = all.windows(2).map(|w| w[1] - w[0]).collect();
        let m = g.iter().sum::<f64>() / g.len() as f64;
        let v = g.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (g.len() - 1) as f64;
        // 200k gaps: mean 10 ms, CV 1 (Poisson), both within a few standard errors.
        assert!((m - 0.01).abs() < 1e-4, "mean {m}");
        assert!((v.sqrt() / m - 1.0).abs() < 0.01, "cv {}", v.sqrt() / m);
        assert_eq!(Rate::INFINITE.divided(4).per_second(), f64::INFINITY);
    }

    #[test]
    fn prefix_hit_ratios_are_a_list_of_shares_each_once() {
        assert_eq!(
            parse_hit_ratio_list("0, 0.25,0.5,1").unwrap(),
            vec![0.0, 0.25, 0.5, 1.0]
        );
        // The order given is the order run.
        assert_eq!(parse_hit_ratio_list("1,0").unwrap(), vec![1.0, 0.0]);
        assert_eq!(parse_hit_ratio_list("-0").unwrap(), vec![0.0]);
        let refused = |t: &str| parse_hit_ratio_list(t).unwrap_err().0;
        assert_eq!(
            refused("0.5,1.5"),
            "--prefix-hit-ratio 1.5: must be a share between 0 and 1"
        );
        assert_eq!(
            refused("0.5,half"),
            "--prefix-hit-ratio: \"half\" is not a number (a share between 0 and 1)"
        );
        assert!(refused("0.5,").contains("\"\" is not a number"));
        assert!(refused("NaN").contains("between 0 and 1"));
        assert_eq!(
            refused("0.5,0,0.50"),
            "--prefix-hit-ratio: 0.50 is listed twice"
        );
        assert_eq!(refused("0,-0"), "--prefix-hit-ratio: -0 is listed twice");
    }

    #[test]
    fn several_prefix_hit_ratios_and_the_plan() {
        let base = "--mock --shared-prefix-len 16 --prefix-hit-ratio 0,0.5";
        let o = opts(&format!("{base} --rate 4")).unwrap();
        assert_eq!(o.prefix_hit_ratios, vec![0.0, 0.5]);
        assert!(opts(&format!("{base} --sweep 2,4")).is_ok());
        assert!(opts(&format!("{base} --rate 4 --plot p.svg")).is_ok());
        assert!(
            err(&format!("{base} --sweep 2,4 --plot p.svg")).starts_with("--plot draws one curve")
        );
        assert!(
            err(&format!("{base} --find-max-rate --min-goodput-ratio 0.9"))
                .contains("--find-max-rate: the search finds one rate")
        );
        // One ratio searches as before.
        assert!(
            opts(
                "--mock --shared-prefix-len 16 --prefix-hit-ratio 0.5 --find-max-rate \
                  --min-goodput-ratio 0.9"
            )
            .is_ok()
        );
        assert!(
            opts("--mock --rate 4")
                .unwrap()
                .prefix_hit_ratios
                .is_empty()
        );
        let trace = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traces/mooncake-200.jsonl"
        );
        assert!(
            err(&format!(
                "--mock --trace {trace} --shared-prefix-len 16 --prefix-hit-ratio 0.5"
            ))
            .contains("it takes no --dataset, --prompt, --trace or --turns")
        );
    }

    #[test]
    fn find_max_rate_and_precision() {
        let o = opts("--mock --find-max-rate --rate 2 --min-goodput-ratio 0.9").unwrap();
        assert_eq!(
            o.rates,
            RatePlan::FindMax {
                start: Rate::new(2.0).unwrap(),
                precision: Precision::Relative(0.05),
                limit: 1024.0
            }
        );
        assert_eq!(
            "0.5".parse::<Precision>().unwrap(),
            Precision::PerSecond(0.5)
        );
        assert!("0%".parse::<Precision>().is_err());
        assert!("-1".parse::<Precision>().is_err());
    }

    #[test]
    fn save_result_file_names() {
        let o = opts("--mock --rate 4 --save-result").unwrap();
        assert_eq!(
            o.save_result,
            Some(PathBuf::from("openai-4qps-mock-llm-20261129-183437.json"))
        );
        let o = opts("--mock --rate 4 --save-result --result-dir out --result-filename r.json")
            .unwrap();
        assert_eq!(o.save_result, Some(PathBuf::from("out/r.json")));
        let o = opts("--mock --rate 4 --save-result x.json").unwrap();
        assert_eq!(o.save_result, Some(PathBuf::from("x.json")));
        assert!(err("--mock --rate 4 --result-filename r.json").contains("--save-result"));
    }

    #[test]
    fn arrival_processes_and_burstiness() {
        assert_eq!(
            opts("--mock --rate 4").unwrap().arrival,
            ArrivalProcess::Poisson
        );
        assert_eq!(
            opts("--mock --rate 4 --burstiness 0.5").unwrap().arrival,
            ArrivalProcess::Gamma { burstiness: 0.5 }
        );
        assert_eq!(
            opts("--mock --rate 4 --arrival gamma --burstiness 2")
                .unwrap()
                .arrival,
            ArrivalProcess::Gamma { burstiness: 2.0 }
        );
        assert_eq!(
            opts("--mock --rate 4 --arrival constant").unwrap().arrival,
            ArrivalProcess::Constant
        );
        assert_eq!(
            opts("--mock --rate 4 --arrival poisson").unwrap().arrival,
            ArrivalProcess::Poisson
        );
        assert!(
            err("--mock --rate 4 --arrival constant --burstiness 2").contains("--arrival gamma")
        );
        assert!(err("--mock --rate 4 --arrival uniform").contains("poisson, gamma or constant"));
    }

    #[test]
    fn repeat_warmup_auto_and_gate_basis() {
        let o = opts("--mock --rate 4 --repeat 5 --warmup auto --gate-on ci").unwrap();
        assert_eq!((o.repeat, o.warmup, o.warmup_auto), (5, 0, true));
        assert_eq!(o.gate_basis, GateBasis::Ci);
        let o = opts("--mock --rate 4 --warmup 7").unwrap();
        assert_eq!((o.repeat, o.warmup, o.warmup_auto), (1, 7, false));
        assert_eq!(o.gate_basis, GateBasis::Value);
        assert!(err("--mock --rate 4 --repeat 0").contains("--repeat 0"));
        assert!(err("--mock --rate 4 --warmup some").contains("number of requests or auto"));
        assert!(err("--mock --rate 4 --gate-on upper").contains("--gate-on"));
    }

    #[test]
    fn a_trace_sets_the_rate_and_the_count() {
        let trace = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traces/mooncake-200.jsonl"
        );
        let o = opts(&format!("--mock --trace {trace}")).unwrap();
        let t = o.trace.as_ref().unwrap();
        assert_eq!(t.survey.requests, 200);
        assert_eq!(o.stop, Stop::Count(200));
        let RatePlan::Fixed(rates) = &o.rates else {
            panic!("{:?}", o.rates)
        };
        assert_eq!(rates.len(), 1);
        let o = opts(&format!(
            "--mock --trace {trace} --num-requests 50 --warmup 5"
        ))
        .unwrap();
        assert_eq!(o.stop, Stop::Count(50));
        assert_eq!(o.trace.unwrap().survey.requests, 55);
        assert!(err(&format!("--mock --trace {trace} --duration 10s")).contains("--duration"));
        assert!(err(&format!("--mock --trace {trace} --warmup 200")).contains("--warmup 200"));
        assert!(
            err(&format!("--mock --trace {trace} --trace-speedup 0")).contains("--trace-speedup")
        );
        assert!(
            err(&format!("--mock --trace {trace} --trace-format csv")).contains("--trace-format")
        );
        assert!(err(&format!("--mock --trace {trace} --trace-model x")).contains("not BurstGPT"));
        assert!(err("--mock --trace-speedup 2 --rate 1").contains("--trace"));
        // Conversations start at the trace's entries; a dataset has no place in them.
        let o = opts(&format!("--mock --trace {trace} --turns 3")).unwrap();
        assert_eq!((o.turns.unwrap().count, o.stop), (3, Stop::Count(200)));
        assert!(
            err(&format!(
                "--mock --trace {trace} --turns 3 --dataset sharegpt"
            ))
            .contains("--dataset sharegpt does not apply")
        );
    }

    #[test]
    fn golden_asks_its_own_questions_of_one_request_with_text() {
        let o = opts("--mock --rate 1 --golden builtin --min-golden-accuracy 90%").unwrap();
        let Dataset::Golden(set) = &o.dataset else {
            panic!("{:?}", o.dataset)
        };
        assert_eq!(set.source, "builtin");
        let texts: Vec<&str> = o.gates.iter().map(|g| g.text.as_str()).collect();
        assert_eq!(texts, ["golden-accuracy-upper>=90%"]);
        assert!(opts("--mock --rate 1 --golden builtin --no-nonce --endpoint chat").is_ok());
        let drop = |f: &str| format!("--golden asks the golden set's questions: drop {f}");
        assert_eq!(
            err("--mock --rate 1 --golden builtin --prompt hi"),
            drop("--prompt")
        );
        assert_eq!(
            err("--mock --rate 1 --golden builtin --dataset sharegpt --dataset-path d.json"),
            drop("--dataset")
        );
        let trace = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traces/mooncake-200.jsonl"
        );
        assert_eq!(
            err(&format!("--mock --golden builtin --trace {trace}")),
            drop("--trace")
        );
        assert_eq!(
            err("--mock --rate 1 --golden builtin --endpoint embeddings"),
            "--golden: --endpoint embeddings answers no text to judge"
        );
        assert_eq!(
            err("--mock --rate 1 --golden builtin --turns 3"),
            "--golden: a golden question is one request; --turns makes conversations"
        );
        assert!(
            err("--mock --rate 1 --golden /nonexistent/qa.jsonl")
                .starts_with("--golden: /nonexistent/qa.jsonl: cannot read the golden set")
        );
        assert_eq!(
            err("--mock --rate 1 --gate golden-accuracy-upper>=0.9"),
            "--gate golden-accuracy-upper>=0.9 needs --golden FILE|builtin (the questions \
             whose answers it judges)"
        );
        assert!(err("--mock --rate 1 --min-golden-accuracy 0.9").contains("--golden"));
        assert!(
            err("--mock --rate 1 --golden builtin --min-golden-accuracy 1.5")
                .starts_with("--min-golden-accuracy \"1.5\": expected an accuracy")
        );
    }

    #[test]
    fn the_prompts_come_from_one_place() {
        assert_eq!(
            err("--mock --rate 1 --prompt hi --dataset sharegpt"),
            "--dataset: set --prompt, --prompt-file or --dataset, not two of them"
        );
        let trace = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traces/mooncake-200.jsonl"
        );
        assert_eq!(
            err(&format!("--mock --trace {trace} --prompt hi")),
            "--trace builds each request from the trace's lengths: --prompt does not apply \
             (with --turns, later turns are new messages of --input-len tokens)"
        );
        assert_eq!(
            err("--mock --rate 1 --no-nonce"),
            "--no-nonce needs a fixed question (--prompt, --prompt-file, --dataset or --golden); \
             synthetic prompts always carry the nonce"
        );
        assert!(opts("--mock --rate 1 --prompt hi --no-nonce").is_ok());
        assert_eq!(
            err("--mock --rate 1 --input-len 100 --shared-prefix-len 100"),
            "--shared-prefix-len: must be smaller than --input-len (100): every prompt needs a \
             unique part"
        );
        // A given question goes out whole after the prefix, whatever --input-len says.
        assert!(
            opts("--mock --rate 1 --input-len 100 --shared-prefix-len 100 --prompt hi").is_ok()
        );
        // Refused before the file is read.
        assert_eq!(
            err("--mock --rate 1 --golden builtin --prompt-file /nonexistent/q.txt"),
            "--golden asks the golden set's questions: drop --prompt-file"
        );
    }

    #[test]
    fn gate_percentiles_are_computed_even_when_not_reported() {
        let o = opts("--mock --rate 4 --metric-percentiles 90 --gate ttft-p99.9<=100ms").unwrap();
        assert_eq!(o.percentiles, vec![90.0]);
        assert_eq!(o.computed_percentiles(), vec![50.0, 90.0, 99.0, 99.9]);
    }
}

/// Where `--gpu-metrics-url` reads GPU telemetry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSource {
    /// A dcgm-exporter `/metrics` URL.
    Url(String),
    /// The embedded mock's GPU page (`--mock`).
    Mock,
}

fn parse_gpu_sources(
    values: &[String],
    mock: bool,
) -> std::result::Result<Vec<GpuSource>, UsageError> {
    values
        .iter()
        .map(|v| {
            if v == "mock" {
                return if mock {
                    Ok(GpuSource::Mock)
                } else {
                    Err(UsageError::new(
                        "--gpu-metrics-url mock reads the embedded mock's GPUs: it needs --mock",
                    ))
                };
            }
            match reqwest::Url::parse(v) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(GpuSource::Url(v.clone())),
                Ok(u) => Err(UsageError::new(format!(
                    "--gpu-metrics-url {:?}: scheme {:?}, must be http or https",
                    crate::secret::redact_url(v),
                    u.scheme()
                ))),
                Err(e) => Err(UsageError::new(format!(
                    "--gpu-metrics-url {:?} is not a URL such as http://dcgm-exporter:9400/metrics ({e})",
                    crate::secret::redact_url(v)
                ))),
            }
        })
        .collect()
}

/// `--lora-split NAME=W,…`: the split between `model` and its adapters.
fn parse_lora_split(
    a: &BenchArgs,
    model: &str,
) -> std::result::Result<Option<crate::workload::lora::ModelSplit>, UsageError> {
    let Some(text) = &a.lora_split else {
        return Ok(None);
    };
    if a.trace.is_some() || a.turns.is_some_and(|t| t > 1) {
        return Err(UsageError::new(
            "--lora-split picks a model per request: it takes no --trace or --turns",
        ));
    }
    if let Some(p) = a.provider {
        return Err(UsageError::new(format!(
            "--lora-split names the adapters an engine (vLLM, SGLang) serves beside its base \
             model: not with --provider {}",
            p.as_str()
        )));
    }
    crate::workload::lora::parse_split(model, text)
        .map(Some)
        .map_err(|e| {
            let which = e
                .index
                .map(|i| format!(" (item {})", i + 1))
                .unwrap_or_default();
            UsageError::new(format!("--lora-split{which}: {}", e.reason))
        })
}

/// `--prefix-hit-ratio R1,R2,..`: shares of synthetic requests with the shared prefix,
/// each a pass of the rate plan.
fn parse_prefix_hit_ratios(
    a: &BenchArgs,
    dataset: &Dataset,
    rates: &RatePlan,
) -> std::result::Result<Vec<f64>, UsageError> {
    let Some(text) = &a.prefix_hit_ratio else {
        return Ok(Vec::new());
    };
    let ratios = parse_hit_ratio_list(text)?;
    if a.shared_prefix_len == 0 {
        return Err(UsageError::new(
            "--prefix-hit-ratio needs --shared-prefix-len: the prefix the hits share",
        ));
    }
    // A trace builds its own prompts: the ratio would be reported and never applied.
    if !matches!(dataset, Dataset::Random) || a.turns.is_some_and(|t| t > 1) || a.trace.is_some() {
        return Err(UsageError::new(
            "--prefix-hit-ratio shapes synthetic single requests: it takes no --dataset, \
             --prompt, --trace or --turns",
        ));
    }
    if ratios.len() > 1 {
        check_hit_ratio_sweep(a, rates)?;
    }
    Ok(ratios)
}

/// What several hit ratios do not combine with: the search (it finds one rate) and a
/// plot of several rates (one curve has one x axis).
fn check_hit_ratio_sweep(a: &BenchArgs, rates: &RatePlan) -> Result<()> {
    match rates {
        RatePlan::FindMax { .. } => Err(UsageError::new(
            "--prefix-hit-ratio with several values and --find-max-rate: the search finds \
             one rate; search at one ratio per run",
        )),
        RatePlan::Fixed(r) if r.len() > 1 && a.plot.is_some() => Err(UsageError::new(
            "--plot draws one curve: with several --prefix-hit-ratio values give one --rate \
             (the hit ratio is then the x axis), or one ratio with --sweep",
        )),
        RatePlan::Fixed(_) => Ok(()),
    }
}

/// `0,0.25,0.5`: shares in [0, 1], each once (a ratio is part of its rows' key), in
/// the order given.
pub fn parse_hit_ratio_list(text: &str) -> Result<Vec<f64>> {
    let mut out: Vec<f64> = Vec::new();
    for part in text.split(',') {
        let t = part.trim();
        let r: f64 = t.parse().map_err(|_| {
            UsageError::new(format!(
                "--prefix-hit-ratio: {t:?} is not a number (a share between 0 and 1)"
            ))
        })?;
        if !(r.is_finite() && (0.0..=1.0).contains(&r)) {
            return Err(UsageError::new(format!(
                "--prefix-hit-ratio {t}: must be a share between 0 and 1"
            )));
        }
        // -0 is 0: written and compared as 0.
        let r = r + 0.0;
        if out.contains(&r) {
            return Err(UsageError::new(format!(
                "--prefix-hit-ratio: {t} is listed twice"
            )));
        }
        out.push(r);
    }
    Ok(out)
}

/// `--header NAME:VALUE`, each checked.
fn parse_headers(a: &BenchArgs) -> Result<Vec<(String, String)>> {
    a.headers.iter().map(|h| parse_header(h)).collect()
}

/// `--timeout`: a duration above zero.
fn parse_timeout(a: &BenchArgs) -> Result<Duration> {
    let timeout = parse_duration(&a.timeout).map_err(|e| flag("--timeout", e))?;
    if timeout.is_zero() {
        return Err(UsageError::new("--timeout must be greater than 0"));
    }
    Ok(timeout)
}

/// `--shard K/N`, if given.
fn parse_shard(a: &BenchArgs) -> Result<Option<Shard>> {
    a.shard
        .as_deref()
        .map(str::parse::<Shard>)
        .transpose()
        .map_err(|e| flag("--shard", e))
}
