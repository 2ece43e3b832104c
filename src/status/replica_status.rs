//! One replica behind a target's front door as the status page shows it: its last probe,
//! its recent TTFTs in a bounded window, its counts and its engine's last scrape; and the
//! worst-first order of a target's replicas. Memory per replica is bounded
//! ([`ReplicaStatus::BYTES`] plus its names and one short error text).

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::history::covered;
use crate::record::RequestRecord;

/// How far back the TTFT percentiles of a replica look.
pub const TTFT_WINDOW_SECONDS: f64 = 15.0 * 60.0;
/// At most this many TTFT samples are kept; at a high replica rate the window then
/// covers less than [`TTFT_WINDOW_SECONDS`], and the page says over how long.
pub const TTFT_SAMPLES: usize = 256;
/// Characters of the last error kept.
pub const ERROR_CHARS: usize = 160;

/// What the last scrape of a replica's engine `/metrics` found.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplicaEngine {
    pub scrape_ok: bool,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_cache_usage_ratio: Option<f64>,
    /// 0..1: the share of the engine's concurrent sequences still free.
    pub headroom: Option<f64>,
}

/// A replica's last finished probe.
#[derive(Debug, Clone, PartialEq)]
pub struct LastProbe {
    /// Unix time of completion.
    pub at: f64,
    /// `ok`, or the failure reason.
    pub outcome: &'static str,
    /// Met every SLO.
    pub good: bool,
    /// The error text, shortened to [`ERROR_CHARS`] (the caller scrubbed it).
    pub error: Option<String>,
}

impl LastProbe {
    pub fn failed(&self) -> bool {
        self.outcome != "ok"
    }
}

/// The TTFT percentiles of a replica's window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TtftStats {
    /// Samples in the window.
    pub samples: usize,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    /// Seconds the samples stand for: the window, or less while the replica is newer
    /// or the sample bound dropped younger samples.
    pub covered_seconds: f64,
}

/// Live state of one replica of a target.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaStatus {
    pub target: String,
    pub model: String,
    /// `host:port`, as discovery names it (remote text: escape before showing).
    pub replica: String,
    /// Probes completed, any outcome.
    pub probes: u64,
    /// Probes that succeeded and met every SLO.
    pub good: u64,
    pub failures: u64,
    pub last: Option<LastProbe>,
    /// The last engine scrape; `None` before the first.
    pub engine: Option<ReplicaEngine>,
    /// Unix time the board first saw this replica, when known.
    pub since: Option<f64>,
    /// (completion time, TTFT seconds), oldest first, within the window and the bound.
    ttft: VecDeque<(f64, f64)>,
    /// Completion time of the youngest sample the count bound dropped.
    dropped_at: Option<f64>,
    /// Unix time of the first probe.
    first_at: Option<f64>,
}

/// A handle to one replica's entry; the daemon's replica prober holds it.
pub type ReplicaHandle = Arc<Mutex<ReplicaStatus>>;

impl ReplicaStatus {
    /// Upper bound of the memory one entry holds besides its names and error text.
    pub const BYTES: usize =
        std::mem::size_of::<ReplicaStatus>() + TTFT_SAMPLES * std::mem::size_of::<(f64, f64)>();

    /// An entry without probes, first seen at `since` (Unix seconds) when known.
    pub fn new(target: &str, model: &str, replica: &str, since: Option<f64>) -> Self {
        ReplicaStatus {
            target: target.to_string(),
            model: model.to_string(),
            replica: replica.to_string(),
            since,
            ..ReplicaStatus::default()
        }
    }

    /// Records one finished probe of this replica. `error` is the probe's error text,
    /// already scrubbed of secrets; it is shortened here.
    pub fn record_probe(&mut self, r: &RequestRecord, good: bool, error: Option<String>, at: f64) {
        self.probes += 1;
        if good {
            self.good += 1;
        }
        if !r.outcome.is_ok() {
            self.failures += 1;
        }
        self.last = Some(LastProbe {
            at,
            outcome: r.outcome.as_str(),
            good,
            error: error.map(|e| e.chars().take(ERROR_CHARS).collect()),
        });
        self.first_at = Some(self.first_at.map_or(at, |f| f.min(at)));
        if let Some(t) = r.ttft() {
            self.add_ttft(at, t.as_secs_f64());
        }
    }

    /// Keeps the engine's last scrape.
    pub fn set_engine(&mut self, e: ReplicaEngine) {
        self.engine = Some(e);
    }

    fn add_ttft(&mut self, at: f64, seconds: f64) {
        while self
            .ttft
            .front()
            .is_some_and(|&(t, _)| t <= at - TTFT_WINDOW_SECONDS)
        {
            self.ttft.pop_front();
        }
        if self.ttft.len() == TTFT_SAMPLES {
            self.dropped_at = self.ttft.pop_front().map(|(t, _)| t);
        }
        self.ttft.push_back((at, seconds));
    }

    /// TTFT samples held (bounded by [`TTFT_SAMPLES`]).
    pub fn ttft_len(&self) -> usize {
        self.ttft.len()
    }

    /// Exact nearest-rank TTFT p50 and p99 over the samples of the window ending at
    /// `now`.
    pub fn ttft_stats(&self, now: f64) -> TtftStats {
        let from = now - TTFT_WINDOW_SECONDS;
        let mut v: Vec<f64> = self
            .ttft
            .iter()
            .filter(|&&(t, _)| t > from && t <= now)
            .map(|&(_, s)| s)
            .collect();
        v.sort_by(f64::total_cmp);
        let start = match (self.since, self.first_at) {
            (Some(s), Some(f)) => Some(s.min(f)),
            (s, f) => s.or(f),
        };
        let start = match (start, self.dropped_at.filter(|&d| d > from)) {
            (Some(s), Some(d)) => Some(s.max(d)),
            (s, d) => s.or(d),
        };
        TtftStats {
            samples: v.len(),
            p50: nearest_rank(&v, 0.5),
            p99: nearest_rank(&v, 0.99),
            covered_seconds: covered(TTFT_WINDOW_SECONDS, now, start),
        }
    }

    /// The replica's state as the page shows it at `now`.
    pub fn view(self, now: f64) -> ReplicaView {
        let ttft = self.ttft_stats(now);
        let state = if self.last.as_ref().is_some_and(LastProbe::failed) {
            ReplicaState::Failing
        } else if self.engine.is_some_and(|e| !e.scrape_ok) {
            ReplicaState::EngineDown
        } else if self.last.is_none() {
            ReplicaState::NoProbeYet
        } else {
            ReplicaState::Ok
        };
        ReplicaView {
            status: self,
            ttft,
            state,
            now,
        }
    }

    /// Requests waiting in the engine's queue at the last scrape.
    pub fn queueing(&self) -> bool {
        self.engine.and_then(|e| e.waiting).is_some_and(|w| w > 0.0)
    }
}

/// The `q` quantile of sorted values: the value at rank ⌈q·n⌉.
fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[rank - 1])
}

/// A replica's state, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReplicaState {
    /// Its last probe failed.
    Failing,
    /// Its engine's last scrape failed.
    EngineDown,
    NoProbeYet,
    Ok,
}

impl ReplicaState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaState::Failing => "failing",
            ReplicaState::EngineDown => "engine down",
            ReplicaState::NoProbeYet => "no probe yet",
            ReplicaState::Ok => "ok",
        }
    }
}

/// One replica as the page shows it at `now`: its status with its figures computed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaView {
    pub status: ReplicaStatus,
    pub ttft: TtftStats,
    pub state: ReplicaState,
    pub now: f64,
}

/// Worst first: a failing last probe, then a failing engine scrape, then a queue at the
/// engine, then the highest TTFT p99 (none last), then the name.
pub fn worst_first(a: &ReplicaView, b: &ReplicaView) -> Ordering {
    // Each test true sorts first, hence b against a.
    let failing = |v: &ReplicaView| v.status.last.as_ref().is_some_and(LastProbe::failed);
    let down = |v: &ReplicaView| v.status.engine.is_some_and(|e| !e.scrape_ok);
    let queueing = |v: &ReplicaView| v.status.queueing();
    failing(b)
        .cmp(&failing(a))
        .then_with(|| down(b).cmp(&down(a)))
        .then_with(|| queueing(b).cmp(&queueing(a)))
        .then_with(|| match (a.ttft.p99, b.ttft.p99) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        })
        .then_with(|| a.status.replica.cmp(&b.status.replica))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use std::time::Duration;

    fn probe(outcome: Outcome, ttft_ms: Option<u64>) -> RequestRecord {
        let mut r = RequestRecord::new(1, Duration::ZERO, Duration::from_secs(1));
        r.outcome = outcome;
        r.t_first = ttft_ms.map(|ms| Duration::from_secs(1) + Duration::from_millis(ms));
        r
    }

    fn replica(name: &str) -> ReplicaStatus {
        ReplicaStatus::new("t", "m", name, Some(0.0))
    }

    #[test]
    fn percentiles_are_exact_nearest_ranks() {
        let mut s = replica("a:1");
        // 1..=100 ms, recorded in a shuffled order.
        for i in 0..100u64 {
            let ms = (i * 37) % 100 + 1;
            s.record_probe(&probe(Outcome::Ok, Some(ms)), true, None, 1000.0 + i as f64);
        }
        let t = s.ttft_stats(1100.0);
        assert_eq!(t.samples, 100);
        assert_eq!(t.p50, Some(0.050));
        assert_eq!(t.p99, Some(0.099));
        assert_eq!(t.covered_seconds, TTFT_WINDOW_SECONDS);
        assert_eq!((s.probes, s.good, s.failures), (100, 100, 0));
        assert_eq!(nearest_rank(&[], 0.5), None);
        assert_eq!(nearest_rank(&[7.0], 0.99), Some(7.0));
    }

    #[test]
    fn the_window_is_bounded_by_age_and_count() {
        let mut s = replica("a:1");
        // Two hours at 10 probes a second: the memory stays at the bound.
        for i in 0..72_000u32 {
            let at = 10_000.0 + f64::from(i) / 10.0;
            s.record_probe(&probe(Outcome::Ok, Some(20)), true, None, at);
            assert!(s.ttft_len() <= TTFT_SAMPLES);
        }
        assert_eq!(s.ttft_len(), TTFT_SAMPLES);
        let now = 10_000.0 + 7199.9;
        let t = s.ttft_stats(now);
        // 256 samples at 10/s stand for 25.6 s, not 15 minutes.
        assert_eq!(t.samples, TTFT_SAMPLES);
        assert!(
            (t.covered_seconds - 25.6).abs() < 1e-6,
            "{}",
            t.covered_seconds
        );
        const { assert!(ReplicaStatus::BYTES < 8 * 1024) };
        eprintln!("ReplicaStatus::BYTES = {}", ReplicaStatus::BYTES);
        // Slow probes: only the last 15 minutes count.
        let mut slow = replica("b:1");
        for i in 0..60u32 {
            let at = f64::from(i) * 60.0;
            slow.record_probe(&probe(Outcome::Ok, Some(u64::from(i))), true, None, at);
        }
        let t = slow.ttft_stats(59.0 * 60.0);
        assert_eq!(t.samples, 15);
        assert_eq!(t.p50, Some(0.052), "the 8th of 45..=59 ms");
        assert!(slow.ttft_len() <= 16);
        // A replica seen four minutes ago covers four minutes.
        let mut new = replica("c:1");
        new.since = Some(1000.0);
        new.record_probe(&probe(Outcome::Ok, Some(5)), true, None, 1200.0);
        assert_eq!(new.ttft_stats(1240.0).covered_seconds, 240.0);
    }

    #[test]
    fn the_last_probe_keeps_a_short_error_and_counts_failures() {
        let mut s = replica("a:1");
        let long = "x".repeat(1000);
        s.record_probe(&probe(Outcome::Http5xx, None), false, Some(long), 5.0);
        let last = s.last.clone().unwrap();
        assert_eq!((last.outcome, last.at), ("http_5xx", 5.0));
        assert_eq!(last.error.unwrap().chars().count(), ERROR_CHARS);
        assert_eq!((s.probes, s.failures, s.ttft_len()), (1, 1, 0));
        assert_eq!(s.clone().view(6.0).state, ReplicaState::Failing);
        s.record_probe(&probe(Outcome::Ok, Some(10)), true, None, 7.0);
        assert_eq!(s.clone().view(8.0).state, ReplicaState::Ok);
        s.set_engine(ReplicaEngine::default());
        assert_eq!(s.clone().view(8.0).state, ReplicaState::EngineDown);
        assert_eq!(replica("n:1").view(8.0).state, ReplicaState::NoProbeYet);
    }

    #[test]
    fn replicas_sort_worst_first() {
        let now = 1000.0;
        let engine = |ok: bool, waiting: f64| ReplicaEngine {
            scrape_ok: ok,
            waiting: Some(waiting),
            ..ReplicaEngine::default()
        };
        let with = |name: &str, outcome: Outcome, ttft: u64, e: Option<ReplicaEngine>| {
            let mut s = replica(name);
            s.record_probe(&probe(outcome, Some(ttft)), outcome.is_ok(), None, 990.0);
            s.engine = e;
            s.view(now)
        };
        let mut views = [
            with("ok-fast:1", Outcome::Ok, 10, Some(engine(true, 0.0))),
            replica("fresh:1").view(now),
            with("ok-slow:1", Outcome::Ok, 900, Some(engine(true, 0.0))),
            with("queue:1", Outcome::Ok, 5, Some(engine(true, 3.0))),
            with("down:1", Outcome::Ok, 5, Some(engine(false, 0.0))),
            with("fail-b:1", Outcome::Timeout, 1, None),
            with("fail-a:1", Outcome::Http5xx, 1, Some(engine(true, 0.0))),
            with("ok-mid:1", Outcome::Ok, 100, None),
        ];
        views.sort_by(worst_first);
        let names: Vec<&str> = views.iter().map(|v| v.status.replica.as_str()).collect();
        assert_eq!(
            names,
            [
                "fail-a:1",
                "fail-b:1",
                "down:1",
                "queue:1",
                "ok-slow:1",
                "ok-mid:1",
                "ok-fast:1",
                "fresh:1"
            ]
        );
    }
}
