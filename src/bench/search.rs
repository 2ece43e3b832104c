//! `--find-max-rate`: the highest request rate at which every gate passes.
//!
//! Doubling from the starting rate until a rate fails (or the limit is reached), then
//! bisection between the highest passing and the lowest failing rate until the bracket
//! is within the precision. When the starting rate already fails, the search halves
//! downwards first, down to the precision (a relative precision is taken of the
//! starting rate there, so the floor is a rate a probe can finish at). Pure over a probe closure (one bench run per call), so the search
//! logic is tested without a server.
//!
//! The answer assumes pass/fail is monotone in the rate; with a noisy server near the
//! edge a repeat may land a step either way, which is why the bracket is reported.

use crate::bench::options::Precision;

/// One rate tried and its verdict.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ProbePoint {
    pub rate: f64,
    pub passed: bool,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SearchResult {
    /// Every rate tried, in order.
    pub probes: Vec<ProbePoint>,
    /// The highest rate that passed (null when none did).
    pub max_rate: Option<f64>,
    /// The lowest rate that failed (null when the limit passed).
    pub first_failing: Option<f64>,
    /// True when the limit itself passed: the real maximum may be higher.
    pub hit_limit: bool,
}

/// Bound on probes so a pathological precision cannot run forever.
const MAX_PROBES: usize = 64;

/// Runs the search. `probe(rate)` runs the load at `rate` and says whether every gate
/// passed; an error stops the search.
pub async fn find_max_rate<F, E>(
    start: f64,
    precision: Precision,
    limit: f64,
    mut probe: F,
) -> Result<SearchResult, E>
where
    F: AsyncFnMut(f64) -> Result<bool, E>,
{
    let mut probes = Vec::new();
    let mut run = async |rate: f64, probes: &mut Vec<ProbePoint>| -> Result<bool, E> {
        let passed = probe(rate).await?;
        probes.push(ProbePoint { rate, passed });
        Ok(passed)
    };

    let mut lo: Option<f64> = None; // highest passing
    let mut hi: Option<f64> = None; // lowest failing
    let mut rate = start.min(limit);
    if run(rate, &mut probes).await? {
        lo = Some(rate);
        while rate < limit && probes.len() < MAX_PROBES {
            rate = (rate * 2.0).min(limit);
            if run(rate, &mut probes).await? {
                lo = Some(rate);
            } else {
                hi = Some(rate);
                break;
            }
        }
    } else {
        hi = Some(rate);
        // Halve until a rate passes or the rate is below the floor.
        let floor = precision.at(start);
        while probes.len() < MAX_PROBES {
            rate /= 2.0;
            if rate < floor {
                break;
            }
            if run(rate, &mut probes).await? {
                lo = Some(rate);
                break;
            }
            hi = Some(rate);
        }
    }

    if let (Some(mut l), Some(mut h)) = (lo, hi) {
        while h - l > precision.at(l) && probes.len() < MAX_PROBES {
            let mid = (l + h) / 2.0;
            if run(mid, &mut probes).await? {
                l = mid;
            } else {
                h = mid;
            }
        }
        lo = Some(l);
        hi = Some(h);
    }
    Ok(SearchResult {
        hit_limit: lo == Some(limit),
        probes,
        max_rate: lo,
        first_failing: hi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    async fn search(start: f64, precision: Precision, limit: f64, capacity: f64) -> SearchResult {
        find_max_rate(start, precision, limit, async |r| {
            Ok::<_, Infallible>(r <= capacity)
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn doubles_then_bisects_to_the_precision() {
        let r = search(1.0, Precision::PerSecond(0.25), 1024.0, 13.7).await;
        let rates: Vec<f64> = r.probes.iter().map(|p| p.rate).collect();
        assert_eq!(&rates[..5], &[1.0, 2.0, 4.0, 8.0, 16.0]);
        let max = r.max_rate.unwrap();
        let fail = r.first_failing.unwrap();
        assert!(max <= 13.7 && 13.7 < fail, "{r:?}");
        assert!(fail - max <= 0.25);
        assert!(!r.hit_limit);
        // Bisection: 12, 14, 13, 13.5, 13.75 → bracket 0.25 wide.
        assert_eq!(&rates[5..], &[12.0, 14.0, 13.0, 13.5, 13.75]);
    }

    #[tokio::test]
    async fn relative_precision() {
        let r = search(2.0, Precision::Relative(0.05), 1024.0, 100.0).await;
        let max = r.max_rate.unwrap();
        assert!(max <= 100.0 && r.first_failing.unwrap() - max <= 0.05 * max);
    }

    #[tokio::test]
    async fn halves_down_when_the_start_fails() {
        let r = search(64.0, Precision::PerSecond(0.5), 1024.0, 5.0).await;
        let rates: Vec<f64> = r.probes.iter().map(|p| p.rate).collect();
        assert_eq!(&rates[..5], &[64.0, 32.0, 16.0, 8.0, 4.0]);
        let max = r.max_rate.unwrap();
        assert!(max <= 5.0 && r.first_failing.unwrap() - max <= 0.5);
    }

    #[tokio::test]
    async fn nothing_passes() {
        let r = search(8.0, Precision::PerSecond(0.5), 1024.0, 0.0).await;
        assert_eq!(r.max_rate, None);
        let rates: Vec<f64> = r.probes.iter().map(|p| p.rate).collect();
        assert_eq!(rates, vec![8.0, 4.0, 2.0, 1.0, 0.5]);
        assert!(r.probes.iter().all(|p| !p.passed));
        // A relative precision floors at a fraction of the start, not at zero.
        let r = search(8.0, Precision::Relative(0.05), 1024.0, 0.0).await;
        let rates: Vec<f64> = r.probes.iter().map(|p| p.rate).collect();
        assert_eq!(rates, vec![8.0, 4.0, 2.0, 1.0, 0.5]);
    }

    #[tokio::test]
    async fn stops_at_the_limit() {
        let r = search(1.0, Precision::PerSecond(0.5), 10.0, 1e9).await;
        let rates: Vec<f64> = r.probes.iter().map(|p| p.rate).collect();
        assert_eq!(rates, vec![1.0, 2.0, 4.0, 8.0, 10.0]);
        assert_eq!(r.max_rate, Some(10.0));
        assert!(r.hit_limit);
        assert_eq!(r.first_failing, None);
    }

    #[tokio::test]
    async fn probe_errors_stop_the_search() {
        let r = find_max_rate(1.0, Precision::PerSecond(0.5), 64.0, async |r| {
            if r >= 4.0 { Err("boom") } else { Ok(true) }
        })
        .await;
        assert_eq!(r, Err("boom"));
    }
}
