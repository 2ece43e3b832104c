//! Random variation applied to the mock's TTFT and per-token times. `none` (the
//! default) keeps the configured times exact, which is what the timing tests rely on.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, LogNormal};

use crate::exit::UsageError;

/// A multiplicative factor drawn for every TTFT and every token time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Jitter {
    /// Factor 1: times are exactly as configured.
    #[default]
    None,
    /// Factor uniform in [1 − f, 1 + f], 0 ≤ f < 1 (mean 1).
    Uniform(f64),
    /// Factor exp(N(−σ²/2, σ)): log-normal with mean 1 and shape σ (0 ≤ σ ≤ 3).
    LogNormal(f64),
}

impl Jitter {
    /// Draws one factor. Always finite and > 0.
    pub fn factor(&self, rng: &mut StdRng) -> f64 {
        match *self {
            Jitter::None => 1.0,
            Jitter::Uniform(f) if f > 0.0 => rng.random_range(1.0 - f..=1.0 + f),
            Jitter::LogNormal(s) if s > 0.0 => match LogNormal::new(-s * s / 2.0, s) {
                Ok(d) => d.sample(rng),
                // Unreachable for validated σ; fall back to the exact time.
                Err(_) => 1.0,
            },
            _ => 1.0,
        }
    }

    /// `d` scaled by one drawn factor, rounded to the nanosecond. Exact when the
    /// factor is 1, so un-jittered schedules never drift by float rounding.
    pub fn apply(&self, d: Duration, rng: &mut StdRng) -> Duration {
        scale(d, self.factor(rng))
    }
}

/// `d × factor` rounded to whole nanoseconds (exact for factor 1).
pub(crate) fn scale(d: Duration, factor: f64) -> Duration {
    if factor == 1.0 {
        return d;
    }
    let nanos = (d.as_nanos() as f64 * factor).round();
    if nanos.is_finite() && nanos > 0.0 {
        Duration::from_nanos(nanos.min(u64::MAX as f64) as u64)
    } else {
        Duration::ZERO
    }
}

impl FromStr for Jitter {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (name, param) = match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        let value = |max: f64, inclusive: bool| -> Result<f64, UsageError> {
            let Some(p) = param else {
                return Err(UsageError::new(format!(
                    "jitter {name:?} needs a parameter, e.g. {name}:0.2"
                )));
            };
            let v: f64 = p
                .parse()
                .map_err(|_| UsageError::new(format!("jitter parameter {p:?} is not a number")))?;
            let ok = v.is_finite() && v >= 0.0 && if inclusive { v <= max } else { v < max };
            if !ok {
                return Err(UsageError::new(format!(
                    "jitter {name} parameter must be in [0, {max}{}, got {p}",
                    if inclusive { "]" } else { ")" }
                )));
            }
            Ok(v)
        };
        match name {
            "none" if param.is_none() => Ok(Jitter::None),
            "uniform" => Ok(Jitter::Uniform(value(1.0, false)?)),
            "lognormal" => Ok(Jitter::LogNormal(value(3.0, true)?)),
            _ => Err(UsageError::new(format!(
                "unknown jitter {s:?}; expected none, uniform:F (0 <= F < 1) or lognormal:SIGMA"
            ))),
        }
    }
}

impl TryFrom<String> for Jitter {
    type Error = UsageError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Jitter::None => f.write_str("none"),
            Jitter::Uniform(v) => write!(f, "uniform:{v}"),
            Jitter::LogNormal(v) => write!(f, "lognormal:{v}"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Jitter {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_and_rejects() {
        assert_eq!("none".parse::<Jitter>(), Ok(Jitter::None));
        assert_eq!("uniform:0.2".parse::<Jitter>(), Ok(Jitter::Uniform(0.2)));
        assert_eq!(
            "lognormal:0.1".parse::<Jitter>(),
            Ok(Jitter::LogNormal(0.1))
        );
        for bad in [
            "",
            "uniform",
            "uniform:1",
            "uniform:-0.1",
            "uniform:x",
            "gauss:1",
            "none:1",
            "lognormal:NaN",
        ] {
            assert!(bad.parse::<Jitter>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn none_is_exact_and_jitter_has_mean_one() {
        let mut rng = StdRng::seed_from_u64(7);
        let d = Duration::from_micros(2500);
        assert_eq!(Jitter::None.apply(d, &mut rng), d);
        for j in [Jitter::Uniform(0.5), Jitter::LogNormal(0.3)] {
            let n = 20_000;
            let mean: f64 = (0..n).map(|_| j.factor(&mut rng)).sum::<f64>() / n as f64;
            assert!((mean - 1.0).abs() < 0.02, "{j}: mean factor {mean}");
        }
        let mut lo = 2.0f64;
        let mut hi = 0.0f64;
        for _ in 0..10_000 {
            let f = Jitter::Uniform(0.2).factor(&mut rng);
            lo = lo.min(f);
            hi = hi.max(f);
        }
        assert!(
            lo >= 0.8 && hi <= 1.2 && lo < 0.81 && hi > 1.19,
            "{lo}..{hi}"
        );
    }

    #[test]
    fn scale_rounds_to_nanoseconds() {
        assert_eq!(
            scale(Duration::from_millis(10), 1.5),
            Duration::from_millis(15)
        );
        assert_eq!(
            scale(Duration::from_micros(2500), 1.0),
            Duration::from_micros(2500)
        );
    }
}
