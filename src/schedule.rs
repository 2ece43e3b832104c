//! Arrival times: when each request of a run is meant to be sent, as absolute offsets
//! from the run start. Pure and seeded; no clock, no IO.
//!
//! Offsets are a running sum of inter-arrival gaps kept in `f64` seconds and converted
//! once per arrival, so the schedule does not drift however long the run is (the runner
//! waits for `run_start + offset`, never for "previous send + gap").

use std::str::FromStr;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use rand_distr::{Distribution, Exp, Gamma};

use crate::exit::UsageError;

/// The lowest accepted request rate: one request a year. Slower schedules are almost
/// certainly a unit mistake, and their offsets soon stop fitting a `Duration`.
pub const MIN_RATE: f64 = 1.0 / (365.0 * 24.0 * 3600.0);

/// The shape of the arrival process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalProcess {
    /// Exponential gaps: a Poisson process.
    Poisson,
    /// Gamma gaps with shape `burstiness` and mean 1/λ, so the coefficient of variation
    /// is 1/√burstiness: 1 is Poisson, below 1 burstier, above 1 more regular. The
    /// same as `vllm bench serve --burstiness` (vllm/benchmarks/serve.py,
    /// `get_request`: `np.random.gamma(shape=burstiness, scale=1/(rate*burstiness))`).
    Gamma { burstiness: f64 },
    /// Evenly spaced: arrival i at i/λ.
    Constant,
}

/// A validated arrival schedule: a rate and a process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    rate: f64,
    process: ArrivalProcess,
}

impl Schedule {
    /// `rate` in requests per second, > 0; `f64::INFINITY` sends everything at once.
    /// A gamma shape must be finite and > 0.
    pub fn new(rate: f64, process: ArrivalProcess) -> Result<Self, UsageError> {
        if rate.is_nan() || rate <= 0.0 {
            return Err(UsageError::new(format!(
                "request rate {rate} is out of range: expected a positive number or inf"
            )));
        }
        if rate < MIN_RATE {
            return Err(UsageError::new(format!(
                "request rate {rate:e}/s is below the minimum of one request a year ({MIN_RATE:.3e}/s)"
            )));
        }
        if let ArrivalProcess::Gamma { burstiness } = process
            && !(burstiness.is_finite() && burstiness > 0.0)
        {
            return Err(UsageError::new(format!(
                "burstiness {burstiness} is out of range: expected a positive number"
            )));
        }
        // A gamma of shape 1 is exactly exponential: use the cheaper sampler.
        let process = match process {
            ArrivalProcess::Gamma { burstiness: 1.0 } => ArrivalProcess::Poisson,
            p => p,
        };
        Ok(Schedule { rate, process })
    }

    /// Poisson arrivals at `rate` per second.
    pub fn poisson(rate: f64) -> Result<Self, UsageError> {
        Self::new(rate, ArrivalProcess::Poisson)
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn process(&self) -> ArrivalProcess {
        self.process
    }

    /// The arrival offsets for `seed`: an endless iterator (the runner decides when to
    /// stop). The first arrival is at 0 and each later one a drawn gap after the
    /// previous, as in `vllm bench serve` (`get_request` yields a request, then sleeps
    /// one gap). Recent vLLM versions also rescale all gaps so the last arrival lands
    /// at exactly N/λ; llmprobe does not, since that makes the arrivals no longer a
    /// Poisson process. At infinite rate every offset is 0.
    pub fn arrivals(&self, seed: u64) -> Arrivals {
        let sampler = if self.rate.is_infinite() {
            Sampler::Burst
        } else {
            match self.process {
                ArrivalProcess::Constant => Sampler::Constant,
                ArrivalProcess::Poisson => match Exp::new(self.rate) {
                    Ok(d) => Sampler::Exp(d),
                    Err(_) => Sampler::Burst,
                },
                ArrivalProcess::Gamma { burstiness } => {
                    match Gamma::new(burstiness, 1.0 / (self.rate * burstiness)) {
                        Ok(d) => Sampler::Gamma(d),
                        Err(_) => Sampler::Burst,
                    }
                }
            }
        };
        Arrivals {
            rate: self.rate,
            sampler,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            elapsed: 0.0,
            index: 0,
        }
    }
}

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): one step of the generator from state `x`, i.e. a
/// bijective mix of `x` whose outputs for nearby inputs are unrelated. The one place
/// llmprobe derives seeds, nonces and per-request streams from other numbers.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Debug, Clone)]
enum Sampler {
    Burst,
    Constant,
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
}

/// An endless, seeded sequence of arrival offsets from the run start.
#[derive(Debug, Clone)]
pub struct Arrivals {
    rate: f64,
    sampler: Sampler,
    rng: Xoshiro256PlusPlus,
    /// Running sum of gaps, seconds.
    elapsed: f64,
    index: u64,
}

impl Iterator for Arrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let at = match &self.sampler {
            Sampler::Burst => 0.0,
            // i/λ computed directly, not summed, so it is exact to f64 precision.
            Sampler::Constant => self.index as f64 / self.rate,
            Sampler::Exp(d) => {
                let at = self.elapsed;
                self.elapsed += d.sample(&mut self.rng);
                at
            }
            Sampler::Gamma(d) => {
                let at = self.elapsed;
                self.elapsed += d.sample(&mut self.rng);
                at
            }
        };
        self.index += 1;
        // An offset past u64::MAX seconds is not representable: the schedule ends there
        // (NaN cannot occur: gaps are finite and ≥ 0).
        Duration::try_from_secs_f64(at).ok()
    }
}

/// How a conversation's think time (the pause between an answer and the next user
/// message) is drawn. `bench --think-time-dist` and a daemon scenario's
/// `think_time_dist` take the same names.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkDist {
    /// Exponential with the given mean: memoryless, like the arrivals of a Poisson
    /// process.
    Exponential,
    /// Always the mean.
    Constant,
}

impl ThinkDist {
    pub const ALL: [ThinkDist; 2] = [ThinkDist::Exponential, ThinkDist::Constant];

    pub const fn as_str(self) -> &'static str {
        match self {
            ThinkDist::Exponential => "exponential",
            ThinkDist::Constant => "constant",
        }
    }
}

impl FromStr for ThinkDist {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, UsageError> {
        ThinkDist::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| {
                UsageError::new(format!(
                    "unknown think-time distribution {s:?}: expected exponential or constant"
                ))
            })
    }
}

/// Think times of the conversations of a run: a mean and a distribution. Seeded per
/// conversation, so a conversation's pauses do not depend on how the others went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThinkTime {
    pub mean: Duration,
    pub dist: ThinkDist,
}

impl ThinkTime {
    /// The think times of conversation `conversation` of a run seeded `seed`, one per
    /// later turn.
    pub fn draws(&self, seed: u64, conversation: u64) -> impl Iterator<Item = Duration> + Send {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(
            splitmix64(seed ^ 0x7468_696e_6b00_0000) ^ splitmix64(conversation),
        );
        let mean = self.mean.as_secs_f64();
        let exp = match self.dist {
            ThinkDist::Exponential if mean > 0.0 => Exp::new(1.0 / mean).ok(),
            _ => None,
        };
        std::iter::repeat_with(move || match &exp {
            Some(d) => Duration::try_from_secs_f64(d.sample(&mut rng)).unwrap_or(Duration::MAX),
            None => Duration::from_secs_f64(mean),
        })
    }
}

/// Which shard of a scaled-out run this process is: `index` in `0..count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// 0-based index of this shard.
    pub index: u32,
    /// Number of shards in the run.
    pub count: u32,
}

impl Shard {
    /// This shard's part of `total` requests: `total / count`, the remainder going to
    /// the lowest indices, so the parts sum to exactly `total`.
    pub fn share_of(self, total: u64) -> u64 {
        let n = u64::from(self.count);
        let i = u64::from(self.index);
        total / n + u64::from(i < total % n)
    }

    /// A seed for this shard's streams. Distinct shards get unrelated seeds
    /// ([`splitmix64`]), so their Poisson streams are independent and superpose into
    /// one Poisson stream at the full rate.
    pub fn seed(self, base: u64) -> u64 {
        splitmix64(base ^ splitmix64(u64::from(self.index)))
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Shard, String> {
        let bad = || format!("{s:?} is not I/N (0-based shard index I of N shards, e.g. 0/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(format!(
                "shard {s:?}: the index must be in 0..{count} (I/N with 0 <= I < N)"
            ));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` inter-arrival gaps, in seconds.
    fn gaps(s: &Schedule, seed: u64, n: usize) -> Vec<f64> {
        let t: Vec<f64> = s
            .arrivals(seed)
            .take(n + 1)
            .map(|d| d.as_secs_f64())
            .collect();
        assert_eq!(t[0], 0.0, "the first arrival is at the start");
        t.windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn mean_var(x: &[f64]) -> (f64, f64) {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        let v = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, v)
    }

    const N: usize = 400_000;

    #[test]
    fn absurdly_low_rates_are_refused() {
        let err = Schedule::poisson(1e-300).unwrap_err();
        assert!(
            err.0.contains("below the minimum of one request a year"),
            "{err}"
        );
        assert!(Schedule::poisson(MIN_RATE).is_ok());
        // At the minimum rate offsets are years apart, and still representable.
        let last = Schedule::poisson(MIN_RATE).unwrap().arrivals(1).nth(1000);
        assert!(last.is_some_and(|d| d > Duration::from_secs(100 * 365 * 24 * 3600)));
    }

    #[test]
    fn poisson_gaps_have_mean_and_variance_of_an_exponential() {
        let s = Schedule::poisson(10.0).unwrap();
        let (m, v) = mean_var(&gaps(&s, 1, N));
        // Mean 0.1 s, sd of the sample mean 0.1/√N = 1.6e-4: ±5σ bounds.
        assert!((m - 0.1).abs() < 8e-4, "mean {m}");
        // Variance 1/λ² = 0.01; the sample variance of an exponential has a relative sd
        // of √(8/N) ≈ 0.0045.
        assert!((v / 0.01 - 1.0).abs() < 0.025, "variance {v}");
    }

    #[test]
    fn poisson_counts_per_window_are_poisson() {
        // Counts in 1 s windows at 50/s: mean = variance = 50 (index of dispersion 1).
        let s = Schedule::poisson(50.0).unwrap();
        let mut counts = vec![0f64; 4000];
        for t in s.arrivals(5).take_while(|t| t.as_secs() < 4000) {
            counts[t.as_secs() as usize] += 1.0;
        }
        let (m, v) = mean_var(&counts);
        assert!((m - 50.0).abs() < 0.6, "mean {m}");
        assert!((v / m - 1.0).abs() < 0.12, "dispersion {}", v / m);
    }

    #[test]
    fn gamma_cv_is_one_over_sqrt_shape() {
        for k in [0.25, 0.5, 2.0, 4.0] {
            let s = Schedule::new(20.0, ArrivalProcess::Gamma { burstiness: k }).unwrap();
            let (m, v) = mean_var(&gaps(&s, 2, N));
            let cv = v.sqrt() / m;
            let want = 1.0 / f64::sqrt(k);
            assert!((m - 0.05).abs() / 0.05 < 0.012, "k={k} mean {m}");
            assert!((cv / want - 1.0).abs() < 0.02, "k={k} cv {cv} want {want}");
        }
    }

    #[test]
    fn gamma_shape_one_is_poisson() {
        let g = Schedule::new(3.0, ArrivalProcess::Gamma { burstiness: 1.0 }).unwrap();
        assert_eq!(g.process(), ArrivalProcess::Poisson);
    }

    #[test]
    fn constant_is_exact_and_does_not_drift() {
        let s = Schedule::new(1000.0, ArrivalProcess::Constant).unwrap();
        let t: Vec<Duration> = s.arrivals(0).take(1_000_001).collect();
        assert_eq!(t[0], Duration::ZERO);
        assert_eq!(t[1], Duration::from_millis(1));
        assert_eq!(t[1_000_000], Duration::from_secs(1000));
    }

    #[test]
    fn infinite_rate_sends_everything_at_once() {
        let s = Schedule::poisson(f64::INFINITY).unwrap();
        assert!(s.arrivals(0).take(100).all(|t| t == Duration::ZERO));
    }

    #[test]
    fn same_seed_same_schedule() {
        let s = Schedule::new(7.0, ArrivalProcess::Gamma { burstiness: 0.5 }).unwrap();
        let a: Vec<_> = s.arrivals(9).take(100).collect();
        let b: Vec<_> = s.arrivals(9).take(100).collect();
        let c: Vec<_> = s.arrivals(10).take(100).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // The first outputs of the reference generator seeded with 0 (state advanced by
        // the golden gamma each step, as in Vigna's splitmix64.c).
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix64(0x9e37_79b9_7f4a_7c15), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn bad_rates_and_shapes_are_usage_errors() {
        assert!(Schedule::poisson(0.0).is_err());
        assert!(Schedule::poisson(-1.0).is_err());
        assert!(Schedule::poisson(f64::NAN).is_err());
        for k in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert!(Schedule::new(1.0, ArrivalProcess::Gamma { burstiness: k }).is_err());
        }
    }

    #[test]
    fn think_times_have_the_configured_mean_and_shape() {
        let n = 200_000;
        let exp = ThinkTime {
            mean: Duration::from_millis(500),
            dist: ThinkDist::Exponential,
        };
        let xs: Vec<f64> = exp.draws(7, 3).take(n).map(|d| d.as_secs_f64()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // Exponential: sd = mean; the sample mean within 5 standard errors of 0.5 s.
        assert!((mean - 0.5).abs() < 5.0 * 0.5 / (n as f64).sqrt(), "{mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.02,
            "cv {}",
            var.sqrt() / mean
        );
        // Seeded per conversation: the same draws again, others for another one.
        let again: Vec<Duration> = exp.draws(7, 3).take(5).collect();
        assert_eq!(again, exp.draws(7, 3).take(5).collect::<Vec<_>>());
        assert_ne!(again, exp.draws(7, 4).take(5).collect::<Vec<_>>());
        let constant = ThinkTime {
            mean: Duration::from_millis(250),
            dist: ThinkDist::Constant,
        };
        assert!(
            constant
                .draws(1, 1)
                .take(10)
                .all(|d| d == Duration::from_millis(250))
        );
        let zero = ThinkTime {
            mean: Duration::ZERO,
            dist: ThinkDist::Exponential,
        };
        assert!(zero.draws(1, 1).take(10).all(|d| d == Duration::ZERO));
        assert_eq!(
            "constant".parse::<ThinkDist>().unwrap(),
            ThinkDist::Constant
        );
        assert!(
            "gamma"
                .parse::<ThinkDist>()
                .unwrap_err()
                .0
                .contains("exponential or constant")
        );
        // The command line and the config file know the same names.
        for d in ThinkDist::ALL {
            assert_eq!(d.as_str().parse::<ThinkDist>().unwrap(), d);
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
            let back: ThinkDist = serde_json::from_value(d.as_str().into()).unwrap();
            assert_eq!(back, d);
        }
    }
}
