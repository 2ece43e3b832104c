//! Aggregation of one run's records into a [`Summary`]: counts by outcome, rates,
//! token throughput, latency statistics, goodput and dispatch lag. Pure: records in,
//! numbers out; printing and file formats belong to the report.
//!
//! Definitions (the figures of `vllm bench serve`, vllm/benchmarks/serve.py
//! `calculate_metrics`, unless said otherwise):
//! - Latencies (TTFT, TPOT, ITL, E2E and the from-schedule variants) come from
//!   successful requests only. ITL is per token ([`RequestRecord::itl`]), weighted by
//!   tokens; the per-chunk gaps (what vLLM calls ITL) are kept as `chunk_gap`.
//! - Dispatch lag covers every dispatched request, whatever its outcome.
//! - Token totals (input and output) count successful requests only.
//! - Measurement window: from the origin (the run start, or with warmup the scheduled
//!   time of the last warmup arrival) to the end of the last counted request.
//!   `duration` is its length; achieved rate = completed / duration; goodput =
//!   good / duration; goodput ratio = good / counted requests (docs/measurement.md).
//! - Offered rate: the rate the schedule asked for, as realised by the seeded draw:
//!   inter-arrival gaps / their total span. Without warmup, the n counted arrivals
//!   (sent or skipped) span n − 1 gaps from the first to the last scheduled time; with
//!   warmup they span n gaps from the origin. `None` when the span is 0 (infinite
//!   rate, or a single arrival).
//! - Warmup: records and skips with `id < warmup` are left out of every figure.
//!
//! Combining: both ways keep every value the [`Samples`] keep, so counts, totals and
//! means are exact, and percentiles are exact unless a latency outgrew its memory bound
//! (then [`Stats::exact`] is false and they come from a histogram, ≤ 0.1 % off).
//! [`Collector::merge`] is for shards of one run that started together: their windows
//! overlap, so the window becomes the union of theirs. [`Collector::append`] is for
//! separate runs (one after another): their windows add up (durations, arrival gaps
//! and the spans those gaps cover), so two runs at 20 req/s still offer 20 req/s.

pub mod samples;
pub mod turns;
pub mod warmup;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use samples::{Percentile, Samples, Stats};
pub use turns::{CacheShare, TurnSummary, TurnsSummary};

use crate::event::{RunEvent, SkipReason};
use crate::latency::{Latency, Slo};
use crate::record::RequestRecord;

/// Accumulates records of one run (or one shard).
#[derive(Debug, Clone, Default)]
pub struct Collector {
    slo: Slo,
    warmup: u64,
    requests: u64,
    completed: u64,
    good: u64,
    warmup_excluded: u64,
    failures: BTreeMap<&'static str, u64>,
    skipped: BTreeMap<&'static str, u64>,
    token_sources: BTreeMap<&'static str, u64>,
    input_tokens: u64,
    output_tokens: u64,
    reasoning_tokens: u64,
    /// Successful requests whose answer was checked, and those that failed a check.
    checked: u64,
    check_failed: u64,
    /// Failed checks by check name.
    check_failures: BTreeMap<&'static str, u64>,
    /// Successful requests whose golden-set answer was judged, and those judged correct.
    golden_judged: u64,
    golden_correct: u64,
    /// Scheduled time of the last warmup arrival (the window origin).
    origin: Option<Duration>,
    first_sched: Option<Duration>,
    last_sched: Option<Duration>,
    end: Duration,
    /// The windows of runs added with [`Collector::append`] (summed).
    prior: Window,
    /// One distribution per [`Latency`], indexed by [`Latency::index`].
    latencies: [Samples; Latency::COUNT],
    /// Counted requests that were later turns of a conversation (not arrivals).
    later_turns: u64,
    /// Cached prompt tokens, where servers reported them.
    cache: CacheShare,
    /// Multi-turn runs: figures per turn.
    turns: turns::TurnCollector,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A measurement window: its length, and the arrival gaps the schedule drew in it with
/// the time they span (offered rate = gaps / span).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Window {
    duration: Duration,
    /// Counted arrivals in it.
    arrivals: u64,
    gaps: u64,
    span: Duration,
}

impl Window {
    /// Windows of runs that did not overlap lie end to end.
    fn add(self, other: Window) -> Window {
        Window {
            duration: self.duration + other.duration,
            arrivals: self.arrivals + other.arrivals,
            gaps: self.gaps + other.gaps,
            span: self.span + other.span,
        }
    }
}

impl Collector {
    /// `slo` decides goodput; the first `warmup` arrivals (by id) are not counted.
    pub fn new(slo: Slo, warmup: u64) -> Self {
        Collector {
            slo,
            warmup,
            ..Self::default()
        }
    }

    /// Keeps at most `limit` values of each latency exactly before switching it to a
    /// histogram ([`Samples::with_exact_limit`]; the default is
    /// [`samples::DEFAULT_EXACT_LIMIT`]). Call before pushing.
    pub fn with_exact_limit(mut self, limit: usize) -> Self {
        for s in &mut self.latencies {
            *s = Samples::with_exact_limit(limit);
        }
        self
    }

    /// Counted requests so far (warmup excluded) and the failed ones among them: the
    /// report's `requests` and `failed`.
    pub fn counted(&self) -> (u64, u64) {
        (self.requests, self.requests - self.completed)
    }

    /// Takes one runner event.
    pub fn push_event(&mut self, event: &RunEvent) {
        match event {
            RunEvent::Record(r) => self.push(r),
            RunEvent::Skipped {
                id,
                t_sched,
                reason,
            } => self.push_skip(*id, *t_sched, *reason),
        }
    }

    /// An arrival that was not sent.
    pub fn push_skip(&mut self, id: u64, t_sched: Duration, reason: SkipReason) {
        if self.is_warmup(id, t_sched) {
            return;
        }
        *self.skipped.entry(reason.as_str()).or_default() += 1;
        self.note_sched(t_sched);
    }

    /// A warmup arrival known as such (a `--records` line flagged `warmup`): not
    /// counted; it moves the window origin to the last warmup arrival.
    pub fn push_warmup(&mut self, t_sched: Duration) {
        self.warmup_excluded += 1;
        self.origin = Some(self.origin.map_or(t_sched, |o| o.max(t_sched)));
    }

    fn is_warmup(&mut self, id: u64, t_sched: Duration) -> bool {
        if id < self.warmup {
            self.push_warmup(t_sched);
            true
        } else {
            false
        }
    }

    fn note_sched(&mut self, t_sched: Duration) {
        self.first_sched = Some(self.first_sched.map_or(t_sched, |f| f.min(t_sched)));
        self.last_sched = Some(self.last_sched.map_or(t_sched, |l| l.max(t_sched)));
    }

    /// One finished request. A later turn of a conversation is a request but not an
    /// arrival: it neither moves the window origin nor counts in the offered rate.
    pub fn push(&mut self, r: &RequestRecord) {
        if r.is_later_turn() {
            if r.id < self.warmup {
                self.warmup_excluded += 1;
                return;
            }
            self.later_turns += 1;
        } else {
            if self.is_warmup(r.id, r.t_sched) {
                return;
            }
            self.note_sched(r.t_sched);
        }
        self.requests += 1;
        self.turns.push(r);
        let end = [r.t_end, r.t_last(), Some(r.t_send)]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(r.t_send);
        self.end = self.end.max(end);
        self.push_latencies(r, true);
        if !r.is_success() {
            *self.failures.entry(r.outcome.as_str()).or_default() += 1;
            return;
        }
        self.completed += 1;
        if r.is_good(&self.slo) {
            self.good += 1;
        }
        if !r.checks.is_empty() {
            self.checked += 1;
            self.check_failed += u64::from(!r.checks_passed());
            for c in r.failed_checks() {
                *self.check_failures.entry(c.check.as_str()).or_default() += 1;
            }
        }
        if let Some(v) = &r.golden {
            self.golden_judged += 1;
            self.golden_correct += u64::from(v.correct);
        }
        *self
            .token_sources
            .entry(r.token_source.as_str())
            .or_default() += 1;
        self.input_tokens += u64::from(r.prompt_tokens());
        self.cache.push(r);
        self.output_tokens += u64::from(r.output_tokens());
        self.reasoning_tokens += u64::from(r.reasoning_tokens());
        self.push_latencies(r, false);
    }

    /// Pushes `r`'s values of the latencies measured on every dispatched request
    /// (`dispatched`), or of those measured on successful requests only.
    fn push_latencies(&mut self, r: &RequestRecord, dispatched: bool) {
        for l in Latency::ALL {
            if l.covers_failures() == dispatched {
                let s = &mut self.latencies[l.index()];
                r.samples(l, |v, weight| s.push_weighted(secs(v), weight));
            }
        }
    }

    /// Adds the values of a shard of the same run (exact). The shards started together,
    /// so the window becomes the union of both. Both must use the same SLO.
    pub fn merge(&mut self, other: &Collector) {
        self.add_values(other);
        self.origin = match (self.origin, other.origin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.first_sched = match (self.first_sched, other.first_sched) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_sched = self.last_sched.max(other.last_sched);
        self.end = self.end.max(other.end);
        self.prior = self.prior.add(other.prior);
    }

    /// Adds the values of a separate run (exact). Its timestamps count from its own
    /// start, so its window does not overlap this one: the windows add up.
    pub fn append(&mut self, other: &Collector) {
        self.add_values(other);
        self.prior = self.prior.add(other.own_window()).add(other.prior);
    }

    fn add_values(&mut self, other: &Collector) {
        self.requests += other.requests;
        self.completed += other.completed;
        self.good += other.good;
        self.warmup_excluded += other.warmup_excluded;
        self.checked += other.checked;
        self.check_failed += other.check_failed;
        self.golden_judged += other.golden_judged;
        self.golden_correct += other.golden_correct;
        for (mine, theirs) in [
            (&mut self.failures, &other.failures),
            (&mut self.check_failures, &other.check_failures),
            (&mut self.skipped, &other.skipped),
            (&mut self.token_sources, &other.token_sources),
        ] {
            for (k, v) in theirs {
                *mine.entry(k).or_default() += v;
            }
        }
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.later_turns += other.later_turns;
        self.cache.add(&other.cache);
        self.turns.merge(&other.turns);
        for (mine, theirs) in self.latencies.iter_mut().zip(&other.latencies) {
            mine.merge(theirs);
        }
    }

    /// Counted arrivals, sent or skipped (a conversation's later turns are not).
    fn arrivals(&self) -> u64 {
        self.requests - self.later_turns + self.skipped.values().sum::<u64>()
    }

    /// The window of the records pushed (or merged) here, without appended runs.
    fn own_window(&self) -> Window {
        let origin = self.origin.unwrap_or_default();
        // Appended runs' arrivals are in the totals but not in this window.
        let arrivals = self.arrivals() - self.prior.arrivals;
        // Gaps between arrivals and the time they span (see the module docs).
        let (gaps, from) = match self.origin {
            Some(o) => (arrivals, o),
            None => (
                arrivals.saturating_sub(1),
                self.first_sched.unwrap_or_default(),
            ),
        };
        Window {
            duration: self.end.saturating_sub(origin),
            arrivals,
            gaps,
            span: self
                .last_sched
                .map_or(Duration::ZERO, |l| l.saturating_sub(from)),
        }
    }

    /// The summary, with `percentiles` (0–100) for every latency.
    pub fn summary(&self, percentiles: &[f64]) -> Summary {
        let window = self.own_window().add(self.prior);
        let duration = secs(window.duration);
        let arrivals = self.arrivals();
        let (gaps, span) = (window.gaps, secs(window.span));
        let per_sec = |n: f64| if duration > 0.0 { n / duration } else { 0.0 };
        let own = |m: &BTreeMap<&'static str, u64>| -> BTreeMap<String, u64> {
            m.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        let [
            ttft,
            ttfa,
            tpot,
            itl,
            chunk_gap,
            e2e,
            ttft_from_sched,
            e2e_from_sched,
            dispatch_lag,
        ] = Latency::ALL.map(|l| self.latencies[l.index()].stats(percentiles));
        Summary {
            requests: self.requests,
            completed: self.completed,
            failed: self.requests - self.completed,
            failures: own(&self.failures),
            skipped: own(&self.skipped),
            warmup_excluded: self.warmup_excluded,
            duration_s: duration,
            arrivals,
            offered_rate: (span > 0.0 && gaps > 0).then(|| gaps as f64 / span),
            achieved_rate: per_sec(self.completed as f64),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            output_tokens_per_s: per_sec(self.output_tokens as f64),
            total_tokens_per_s: per_sec((self.input_tokens + self.output_tokens) as f64),
            good: self.good,
            goodput: per_sec(self.good as f64),
            goodput_ratio: (self.requests > 0).then(|| self.good as f64 / self.requests as f64),
            slo: self.slo,
            token_sources: own(&self.token_sources),
            reasoning_tokens: self.reasoning_tokens,
            checked: self.checked,
            check_failed: self.check_failed,
            check_failures: own(&self.check_failures),
            golden_judged: self.golden_judged,
            golden_correct: self.golden_correct,
            cache: self.cache,
            turns: self.turns.summary(percentiles),
            ttft,
            ttfa,
            tpot,
            itl,
            chunk_gap,
            e2e,
            ttft_from_sched,
            e2e_from_sched,
            dispatch_lag,
        }
    }
}

/// The figures of one run. Latencies in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Counted requests that were sent (after warmup).
    pub requests: u64,
    /// Requests that succeeded.
    pub completed: u64,
    /// Requests that failed (`requests − completed`).
    pub failed: u64,
    /// Failures by outcome name (`http_5xx`, `timeout`, …).
    pub failures: BTreeMap<String, u64>,
    /// Arrivals not sent, by reason (`max_inflight`, `token_budget`).
    pub skipped: BTreeMap<String, u64>,
    /// Records and skips left out as warmup.
    pub warmup_excluded: u64,
    /// Length of the measurement window, seconds.
    pub duration_s: f64,
    /// Counted arrivals: sent plus skipped.
    pub arrivals: u64,
    /// Arrivals per second over the scheduled span (gaps / span); `None` for an infinite
    /// rate or a single arrival.
    pub offered_rate: Option<f64>,
    /// Completed requests per second (vLLM's `request_throughput`).
    pub achieved_rate: f64,
    /// Prompt tokens of successful requests (server usage when sent).
    pub input_tokens: u64,
    /// Output tokens of successful requests.
    pub output_tokens: u64,
    pub output_tokens_per_s: f64,
    /// Input plus output tokens per second.
    pub total_tokens_per_s: f64,
    /// Requests that succeeded and met every objective of `slo`.
    pub good: u64,
    /// Good requests per second.
    pub goodput: f64,
    /// good / requests; `None` with no requests.
    pub goodput_ratio: Option<f64>,
    /// The objectives goodput was judged against.
    pub slo: Slo,
    /// Successful requests by token source (`continuous_usage`, `usage`, …).
    pub token_sources: BTreeMap<String, u64>,
    /// Of `output_tokens`, the reasoning tokens.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Successful requests whose answer was checked.
    #[serde(default)]
    pub checked: u64,
    /// Of `checked`, those that failed at least one check (not good, still completed).
    #[serde(default)]
    pub check_failed: u64,
    /// Failed checks by check name (one request can fail several).
    #[serde(default)]
    pub check_failures: BTreeMap<String, u64>,
    /// Successful requests whose golden-set answer was judged (a failed request is a
    /// failure, never a wrong answer).
    #[serde(default)]
    pub golden_judged: u64,
    /// Of `golden_judged`, the answers judged correct.
    #[serde(default)]
    pub golden_correct: u64,
    /// Cached prompt tokens where the server reported them (successful requests).
    #[serde(default)]
    pub cache: CacheShare,
    /// Multi-turn runs: figures per turn (`None` when no record carried a turn).
    #[serde(default)]
    pub turns: Option<TurnsSummary>,
    pub ttft: Stats,
    /// Time to first answer token (equals `ttft` when nothing reasoned).
    #[serde(default)]
    pub ttfa: Stats,
    pub tpot: Stats,
    /// Per-token inter-token latency (count = tokens).
    pub itl: Stats,
    /// Gaps between content chunks (vLLM's ITL).
    pub chunk_gap: Stats,
    pub e2e: Stats,
    pub ttft_from_sched: Stats,
    pub e2e_from_sched: Stats,
    /// t_send − t_sched over every dispatched request.
    pub dispatch_lag: Stats,
}

impl Summary {
    /// The statistics of one latency.
    pub fn latency(&self, l: Latency) -> &Stats {
        match l {
            Latency::Ttft => &self.ttft,
            Latency::Ttfa => &self.ttfa,
            Latency::Tpot => &self.tpot,
            Latency::Itl => &self.itl,
            Latency::ChunkGap => &self.chunk_gap,
            Latency::E2e => &self.e2e,
            Latency::TtftFromSched => &self.ttft_from_sched,
            Latency::E2eFromSched => &self.e2e_from_sched,
            Latency::DispatchLag => &self.dispatch_lag,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, TokenSource};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// A successful request: scheduled at `sched`, sent `lag` later, first token after
    /// `ttft`, then `chunks` chunks of `per_chunk` tokens every `gap` ms.
    fn ok(
        id: u64,
        sched: u64,
        lag: u64,
        ttft: u64,
        chunks: u64,
        per_chunk: u32,
        gap: u64,
    ) -> RequestRecord {
        let send = sched + lag;
        let mut r = RequestRecord::new(id, ms(sched), ms(send));
        r.prompt_tokens_sent = 100;
        let mut at = send + ttft;
        r.push_chunk(ms(at), 4, Some(1));
        for _ in 0..chunks {
            at += gap;
            r.push_chunk(ms(at), 4, Some(per_chunk));
        }
        r.t_end = Some(ms(at));
        r.resolve_tokens(Some(TokenSource::Tokenizer));
        r
    }

    fn failed(id: u64, sched: u64, outcome: Outcome, end: u64) -> RequestRecord {
        let mut r = RequestRecord::new(id, ms(sched), ms(sched));
        r.outcome = outcome;
        r.t_end = Some(ms(end));
        r
    }

    /// Hand-computed run:
    /// - r0: sched 0, sent 0, TTFT 100, 2 chunks × 1 token every 20 → t_last 140, 3 tokens
    /// - r1: sched 100, sent 110 (lag 10), TTFT 200, 1 chunk × 4 tokens after 40 → t_last
    ///   350, 5 tokens; ITL samples 4 × 10 ms
    /// - r2: sched 200, http_5xx, ends 260
    /// - skip at 300 (max_inflight)
    fn hand_run() -> Collector {
        let slo = Slo::of([(Latency::Ttft, ms(150))]).unwrap();
        let mut c = Collector::new(slo, 0);
        c.push(&ok(0, 0, 0, 100, 2, 1, 20));
        c.push(&ok(1, 100, 10, 200, 1, 4, 40));
        c.push(&failed(2, 200, Outcome::Http5xx, 260));
        c.push_skip(3, ms(300), SkipReason::MaxInflight);
        c
    }

    #[test]
    fn summary_matches_hand_computed_figures() {
        let s = hand_run().summary(&[50.0, 99.0]);
        assert_eq!((s.requests, s.completed, s.failed), (3, 2, 1));
        assert_eq!(s.failures.get("http_5xx"), Some(&1));
        assert_eq!(s.skipped.get("max_inflight"), Some(&1));
        // Window: 0 → 350 ms (end of r1).
        assert!(close(s.duration_s, 0.35));
        // 4 arrivals: 3 gaps over 300 ms of schedule.
        assert_eq!(s.arrivals, 4);
        assert!(close(s.offered_rate.unwrap(), 10.0));
        assert!(close(s.achieved_rate, 2.0 / 0.35));
        assert_eq!((s.input_tokens, s.output_tokens), (200, 8));
        assert!(close(s.output_tokens_per_s, 8.0 / 0.35));
        assert!(close(s.total_tokens_per_s, 208.0 / 0.35));
        // TTFT 100 and 200: mean 150, p50 150, p99 = 100 + 0.99 × 100 = 199.
        assert!(close(s.ttft.mean.unwrap(), 0.15));
        assert!(close(s.ttft.percentile(50.0).unwrap(), 0.15));
        assert!(close(s.ttft.percentile(99.0).unwrap(), 0.199));
        // TPOT: r0 (140 − 100)/2 = 20 ms; r1 (350 − 310)/4 = 10 ms.
        assert!(close(s.tpot.mean.unwrap(), 0.015));
        // ITL per token: r0 two samples of 20 ms, r1 four of 10 ms → 6 tokens.
        assert_eq!(s.itl.count, 6);
        assert!(close(s.itl.mean.unwrap(), (2.0 * 0.02 + 4.0 * 0.01) / 6.0));
        // Sorted [10,10,10,10,20,20]: p50 h = 2.5 → 10; p99 h = 4.95 → 20.
        assert!(close(s.itl.percentile(50.0).unwrap(), 0.01));
        assert!(close(s.itl.percentile(99.0).unwrap(), 0.02));
        // Chunk gaps: 20, 20, 40.
        assert_eq!(s.chunk_gap.count, 3);
        assert!(close(s.chunk_gap.max.unwrap(), 0.04));
        // E2E: 140 and 240; from schedule: 140 and 250.
        assert!(close(s.e2e.mean.unwrap(), 0.19));
        assert!(close(s.e2e_from_sched.mean.unwrap(), 0.195));
        assert!(close(s.ttft_from_sched.max.unwrap(), 0.21));
        // Dispatch lag over the 3 sent: 0, 10, 0 ms.
        assert_eq!(s.dispatch_lag.count, 3);
        assert!(close(s.dispatch_lag.max.unwrap(), 0.01));
        assert!(close(s.dispatch_lag.percentile(99.0).unwrap(), 0.0098));
        // Goodput: TTFT ≤ 150 holds for r0 only.
        assert_eq!(s.good, 1);
        assert!(close(s.goodput, 1.0 / 0.35));
        assert!(close(s.goodput_ratio.unwrap(), 1.0 / 3.0));
        assert_eq!(s.token_sources.get("tokenizer"), Some(&2));
    }

    #[test]
    fn warmup_is_excluded_and_moves_the_origin() {
        let mut c = Collector::new(Slo::default(), 2);
        c.push(&ok(0, 0, 0, 100, 1, 1, 10));
        c.push(&ok(1, 100, 0, 100, 1, 1, 10));
        c.push(&ok(2, 200, 0, 100, 1, 1, 10)); // ends 310
        c.push(&ok(3, 300, 0, 100, 1, 1, 10)); // ends 410
        let s = c.summary(&[50.0]);
        assert_eq!(s.warmup_excluded, 2);
        assert_eq!(s.requests, 2);
        // Origin = last warmup arrival (100 ms); window 100 → 410.
        assert!(close(s.duration_s, 0.31));
        // Two arrivals over 200 ms of schedule.
        assert!(close(s.offered_rate.unwrap(), 10.0));
        assert_eq!(s.goodput_ratio, Some(1.0));
    }

    #[test]
    fn infinite_rate_has_no_offered_rate() {
        let mut c = Collector::new(Slo::default(), 0);
        c.push(&ok(0, 0, 0, 100, 1, 1, 10));
        c.push(&ok(1, 0, 5, 100, 1, 1, 10));
        let s = c.summary(&[]);
        assert_eq!(s.offered_rate, None);
        assert!(s.ttft.percentiles.is_empty());
    }

    #[test]
    fn empty_run_gives_zeros_not_nans() {
        let s = Collector::new(Slo::default(), 0).summary(&[50.0]);
        assert_eq!(s.requests, 0);
        assert_eq!(s.achieved_rate, 0.0);
        assert_eq!(s.goodput_ratio, None);
        assert_eq!(s.ttft.mean, None);
        serde_json::to_string(&s).unwrap();
    }

    #[test]
    fn collector_merge_equals_one_piece() {
        let records = [
            ok(0, 0, 0, 100, 2, 1, 20),
            ok(1, 100, 10, 200, 1, 4, 40),
            failed(2, 200, Outcome::Timeout, 900),
            ok(3, 300, 1, 50, 3, 2, 5),
        ];
        let mut whole = Collector::new(Slo::default(), 0);
        let mut a = Collector::new(Slo::default(), 0);
        let mut b = Collector::new(Slo::default(), 0);
        for (i, r) in records.iter().enumerate() {
            whole.push(r);
            if i % 2 == 0 { &mut a } else { &mut b }.push(r);
        }
        a.merge(&b);
        let ps = [50.0, 90.0, 99.0];
        assert_eq!(a.summary(&ps), whole.summary(&ps));
    }

    #[test]
    fn bounded_shards_merge_close_to_the_exact_whole() {
        // 40 requests × 30 chunks: 1,200 ITL values against a limit of 100, so ITL and
        // chunk gaps switch to the histogram in each shard while TTFT stays exact.
        let records: Vec<RequestRecord> = (0..40)
            .map(|i| ok(i, 10 * i, i % 3, 50 + i, 30, 1 + (i % 2) as u32, 5 + i % 11))
            .collect();
        let mut whole = Collector::new(Slo::default(), 0);
        let mut a = Collector::new(Slo::default(), 0).with_exact_limit(100);
        let mut b = Collector::new(Slo::default(), 0).with_exact_limit(100);
        for (i, r) in records.iter().enumerate() {
            whole.push(r);
            if i % 2 == 0 { &mut a } else { &mut b }.push(r);
        }
        a.merge(&b);
        let ps = [50.0, 90.0, 99.0];
        let (got, want) = (a.summary(&ps), whole.summary(&ps));
        assert!(got.ttft.exact && got.e2e.exact);
        assert_eq!(got.ttft, want.ttft);
        assert!(!got.itl.exact && !got.chunk_gap.exact);
        assert!(want.itl.exact);
        for (g, w) in [(&got.itl, &want.itl), (&got.chunk_gap, &want.chunk_gap)] {
            assert_eq!(g.count, w.count);
            assert!((g.mean.unwrap() - w.mean.unwrap()).abs() < 1e-12);
            assert_eq!((g.min, g.max), (w.min, w.max));
            for p in ps {
                let (x, y) = (g.percentile(p).unwrap(), w.percentile(p).unwrap());
                assert!((x - y).abs() <= 1e-3 * y, "p{p}: {x} vs {y}");
            }
        }
        assert_eq!(got.output_tokens, want.output_tokens);
    }

    #[test]
    fn separate_runs_add_their_windows() {
        // Each run: arrivals at 0, 100, 200 ms, the last ending at 300 ms:
        // offered 2 gaps / 200 ms = 10 req/s, 3 completed over 300 ms.
        let run = || {
            let mut c = Collector::new(Slo::default(), 0);
            c.push(&ok(0, 0, 0, 50, 1, 1, 10));
            c.push(&ok(1, 100, 0, 50, 1, 1, 10));
            c.push(&ok(2, 200, 0, 80, 1, 1, 20)); // ends 300
            c
        };
        let one = run().summary(&[50.0]);
        let mut both = run();
        both.append(&run());
        let s = both.summary(&[50.0]);
        assert_eq!((s.requests, s.completed, s.arrivals), (6, 6, 6));
        assert!(close(s.duration_s, 0.6));
        assert!(close(s.offered_rate.unwrap(), one.offered_rate.unwrap()));
        assert!(close(s.offered_rate.unwrap(), 10.0));
        assert!(close(s.achieved_rate, one.achieved_rate));
        assert!(close(s.achieved_rate, 10.0));
        // Shards of one run instead overlap: 6 arrivals in the same 200 ms.
        let mut shards = run();
        shards.merge(&run());
        let m = shards.summary(&[50.0]);
        assert!(close(m.duration_s, 0.3));
        assert!(close(m.offered_rate.unwrap(), 25.0));
        // A run appended after a sharded one keeps both kinds of window.
        shards.append(&run());
        let t = shards.summary(&[50.0]);
        assert!(close(t.duration_s, 0.6));
        assert!(close(t.offered_rate.unwrap(), 7.0 / 0.4));
    }

    /// A conversation's later turns are requests, not arrivals: they count in the
    /// totals and per turn, but not in the offered rate; a warmup conversation's later
    /// turns are warmup too.
    #[test]
    fn later_turns_are_requests_not_arrivals() {
        let turn = |id: u64, turn: u32, sched_ms: u64, cached: Option<u32>| {
            let sched = Duration::from_millis(sched_ms);
            let mut r = RequestRecord::new(id, sched, sched);
            r.turn = Some(turn);
            r.t_end = Some(sched + Duration::from_millis(10));
            r.push_chunk(sched + Duration::from_millis(5), 4, Some(1));
            r.usage_prompt_tokens = Some(100 * turn);
            r.usage_cached_tokens = cached;
            r.resolve_tokens(Some(TokenSource::ContinuousUsage));
            r.outcome = Outcome::Ok;
            r
        };
        let mut c = Collector::new(Slo::default(), 1);
        // Sent 3 ms after its due time.
        let mut late = turn(1, 2, 1_500, Some(96));
        late.t_send += Duration::from_millis(3);
        // Conversation 0 is warmup; 1 and 2 arrive 1 s apart.
        for r in [
            turn(0, 1, 0, Some(0)),
            turn(0, 2, 5_000, Some(64)),
            turn(1, 1, 1_000, Some(0)),
            late,
            turn(2, 1, 2_000, None),
            turn(2, 2, 2_500, Some(160)),
        ] {
            c.push(&r);
        }
        let s = c.summary(&[50.0]);
        assert_eq!((s.requests, s.warmup_excluded, s.arrivals), (4, 2, 2));
        // Two arrivals 1 s apart after the warmup origin at 0: 2 gaps over 2 s.
        assert_eq!(s.offered_rate, Some(1.0));
        // Cached share over the reporting requests: (0 + 96 + 160) / (100 + 200 + 200).
        assert_eq!(s.cache.share(), Some(256.0 / 500.0));
        let t = s.turns.unwrap();
        assert_eq!(t.by_turn.len(), 2);
        assert_eq!((t.by_turn[0].requests, t.later.requests), (2, 2));
        assert_eq!(t.by_turn[0].prompt_tokens_mean, Some(100.0));
        assert_eq!(t.later.prompt_tokens_mean, Some(200.0));
        assert_eq!(t.later.cache.share(), Some(256.0 / 400.0));
        assert_eq!(t.by_turn[0].ttft.percentile(50.0), Some(0.005));
        // Each turn's own dispatch lag.
        assert_eq!(t.by_turn[0].dispatch_lag.max, Some(0.0));
        assert_eq!(t.later.dispatch_lag.max, Some(0.003));
        assert_eq!(t.later.dispatch_lag.count, 2);
    }

    #[test]
    fn golden_verdicts_are_counted_on_answers_only() {
        let judged = |id, correct| {
            let mut r = ok(id, id * 10, 0, 5, 1, 1, 1);
            r.golden = Some(crate::record::GoldenVerdict {
                line: 1,
                correct,
                reason: None,
            });
            r
        };
        // Request 0 is warmup; request 3 failed: a failure, not an answer, even with a
        // verdict on it.
        let mut c = Collector::new(Slo::default(), 1);
        for r in [judged(0, false), judged(1, true), judged(2, false)] {
            c.push(&r);
        }
        let mut timed_out = failed(3, 30, Outcome::Timeout, 40);
        timed_out.golden = Some(crate::record::GoldenVerdict {
            line: 1,
            correct: false,
            reason: None,
        });
        c.push(&timed_out);
        let s = c.summary(&[]);
        assert_eq!((s.golden_judged, s.golden_correct), (2, 1));
        assert_eq!((s.completed, s.failed), (2, 1));
        let mut other = Collector::new(Slo::default(), 0);
        other.push(&judged(4, true));
        c.append(&other);
        let s = c.summary(&[]);
        assert_eq!((s.golden_judged, s.golden_correct), (3, 2));
        assert_eq!(hand_run().summary(&[]).golden_judged, 0);
    }
}
