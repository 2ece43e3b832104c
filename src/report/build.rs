//! From an aggregation [`Summary`] (seconds, the core's definitions) to a
//! [`RateReport`] (ms, the report's JSON contract), gates checked. The figures are the
//! aggregate's; this module only converts units, names them and applies the gates.

use std::collections::BTreeMap;

use std::time::Duration;

use crate::aggregate::{Stats, Summary, TurnSummary, TurnsSummary};
use crate::latency::Latency;
use crate::rate::Rate;
use crate::report::gate::Gate;
use crate::report::golden::GoldenReport;
use crate::report::{
    LagStats, LatencyStats, RateReport, RunInputs, SCHEMA_VERSION, TurnReport, TurnsReport,
};
use crate::schedule::Shard;

/// Everything a rate's report needs besides the summary.
#[derive(Debug, Clone)]
pub struct ReportContext {
    pub inputs: Option<RunInputs>,
    /// Configured rate of the whole run.
    pub rate: Rate,
    /// The run's `--prefix-hit-ratio`, with the rate the row's key.
    pub prefix_hit_ratio: Option<f64>,
    /// Configured rate of this process.
    pub process_rate: Rate,
    pub shard: Option<Shard>,
    /// Percentiles to compute (reported ones, gate ones, 50 and 99).
    pub percentiles: Vec<f64>,
    pub gates: Vec<Gate>,
    pub dispatch_lag_warn: Duration,
    pub started_at: String,
    /// The run asked a golden set: its accuracy is reported even with no answer judged.
    pub golden: bool,
}

fn ms_stats(s: &Stats, percentiles: &[f64]) -> LatencyStats {
    let ms = |v: f64| v * 1000.0;
    LatencyStats {
        count: s.count,
        mean: s.mean.map(ms),
        std: s.std.map(ms),
        percentiles: percentiles
            .iter()
            .map(|&p| (p, s.percentile(p).map(ms)))
            .collect(),
        exact: s.exact,
    }
}

/// Dispatch lag's p50, p99 and max in ms (the percentiles are always computed).
fn lag_ms(lag: &Stats) -> LagStats {
    let ms = |v: Option<f64>| v.map(|v| v * 1000.0);
    LagStats {
        p50: ms(lag.percentile(50.0)),
        p99: ms(lag.percentile(99.0)),
        max: ms(lag.max),
    }
}

/// One turn's figures in ms.
fn turn_report(t: &TurnSummary, percentiles: &[f64]) -> TurnReport {
    TurnReport {
        turn: t.turn,
        requests: t.requests,
        completed: t.completed,
        ttft_ms: ms_stats(&t.ttft, percentiles),
        dispatch_lag_ms: lag_ms(&t.dispatch_lag),
        prompt_tokens_mean: t.prompt_tokens_mean,
        cache_hit_share: t.cache.share(),
    }
}

/// The per-turn figures; `None` without a first turn (every conversation was warmup).
fn turns_report(t: &TurnsSummary, percentiles: &[f64]) -> Option<TurnsReport> {
    let by_turn: Vec<TurnReport> = t
        .by_turn
        .iter()
        .map(|t| turn_report(t, percentiles))
        .collect();
    Some(TurnsReport {
        first: by_turn.iter().find(|t| t.turn == Some(1))?.clone(),
        later: turn_report(&t.later, percentiles),
        by_turn,
    })
}

/// The report of one rate from its summary (computed with `ctx.percentiles`).
pub fn from_summary(s: &Summary, ctx: &ReportContext) -> RateReport {
    let dispatch_lag_ms = lag_ms(s.latency(Latency::DispatchLag));
    let warn_ms = ctx.dispatch_lag_warn.as_secs_f64() * 1000.0;
    let latency = |l: Latency| ms_stats(s.latency(l), &ctx.percentiles);
    let mut report = RateReport {
        schema_version: SCHEMA_VERSION,
        llmprobe_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: ctx.started_at.clone(),
        shard: ctx.shard,
        inputs: ctx.inputs.clone(),
        rate: ctx.rate,
        prefix_hit_ratio: ctx.prefix_hit_ratio,
        process_rate: ctx.process_rate,
        offered_rate: s.offered_rate,
        achieved_rate: s.achieved_rate,
        duration_s: s.duration_s,
        requests: s.requests,
        completed: s.completed,
        failed: s.failed,
        failed_by_reason: s.failures.clone(),
        skipped_by_reason: s.skipped.clone(),
        warmup_excluded: s.warmup_excluded,
        total_input_tokens: s.input_tokens,
        total_output_tokens: s.output_tokens,
        output_throughput: s.output_tokens_per_s,
        total_token_throughput: s.total_tokens_per_s,
        good: s.good,
        goodput: s.goodput,
        goodput_ratio: s.goodput_ratio,
        checked_requests: (s.checked > 0).then_some(s.checked),
        check_failures: s.check_failures.clone(),
        check_failure_ratio: (s.checked > 0).then(|| s.check_failed as f64 / s.checked as f64),
        golden: (ctx.golden || s.golden_judged > 0)
            .then(|| GoldenReport::from_counts(s.golden_correct, s.golden_judged)),
        ttft_ms: latency(Latency::Ttft),
        ttfa_ms: (s.reasoning_tokens > 0).then(|| latency(Latency::Ttfa)),
        reasoning_tokens: (s.reasoning_tokens > 0).then_some(s.reasoning_tokens),
        tpot_ms: latency(Latency::Tpot),
        itl_ms: latency(Latency::Itl),
        chunk_gap_ms: latency(Latency::ChunkGap),
        e2el_ms: latency(Latency::E2e),
        ttft_from_sched_ms: latency(Latency::TtftFromSched),
        e2el_from_sched_ms: latency(Latency::E2eFromSched),
        client_behind: dispatch_lag_ms.p99.is_some_and(|v| v > warn_ms),
        dispatch_lag_ms,
        dispatch_lag_warn_ms: warn_ms,
        cache_hit_share: s.cache.share(),
        cache_warning: None,
        stopped_early: None,
        model: None,
        by_model: Vec::new(),
        turns: s
            .turns
            .as_ref()
            .and_then(|t| turns_report(t, &ctx.percentiles)),
        energy: None,
        token_sources: s.token_sources.clone(),
        gates: Vec::new(),
        repeats: 1,
        ci95: BTreeMap::new(),
        self_check: None,
    };
    report.gates = ctx.gates.iter().map(|g| g.check(&report)).collect();
    report
}
