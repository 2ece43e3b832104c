//! Token length distributions for prompts and outputs: `fixed`, `uniform` (vLLM's
//! `--random-range-ratio`) and `lognormal`. Pure and seeded by the caller's RNG.

use std::fmt;
use std::str::FromStr;

use rand::{Rng, RngExt};
use rand_distr::{Distribution, LogNormal};

use crate::exit::UsageError;

/// The default shape of `lognormal` lengths: σ of the underlying normal. 0.5 gives a
/// coefficient of variation of √(e^{σ²} − 1) ≈ 0.53 and a p99/median ratio of
/// e^{2.33σ} ≈ 3.2, close to the spread of prompt lengths in ShareGPT-like chat traffic.
pub const DEFAULT_LOGNORMAL_SIGMA: f64 = 0.5;

/// Largest length a lognormal draw may return (2^20 tokens, the longest context
/// windows served today): its tail is unbounded, and a draw of billions of tokens
/// would build a prompt that cannot fit in memory.
pub const MAX_DRAW: u32 = 1 << 20;

/// The shape of a length distribution (the mean comes separately).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LengthDist {
    /// Always the mean.
    Fixed,
    /// Integers in `[n(1 − r), n(1 + r)]`, both ends included, like vLLM's random
    /// dataset (`vllm/benchmarks/datasets.py`, `RandomDataset.get_sampling_params`).
    /// `0 ≤ r < 1`.
    Uniform { range_ratio: f64 },
    /// Log-normal with mean `n`: μ = ln n − σ²/2, so `E[X] = e^(μ+σ²/2) = n`.
    LogNormal { sigma: f64 },
}

impl LengthDist {
    /// The names accepted on the command line (`--len-dist`).
    pub const NAMES: [&'static str; 3] = ["fixed", "uniform", "lognormal"];
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthDist::Fixed => f.write_str("fixed"),
            LengthDist::Uniform { .. } => f.write_str("uniform"),
            LengthDist::LogNormal { .. } => f.write_str("lognormal"),
        }
    }
}

/// Parses a `--len-dist` name; `uniform` gets range ratio 0.5 (±50 %; vLLM's
/// `--random-range-ratio` sets it otherwise, its own default 0 would mean fixed)
/// and `lognormal` [`DEFAULT_LOGNORMAL_SIGMA`] until set otherwise.
impl FromStr for LengthDist {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fixed" => Ok(LengthDist::Fixed),
            "uniform" => Ok(LengthDist::Uniform { range_ratio: 0.5 }),
            "lognormal" => Ok(LengthDist::LogNormal {
                sigma: DEFAULT_LOGNORMAL_SIGMA,
            }),
            other => Err(UsageError::new(format!(
                "unknown length distribution {other:?}: expected one of {}",
                Self::NAMES.join(", ")
            ))),
        }
    }
}

/// A validated length distribution: mean `n` tokens and a shape. Samples are ≥ 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lengths {
    mean: u32,
    dist: LengthDist,
    lognormal: Option<LogNormal<f64>>,
}

impl Lengths {
    /// Checks the parameters: `mean ≥ 1`, `0 ≤ range_ratio < 1`, `0 < sigma ≤ 4`.
    pub fn new(mean: u32, dist: LengthDist) -> Result<Self, UsageError> {
        if mean == 0 {
            return Err(UsageError::new("a token length must be at least 1"));
        }
        let lognormal = match dist {
            LengthDist::Fixed => None,
            LengthDist::Uniform { range_ratio } => {
                if !(0.0..1.0).contains(&range_ratio) {
                    return Err(UsageError::new(format!(
                        "range ratio {range_ratio} is out of range: expected 0 <= r < 1"
                    )));
                }
                None
            }
            LengthDist::LogNormal { sigma } => {
                if !(sigma > 0.0 && sigma <= 4.0) {
                    return Err(UsageError::new(format!(
                        "lognormal sigma {sigma} is out of range: expected 0 < sigma <= 4"
                    )));
                }
                let mu = f64::from(mean).ln() - sigma * sigma / 2.0;
                Some(
                    LogNormal::new(mu, sigma)
                        .map_err(|e| UsageError::new(format!("lognormal lengths: {e}")))?,
                )
            }
        };
        Ok(Lengths {
            mean,
            dist,
            lognormal,
        })
    }

    /// Always `n`.
    pub fn fixed(mean: u32) -> Result<Self, UsageError> {
        Self::new(mean, LengthDist::Fixed)
    }

    pub fn mean(&self) -> u32 {
        self.mean
    }

    pub fn dist(&self) -> LengthDist {
        self.dist
    }

    /// The smallest and largest value `sample` can return.
    pub fn bounds(&self) -> (u32, u32) {
        match self.dist {
            LengthDist::Fixed => (self.mean, self.mean),
            LengthDist::Uniform { range_ratio } => uniform_bounds(self.mean, range_ratio),
            LengthDist::LogNormal { .. } => (1, MAX_DRAW.max(self.mean)),
        }
    }

    /// Draws one length.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        match (self.dist, self.lognormal) {
            (LengthDist::Uniform { range_ratio }, _) => {
                let (lo, hi) = uniform_bounds(self.mean, range_ratio);
                rng.random_range(lo..=hi)
            }
            (LengthDist::LogNormal { .. }, Some(d)) => {
                let x = d.sample(rng).round();
                // `as` saturates for floats (NaN becomes 0); the tail is cut at MAX_DRAW
                // (or the mean, should that be larger).
                (x as u32).clamp(1, MAX_DRAW.max(self.mean))
            }
            _ => self.mean,
        }
    }
}

/// vLLM: `int(n * (1 - r))` to `int(n * (1 + r))` inclusive, clamped to ≥ 1.
fn uniform_bounds(mean: u32, range_ratio: f64) -> (u32, u32) {
    let n = f64::from(mean);
    let lo = ((n * (1.0 - range_ratio)).floor() as u32).max(1);
    let hi = ((n * (1.0 + range_ratio)).floor() as u32).max(lo);
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    fn draws(l: &Lengths, n: usize) -> Vec<u32> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        (0..n).map(|_| l.sample(&mut rng)).collect()
    }

    #[test]
    fn lognormal_tail_is_bounded() {
        // sigma 4 around a mean of 2^19: draws far beyond 2^20 are common.
        let l = Lengths::new(1 << 19, LengthDist::LogNormal { sigma: 4.0 }).unwrap();
        assert_eq!(l.bounds(), (1, MAX_DRAW));
        let d = draws(&l, 2000);
        assert!(d.iter().all(|&x| (1..=MAX_DRAW).contains(&x)));
        assert!(d.contains(&MAX_DRAW));
    }

    #[test]
    fn fixed_is_constant() {
        let l = Lengths::fixed(128).unwrap();
        assert!(draws(&l, 100).iter().all(|&x| x == 128));
    }

    #[test]
    fn uniform_covers_vllm_range_inclusive() {
        let l = Lengths::new(100, LengthDist::Uniform { range_ratio: 0.5 }).unwrap();
        assert_eq!(l.bounds(), (50, 150));
        let d = draws(&l, 20_000);
        assert_eq!(*d.iter().min().unwrap(), 50);
        assert_eq!(*d.iter().max().unwrap(), 150);
        let mean = d.iter().map(|&x| f64::from(x)).sum::<f64>() / d.len() as f64;
        assert!((mean - 100.0).abs() < 1.0, "mean {mean}");
    }

    #[test]
    fn uniform_never_returns_zero() {
        let l = Lengths::new(1, LengthDist::Uniform { range_ratio: 0.9 }).unwrap();
        assert_eq!(l.bounds(), (1, 1));
        assert!(draws(&l, 1000).iter().all(|&x| x == 1));
    }

    #[test]
    fn lognormal_has_the_requested_mean_and_sigma() {
        let l = Lengths::new(1000, LengthDist::LogNormal { sigma: 0.5 }).unwrap();
        let d = draws(&l, 200_000);
        let mean = d.iter().map(|&x| f64::from(x)).sum::<f64>() / d.len() as f64;
        // Standard error of the mean: 1000 × 0.53 / √200000 ≈ 1.2 tokens.
        assert!((mean - 1000.0).abs() < 6.0, "mean {mean}");
        let logs: Vec<f64> = d.iter().map(|&x| f64::from(x).ln()).collect();
        let m = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|v| (v - m).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        assert!((sd - 0.5).abs() < 0.005, "sigma {sd}");
    }

    #[test]
    fn lognormal_small_mean_is_clamped_to_one() {
        let l = Lengths::new(1, LengthDist::LogNormal { sigma: 2.0 }).unwrap();
        assert!(draws(&l, 1000).iter().all(|&x| x >= 1));
    }

    #[test]
    fn bad_parameters_are_usage_errors() {
        assert!(Lengths::fixed(0).is_err());
        assert!(Lengths::new(10, LengthDist::Uniform { range_ratio: 1.0 }).is_err());
        assert!(Lengths::new(10, LengthDist::Uniform { range_ratio: -0.1 }).is_err());
        assert!(Lengths::new(10, LengthDist::LogNormal { sigma: 0.0 }).is_err());
        assert!(Lengths::new(10, LengthDist::LogNormal { sigma: f64::NAN }).is_err());
        let e = "gaussian".parse::<LengthDist>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown length distribution \"gaussian\": expected one of fixed, uniform, lognormal"
        );
        assert_eq!(
            "uniform".parse::<LengthDist>().unwrap().to_string(),
            "uniform"
        );
    }
}
