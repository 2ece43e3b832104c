//! The status page's memory of the last hour, per target × scenario, in fixed-size
//! ring buffers: 60 one-minute slots (probe and good counts, TTFT and TPOT in small
//! log-bucket histograms) and the last [`RECENT`] probes. Nothing grows with time or
//! probe rate: about 30 KiB per target × scenario (see [`History::BYTES`]).

use std::collections::VecDeque;

/// One-minute slots kept: the last hour.
pub const SLOTS: usize = 60;
/// Probes kept for the per-target page.
pub const RECENT: usize = 50;

/// Buckets per octave (2^(1/4) wide: a quantile is off by at most 9 %).
const PER_OCTAVE: f64 = 4.0;
/// The histogram covers 2^-13 s (122 µs) to 2^13 s (2.3 h); values outside are clamped.
const MIN_EXP: f64 = -13.0;
const BUCKETS: usize = 104;

/// Latencies of one minute, by log bucket (saturating counts).
#[derive(Debug, Clone, PartialEq)]
struct LogHist([u16; BUCKETS]);

impl Default for LogHist {
    fn default() -> Self {
        LogHist([0; BUCKETS])
    }
}

impl LogHist {
    fn add(&mut self, seconds: f64) {
        if !seconds.is_finite() || seconds < 0.0 {
            return;
        }
        let i = ((seconds.max(1e-9).log2() - MIN_EXP) * PER_OCTAVE).floor();
        let i = i.clamp(0.0, (BUCKETS - 1) as f64) as usize;
        self.0[i] = self.0[i].saturating_add(1);
    }

    fn merge(&mut self, other: &LogHist) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = a.saturating_add(*b);
        }
    }

    /// The `q` quantile (0..=1) as the geometric middle of its bucket.
    fn quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.0.iter().map(|&c| u64::from(c)).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, &c) in self.0.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return Some(2f64.powf((i as f64 + 0.5) / PER_OCTAVE + MIN_EXP));
            }
        }
        None
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Slot {
    /// Unix minute this slot holds; a slot of an older minute is stale.
    minute: i64,
    probes: u32,
    good: u32,
    ttft: LogHist,
    tpot: LogHist,
}

/// One finished probe as the per-target page lists it. Columns that records gain later
/// (time to first answer token, answer checks) belong here.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeRow {
    /// Unix time of completion.
    pub at: f64,
    pub outcome: &'static str,
    /// Met every SLO.
    pub good: bool,
    pub ttft: Option<f64>,
    /// Time to first answer token, when the probe reasoned first.
    pub ttfa: Option<f64>,
    pub tpot: Option<f64>,
    pub e2e: Option<f64>,
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// Statistics over a window of minutes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowStats {
    pub probes: u64,
    pub good: u64,
    pub minutes: u32,
    pub ttft_p50: Option<f64>,
    pub ttft_p99: Option<f64>,
    pub tpot_p50: Option<f64>,
    pub tpot_p99: Option<f64>,
}

impl WindowStats {
    /// Good probes / all probes.
    pub fn attainment(&self) -> Option<f64> {
        (self.probes > 0).then(|| self.good as f64 / self.probes as f64)
    }

    /// Good probes per minute over the window.
    pub fn goodput_per_min(&self) -> f64 {
        self.good as f64 / f64::from(self.minutes.max(1))
    }
}

/// One minute of the sparklines.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MinutePoint {
    pub probes: u32,
    pub good: u32,
    pub ttft_p99: Option<f64>,
}

/// The ring buffers of one target × scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    slots: Vec<Slot>,
    recent: VecDeque<ProbeRow>,
    /// The minute of the first probe: earlier minutes are unknown, not zero.
    first_minute: Option<i64>,
}

impl Default for History {
    fn default() -> Self {
        History {
            slots: vec![Slot::default(); SLOTS],
            recent: VecDeque::with_capacity(RECENT),
            first_minute: None,
        }
    }
}

impl History {
    /// Upper bound of the memory one history holds (slots and rows at capacity).
    pub const BYTES: usize = SLOTS * std::mem::size_of::<Slot>()
        + RECENT * std::mem::size_of::<ProbeRow>()
        + std::mem::size_of::<History>();

    /// Records one finished probe.
    pub fn add(&mut self, row: ProbeRow) {
        let minute = (row.at / 60.0).floor() as i64;
        self.first_minute = Some(self.first_minute.map_or(minute, |m| m.min(minute)));
        let slot = &mut self.slots[minute.rem_euclid(SLOTS as i64) as usize];
        if slot.minute != minute {
            *slot = Slot {
                minute,
                ..Slot::default()
            };
        }
        slot.probes = slot.probes.saturating_add(1);
        if row.good {
            slot.good = slot.good.saturating_add(1);
        }
        if let Some(t) = row.ttft {
            slot.ttft.add(t);
        }
        if let Some(t) = row.tpot {
            slot.tpot.add(t);
        }
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(row);
    }

    /// The slot of `minute` when it still holds that minute.
    fn slot(&self, minute: i64) -> Option<&Slot> {
        let s = &self.slots[minute.rem_euclid(SLOTS as i64) as usize];
        (s.minute == minute).then_some(s)
    }

    /// Statistics over the last `minutes` minutes up to `now` (Unix seconds), the
    /// current minute included.
    pub fn window(&self, now: f64, minutes: u32) -> WindowStats {
        let current = (now / 60.0).floor() as i64;
        let minutes = minutes.clamp(1, SLOTS as u32);
        let mut ttft = LogHist::default();
        let mut tpot = LogHist::default();
        let mut w = WindowStats {
            minutes,
            ..WindowStats::default()
        };
        for m in (current - i64::from(minutes) + 1)..=current {
            if let Some(s) = self.slot(m) {
                w.probes += u64::from(s.probes);
                w.good += u64::from(s.good);
                ttft.merge(&s.ttft);
                tpot.merge(&s.tpot);
            }
        }
        w.ttft_p50 = ttft.quantile(0.5);
        w.ttft_p99 = ttft.quantile(0.99);
        w.tpot_p50 = tpot.quantile(0.5);
        w.tpot_p99 = tpot.quantile(0.99);
        w
    }

    /// The last hour minute by minute, oldest first: `None` before the first probe,
    /// zero for a minute without probes since.
    pub fn minutes(&self, now: f64) -> Vec<Option<MinutePoint>> {
        let current = (now / 60.0).floor() as i64;
        ((current - SLOTS as i64 + 1)..=current)
            .map(|m| {
                if self.first_minute.is_none_or(|first| m < first) {
                    return None;
                }
                Some(
                    self.slot(m)
                        .map_or_else(MinutePoint::default, |s| MinutePoint {
                            probes: s.probes,
                            good: s.good,
                            ttft_p99: s.ttft.quantile(0.99),
                        }),
                )
            })
            .collect()
    }

    /// The last probes, newest first.
    pub fn recent(&self) -> impl Iterator<Item = &ProbeRow> {
        self.recent.iter().rev()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(at: f64, good: bool, ttft: f64) -> ProbeRow {
        ProbeRow {
            at,
            outcome: if good { "ok" } else { "timeout" },
            good,
            ttft: Some(ttft),
            ttfa: None,
            tpot: Some(0.01),
            e2e: Some(ttft + 0.1),
            input_tokens: 10,
            output_tokens: 5,
        }
    }

    #[test]
    fn windows_count_only_their_minutes() {
        let mut h = History::default();
        let t0 = 6_000_000.0;
        for i in 0..100 {
            h.add(row(t0 + f64::from(i), i % 4 != 0, 0.05));
        }
        // 70 minutes later the first minutes have left the hour.
        h.add(row(t0 + 70.0 * 60.0, true, 0.2));
        let five = h.window(t0 + 70.0 * 60.0, 5);
        assert_eq!((five.probes, five.good), (1, 1));
        let hour = h.window(t0 + 40.0 * 60.0, 60);
        assert_eq!((hour.probes, hour.good), (100, 75));
        assert_eq!(hour.attainment(), Some(0.75));
        assert!((hour.goodput_per_min() - 75.0 / 60.0).abs() < 1e-9);
        let minutes = h.minutes(t0 + 70.0 * 60.0);
        assert_eq!(minutes.len(), SLOTS);
        assert_eq!(minutes[SLOTS - 1].map(|m| m.good), Some(1));
        // Minutes 3..69 after the start had no probes: zero, not unknown.
        assert_eq!(minutes[0].map(|m| m.probes), Some(0));
        assert!(History::default().minutes(t0).iter().all(Option::is_none));
    }

    #[test]
    fn quantiles_are_within_a_bucket() {
        let mut h = History::default();
        for i in 1..=1000 {
            h.add(row(60.0, true, f64::from(i) / 1000.0));
        }
        let w = h.window(60.0, 1);
        let p50 = w.ttft_p50.unwrap();
        let p99 = w.ttft_p99.unwrap();
        assert!((p50 / 0.5 - 1.0).abs() < 0.1, "{p50}");
        assert!((p99 / 0.99 - 1.0).abs() < 0.1, "{p99}");
    }

    #[test]
    fn recent_is_bounded_and_newest_first() {
        let mut h = History::default();
        for i in 0..(RECENT + 10) {
            h.add(row(i as f64, true, 0.1));
        }
        let rows: Vec<_> = h.recent().collect();
        assert_eq!(rows.len(), RECENT);
        assert_eq!(rows[0].at, (RECENT + 9) as f64);
        const { assert!(History::BYTES < 32 * 1024) };
        eprintln!("History::BYTES = {}", History::BYTES);
    }
}
