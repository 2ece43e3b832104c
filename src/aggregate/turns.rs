//! Per-turn figures of multi-turn runs, and the cache-hit share of any run. Turn 1 of
//! a conversation meets a cold prefix cache; later turns resend the conversation so
//! far and should hit it, so their TTFT is shown apart: per turn, and turns ≥ 2
//! together. Only successful requests count, as for every latency.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Samples, Stats};
use crate::record::RequestRecord;

/// Cached prompt tokens over the successful requests whose server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheShare {
    /// Requests whose usage reported cached tokens.
    pub reported: u64,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Of those, the tokens the server read from its prefix cache.
    pub cached_tokens: u64,
}

impl CacheShare {
    pub fn push(&mut self, r: &RequestRecord) {
        if let Some(cached) = r.usage_cached_tokens {
            self.reported += 1;
            self.prompt_tokens += u64::from(r.prompt_tokens());
            self.cached_tokens += u64::from(cached);
        }
    }

    pub fn add(&mut self, o: &CacheShare) {
        self.reported += o.reported;
        self.prompt_tokens += o.prompt_tokens;
        self.cached_tokens += o.cached_tokens;
    }

    /// Cached / prompt tokens; `None` when no server reported it.
    pub fn share(&self) -> Option<f64> {
        (self.reported > 0 && self.prompt_tokens > 0)
            .then(|| self.cached_tokens as f64 / self.prompt_tokens as f64)
    }
}

/// The figures of one turn (or of turns ≥ 2 together).
#[derive(Debug, Clone, Default)]
struct TurnAcc {
    requests: u64,
    completed: u64,
    ttft: Samples,
    /// Of every request sent at this turn, failed ones too (as the run's own).
    dispatch_lag: Samples,
    prompt_tokens: u64,
    cache: CacheShare,
}

impl TurnAcc {
    fn push(&mut self, r: &RequestRecord) {
        self.requests += 1;
        self.dispatch_lag.push(r.dispatch_lag().as_secs_f64());
        if !r.is_success() {
            return;
        }
        self.completed += 1;
        if let Some(t) = r.ttft() {
            self.ttft.push(t.as_secs_f64());
        }
        self.prompt_tokens += u64::from(r.prompt_tokens());
        self.cache.push(r);
    }

    fn merge(&mut self, o: &TurnAcc) {
        self.requests += o.requests;
        self.completed += o.completed;
        self.ttft.merge(&o.ttft);
        self.dispatch_lag.merge(&o.dispatch_lag);
        self.prompt_tokens += o.prompt_tokens;
        self.cache.add(&o.cache);
    }

    fn summary(&self, turn: Option<u32>, percentiles: &[f64]) -> TurnSummary {
        TurnSummary {
            turn,
            requests: self.requests,
            completed: self.completed,
            ttft: self.ttft.stats(percentiles),
            dispatch_lag: self.dispatch_lag.stats(percentiles),
            prompt_tokens_mean: (self.completed > 0)
                .then(|| self.prompt_tokens as f64 / self.completed as f64),
            cache: self.cache,
        }
    }
}

/// One turn's figures. Latencies in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnSummary {
    /// The turn (1-based); `None` for turns ≥ 2 together.
    pub turn: Option<u32>,
    /// Requests sent at this turn (counted ones, after warmup).
    pub requests: u64,
    pub completed: u64,
    /// TTFT of the successful ones.
    pub ttft: Stats,
    /// Dispatch lag of every one sent: turn 1 from the arrival's scheduled time, a later
    /// turn from its own due time (previous answer + think time). Absent in older
    /// serializations.
    #[serde(default)]
    pub dispatch_lag: Stats,
    /// Mean prompt tokens of the successful ones (server usage when sent).
    pub prompt_tokens_mean: Option<f64>,
    pub cache: CacheShare,
}

/// The per-turn figures of a multi-turn run's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnsSummary {
    /// Turn 1, 2, … in order.
    pub by_turn: Vec<TurnSummary>,
    /// Turns ≥ 2 together (the warm-cache path).
    pub later: TurnSummary,
}

/// Accumulates the records that carry a turn.
#[derive(Debug, Clone, Default)]
pub struct TurnCollector {
    by_turn: BTreeMap<u32, TurnAcc>,
    later: TurnAcc,
}

impl TurnCollector {
    pub fn push(&mut self, r: &RequestRecord) {
        let Some(turn) = r.turn else { return };
        self.by_turn.entry(turn).or_default().push(r);
        if turn > 1 {
            self.later.push(r);
        }
    }

    pub fn merge(&mut self, o: &TurnCollector) {
        for (turn, acc) in &o.by_turn {
            self.by_turn.entry(*turn).or_default().merge(acc);
        }
        self.later.merge(&o.later);
    }

    /// The per-turn figures; `None` when no record carried a turn.
    pub fn summary(&self, percentiles: &[f64]) -> Option<TurnsSummary> {
        if self.by_turn.is_empty() {
            return None;
        }
        Some(TurnsSummary {
            by_turn: self
                .by_turn
                .iter()
                .map(|(t, acc)| acc.summary(Some(*t), percentiles))
                .collect(),
            later: self.later.summary(None, percentiles),
        })
    }
}
