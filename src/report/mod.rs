//! Bench results as data: the per-rate summary ([`RateReport`], the `--json-out` JSONL
//! contract), the per-request line of `--records`, and the printers that read them
//! (console table, JSONL, vLLM-compatible result file, SVG plot). Nothing here touches
//! the network; every figure comes from the aggregation of records.
//!
//! The structs are the JSON contract: each field's doc comment says what the key means.
//! Incompatible changes bump [`SCHEMA_VERSION`].

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::latency::{Latency, Slo};
use crate::rate::Rate;
use crate::schedule::Shard;

pub mod build;
pub mod ci;
pub mod compare;
pub mod figures;
pub mod gate;
pub mod golden;
pub mod jsonl;
pub mod merge;
pub mod plot;
pub mod repeat;
pub mod stop;
pub mod table;
pub mod vllm;

/// Version of the `--json-out` and `--records` layouts.
pub const SCHEMA_VERSION: u32 = 1;

/// Mean, standard deviation and percentiles of one latency distribution, in ms.
/// Serialized as `{"count": n, "mean": x, "std": x, "p50": x, "p90": x, "p99": x}`
/// (percentile keys as given, e.g. `p99.9`); a figure with no sample is `null`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyStats {
    /// Samples (requests; tokens for ITL).
    pub count: u64,
    pub mean: Option<f64>,
    /// Population standard deviation (numpy's default, as vLLM reports `std_*_ms`).
    pub std: Option<f64>,
    /// `(percentile, value)` in ascending percentile order.
    pub percentiles: Vec<(f64, Option<f64>)>,
    /// False when the run held more samples than are kept exactly and the percentiles
    /// come from an HDR histogram (≤ 0.05 % relative error; count, mean and std stay
    /// exact). Written to JSON as `"percentiles_exact": false` only in that case.
    pub exact: bool,
}

impl LatencyStats {
    /// The value at percentile `p`, when it was computed and has a sample.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .and_then(|(_, v)| *v)
    }
}

/// `p50`, `p99.9`: vLLM's key spelling (integers without a decimal point).
pub fn percentile_key(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("p{}", p as u64)
    } else {
        format!("p{p}")
    }
}

impl Serialize for LatencyStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = usize::from(!self.exact);
        let mut m = s.serialize_map(Some(3 + extra + self.percentiles.len()))?;
        m.serialize_entry("count", &self.count)?;
        m.serialize_entry("mean", &self.mean)?;
        m.serialize_entry("std", &self.std)?;
        for (p, v) in &self.percentiles {
            m.serialize_entry(&percentile_key(*p), v)?;
        }
        if !self.exact {
            m.serialize_entry("percentiles_exact", &false)?;
        }
        m.end()
    }
}

/// Dispatch lag (t_send − t_sched) at one rate, in ms: how far the client fell behind
/// its own schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LagStats {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

/// Goodput objectives of the run, in ms, keyed like the latencies' figures
/// (`ttft_ms`): vLLM's always (null = not set), llmprobe's own only when set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SloMs(pub Slo);

impl SloMs {
    pub fn from_slo(slo: &Slo) -> SloMs {
        SloMs(*slo)
    }
}

impl Serialize for SloMs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (l, limit) in self.0.reported() {
            let ms = limit.map(|d| d.as_secs_f64() * 1000.0);
            map.serialize_entry(l.report_key(), &ms)?;
        }
        map.end()
    }
}

/// What the run asked for (the inputs that produced the figures).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInputs {
    /// Server base URL (the mock's local URL with `--mock`).
    pub base_url: String,
    /// `chat` or `completions`.
    pub endpoint: String,
    /// Model name sent in requests.
    pub model: String,
    /// Whether the in-process mock engine served the run.
    pub mock: bool,
    /// Prompt length in tokens (mean for non-fixed distributions).
    pub input_len: u32,
    /// Output tokens asked for (mean for non-fixed distributions).
    pub output_len: u32,
    /// `fixed`, `uniform` or `lognormal`.
    pub len_dist: String,
    /// Uniform range ratio r: lengths in [n(1−r), n(1+r)]; null unless uniform.
    pub range_ratio: Option<f64>,
    /// Tokens of the prefix shared by every prompt (0 = a unique nonce starts each).
    pub shared_prefix_len: u32,
    /// The share of requests that start with that prefix (`--prefix-hit-ratio`; absent:
    /// every one): this row's, one of a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_ratio: Option<f64>,
    /// `random`, `sharegpt:PATH`, `jsonl:PATH`, `prompt` or `golden:FILE` (`golden:builtin`).
    pub dataset: String,
    /// Whether `ignore_eos` was sent.
    pub ignore_eos: bool,
    /// Counted requests per rate for this process (null with a duration).
    pub num_requests: Option<u64>,
    /// Run length per rate in seconds (null with a request count).
    pub duration_s: Option<f64>,
    /// Uncounted requests sent first at each rate.
    pub warmup: u64,
    /// Cap on requests in flight (null = none).
    pub max_concurrency: Option<u32>,
    /// Gamma shape of inter-arrival times (1 = Poisson).
    pub burstiness: f64,
    /// The arrival process: `poisson`, `gamma`, `constant`, or `trace` (replayed).
    pub arrival: String,
    /// The replayed trace (null unless `--trace`).
    pub trace: Option<TraceInputs>,
    /// Multi-turn conversations (absent unless `--turns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<TurnsInputs>,
    /// Seed given on the command line.
    pub seed: u64,
    /// Seed this process used (differs from `seed` per shard).
    pub effective_seed: u64,
    /// Goodput objectives.
    pub slo: SloMs,
    /// The gates, as written.
    pub gates: Vec<String>,
}

/// Multi-turn conversations: how many turns, how long users think between them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnsInputs {
    /// Turns per conversation (each arrival starts one).
    pub turns: u32,
    /// Mean think time between an answer and the next turn, seconds.
    pub think_time_s: f64,
    /// `exponential` or `constant`.
    pub think_time_dist: String,
}

/// A replayed trace: which file, which part, how fast.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceInputs {
    pub path: String,
    /// `mooncake`, `burstgpt` or `jsonl`.
    pub format: String,
    /// Time compression (2 = twice as fast as the trace).
    pub speedup: f64,
    /// The window of trace time replayed, seconds (end null: to the end of the file).
    pub window_start_s: f64,
    pub window_end_s: Option<f64>,
    /// BurstGPT `Model` filter (null: every row).
    pub model: Option<String>,
    /// Requests replayed, warmup included.
    pub requests: u64,
    /// Requests of the window left out because a length was zero.
    pub zero_length_skipped: u64,
}

/// The figures of one turn of a multi-turn run (or of turns ≥ 2 together).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnReport {
    /// The turn (1-based); absent for `later` (turns ≥ 2 together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Counted requests sent at this turn.
    pub requests: u64,
    /// Those that succeeded.
    pub completed: u64,
    /// TTFT of the successful ones, ms.
    pub ttft_ms: LatencyStats,
    /// Dispatch lag of every one sent, ms: turn 1 from its arrival's scheduled (or
    /// trace) time, a later turn from its own due time.
    pub dispatch_lag_ms: LagStats,
    /// Mean prompt tokens of the successful ones (server usage when sent): the history
    /// grows turn by turn.
    pub prompt_tokens_mean: Option<f64>,
    /// Cached / prompt tokens where the server reported cached tokens (absent when it
    /// did not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_share: Option<f64>,
}

/// The per-turn figures of a multi-turn run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnsReport {
    /// Turn 1: the cold path (a new conversation's first request).
    pub first: TurnReport,
    /// Turns ≥ 2 together: the warm path, resending the conversation so far.
    pub later: TurnReport,
    /// Each turn in order.
    pub by_turn: Vec<TurnReport>,
}

impl TurnsReport {
    /// One turn's figures (`None`: turns ≥ 2 together).
    pub fn turn(&self, turn: Option<u32>) -> Option<&TurnReport> {
        match turn {
            None => Some(&self.later),
            Some(n) => self.by_turn.iter().find(|t| t.turn == Some(n)),
        }
    }
}

/// GPU energy of one rate (`--gpu-metrics-url`): the GPU telemetry read before the
/// rate's runs and after them, against the output tokens the client received in
/// between (warmup included: the GPUs did that work too).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnergyReport {
    /// GPUs the exporters showed.
    pub gpus: u32,
    /// Seconds between the two reads.
    pub duration_s: f64,
    /// GPU energy spent between them, J.
    pub energy_joules: f64,
    /// Output tokens of every request of the rate's runs.
    pub output_tokens: u64,
    /// energy / duration, W.
    pub mean_power_watts: Option<f64>,
    /// energy / output tokens, J (null when no token came back).
    pub energy_per_output_token_joules: Option<f64>,
    /// output tokens / energy.
    pub output_tokens_per_joule: Option<f64>,
}

/// The verdict of one gate ([`gate::Gate`]) at one rate (part of the JSON report).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    /// The gate as written, e.g. `ttft-p99<=500ms`.
    pub gate: String,
    /// The figure observed at this rate, in `unit`; null when it does not exist (then
    /// the gate fails).
    pub observed: Option<f64>,
    /// The threshold, in `unit` (ratios as fractions).
    pub threshold: f64,
    /// `ms`, `req/s`, `tok/s`, or empty for ratios.
    pub unit: &'static str,
    /// Whether the gate held.
    pub passed: bool,
}

/// One rate's summary: one line of `--json-out`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateReport {
    /// Layout version of this object ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Version of llmprobe that wrote it.
    pub llmprobe_version: String,
    /// When the run at this rate started, RFC 3339 UTC.
    pub started_at: String,
    /// Which shard wrote this summary; null when the run was not sharded (or for a
    /// `report merge` of all shards).
    pub shard: Option<Shard>,
    /// What the run asked for; null in `report merge` output (records do not carry
    /// the run's flags).
    pub inputs: Option<RunInputs>,
    /// The configured request rate of the whole run (all shards together), req/s or
    /// `"inf"`: the row's key in a sweep.
    pub rate: Rate,
    /// The share of requests that started with the shared prefix (`--prefix-hit-ratio`),
    /// with `rate` the row's key when a bench runs several; absent without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_ratio: Option<f64>,
    /// The configured rate this process sent (`rate` / shards), req/s or `"inf"`.
    pub process_rate: Rate,
    /// Offered rate as realised: counted arrivals / scheduled span, req/s (null for an
    /// infinite rate, where every arrival is at t = 0).
    pub offered_rate: Option<f64>,
    /// Achieved rate: completed requests / duration, req/s (vLLM's
    /// `request_throughput`).
    pub achieved_rate: f64,
    /// Seconds from the window origin (run start, or the last warmup arrival) to the
    /// end of the last counted request.
    pub duration_s: f64,
    /// Counted requests sent (completed + failed; warmup excluded).
    pub requests: u64,
    /// Requests that succeeded.
    pub completed: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Failed requests by reason (`http_5xx`, `timeout`, …).
    pub failed_by_reason: BTreeMap<String, u64>,
    /// Arrivals not sent, by reason (none with `--max-concurrency`, whose arrivals
    /// wait instead).
    pub skipped_by_reason: BTreeMap<String, u64>,
    /// Warmup requests left out of every figure.
    pub warmup_excluded: u64,
    /// Prompt tokens of completed requests (server usage when sent, else as built).
    pub total_input_tokens: u64,
    /// Output tokens of completed requests.
    pub total_output_tokens: u64,
    /// Output tokens per second.
    pub output_throughput: f64,
    /// Prompt + output tokens per second.
    pub total_token_throughput: f64,
    /// Requests that succeeded and met every goodput objective.
    pub good: u64,
    /// Good requests per second (vLLM's `request_goodput`).
    pub goodput: f64,
    /// good / requests (null when no request ended).
    pub goodput_ratio: Option<f64>,
    /// Completed requests whose answer was checked (present with answer checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_requests: Option<u64>,
    /// Failed answer checks by check name (a request can fail several).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub check_failures: BTreeMap<String, u64>,
    /// Checked requests that failed at least one check / checked requests. They are
    /// completed (not failures) but not good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_failure_ratio: Option<f64>,
    /// Golden-set accuracy with its 95 % Wilson interval (present with `--golden`,
    /// or when a merged record was a judged golden answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden: Option<golden::GoldenReport>,
    /// Time to first token (t_first − t_send), ms, successful requests.
    pub ttft_ms: LatencyStats,
    /// Time to first answer token (t_first_answer − t_send), ms: present when some
    /// request reasoned (otherwise it equals `ttft_ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttfa_ms: Option<LatencyStats>,
    /// Of `total_output_tokens`, the reasoning tokens (present when some request
    /// reasoned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Time per output token after the first, vLLM's definition, ms.
    pub tpot_ms: LatencyStats,
    /// Per-token inter-token latency (a gap shared among the tokens of its chunk), ms;
    /// counted in tokens.
    pub itl_ms: LatencyStats,
    /// Gaps between content chunks, ms (what vLLM calls ITL; equals `itl_ms` when
    /// every chunk carries one token).
    pub chunk_gap_ms: LatencyStats,
    /// End-to-end latency (t_last − t_send), ms.
    pub e2el_ms: LatencyStats,
    /// TTFT from the intended send time (t_first − t_sched): what a user arriving on
    /// schedule saw, including the client's own lag and any --max-concurrency wait.
    pub ttft_from_sched_ms: LatencyStats,
    /// E2E latency from the intended send time (t_last − t_sched), ms.
    pub e2el_from_sched_ms: LatencyStats,
    /// Dispatch lag (t_send − t_sched) over every sent request, ms.
    pub dispatch_lag_ms: LagStats,
    /// True when dispatch lag p99 exceeded `dispatch_lag_warn_ms`: the figures then
    /// describe the client more than the server.
    pub client_behind: bool,
    /// Warning threshold for dispatch lag p99, ms.
    pub dispatch_lag_warn_ms: f64,
    /// Of the prompt tokens of completed requests whose server reported cached tokens
    /// (`prompt_tokens_details.cached_tokens` and the like), the share read from its
    /// prefix cache; absent when no answer reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit_share: Option<f64>,
    /// Why the figures may come from a warm prefix cache (absent when nothing says so):
    /// the engine held the run's first prompt, or a run of unique prompts read more than
    /// a few per cent of its prompt tokens from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_warning: Option<String>,
    /// `--lora-split`: the model a row of `by_model` is about (absent on the rate's row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `--lora-split`: one row per model (the base model first, then the adapters),
    /// each built from that model's requests exactly as the rate's row is from all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_model: Vec<RateReport>,
    /// Multi-turn runs (`--turns`): turn 1, turns ≥ 2 together, and each turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<TurnsReport>,
    /// GPU energy of the rate (with `--gpu-metrics-url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyReport>,
    /// Where output token counts came from, with request counts (`usage`,
    /// `continuous_usage`, `tokenizer`, `chunks`).
    pub token_sources: BTreeMap<String, u64>,
    /// Verdict of every gate at this rate.
    pub gates: Vec<GateResult>,
    /// Runs behind this row (`--repeat`): with more than one, every figure is the mean
    /// over the runs and counts are their sums.
    pub repeats: u32,
    /// 95 % confidence interval `[low, high]` of each figure over the runs, keyed by the
    /// figure's name (`ttft_ms.p99`, `output_throughput`, …; `report::figures`); empty
    /// for a single run. Student's t over run-level values (`report::ci`).
    pub ci95: BTreeMap<String, [f64; 2]>,
    /// `--self-check`: the client's own error against a reference engine, measured
    /// before and after this rate's run (`{"before": …, "after": …}`, each with
    /// `probes`, `failed`, `ttft_error_ms` and `itl_error_ms` as p50/p99/max).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_check: Option<serde_json::Value>,
    /// `--max-error-rate`: the run stopped before its plan ended, why and at what
    /// counts; absent for a run that ran its plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<stop::StoppedEarly>,
}

impl RateReport {
    /// The stats of one latency, in ms; `None` for dispatch lag, which the report
    /// keeps as [`LagStats`].
    pub fn latency_stats(&self, l: Latency) -> Option<&LatencyStats> {
        Some(match l {
            Latency::Ttft => &self.ttft_ms,
            // Without reasoning the first answer token is the first token.
            Latency::Ttfa => self.ttfa_ms.as_ref().unwrap_or(&self.ttft_ms),
            Latency::Tpot => &self.tpot_ms,
            Latency::Itl => &self.itl_ms,
            Latency::ChunkGap => &self.chunk_gap_ms,
            Latency::E2e => &self.e2el_ms,
            Latency::TtftFromSched => &self.ttft_from_sched_ms,
            Latency::E2eFromSched => &self.e2el_from_sched_ms,
            Latency::DispatchLag => return None,
        })
    }

    /// Every latency distribution the report has, in report order, to change in
    /// place (TTFA only when some request reasoned; dispatch lag is [`LagStats`]).
    pub fn latencies_mut(&mut self) -> impl Iterator<Item = (Latency, &mut LatencyStats)> {
        let RateReport {
            ttft_ms,
            ttfa_ms,
            tpot_ms,
            itl_ms,
            chunk_gap_ms,
            e2el_ms,
            ttft_from_sched_ms,
            e2el_from_sched_ms,
            ..
        } = self;
        [
            (Latency::Ttft, Some(ttft_ms)),
            (Latency::Ttfa, ttfa_ms.as_mut()),
            (Latency::Tpot, Some(tpot_ms)),
            (Latency::Itl, Some(itl_ms)),
            (Latency::ChunkGap, Some(chunk_gap_ms)),
            (Latency::E2e, Some(e2el_ms)),
            (Latency::TtftFromSched, Some(ttft_from_sched_ms)),
            (Latency::E2eFromSched, Some(e2el_from_sched_ms)),
        ]
        .into_iter()
        .filter_map(|(l, s)| s.map(|s| (l, s)))
    }

    /// Whether every gate passed at this rate.
    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }

    /// The row's name in messages: its rate, then its prefix hit ratio when the rows
    /// of its bench differ in it (`8`, `8 (hit ratio 0.5)`).
    pub fn row_name(&self, hit_ratios_vary: bool) -> String {
        row_name(self.rate, self.prefix_hit_ratio, hit_ratios_vary)
    }
}

/// The name of the row of `rate` at `hit_ratio` (see [`RateReport::row_name`]).
pub fn row_name(rate: Rate, hit_ratio: Option<f64>, hit_ratios_vary: bool) -> String {
    match hit_ratio {
        Some(h) if hit_ratios_vary => format!("{rate} (hit ratio {h})"),
        _ => rate.to_string(),
    }
}

/// Whether the rows differ in prefix hit ratio (several `--prefix-hit-ratio` values):
/// then a rate alone does not name a row.
pub fn hit_ratios_vary(reports: &[RateReport]) -> bool {
    reports
        .windows(2)
        .any(|w| w[0].prefix_hit_ratio != w[1].prefix_hit_ratio)
}

/// Fixed reports for printer and gate tests.
#[cfg(test)]
pub mod test_support {
    use super::*;

    pub fn stats(base: f64) -> LatencyStats {
        LatencyStats {
            count: 98,
            mean: Some(base),
            std: Some(base / 10.0),
            percentiles: vec![
                (50.0, Some(base * 0.9)),
                (90.0, Some(base * 1.1)),
                (99.0, Some(base * 1.2)),
            ],
            exact: true,
        }
    }

    pub fn inputs() -> RunInputs {
        RunInputs {
            base_url: "http://127.0.0.1:8000".into(),
            endpoint: "completions".into(),
            model: "mock-llm".into(),
            mock: true,
            input_len: 1024,
            output_len: 128,
            len_dist: "fixed".into(),
            range_ratio: None,
            shared_prefix_len: 0,
            prefix_hit_ratio: None,
            dataset: "random".into(),
            ignore_eos: false,
            num_requests: Some(100),
            duration_s: None,
            warmup: 0,
            max_concurrency: None,
            burstiness: 1.0,
            arrival: "poisson".into(),
            trace: None,
            turns: None,
            seed: 0,
            effective_seed: 0,
            slo: SloMs(
                Slo::of([
                    (Latency::Ttft, std::time::Duration::from_millis(200)),
                    (Latency::Tpot, std::time::Duration::from_millis(20)),
                ])
                .unwrap(),
            ),
            gates: vec![],
        }
    }

    /// 100 requests at `rate`: 98 completed, 2 timeouts, 90 good; TTFT mean 100 ms.
    pub fn sample_report(rate: f64) -> RateReport {
        let finite = if rate.is_finite() { rate } else { 40.0 };
        RateReport {
            schema_version: SCHEMA_VERSION,
            llmprobe_version: "0.1.0".into(),
            started_at: "2026-11-29T18:00:00Z".into(),
            shard: None,
            inputs: Some(inputs()),
            rate: Rate::new(rate).unwrap(),
            prefix_hit_ratio: None,
            process_rate: Rate::new(rate).unwrap(),
            offered_rate: rate.is_finite().then_some(rate * 0.99),
            achieved_rate: finite * 0.98,
            duration_s: 100.0 / finite,
            requests: 100,
            completed: 98,
            failed: 2,
            failed_by_reason: BTreeMap::from([("timeout".to_string(), 2)]),
            checked_requests: None,
            check_failures: BTreeMap::new(),
            check_failure_ratio: None,
            golden: None,
            skipped_by_reason: BTreeMap::new(),
            warmup_excluded: 0,
            total_input_tokens: 98 * 1024,
            total_output_tokens: 98 * 128,
            output_throughput: finite * 0.98 * 128.0,
            total_token_throughput: finite * 0.98 * (128.0 + 1024.0),
            good: 90,
            goodput: finite * 0.9,
            goodput_ratio: Some(0.9),
            ttft_ms: stats(100.0),
            ttfa_ms: None,
            reasoning_tokens: None,
            tpot_ms: stats(10.0),
            itl_ms: stats(10.0),
            chunk_gap_ms: stats(10.0),
            e2el_ms: stats(1370.0),
            ttft_from_sched_ms: stats(100.5),
            e2el_from_sched_ms: stats(1370.5),
            dispatch_lag_ms: LagStats {
                p50: Some(0.05),
                p99: Some(0.4),
                max: Some(0.9),
            },
            client_behind: false,
            dispatch_lag_warn_ms: 1.0,
            cache_hit_share: None,
            cache_warning: None,
            stopped_early: None,
            model: None,
            by_model: Vec::new(),
            turns: None,
            energy: None,
            token_sources: BTreeMap::from([("continuous_usage".to_string(), 98)]),
            gates: vec![],
            repeats: 1,
            ci95: BTreeMap::new(),
            self_check: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_latency_users_name_has_stats_and_only_dispatch_lag_has_none() {
        let mut r = test_support::sample_report(1.0);
        for l in Latency::named() {
            assert!(r.latency_stats(l).is_some(), "{l}");
        }
        for l in Latency::ALL {
            assert_eq!(r.latency_stats(l).is_none(), l.covers_failures(), "{l}");
        }
        let keys: Vec<&str> = r.latencies_mut().map(|(l, _)| l.report_key()).collect();
        assert!(keys.contains(&"ttft_ms") && !keys.contains(&"dispatch_lag_ms"));
    }

    #[test]
    fn histogram_percentiles_are_flagged_in_json() {
        let mut st = test_support::stats(10.0);
        let exact = serde_json::to_value(&st).unwrap();
        assert!(exact.get("percentiles_exact").is_none(), "{exact}");
        st.exact = false;
        let approx = serde_json::to_value(&st).unwrap();
        assert_eq!(approx["percentiles_exact"], false);
        assert_eq!(approx["p50"], 9.0);
    }

    /// The `--json-out` line layout: a change here is a change of the contract (bump
    /// SCHEMA_VERSION when it is incompatible).
    #[test]
    fn json_out_schema() {
        let mut r = test_support::sample_report(8.0);
        r.gates = vec!["ttft-p99<=110ms".parse::<gate::Gate>().unwrap().check(&r)];
        insta::assert_json_snapshot!(serde_json::to_value(&r).unwrap());
    }

    #[test]
    fn percentile_keys_follow_vllm() {
        assert_eq!(percentile_key(99.0), "p99");
        assert_eq!(percentile_key(99.9), "p99.9");
        assert_eq!(percentile_key(50.0), "p50");
    }

    #[test]
    fn infinite_rate_is_the_string_inf() {
        assert_eq!(serde_json::to_string(&Rate::INFINITE).unwrap(), "\"inf\"");
        assert_eq!(
            serde_json::to_string(&Rate::new(2.5).unwrap()).unwrap(),
            "2.5"
        );
        let back: Rate = serde_json::from_str("\"inf\"").unwrap();
        assert!(back.per_second().is_infinite());
    }

    #[test]
    fn latency_stats_serialize_flat_in_percentile_order() {
        let s = test_support::stats(100.0);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"count":98,"mean":100.0,"std":10.0,"p50":90.0,"p90":110.00000000000001,"p99":120.0}"#
        );
        assert_eq!(s.percentile(99.0), Some(120.0));
        assert_eq!(s.percentile(75.0), None);
    }
}
