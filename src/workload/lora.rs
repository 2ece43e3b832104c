//! The traffic split between a base model and its LoRA adapters: each adapter's weight,
//! the base model's share being what they leave (1 − their sum), the rules a split must
//! keep, and which model one request goes to. `bench --lora-split` and the daemon's
//! `adapters:` both use it: bench picks a model per request from the seed, the daemon
//! runs each model's probes at the scenario's rate × its share (a Poisson stream split
//! by independent weighted draws is the same as one Poisson stream per share).

use crate::schedule::splitmix64;

/// One adapter and its share of the traffic, in (0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct Adapter {
    pub name: String,
    pub weight: f64,
}

/// Why a split is refused, and the adapter it is about (its position), if one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    pub index: Option<usize>,
    /// What is wrong, to be placed by the caller (a flag, FILE:LINE:COL).
    pub reason: String,
}

/// A checked split: adapters with weights in (0, 1], unique names other than the base
/// model's, their sum at most 1.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSplit {
    pub base: String,
    pub adapters: Vec<Adapter>,
}

/// Rounding slack on the sum of weights written in decimal (0.1 + 0.2 + 0.7).
const SUM_SLACK: f64 = 1e-9;

/// Whether `w` may be one adapter's weight.
pub fn check_weight(w: f64) -> Result<(), String> {
    if w.is_finite() && w > 0.0 && w <= 1.0 {
        Ok(())
    } else {
        Err(format!(
            "weight {w} is outside (0, 1]: an adapter's share of the traffic"
        ))
    }
}

impl ModelSplit {
    pub fn new(base: &str, adapters: Vec<Adapter>) -> Result<Self, SplitError> {
        let at = |i: usize, reason: String| SplitError {
            index: Some(i),
            reason,
        };
        for (i, a) in adapters.iter().enumerate() {
            if a.name.trim().is_empty() {
                return Err(at(i, "an adapter's name must not be empty".into()));
            }
            if a.name == base {
                return Err(at(
                    i,
                    format!(
                        "{:?} is the base model: its share is what the adapters leave",
                        a.name
                    ),
                ));
            }
            if adapters[..i].iter().any(|b| b.name == a.name) {
                return Err(at(i, format!("adapter {:?} is listed twice", a.name)));
            }
            check_weight(a.weight).map_err(|r| at(i, r))?;
        }
        let sum: f64 = adapters.iter().map(|a| a.weight).sum();
        if sum > 1.0 + SUM_SLACK {
            return Err(SplitError {
                index: None,
                reason: format!(
                    "the adapters' weights add up to {sum}: at most 1 (the base model gets 1 − their sum)"
                ),
            });
        }
        Ok(ModelSplit {
            base: base.to_string(),
            adapters,
        })
    }

    /// The discovered adapters' split: each gets `weight`; when they would take more
    /// than all the traffic (n × weight > 1) each gets 1/n and the base none. Without a
    /// weight, the base and every adapter get equal shares.
    pub fn discovered(base: &str, names: &[String], weight: Option<f64>) -> Self {
        let n = names.len() as f64;
        let each = match weight {
            _ if names.is_empty() => 0.0,
            Some(w) if w * n > 1.0 => 1.0 / n,
            Some(w) => w,
            None => 1.0 / (n + 1.0),
        };
        ModelSplit {
            base: base.to_string(),
            adapters: names
                .iter()
                .map(|name| Adapter {
                    name: name.clone(),
                    weight: each,
                })
                .collect(),
        }
    }

    /// The base model's share: 1 − the adapters' weights (never below 0).
    pub fn base_share(&self) -> f64 {
        (1.0 - self.adapters.iter().map(|a| a.weight).sum::<f64>()).max(0.0)
    }

    /// Every model with its share, the base first, shares of 0 left out.
    pub fn shares(&self) -> Vec<(&str, f64)> {
        std::iter::once((self.base.as_str(), self.base_share()))
            .chain(self.adapters.iter().map(|a| (a.name.as_str(), a.weight)))
            .filter(|(_, s)| *s > SUM_SLACK)
            .collect()
    }

    /// The model request `index` of a run seeded `seed` goes to: a uniform draw from
    /// the seed and the index against the cumulative shares, so a run is reproducible
    /// and its counts are a multinomial draw with these shares.
    pub fn pick(&self, seed: u64, index: u64) -> &str {
        let draw = splitmix64(splitmix64(seed ^ 0x4c6f_5241) ^ index);
        let u = (draw >> 11) as f64 / (1u64 << 53) as f64;
        let mut acc = 0.0;
        for (model, share) in self.shares() {
            acc += share;
            if u < acc {
                return model;
            }
        }
        // Rounding left u above the last sum.
        self.shares().last().map_or(&self.base, |(m, _)| m)
    }

    /// The seed of one model's probes in the daemon: the scenario's own for the base
    /// model, another per adapter.
    pub fn seed_for(&self, seed: u64, model: &str) -> u64 {
        if model == self.base {
            return seed;
        }
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in model.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        splitmix64(seed ^ h)
    }
}

/// Parses `name=weight,…` (bench's `--lora-split`).
pub fn parse_split(base: &str, text: &str) -> Result<ModelSplit, SplitError> {
    let mut adapters = Vec::new();
    for (i, item) in text.split(',').map(str::trim).enumerate() {
        let Some((name, weight)) = item.split_once('=') else {
            return Err(SplitError {
                index: Some(i),
                reason: format!("{item:?} is not NAME=WEIGHT"),
            });
        };
        let weight: f64 = weight.trim().parse().map_err(|_| SplitError {
            index: Some(i),
            reason: format!("{:?} is not a number", weight.trim()),
        })?;
        adapters.push(Adapter {
            name: name.trim().to_string(),
            weight,
        });
    }
    ModelSplit::new(base, adapters)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(items: &[(&str, f64)]) -> Result<ModelSplit, SplitError> {
        let adapters = items
            .iter()
            .map(|(n, w)| Adapter {
                name: (*n).to_string(),
                weight: *w,
            })
            .collect();
        ModelSplit::new("base", adapters)
    }

    #[test]
    fn the_base_gets_what_the_adapters_leave() {
        let s = split(&[("a", 0.25), ("b", 0.5)]).unwrap();
        assert_eq!(s.shares(), [("base", 0.25), ("a", 0.25), ("b", 0.5)]);
        let all = split(&[("a", 0.3), ("b", 0.7)]).unwrap();
        assert_eq!(all.shares(), [("a", 0.3), ("b", 0.7)]);
    }

    #[test]
    fn bad_splits_say_which_adapter() {
        for (items, index, says) in [
            (vec![("a", 0.0)], Some(0), "outside (0, 1]"),
            (vec![("a", 0.5), ("b", 1.5)], Some(1), "outside (0, 1]"),
            (vec![("a", f64::NAN)], Some(0), "outside (0, 1]"),
            (vec![("a", 0.5), ("a", 0.1)], Some(1), "twice"),
            (vec![("base", 0.5)], Some(0), "base model"),
            (vec![("", 0.5)], Some(0), "empty"),
            (vec![("a", 0.6), ("b", 0.6)], None, "add up to"),
        ] {
            let e = split(&items).unwrap_err();
            assert_eq!(e.index, index, "{items:?}");
            assert!(e.reason.contains(says), "{}", e.reason);
        }
        assert!(split(&[("a", 0.1), ("b", 0.2), ("c", 0.7)]).is_ok());
        assert!(
            parse_split("base", "a=0.5,b")
                .unwrap_err()
                .reason
                .contains("NAME=WEIGHT")
        );
        assert!(
            parse_split("base", "a=x")
                .unwrap_err()
                .reason
                .contains("not a number")
        );
    }

    #[test]
    fn discovered_adapters_share_by_the_rule() {
        let names = |n: usize| (0..n).map(|i| format!("ad{i}")).collect::<Vec<_>>();
        let s = ModelSplit::discovered("base", &names(2), Some(0.25));
        assert_eq!(s.base_share(), 0.5);
        let s = ModelSplit::discovered("base", &names(5), Some(0.25));
        assert!(s.adapters.iter().all(|a| a.weight == 0.2));
        assert_eq!(s.base_share(), 0.0);
        let s = ModelSplit::discovered("base", &names(3), None);
        assert!(s.adapters.iter().all(|a| a.weight == 0.25));
        assert_eq!(s.base_share(), 0.25);
        assert_eq!(
            ModelSplit::discovered("base", &[], Some(0.5)).shares(),
            [("base", 1.0)]
        );
    }

    #[test]
    fn picks_follow_the_shares() {
        // 4000 seeded draws: each count is within 5 standard deviations of n × share
        // (a multinomial draw; the seed makes the run the same every time).
        let s = split(&[("a", 0.25), ("b", 0.125)]).unwrap();
        let n = 4000u64;
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..n {
            *counts.entry(s.pick(7, i)).or_insert(0u64) += 1;
        }
        for (model, share) in s.shares() {
            let (mean, sd) = (n as f64 * share, (n as f64 * share * (1.0 - share)).sqrt());
            let got = counts[model] as f64;
            assert!((got - mean).abs() < 5.0 * sd, "{model}: {got} for {mean}");
        }
        assert_eq!(s.pick(7, 11), s.pick(7, 11));
    }
}
