//! From an aggregation [`Summary`] (seconds, the core's definitions) to a
//! [`RateReport`] (ms, the report's JSON contract), gates checked. The figures are the
//! aggregate's; this module only converts units, names them and applies the gates.

use std::time::Duration;

use crate::aggregate::{Stats, Summary};
use crate::bench::gate::Gate;
use crate::bench::options::Shard;
use crate::report::{LagStats, LatencyStats, RateReport, RateValue, RunInputs, SCHEMA_VERSION};

/// Everything a rate's report needs besides the summary.
#[derive(Debug, Clone)]
pub struct ReportContext {
    pub inputs: Option<RunInputs>,
    /// Configured rate of the whole run.
    pub rate: RateValue,
    /// Configured rate of this process.
    pub process_rate: RateValue,
    pub shard: Option<Shard>,
    /// Percentiles to compute (reported ones, gate ones, 50 and 99).
    pub percentiles: Vec<f64>,
    pub gates: Vec<Gate>,
    pub dispatch_lag_warn: Duration,
    pub started_at: String,
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
    }
}

/// The report of one rate from its summary (computed with `ctx.percentiles`).
pub fn from_summary(s: &Summary, ctx: &ReportContext) -> RateReport {
    let lag_ms = |v: Option<f64>| v.map(|v| v * 1000.0);
    let dispatch_lag_ms = LagStats {
        p50: lag_ms(s.dispatch_lag.percentile(50.0)),
        p99: lag_ms(s.dispatch_lag.percentile(99.0)),
        max: lag_ms(s.dispatch_lag.max),
    };
    let warn_ms = ctx.dispatch_lag_warn.as_secs_f64() * 1000.0;
    let p = &ctx.percentiles;
    let mut report = RateReport {
        schema_version: SCHEMA_VERSION,
        llmprobe_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: ctx.started_at.clone(),
        shard: ctx.shard,
        inputs: ctx.inputs.clone(),
        rate: ctx.rate,
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
        ttft_ms: ms_stats(&s.ttft, p),
        tpot_ms: ms_stats(&s.tpot, p),
        itl_ms: ms_stats(&s.itl, p),
        chunk_gap_ms: ms_stats(&s.chunk_gap, p),
        e2el_ms: ms_stats(&s.e2e, p),
        ttft_from_sched_ms: ms_stats(&s.ttft_from_sched, p),
        e2el_from_sched_ms: ms_stats(&s.e2e_from_sched, p),
        client_behind: dispatch_lag_ms.p99.is_some_and(|v| v > warn_ms),
        dispatch_lag_ms,
        dispatch_lag_warn_ms: warn_ms,
        token_sources: s.token_sources.clone(),
        gates: Vec::new(),
    };
    report.gates = ctx.gates.iter().map(|g| g.check(&report)).collect();
    report
}
