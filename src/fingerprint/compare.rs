//! The divergence of one set of answers from another (docs/measurement.md,
//! "Fingerprints"): per prompt, the positions up to and including the first where the
//! chosen tokens differ, compared by the total-variation distance of their top-k
//! distributions; over all prompts, the mean distance, the token agreement and the
//! first divergence. Pure.

use serde::{Deserialize, Serialize};

use super::answer::{Answer, Position};

/// How far one set of answers is from another (the reference).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    /// Mean total-variation distance over every compared position of every prompt, in
    /// [0, 1]; 0 when no position was compared.
    pub divergence: f64,
    /// Matched token prefixes over the reference's tokens, summed over prompts, in
    /// [0, 1]; 1 when the reference has no tokens.
    pub token_agreement: f64,
    /// The earliest position (0-based, over all prompts) where the chosen tokens
    /// differ, or where one answer ended and the other did not; `None` when every
    /// answer matched its reference token for token.
    pub first_divergence: Option<usize>,
    /// How many positions were compared.
    pub positions: usize,
}

/// The total-variation distance between two positions' top-k distributions: half the
/// sum of absolute differences over the union of listed tokens (a token one side does
/// not list counts as 0 there), plus the unlisted remainder `1 − Σp` of each side as
/// one more outcome.
pub fn total_variation(a: &Position, b: &Position) -> f64 {
    let pa: Vec<(&str, f64)> = a
        .top
        .iter()
        .map(|t| (t.token.as_str(), t.logprob.exp()))
        .collect();
    let pb: Vec<(&str, f64)> = b
        .top
        .iter()
        .map(|t| (t.token.as_str(), t.logprob.exp()))
        .collect();
    let of = |list: &[(&str, f64)], tok: &str| {
        list.iter()
            .filter(|(t, _)| *t == tok)
            .map(|(_, p)| p)
            .sum::<f64>()
    };
    let mut sum = 0.0;
    for (tok, p) in &pa {
        sum += (p - of(&pb, tok)).abs();
    }
    for (tok, q) in &pb {
        if !pa.iter().any(|(t, _)| t == tok) {
            sum += q;
        }
    }
    let rest = |list: &[(&str, f64)]| (1.0 - list.iter().map(|(_, p)| p).sum::<f64>()).max(0.0);
    sum += (rest(&pa) - rest(&pb)).abs();
    (sum / 2.0).clamp(0.0, 1.0)
}

/// One prompt: the distances of the compared positions, the matched prefix length and
/// where the answers first differ.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptDivergence {
    pub distances: Vec<f64>,
    pub matched: usize,
    pub first_divergence: Option<usize>,
}

/// Walks both answers while their chosen tokens agree; the first position where they
/// differ is compared too and ends the walk (later positions follow different
/// prefixes). An answer that ends before the other diverges where it ends.
pub fn prompt_divergence(reference: &Answer, other: &Answer) -> PromptDivergence {
    let mut distances = Vec::new();
    for (i, (r, o)) in reference.positions.iter().zip(&other.positions).enumerate() {
        distances.push(total_variation(r, o));
        if r.token != o.token {
            return PromptDivergence {
                distances,
                matched: i,
                first_divergence: Some(i),
            };
        }
    }
    let common = reference.positions.len().min(other.positions.len());
    let same_length = reference.positions.len() == other.positions.len();
    PromptDivergence {
        distances,
        matched: common,
        first_divergence: (!same_length).then_some(common),
    }
}

/// Every prompt's answer against its reference answer (same order, same length).
pub fn divergence(reference: &[Answer], other: &[Answer]) -> Divergence {
    let mut total = 0.0;
    let mut positions = 0;
    let (mut matched, mut expected) = (0, 0);
    let mut first: Option<usize> = None;
    for (r, o) in reference.iter().zip(other) {
        let p = prompt_divergence(r, o);
        total += p.distances.iter().sum::<f64>();
        positions += p.distances.len();
        matched += p.matched;
        expected += r.positions.len();
        if let Some(at) = p.first_divergence {
            first = Some(first.map_or(at, |f| f.min(at)));
        }
    }
    Divergence {
        divergence: if positions == 0 {
            0.0
        } else {
            total / positions as f64
        },
        token_agreement: if expected == 0 {
            1.0
        } else {
            matched as f64 / expected as f64
        },
        first_divergence: first,
        positions,
    }
}

/// How much divergence the endpoint shows against itself, measured at record time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// The largest divergence of a repeat from the reference answers.
    pub divergence: f64,
    /// The lowest token agreement of a repeat with the reference answers.
    pub token_agreement: f64,
}

/// Drift is judged against the endpoint's own noise times this factor ...
pub const NOISE_FACTOR: f64 = 3.0;
/// ... and never below this divergence: a perfectly repeatable endpoint (noise 0)
/// must not flag a rounding difference.
pub const DIVERGENCE_FLOOR: f64 = 0.02;
/// Token agreement may fall this far below the noise's lowest before it is drift.
pub const AGREEMENT_MARGIN: f64 = 0.1;

/// The limits a candidate is held to, derived from the recorded noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// Drift when the divergence is above this.
    pub divergence: f64,
    /// Drift when the token agreement is below this.
    pub token_agreement: f64,
}

impl Noise {
    /// `max(NOISE_FACTOR × noise, DIVERGENCE_FLOOR)` and
    /// `noise agreement − AGREEMENT_MARGIN`.
    pub fn threshold(&self) -> Threshold {
        Threshold {
            divergence: (NOISE_FACTOR * self.divergence).max(DIVERGENCE_FLOOR),
            token_agreement: (self.token_agreement - AGREEMENT_MARGIN).max(0.0),
        }
    }
}

impl Threshold {
    /// Whether `d` is beyond the endpoint's own noise, by either figure.
    pub fn drifted(&self, d: &Divergence) -> bool {
        self.divergence_beyond(d) || self.agreement_below(d)
    }

    /// Whether `d`'s divergence is above its limit.
    pub fn divergence_beyond(&self, d: &Divergence) -> bool {
        d.divergence > self.divergence
    }

    /// Whether `d`'s token agreement is below its limit.
    pub fn agreement_below(&self, d: &Divergence) -> bool {
        d.token_agreement < self.token_agreement
    }
}

#[cfg(test)]
mod tests {
    use super::super::answer::Alt;
    use super::*;

    fn pos(token: &str, top: &[(&str, f64)]) -> Position {
        Position {
            token: token.into(),
            logprob: top[0].1.ln(),
            top: top
                .iter()
                .map(|(t, p)| Alt {
                    token: (*t).into(),
                    logprob: p.ln(),
                })
                .collect(),
        }
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn total_variation_counts_unlisted_tokens_and_the_remainder() {
        let a = pos("x", &[("x", 0.6), ("y", 0.3)]);
        close(total_variation(&a, &a), 0.0);
        // x: |0.6-0.5|, y: |0.3-0| , z: |0-0.4|, rest: |0.1-0.1| -> 0.8 / 2
        let b = pos("x", &[("x", 0.5), ("z", 0.4)]);
        close(total_variation(&a, &b), 0.4);
        close(total_variation(&b, &a), 0.4);
        let c = pos("q", &[("q", 1.0)]);
        // x 0.6, y 0.3, q 1.0, rest 0.1 -> 2.0 / 2
        close(total_variation(&a, &c), 1.0);
    }

    #[test]
    fn walk_stops_at_the_first_different_token() {
        let r = Answer {
            positions: vec![
                pos("a", &[("a", 0.9)]),
                pos("b", &[("b", 0.8)]),
                pos("c", &[("c", 0.7)]),
            ],
        };
        let o = Answer {
            positions: vec![
                pos("a", &[("a", 0.8)]),
                pos("x", &[("x", 0.5), ("b", 0.4)]),
                pos("c", &[("c", 0.7)]),
            ],
        };
        let p = prompt_divergence(&r, &o);
        assert_eq!(p.matched, 1);
        assert_eq!(p.first_divergence, Some(1));
        assert_eq!(p.distances.len(), 2);
        close(p.distances[0], 0.1);
        // b |0.8-0.4|, x 0.5, rest |0.2-0.1| -> 1.0/2
        close(p.distances[1], 0.5);
        let d = divergence(&[r.clone(), r.clone()], &[o, r.clone()]);
        close(d.divergence, (0.1 + 0.5) / 5.0);
        close(d.token_agreement, 4.0 / 6.0);
        assert_eq!(d.first_divergence, Some(1));
        assert_eq!(d.positions, 5);
    }

    #[test]
    fn an_answer_that_ends_early_diverges_where_it_ends() {
        let r = Answer {
            positions: vec![pos("a", &[("a", 0.9)]), pos("b", &[("b", 0.9)])],
        };
        let short = Answer {
            positions: vec![pos("a", &[("a", 0.9)])],
        };
        let p = prompt_divergence(&r, &short);
        assert_eq!((p.matched, p.first_divergence), (1, Some(1)));
        let same = divergence(std::slice::from_ref(&r), std::slice::from_ref(&r));
        assert_eq!(same.first_divergence, None);
        close(same.token_agreement, 1.0);
        close(same.divergence, 0.0);
    }

    #[test]
    fn threshold_from_noise() {
        let t = Noise {
            divergence: 0.0,
            token_agreement: 1.0,
        }
        .threshold();
        close(t.divergence, DIVERGENCE_FLOOR);
        close(t.token_agreement, 0.9);
        let t = Noise {
            divergence: 0.05,
            token_agreement: 0.05,
        }
        .threshold();
        close(t.divergence, 0.15000000000000002);
        close(t.token_agreement, 0.0);
        let d = Divergence {
            divergence: 0.15,
            token_agreement: 1.0,
            first_divergence: None,
            positions: 3,
        };
        assert!(!t.drifted(&d));
        assert!(t.drifted(&Divergence {
            divergence: 0.16,
            ..d
        }));
    }
}
