//! `--max-error-rate`: a run that stops early once the share of failed requests passes
//! a bound, so a failing endpoint (a hosted API billing per token) is not driven to the
//! end of the plan. The share is the report's error ratio (failed / counted requests,
//! warmup excluded), the figure the `error-ratio` gate reads.

use serde::Serialize;

/// Counted requests that must have finished before the share can stop a run: one early
/// failure of a few does not.
pub const MIN_REQUESTS: u64 = 10;

/// Failed over counted requests; `None` before any request was counted.
pub fn error_ratio(failed: u64, requests: u64) -> Option<f64> {
    (requests > 0).then(|| failed as f64 / requests as f64)
}

/// Why and when a run stopped before its plan ended (`stopped_early` of `--json-out`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StoppedEarly {
    /// Always `max_error_rate` for now.
    pub reason: &'static str,
    /// The bound it passed.
    pub max_error_rate: f64,
    /// Counted requests finished when it stopped, and of those the failed ones.
    pub requests: u64,
    pub failed: u64,
}

/// The `--max-error-rate` bound, in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxErrorRate(pub f64);

impl MaxErrorRate {
    /// Whether `failed` of `requests` stops the run: at least [`MIN_REQUESTS`] counted
    /// and a share strictly above the bound.
    pub fn check(self, requests: u64, failed: u64) -> Option<StoppedEarly> {
        let share = error_ratio(failed, requests)?;
        (requests >= MIN_REQUESTS && share > self.0).then_some(StoppedEarly {
            reason: "max_error_rate",
            max_error_rate: self.0,
            requests,
            failed,
        })
    }
}

impl StoppedEarly {
    /// One line for the table and stderr.
    pub fn describe(&self) -> String {
        format!(
            "stopped early: {} of {} requests failed ({:.1} %), above --max-error-rate {}",
            self.failed,
            self.requests,
            100.0 * self.failed as f64 / self.requests.max(1) as f64,
            self.max_error_rate
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_only_after_the_minimum_and_above_the_bound() {
        let max = MaxErrorRate(0.2);
        // One failure of the first request does not stop a run.
        assert_eq!(max.check(1, 1), None);
        assert_eq!(max.check(MIN_REQUESTS - 1, MIN_REQUESTS - 1), None);
        // Exactly at the bound goes on; above it stops.
        assert_eq!(max.check(10, 2), None);
        let s = max.check(10, 3).unwrap();
        assert_eq!((s.requests, s.failed, s.reason), (10, 3, "max_error_rate"));
        assert_eq!(
            s.describe(),
            "stopped early: 3 of 10 requests failed (30.0 %), above --max-error-rate 0.2"
        );
        // A bound of 0 stops on any failure once the minimum is there; 1 never stops.
        assert!(MaxErrorRate(0.0).check(10, 1).is_some());
        assert_eq!(MaxErrorRate(1.0).check(100, 100), None);
        assert_eq!(error_ratio(0, 0), None);
    }
}
