//! The status page's memory of the last hour, per target × scenario, in fixed-size
//! ring buffers: 60 one-minute slots (probe and good counts, TTFT and TPOT in small
//! log-bucket histograms) and the last [`RECENT`] probes. Nothing grows with time or
//! probe rate: about 30 KiB per target × scenario (see [`History::BYTES`]). A window's
//! rates divide by the time it covers: a scenario that started four minutes ago has
//! four minutes of data in its last hour, not sixty.

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
    /// Its page (`/probe/ID`), while kept.
    pub page: Option<u64>,
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
    /// Seconds the window covers: its length, or less while the scenario has run for
    /// less (`min(window, now - start)`); rates divide by this.
    pub covered_seconds: f64,
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

    /// Good probes per minute over the time the window covers (one second at least, so
    /// a probe at the very start is not a division by zero).
    pub fn goodput_per_min(&self) -> f64 {
        self.good as f64 * 60.0 / self.covered_seconds.max(1.0)
    }

    /// The window's length in seconds.
    pub fn window_seconds(&self) -> f64 {
        f64::from(self.minutes) * 60.0
    }

    /// The seconds covered when that is less than the window (by more than a second):
    /// what a label must say ("over 4m").
    pub fn short_by_start(&self) -> Option<f64> {
        (self.covered_seconds < self.window_seconds() - 1.0).then_some(self.covered_seconds)
    }
}

/// Seconds of a `window` ending at `now` that lie after `start` (unknown start: the whole
/// window), within `0..=window`.
pub fn covered(window: f64, now: f64, start: Option<f64>) -> f64 {
    start.map_or(window, |s| (now - s).clamp(0.0, window))
}

/// A span of time as a label says it: `45s`, `4m 30s` under ten minutes, else `12m`.
pub fn span(seconds: f64) -> String {
    let s = if seconds.is_finite() {
        seconds.max(0.0).floor() as u64
    } else {
        0
    };
    match (s / 60, s % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) if m < 10 => format!("{m}m {s}s"),
        (m, _) => format!("{m}m"),
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
    /// Unix time of the first probe.
    first_at: Option<f64>,
    /// Unix time the scenario started, when known.
    started: Option<f64>,
}

impl Default for History {
    fn default() -> Self {
        History {
            slots: vec![Slot::default(); SLOTS],
            recent: VecDeque::with_capacity(RECENT),
            first_minute: None,
            first_at: None,
            started: None,
        }
    }
}

impl History {
    /// Upper bound of the memory one history holds (slots and rows at capacity).
    pub const BYTES: usize = SLOTS * std::mem::size_of::<Slot>()
        + RECENT * std::mem::size_of::<ProbeRow>()
        + std::mem::size_of::<History>();

    /// A history of a scenario that started at `at` (Unix seconds): its windows cover
    /// no time before.
    pub fn started_at(at: f64) -> Self {
        History {
            started: Some(at),
            ..History::default()
        }
    }

    /// Where the data begins: the start, or the first probe when that is earlier (a
    /// start read from another clock) or the start is unknown.
    pub fn start(&self) -> Option<f64> {
        match (self.started, self.first_at) {
            (Some(s), Some(f)) => Some(s.min(f)),
            (s, f) => s.or(f),
        }
    }

    /// Records one finished probe.
    pub fn add(&mut self, row: ProbeRow) {
        let minute = (row.at / 60.0).floor() as i64;
        self.first_minute = Some(self.first_minute.map_or(minute, |m| m.min(minute)));
        self.first_at = Some(self.first_at.map_or(row.at, |f| f.min(row.at)));
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
    /// current minute included, covering no time before the start.
    pub fn window(&self, now: f64, minutes: u32) -> WindowStats {
        let current = (now / 60.0).floor() as i64;
        let minutes = minutes.clamp(1, SLOTS as u32);
        let mut ttft = LogHist::default();
        let mut tpot = LogHist::default();
        let mut w = WindowStats {
            minutes,
            covered_seconds: covered(f64::from(minutes) * 60.0, now, self.start()),
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
            page: None,
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
        // No start given: the data begins at the first probe, 40 minutes before.
        assert_eq!(hour.covered_seconds, 40.0 * 60.0);
        assert!((hour.goodput_per_min() - 75.0 / 40.0).abs() < 1e-9);
        let later = h.window(t0 + 70.0 * 60.0, 60);
        assert_eq!(
            (later.covered_seconds, later.short_by_start()),
            (3600.0, None)
        );
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

    #[test]
    fn four_minutes_of_data_are_a_rate_over_four_minutes() {
        // Started at minute 100; 63 good probes over the next four minutes (15.75/min).
        let t0 = 6_000.0;
        let mut h = History::started_at(t0);
        for i in 0..63 {
            h.add(row(t0 + 1.0 + f64::from(i) * 3.8, true, 0.05));
        }
        let now = t0 + 240.0;
        let (five, hour) = (h.window(now, 5), h.window(now, 60));
        assert_eq!((five.good, hour.good), (63, 63));
        assert_eq!((five.covered_seconds, hour.covered_seconds), (240.0, 240.0));
        assert_eq!(five.goodput_per_min(), 15.75);
        assert_eq!(hour.goodput_per_min(), five.goodput_per_min());
        assert_eq!(hour.short_by_start(), Some(240.0));
        assert_eq!(span(hour.short_by_start().unwrap()), "4m");
        // Past five minutes only the hour is short; past the hour nothing is.
        let now = t0 + 330.0;
        assert_eq!(h.window(now, 5).short_by_start(), None);
        assert_eq!(h.window(now, 60).short_by_start(), Some(330.0));
        assert_eq!(h.window(t0 + 3600.0, 60).short_by_start(), None);
    }

    #[test]
    fn the_start_is_the_earlier_of_start_and_first_probe() {
        assert_eq!(History::default().start(), None);
        let mut h = History::started_at(100.0);
        assert_eq!(h.start(), Some(100.0));
        h.add(row(40.0, true, 0.1));
        assert_eq!(h.start(), Some(40.0));
        let mut h = History::default();
        h.add(row(70.0, true, 0.1));
        assert_eq!(h.start(), Some(70.0));
        // A start after `now` (another clock) covers nothing, and divides by a second.
        assert_eq!(covered(300.0, 50.0, Some(100.0)), 0.0);
        assert_eq!(covered(300.0, 50.0, None), 300.0);
    }

    #[test]
    fn spans_read_as_labels() {
        let cases = [
            (0.0, "0s"),
            (45.9, "45s"),
            (60.0, "1m"),
            (270.0, "4m 30s"),
            (599.0, "9m 59s"),
            (750.0, "12m"),
            (-3.0, "0s"),
            (f64::NAN, "0s"),
        ];
        for (secs, want) in cases {
            assert_eq!(span(secs), want, "{secs}");
        }
    }
}
