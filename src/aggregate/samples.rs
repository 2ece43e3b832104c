//! Samples of one metric and their statistics: mean, standard deviation, min/max and
//! percentiles by numpy's default method, optionally with integer weights; exact up to
//! a bound on memory, then an HDR histogram.
//!
//! Percentile definition (numpy `percentile(..., method="linear")`, the default that
//! `vllm bench serve` uses): sort the N values, take the virtual index
//! h = (N − 1) · p / 100 and interpolate linearly between the values at ⌊h⌋ and ⌊h⌋ + 1.
//! p0 is the minimum, p100 the maximum, p50 the median. A weighted sample (value v with
//! weight w) gives exactly what numpy gives on the array with v repeated w times, found
//! by binary search over cumulative weights instead of materializing the copies.
//!
//! Memory: values are kept exactly, 8 bytes each (a parallel `u32` weight vector appears
//! only once a weight other than 1 is pushed), while a `Samples` holds at most
//! [`DEFAULT_EXACT_LIMIT`] entries. Past that (per-token ITL of a long run: an hour at
//! 1,000 req/s × 256 tokens is 0.9 G values) every value is folded into an
//! `hdrhistogram` of nanoseconds with 3 significant digits and recording continues
//! there, in constant memory (a few hundred KiB). Count, mean, min and max stay exact
//! (kept beside the histogram; the mean from a compensated sum), the standard deviation
//! comes from a streaming weighted Welford sum (West 1979, "Updating mean and variance
//! estimates"; Chan, Golub & LeVeque 1979 for combining), and percentiles from the
//! histogram with the same numpy definition over bucket midpoints: each order statistic
//! is off by at most half a bucket, ≤ 0.05 % relative (1 ns absolute below 2 µs), which
//! the interpolation keeps. [`Stats::exact`] says which way the figures were made. The
//! histogram mode assumes values in seconds ≥ 0 (latencies); negative values count as 0
//! in its percentiles (mean, min and max still see them).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Entries kept exactly before the histogram takes over: 4 M values = 32 MB unweighted,
/// 48 MB weighted, per `Samples`. A run's per-request figures (TTFT, E2E) stay exact up
/// to 4 M requests (over an hour at 1,000 req/s); per-token ITL and chunk gaps switch
/// after 4 M tokens.
pub const DEFAULT_EXACT_LIMIT: usize = 4_000_000;

/// Significant decimal digits of the histogram: buckets 1/1024 of their value wide.
const SIGFIG: u8 = 3;

/// Smallest capacity reserved once the first value arrives.
const MIN_RESERVE: usize = 64;

/// Values (seconds, or any unit for the exact mode), with integer weights.
#[derive(Debug, Clone)]
pub struct Samples {
    store: Store,
    /// Entries kept exactly before switching to the histogram.
    limit: usize,
    /// Number of values, counting weights.
    total_weight: u64,
    /// Moments of everything in the histogram (unused while exact).
    moments: Moments,
}

#[derive(Debug, Clone)]
enum Store {
    /// Every value; `weights` is `None` while every weight is 1, else parallel to
    /// `values`.
    Exact {
        values: Vec<f64>,
        weights: Option<Vec<u32>>,
    },
    /// Nanoseconds, 3 significant digits.
    Hdr(Box<Histogram<u64>>),
}

/// Streaming exact count/sum/min/max and Welford's M2 of a weighted sample.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Moments {
    n: u64,
    /// Neumaier-compensated sum of `v · w`: `sum + comp` is the sum.
    sum: f64,
    comp: f64,
    /// Σ w · (v − mean)².
    m2: f64,
    min: f64,
    max: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            n: 0,
            sum: 0.0,
            comp: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Moments {
    fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (self.sum + self.comp) / self.n as f64
        }
    }

    /// Neumaier's variant of Kahan summation: the error of each addition is carried.
    fn add_sum(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.comp += (self.sum - t) + x;
        } else {
            self.comp += (x - t) + self.sum;
        }
        self.sum = t;
    }

    /// West's weighted update.
    fn push(&mut self, v: f64, w: u32) {
        let old_mean = self.mean();
        self.n += u64::from(w);
        self.add_sum(v * f64::from(w));
        let new_mean = self.mean();
        self.m2 += f64::from(w) * (v - old_mean) * (v - new_mean);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Chan et al.'s pairwise combination.
    fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let (na, nb) = (self.n as f64, o.n as f64);
        let delta = o.mean() - self.mean();
        self.m2 += o.m2 + delta * delta * na * nb / (na + nb);
        self.n += o.n;
        self.add_sum(o.sum);
        self.add_sum(o.comp);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// The exact moments of stored values (two passes, as `stats` computes them).
    fn of(values: &[f64], weights: Option<&[u32]>) -> Moments {
        let w = |i: usize| weights.map_or(1, |ws| ws[i]);
        let mut m = Moments::default();
        for (i, &v) in values.iter().enumerate() {
            m.n += u64::from(w(i));
            m.add_sum(v * f64::from(w(i)));
            m.min = m.min.min(v);
            m.max = m.max.max(v);
        }
        let mean = m.mean();
        m.m2 = values
            .iter()
            .enumerate()
            .map(|(i, &v)| (v - mean).powi(2) * f64::from(w(i)))
            .sum();
        m
    }
}

/// Records `v` seconds `w` times as nanoseconds; negative values count as 0.
fn record(h: &mut Histogram<u64>, v: f64, w: u64) {
    // `as` saturates (and maps NaN, which `push_weighted` refuses, to 0). `record_n`
    // grows the histogram (auto-resize); it fails only past hdrhistogram's own limit
    // (u64::MAX / 2 ns, 292 years), where saturating at the top is the right answer.
    let ns = (v * 1e9).round().max(0.0) as u64;
    if h.record_n(ns, w).is_err() {
        h.saturating_record_n(ns, w);
    }
}

fn new_histogram() -> Box<Histogram<u64>> {
    // 3 significant digits is within hdrhistogram's 0..=5 and auto-resizing is on for
    // `new`, so this cannot fail; the fallback bounds are equally valid.
    Box::new(Histogram::new(SIGFIG).unwrap_or_else(|_| {
        Histogram::new_with_bounds(1, u64::MAX / 2, SIGFIG)
            .unwrap_or_else(|e| unreachable!("valid histogram bounds: {e}"))
    }))
}

impl Default for Samples {
    fn default() -> Self {
        Samples::with_exact_limit(DEFAULT_EXACT_LIMIT)
    }
}

impl Samples {
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps at most `limit` entries exactly before switching to the histogram (tests
    /// use a small one; 0 means histogram from the first value).
    pub fn with_exact_limit(limit: usize) -> Self {
        Samples {
            store: Store::Exact {
                values: Vec::new(),
                weights: None,
            },
            limit,
            total_weight: 0,
            moments: Moments::default(),
        }
    }

    /// Whether every value is still kept exactly.
    pub fn is_exact(&self) -> bool {
        matches!(self.store, Store::Exact { .. })
    }

    /// Adds one value.
    pub fn push(&mut self, v: f64) {
        self.push_weighted(v, 1);
    }

    /// Adds `v` as if it were pushed `weight` times. NaN and zero weights are ignored.
    pub fn push_weighted(&mut self, v: f64, weight: u32) {
        if weight == 0 || v.is_nan() {
            return;
        }
        self.total_weight += u64::from(weight);
        if let Store::Exact { values, .. } = &self.store
            && values.len() >= self.limit
        {
            self.fold();
        }
        match &mut self.store {
            Store::Exact { values, weights } => {
                if values.len() == values.capacity() {
                    // Double, but never past the limit: the vector is the memory bound.
                    let more = values.len().max(MIN_RESERVE).min(self.limit - values.len());
                    values.reserve_exact(more);
                }
                if weight != 1 && weights.is_none() {
                    let mut ws = Vec::with_capacity(values.capacity());
                    ws.resize(values.len(), 1);
                    *weights = Some(ws);
                }
                if let Some(ws) = weights {
                    if ws.len() == ws.capacity() {
                        ws.reserve_exact(values.capacity() - ws.len());
                    }
                    ws.push(weight);
                }
                values.push(v);
            }
            Store::Hdr(h) => {
                record(h, v, u64::from(weight));
                self.moments.push(v, weight);
            }
        }
    }

    /// Moves every exact value into a histogram (no-op when already there).
    fn fold(&mut self) {
        if let Store::Exact { values, weights } = &self.store {
            let mut h = new_histogram();
            for (i, &v) in values.iter().enumerate() {
                let w = weights.as_ref().map_or(1, |ws| ws[i]);
                record(&mut h, v, u64::from(w));
            }
            self.moments = Moments::of(values, weights.as_deref());
            self.store = Store::Hdr(h);
        }
    }

    /// Adds every value of `other`: exact while both are exact and the sum fits the
    /// limit, else through the histogram (shards' samples combine in any mode).
    pub fn merge(&mut self, other: &Samples) {
        if other.total_weight == 0 {
            return;
        }
        match &other.store {
            Store::Exact { values, weights } => {
                let fits = match &self.store {
                    Store::Exact { values: mine, .. } => mine.len() + values.len() <= self.limit,
                    Store::Hdr(_) => false,
                };
                if fits {
                    for (i, &v) in values.iter().enumerate() {
                        self.push_weighted(v, weights.as_ref().map_or(1, |ws| ws[i]));
                    }
                    return;
                }
                self.fold();
                if let Store::Hdr(h) = &mut self.store {
                    for (i, &v) in values.iter().enumerate() {
                        let w = weights.as_ref().map_or(1, |ws| ws[i]);
                        record(h, v, u64::from(w));
                    }
                }
                self.moments.merge(&Moments::of(values, weights.as_deref()));
            }
            Store::Hdr(theirs) => {
                self.fold();
                if let Store::Hdr(h) = &mut self.store
                    && h.add(theirs.as_ref()).is_err()
                {
                    // Only without auto-resize; record bucket by bucket instead.
                    for b in theirs.iter_recorded() {
                        record(h, b.value_iterated_to() as f64 / 1e9, b.count_at_value());
                    }
                }
                self.moments.merge(&other.moments);
            }
        }
        self.total_weight += other.total_weight;
    }

    /// Number of values, counting weights.
    pub fn count(&self) -> u64 {
        self.total_weight
    }

    pub fn is_empty(&self) -> bool {
        self.total_weight == 0
    }

    /// Computes the statistics for `percentiles` (each in 0..=100).
    pub fn stats(&self, percentiles: &[f64]) -> Stats {
        let n = self.total_weight;
        if n == 0 {
            return Stats {
                count: 0,
                mean: None,
                std: None,
                min: None,
                max: None,
                percentiles: Vec::new(),
                exact: self.is_exact(),
            };
        }
        match &self.store {
            Store::Exact { values, weights } => {
                exact_stats(values, weights.as_deref(), n, percentiles)
            }
            Store::Hdr(h) => self.hdr_stats(h, percentiles),
        }
    }

    fn hdr_stats(&self, h: &Histogram<u64>, percentiles: &[f64]) -> Stats {
        let m = &self.moments;
        // Bucket midpoints in seconds, kept inside the exact extremes (a bucket is
        // wider than the values it holds at the ends).
        let mut reprs = Vec::new();
        let mut cum = Vec::new();
        let mut acc = 0u64;
        for b in h.iter_recorded() {
            let v = h.median_equivalent(b.value_iterated_to()) as f64 / 1e9;
            reprs.push(v.clamp(m.min.max(0.0), m.max.max(0.0)));
            acc += b.count_at_value();
            cum.push(acc);
        }
        let at = |k: u64| -> f64 {
            if k == 0 {
                return m.min;
            }
            if k + 1 >= m.n {
                return m.max;
            }
            let i = cum.partition_point(|&c| c <= k);
            reprs[i.min(reprs.len().saturating_sub(1))]
        };
        Stats {
            count: m.n,
            mean: Some(m.mean()),
            std: Some((m.m2.max(0.0) / m.n as f64).sqrt()),
            min: Some(m.min),
            max: Some(m.max),
            percentiles: numpy_linear(m.n, at, percentiles),
            exact: false,
        }
    }
}

/// numpy's linear percentiles of `n` sorted values, `at(k)` giving the k-th.
fn numpy_linear(n: u64, at: impl Fn(u64) -> f64, percentiles: &[f64]) -> Vec<Percentile> {
    percentiles
        .iter()
        .map(|&p| {
            let h = (n - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
            let lo = h.floor();
            let lo_k = lo as u64;
            let (a, b) = (at(lo_k), at((lo_k + 1).min(n - 1)));
            Percentile {
                p,
                value: a + (h - lo) * (b - a),
            }
        })
        .collect()
}

/// The exact statistics of stored values (`n` = their total weight, > 0).
fn exact_stats(values: &[f64], weights: Option<&[u32]>, n: u64, percentiles: &[f64]) -> Stats {
    // Sort a copy (stats take `&self`); with weights, sort indices to keep the pairing.
    let (sorted, cum): (Vec<f64>, Option<Vec<u64>>) = match weights {
        None => {
            let mut s = values.to_vec();
            s.sort_by(f64::total_cmp);
            (s, None)
        }
        Some(ws) => {
            let mut idx: Vec<usize> = (0..values.len()).collect();
            idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
            let mut acc = 0u64;
            let cum = idx
                .iter()
                .map(|&i| {
                    acc += u64::from(ws[i]);
                    acc
                })
                .collect();
            (idx.iter().map(|&i| values[i]).collect(), Some(cum))
        }
    };
    let weight = |i: usize| {
        cum.as_ref()
            .map_or(1, |c| c[i] - if i == 0 { 0 } else { c[i - 1] })
    };
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    for (i, &v) in sorted.iter().enumerate() {
        sum += v * weight(i) as f64;
    }
    let mean = sum / n as f64;
    for (i, &v) in sorted.iter().enumerate() {
        sum_sq += (v - mean).powi(2) * weight(i) as f64;
    }
    // The value at expanded (repeated) index k.
    let at = |k: u64| -> f64 {
        match &cum {
            None => sorted[(k as usize).min(sorted.len() - 1)],
            Some(cum) => {
                let i = cum.partition_point(|&c| c <= k);
                sorted[i.min(sorted.len() - 1)]
            }
        }
    };
    Stats {
        count: n,
        mean: Some(mean),
        // Population standard deviation (numpy's default ddof=0, as vLLM reports).
        std: Some((sum_sq / n as f64).sqrt()),
        min: sorted.first().copied(),
        max: sorted.last().copied(),
        percentiles: numpy_linear(n, at, percentiles),
        exact: true,
    }
}

/// One requested percentile and its value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// 0–100.
    pub p: f64,
    pub value: f64,
}

/// Statistics of one metric. Values are in the samples' unit (seconds for latencies).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of values (for per-token ITL: tokens).
    pub count: u64,
    pub mean: Option<f64>,
    /// Population standard deviation.
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The requested percentiles, in the order asked.
    pub percentiles: Vec<Percentile>,
    /// Whether the figures come from every value kept exactly (numpy's results to
    /// rounding). `false` once the samples outgrew [`DEFAULT_EXACT_LIMIT`]: count,
    /// mean, min and max are still exact, the standard deviation is streamed and the
    /// percentiles come from the histogram (≤ 0.05 % relative error, 1 ns below 2 µs).
    /// Absent in older serializations, which were all exact.
    #[serde(default = "exact_by_default")]
    pub exact: bool,
}

fn exact_by_default() -> bool {
    true
}

impl Stats {
    /// The value of percentile `p`, if it was computed.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|q| (q.p - p).abs() < 1e-9)
            .map(|q| q.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }

    fn of(values: &[f64]) -> Samples {
        let mut s = Samples::new();
        values.iter().for_each(|&v| s.push(v));
        s
    }

    #[test]
    fn matches_numpy_linear() {
        // np.percentile([1, 2, 3, 4], 50) = 2.5
        let s = of(&[4.0, 1.0, 3.0, 2.0]).stats(&[50.0]);
        assert!(close(s.percentile(50.0).unwrap(), 2.5));
        // np.percentile(range(1, 11), [0, 25, 90, 99, 100]) = 1, 3.25, 9.1, 9.91, 10
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let st = of(&xs).stats(&[0.0, 25.0, 90.0, 99.0, 100.0]);
        let got: Vec<f64> = st.percentiles.iter().map(|p| p.value).collect();
        for (g, w) in got.iter().zip([1.0, 3.25, 9.1, 9.91, 10.0]) {
            assert!(close(*g, w), "{got:?}");
        }
        assert!(close(st.mean.unwrap(), 5.5));
        // np.std(range(1, 11)) = sqrt(8.25)
        assert!(close(st.std.unwrap(), 8.25f64.sqrt()));
        assert_eq!((st.min, st.max), (Some(1.0), Some(10.0)));
    }

    #[test]
    fn single_value_and_empty() {
        let st = of(&[0.3]).stats(&[1.0, 99.0]);
        assert_eq!(st.percentile(1.0), Some(0.3));
        assert_eq!(st.percentile(99.0), Some(0.3));
        assert_eq!(st.std, Some(0.0));
        let e = Samples::new().stats(&[50.0]);
        assert_eq!(e.count, 0);
        assert_eq!(e.mean, None);
        assert!(e.percentiles.is_empty());
    }

    #[test]
    fn weighted_equals_repeated() {
        // 2.5 × 4, 10 × 1, 1 × 3 is the array [1,1,1,2.5,2.5,2.5,2.5,10] for numpy:
        // p50: h = 3.5 → 2.5; p90: h = 6.3 → 2.5 + 0.3 × 7.5 = 4.75; p25: h = 1.75 → 1.
        let mut w = Samples::new();
        w.push_weighted(2.5, 4);
        w.push_weighted(10.0, 1);
        w.push_weighted(1.0, 3);
        let ps = [0.0, 25.0, 50.0, 90.0, 99.0, 100.0];
        let ws = w.stats(&ps);
        let flat = of(&[1.0, 1.0, 1.0, 2.5, 2.5, 2.5, 2.5, 10.0]).stats(&ps);
        assert_eq!(ws.count, 8);
        for (a, b) in ws.percentiles.iter().zip(&flat.percentiles) {
            assert!(
                close(a.value, b.value),
                "p{}: {} vs {}",
                a.p,
                a.value,
                b.value
            );
        }
        assert!(close(ws.percentile(90.0).unwrap(), 4.75));
        assert!(close(ws.percentile(25.0).unwrap(), 1.0));
        assert!(close(ws.mean.unwrap(), flat.mean.unwrap()));
        assert!(close(ws.std.unwrap(), flat.std.unwrap()));
    }

    /// numpy's linear method on an explicit array, written the plain way.
    fn naive_percentile(mut xs: Vec<f64>, p: f64) -> f64 {
        xs.sort_by(f64::total_cmp);
        let h = (xs.len() - 1) as f64 * p / 100.0;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(xs.len() - 1);
        xs[lo] + (h - lo as f64) * (xs[hi] - xs[lo])
    }

    proptest::proptest! {
        #[test]
        fn weighted_percentiles_equal_the_expanded_array(
            items in proptest::collection::vec((0.0f64..1.0, 1u32..6), 1..40),
            p in 0.0f64..=100.0,
        ) {
            let mut w = Samples::new();
            let mut flat = Vec::new();
            for &(v, n) in &items {
                w.push_weighted(v, n);
                flat.extend(std::iter::repeat_n(v, n as usize));
            }
            let got = w.stats(&[p]).percentile(p).unwrap();
            let want = naive_percentile(flat, p);
            proptest::prop_assert!((got - want).abs() < 1e-12, "p{} got {} want {}", p, got, want);
        }
    }

    /// A deterministic spread of latencies: 1 ms to ~1 s, log-uniform-ish, with ties.
    fn latencies(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = crate::schedule::splitmix64(x);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                (1e-3 * 1000f64.powf(u) * 1e6).round() / 1e6
            })
            .collect()
    }

    const PS: [f64; 8] = [0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0];

    /// `approx` within 0.1 % of `exact`, with the same count/mean/min/max.
    fn assert_close_to_exact(approx: &Stats, exact: &Stats) {
        assert!(exact.exact);
        assert!(!approx.exact);
        assert_eq!(approx.count, exact.count);
        let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
        assert!(rel(approx.mean.unwrap(), exact.mean.unwrap()) < 1e-12);
        assert!(rel(approx.std.unwrap(), exact.std.unwrap()) < 1e-9);
        assert_eq!((approx.min, approx.max), (exact.min, exact.max));
        for (a, e) in approx.percentiles.iter().zip(&exact.percentiles) {
            assert_eq!(a.p, e.p);
            assert!(
                rel(a.value, e.value) <= 1e-3,
                "p{}: {} vs exact {}",
                a.p,
                a.value,
                e.value
            );
        }
    }

    #[test]
    fn unweighted_values_need_no_weight_vector() {
        let s = of(&[1.0, 2.0, 3.0]);
        match &s.store {
            Store::Exact { values, weights } => {
                assert_eq!(values.len(), 3);
                assert!(weights.is_none());
            }
            Store::Hdr(_) => panic!("3 values are exact"),
        }
        let mut w = s.clone();
        w.push_weighted(4.0, 2);
        match &w.store {
            Store::Exact { weights, .. } => assert_eq!(weights.as_deref(), Some(&[1, 1, 1, 2][..])),
            Store::Hdr(_) => panic!("4 values are exact"),
        }
        // np.percentile([1, 2, 3, 4, 4], 50) = 3
        assert_eq!(w.stats(&[50.0]).percentile(50.0), Some(3.0));
    }

    #[test]
    fn capacity_never_exceeds_the_limit() {
        let mut s = Samples::with_exact_limit(1000);
        for v in latencies(1000, 1) {
            s.push(v);
        }
        match &s.store {
            Store::Exact { values, .. } => assert!(values.capacity() <= 1000),
            Store::Hdr(_) => panic!("the limit itself is still exact"),
        }
        s.push(0.5);
        assert!(!s.is_exact());
    }

    #[test]
    fn switch_over_keeps_count_and_mean_exact_and_percentiles_within_0_1_percent() {
        let xs = latencies(20_000, 7);
        let mut exact = Samples::new();
        let mut bounded = Samples::with_exact_limit(1_000);
        for (i, &v) in xs.iter().enumerate() {
            // Some weights ≠ 1 too, before and after the switch.
            let w = if i % 7 == 0 { 3 } else { 1 };
            exact.push_weighted(v, w);
            bounded.push_weighted(v, w);
        }
        assert!(exact.is_exact());
        assert!(!bounded.is_exact());
        assert_close_to_exact(&bounded.stats(&PS), &exact.stats(&PS));
    }

    #[test]
    fn zero_limit_is_a_histogram_from_the_start() {
        let mut s = Samples::with_exact_limit(0);
        s.push(0.25);
        let st = s.stats(&[0.0, 50.0, 100.0]);
        assert!(!st.exact);
        assert_eq!(st.count, 1);
        assert_eq!(st.percentile(50.0), Some(0.25));
        assert_eq!(st.std, Some(0.0));
        assert!(Samples::with_exact_limit(0).stats(&[50.0]).exact);
    }

    #[test]
    fn merges_in_every_combination() {
        let (xs, ys) = (latencies(3_000, 11), latencies(2_500, 12));
        let whole = {
            let mut s = Samples::new();
            xs.iter().chain(&ys).for_each(|&v| s.push_weighted(v, 2));
            s.stats(&PS)
        };
        let build = |vals: &[f64], limit: usize| {
            let mut s = Samples::with_exact_limit(limit);
            vals.iter().for_each(|&v| s.push_weighted(v, 2));
            s
        };
        // exact + exact within the limit stays exact and equal to one piece.
        let mut a = build(&xs, 10_000);
        a.merge(&build(&ys, 10_000));
        assert!(a.is_exact());
        assert_eq!(a.stats(&PS), whole);
        // exact + exact past the limit, exact + hdr, hdr + exact, hdr + hdr.
        for (la, lb) in [(4_000, 4_000), (10_000, 100), (100, 10_000), (100, 100)] {
            let mut a = build(&xs, la);
            a.merge(&build(&ys, lb));
            assert!(!a.is_exact(), "limits {la}/{lb}");
            assert_close_to_exact(&a.stats(&PS), &whole);
        }
        // Merging an empty one changes nothing.
        let mut e = build(&xs, 100);
        let before = e.stats(&PS);
        e.merge(&Samples::new());
        assert_eq!(e.stats(&PS), before);
    }

    #[test]
    fn stats_serialize_exactness_and_default_to_exact() {
        let st = of(&[1.0]).stats(&[50.0]);
        let mut json = serde_json::to_value(&st).unwrap();
        assert_eq!(json["exact"], true);
        json.as_object_mut().unwrap().remove("exact");
        let back: Stats = serde_json::from_value(json).unwrap();
        assert!(back.exact);
    }

    #[test]
    fn nan_and_zero_weights_are_ignored() {
        let mut s = Samples::new();
        s.push(f64::NAN);
        s.push_weighted(1.0, 0);
        assert!(s.is_empty());
    }
}
