//! Exact samples and their statistics: mean, standard deviation, min/max and
//! percentiles by numpy's default method, optionally with integer weights.
//!
//! Percentile definition (numpy `percentile(..., method="linear")`, the default that
//! `vllm bench serve` uses): sort the N values, take the virtual index
//! h = (N − 1) · p / 100 and interpolate linearly between the values at ⌊h⌋ and ⌊h⌋ + 1.
//! p0 is the minimum, p100 the maximum, p50 the median. A weighted sample (value v with
//! weight w) gives exactly what numpy gives on the array with v repeated w times, found
//! by binary search over cumulative weights instead of materializing the copies.

use serde::{Deserialize, Serialize};

/// Values kept exactly (seconds, or any unit), with integer weights.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    values: Vec<(f64, u32)>,
    total_weight: u64,
}

impl Samples {
    pub fn new() -> Self {
        Self::default()
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
        self.values.push((v, weight));
        self.total_weight += u64::from(weight);
    }

    /// Adds every value of `other` (exact: shards' samples combine losslessly).
    pub fn merge(&mut self, other: &Samples) {
        self.values.extend_from_slice(&other.values);
        self.total_weight += other.total_weight;
    }

    /// Number of values, counting weights.
    pub fn count(&self) -> u64 {
        self.total_weight
    }

    pub fn is_empty(&self) -> bool {
        self.total_weight == 0
    }

    /// Sorts and computes the statistics for `percentiles` (each in 0..=100).
    pub fn stats(&self, percentiles: &[f64]) -> Stats {
        let mut sorted = self.values.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = self.total_weight;
        if n == 0 {
            return Stats {
                count: 0,
                mean: None,
                std: None,
                min: None,
                max: None,
                percentiles: Vec::new(),
            };
        }
        let (mut sum, mut sum_sq) = (0.0, 0.0);
        for &(v, w) in &sorted {
            sum += v * f64::from(w);
        }
        let mean = sum / n as f64;
        for &(v, w) in &sorted {
            sum_sq += (v - mean).powi(2) * f64::from(w);
        }
        // Cumulative weights: cum[i] = weight of values 0..=i.
        let mut cum = Vec::with_capacity(sorted.len());
        let mut acc = 0u64;
        for &(_, w) in &sorted {
            acc += u64::from(w);
            cum.push(acc);
        }
        // The value at expanded (repeated) index k.
        let at = |k: u64| -> f64 {
            let i = cum.partition_point(|&c| c <= k);
            sorted[i.min(sorted.len() - 1)].0
        };
        let percentiles = percentiles
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
            .collect();
        Stats {
            count: n,
            mean: Some(mean),
            // Population standard deviation (numpy's default ddof=0, as vLLM reports).
            std: Some((sum_sq / n as f64).sqrt()),
            min: sorted.first().map(|v| v.0),
            max: sorted.last().map(|v| v.0),
            percentiles,
        }
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

    #[test]
    fn nan_and_zero_weights_are_ignored() {
        let mut s = Samples::new();
        s.push(f64::NAN);
        s.push_weighted(1.0, 0);
        assert!(s.is_empty());
    }
}
