//! Histogram bucket layouts. vLLM's own bounds are defined here once (the mock engine's
//! `/metrics` page uses the same constants), so client-side and server-side histograms
//! line up bucket for bucket.

use crate::latency::{Latency, Slo};

/// vLLM's `vllm:time_to_first_token_seconds` buckets (vllm/v1/metrics/loggers.py).
pub const VLLM_TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// vLLM's `vllm:inter_token_latency_seconds` / `vllm:time_per_output_token_seconds`
/// buckets.
pub const VLLM_ITL: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];

/// vLLM's `vllm:e2e_request_latency_seconds` buckets.
pub const VLLM_E2E: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// Bounds llmprobe adds below vLLM's TPOT/ITL buckets for fast engines (1, 2.5, 5 ms).
pub const FAST_TOKEN_EXTRAS: &[f64] = &[0.001, 0.0025, 0.005];

/// llmprobe's own dispatch-lag buckets (client health; vLLM has no such metric).
pub const DISPATCH_LAG: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// The self-check's error buckets: 50 µs (a good client on an idle machine) to 1 s (a
/// throttled one).
pub const SELF_CHECK_ERROR: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Histogram bucket upper bounds (seconds) per latency metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    pub ttft: Vec<f64>,
    pub tpot: Vec<f64>,
    pub itl: Vec<f64>,
    pub e2e: Vec<f64>,
    pub dispatch_lag: Vec<f64>,
}

/// Which bucket bounds a histogram family uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The bounds configured for a latency (its catalogue row names whose).
    Of(Latency),
    /// Fixed: [`SELF_CHECK_ERROR`], whatever the configured buckets.
    SelfCheckError,
}

impl Layout {
    /// The bounds of this layout in `buckets`.
    pub fn of(self, buckets: &Buckets) -> &[f64] {
        match self {
            Layout::Of(l) => buckets.of(l),
            Layout::SelfCheckError => SELF_CHECK_ERROR,
        }
    }
}

impl Buckets {
    /// vLLM's own buckets for the same metrics (TTFT, TPOT/ITL, E2E), so client-side
    /// and server-side histograms line up bucket for bucket. TPOT/ITL add
    /// [`FAST_TOKEN_EXTRAS`] for fast engines; dispatch lag is llmprobe's own.
    pub fn vllm() -> Self {
        Buckets {
            ttft: VLLM_TTFT.to_vec(),
            tpot: Self::vllm_tpot(),
            itl: Self::vllm_tpot(),
            e2e: VLLM_E2E.to_vec(),
            dispatch_lag: DISPATCH_LAG.to_vec(),
        }
    }

    fn vllm_tpot() -> Vec<f64> {
        [FAST_TOKEN_EXTRAS, VLLM_ITL].concat()
    }

    /// The configured bounds of latency `l`'s own layout; empty for a latency with no
    /// layout of its own (TTFA uses TTFT's: its catalogue row says so).
    pub fn of(&self, l: Latency) -> &[f64] {
        match l {
            Latency::Ttft => &self.ttft,
            Latency::Tpot => &self.tpot,
            Latency::Itl => &self.itl,
            Latency::E2e => &self.e2e,
            Latency::DispatchLag => &self.dispatch_lag,
            _ => &[],
        }
    }

    /// Every layout with the latency whose bounds it holds.
    fn layouts_mut(&mut self) -> [(Latency, &mut Vec<f64>); 5] {
        [
            (Latency::Ttft, &mut self.ttft),
            (Latency::Tpot, &mut self.tpot),
            (Latency::Itl, &mut self.itl),
            (Latency::E2e, &mut self.e2e),
            (Latency::DispatchLag, &mut self.dispatch_lag),
        ]
    }

    /// Adds every SLO threshold as a bucket boundary of the layouts its catalogue row
    /// names, so `le="<threshold>"` is exact (a TPOT threshold bounds TPOT and
    /// per-token ITL: the same per-token budget).
    pub fn with_slos<'a>(mut self, slos: impl IntoIterator<Item = &'a Slo>) -> Self {
        for slo in slos {
            for (l, t) in slo.iter() {
                let layouts = l.objective().map_or(&[][..], |o| o.bucket_layouts);
                for (owner, b) in self.layouts_mut() {
                    if layouts.contains(&owner) {
                        b.push(t.as_secs_f64());
                    }
                }
            }
        }
        self.normalized()
    }

    /// Sorted, finite, positive, without duplicates (Prometheus requires strictly
    /// increasing bounds).
    pub fn normalized(mut self) -> Self {
        for (_, b) in self.layouts_mut() {
            b.retain(|v| v.is_finite() && *v > 0.0);
            b.sort_by(f64::total_cmp);
            // Thresholds parsed from "50ms" and a literal 0.05 may differ in the last bit.
            b.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * b.abs().max(1e-9));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn buckets_are_vllm_plus_every_slo_threshold() {
        let slo = Slo::of([
            (Latency::Ttft, ms(300)),
            (Latency::Tpot, ms(40)),
            (Latency::E2e, ms(2000)),
        ])
        .unwrap();
        let b = Buckets::vllm().with_slos([&slo]);
        assert!(b.ttft.contains(&0.3) && b.ttft.contains(&0.25) && b.ttft.contains(&2560.0));
        assert!(b.tpot.contains(&0.04) && b.itl.contains(&0.04));
        // 2 s is already a vLLM E2E bucket: no duplicate.
        assert_eq!(b.e2e.iter().filter(|v| **v == 2.0).count(), 1);
        for v in [&b.ttft, &b.tpot, &b.itl, &b.e2e, &b.dispatch_lag] {
            assert!(v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
        }
    }

    #[test]
    fn vllm_layout_is_unchanged() {
        let b = Buckets::vllm();
        assert_eq!(
            b.tpot,
            [
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
            ]
        );
        assert_eq!(b.itl, b.tpot);
        assert_eq!(b.clone().normalized(), b);
    }
}
