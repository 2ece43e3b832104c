//! Golden-set accuracy over a rolling window of the last N judged answers, and its
//! Wilson score interval (Wilson, "Probable inference, the law of succession, and
//! statistical inference", JASA 1927): unlike p ± z·√(p(1−p)/n) it stays inside
//! [0, 1] and is not zero-width at 0 % or 100 %. docs/measurement.md writes it out.

use std::collections::VecDeque;

/// The confidence of the interval.
pub const CONFIDENCE: f64 = 0.95;
/// The standard normal quantile of 1 − (1 − [`CONFIDENCE`]) / 2.
pub const Z: f64 = 1.959_963_984_540_054;

/// The last `capacity` verdicts (true: correct).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccuracyWindow {
    capacity: usize,
    verdicts: VecDeque<bool>,
    correct: usize,
}

impl AccuracyWindow {
    pub fn new(capacity: usize) -> Self {
        AccuracyWindow {
            capacity: capacity.max(1),
            verdicts: VecDeque::with_capacity(capacity.clamp(1, 1 << 16)),
            correct: 0,
        }
    }

    /// Adds one verdict; the oldest leaves a full window.
    pub fn push(&mut self, correct: bool) {
        if self.verdicts.len() == self.capacity
            && let Some(old) = self.verdicts.pop_front()
        {
            self.correct -= usize::from(old);
        }
        self.verdicts.push_back(correct);
        self.correct += usize::from(correct);
    }

    /// Judged answers in the window.
    pub fn answers(&self) -> usize {
        self.verdicts.len()
    }

    pub fn correct(&self) -> usize {
        self.correct
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Correct / judged, when any was judged.
    pub fn accuracy(&self) -> Option<f64> {
        let n = self.answers();
        (n > 0).then(|| self.correct as f64 / n as f64)
    }

    /// The Wilson interval at [`CONFIDENCE`], when any was judged.
    pub fn interval(&self) -> Option<(f64, f64)> {
        wilson(self.correct, self.answers(), Z)
    }
}

/// The Wilson score interval of `k` successes in `n` trials at quantile `z`:
/// (p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n), clamped to [0, 1].
pub fn wilson(k: usize, n: usize, z: f64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let n = n as f64;
    let p = k as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64)) -> bool {
        (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9
    }

    #[test]
    fn wilson_matches_the_formula_worked_by_hand() {
        // Worked independently (Python, the same formula).
        assert!(close(
            wilson(8, 10, Z).unwrap(),
            (0.490_162_471_536_641_8, 0.943_317_848_545_624_8)
        ));
        assert!(close(
            wilson(160, 200, Z).unwrap(),
            (0.739_144_813_434_621_2, 0.849_547_990_739_018_9)
        ));
        assert!(close(
            wilson(0, 10, Z).unwrap(),
            (0.0, 0.277_532_799_862_889_2)
        ));
        assert!(close(
            wilson(10, 10, Z).unwrap(),
            (0.722_467_200_137_110_7, 1.0)
        ));
        assert_eq!(wilson(0, 0, Z), None);
        assert_eq!(wilson(3, 2, Z), None);
    }

    #[test]
    fn the_window_keeps_the_last_answers() {
        let mut w = AccuracyWindow::new(4);
        assert_eq!((w.accuracy(), w.interval()), (None, None));
        for v in [false, false, true, true, true, true] {
            w.push(v);
        }
        assert_eq!((w.answers(), w.correct(), w.accuracy()), (4, 4, Some(1.0)));
        w.push(false);
        assert_eq!((w.answers(), w.correct(), w.accuracy()), (4, 3, Some(0.75)));
        assert_eq!(w.interval(), wilson(3, 4, Z));
    }
}
