//! A rate's golden-set accuracy (`bench --golden`): correct over judged answers with
//! its 95 % Wilson interval ([`crate::check::accuracy`], the daemon's definition), the
//! runs of `--repeat` pooled, and the summary line that says what to record as a
//! daemon scenario's `golden.baseline` (the interval's lower bound).

use serde::Serialize;

use crate::check::accuracy::{CONFIDENCE, Z, wilson};

/// Decimals the summary line shows of an accuracy.
const DECIMALS: i32 = 3;

/// Fewest judged answers a golden gate reads a figure from, as the
/// LlmprobeGoldenAccuracyDrop alert (alerts/llmprobe-alerts.yaml): below it the
/// interval is too wide to pass a model on, so the gate has no figure and fails.
pub const MIN_GATED_ANSWERS: u64 = 50;

/// The golden-set answers of one rate (the `golden` object of `--json-out`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GoldenReport {
    /// Answers judged: those of the completed requests (a failed request is a failure,
    /// never a wrong answer).
    pub judged: u64,
    /// Of `judged`, the answers judged correct.
    pub correct: u64,
    /// correct / judged (null when nothing was judged).
    pub accuracy: Option<f64>,
    /// Lower bound of the accuracy's 95 % Wilson score interval (null when nothing
    /// was judged): what a daemon scenario's `golden.baseline` records.
    pub lower: Option<f64>,
    /// Upper bound of that interval: `--min-golden-accuracy` and the
    /// LlmprobeGoldenAccuracyDrop alert fail when it is below their threshold.
    pub upper: Option<f64>,
}

impl GoldenReport {
    pub fn from_counts(correct: u64, judged: u64) -> GoldenReport {
        let correct = correct.min(judged);
        let interval = usize::try_from(judged)
            .ok()
            .zip(usize::try_from(correct).ok())
            .and_then(|(n, k)| wilson(k, n, Z));
        GoldenReport {
            judged,
            correct,
            accuracy: (judged > 0).then(|| correct as f64 / judged as f64),
            lower: interval.map(|(lo, _)| lo),
            upper: interval.map(|(_, hi)| hi),
        }
    }

    /// The answers of several runs (`--repeat`) as one sample; `None` when no run
    /// asked a golden set.
    pub fn pooled<'a>(runs: impl IntoIterator<Item = &'a GoldenReport>) -> Option<GoldenReport> {
        let (mut correct, mut judged, mut any) = (0, 0, false);
        for g in runs {
            correct += g.correct;
            judged += g.judged;
            any = true;
        }
        any.then(|| GoldenReport::from_counts(correct, judged))
    }

    /// The summary line of the rate `rate`. The baseline it names is the lower bound
    /// rounded down, so it is never above the bound itself.
    pub fn line(&self, rate: &str) -> String {
        let (Some(acc), Some(lo), Some(hi)) = (self.accuracy, self.lower, self.upper) else {
            return format!(
                "rate {rate}: golden accuracy unknown: no answer was judged (no request completed)"
            );
        };
        let scale = 10f64.powi(DECIMALS);
        let baseline = (lo * scale).floor() / scale;
        let d = DECIMALS as usize;
        // A daemon baseline must be above 0 (config/golden.rs).
        let advice = if baseline > 0.0 {
            format!(
                "as a daemon baseline (the lower bound, rounded down): golden.baseline: {baseline:.d$}"
            )
        } else {
            "no daemon baseline: the lower bound rounds down to 0".to_string()
        };
        let mut line = format!(
            "rate {rate}: golden accuracy {acc:.d$} ({} of {} judged answers correct), {:.0} % \
             Wilson interval [{lo:.d$}, {hi:.d$}]; {advice}",
            self.correct,
            self.judged,
            CONFIDENCE * 100.0,
        );
        if self.judged < MIN_GATED_ANSWERS {
            line.push_str(&format!(
                "; fewer than {MIN_GATED_ANSWERS} judged answers: too few for a golden gate"
            ));
        }
        line
    }

    /// The figure a golden gate reads: `None` under [`MIN_GATED_ANSWERS`] answers.
    pub fn gated(&self, figure: Option<f64>) -> Option<f64> {
        figure.filter(|_| self.judged >= MIN_GATED_ANSWERS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_become_the_accuracy_and_its_wilson_interval() {
        let g = GoldenReport::from_counts(160, 200);
        let (lo, hi) = wilson(160, 200, Z).unwrap();
        assert_eq!(
            g,
            GoldenReport {
                judged: 200,
                correct: 160,
                accuracy: Some(0.8),
                lower: Some(lo),
                upper: Some(hi),
            }
        );
        let none = GoldenReport::from_counts(0, 0);
        assert_eq!((none.accuracy, none.lower, none.upper), (None, None, None));
        let json = serde_json::to_value(g).unwrap();
        assert_eq!(json["judged"], 200);
        assert_eq!(json["upper"], hi);
    }

    #[test]
    fn repeat_runs_pool_their_answers() {
        let runs = [
            GoldenReport::from_counts(90, 100),
            GoldenReport::from_counts(70, 100),
        ];
        assert_eq!(
            GoldenReport::pooled(&runs),
            Some(GoldenReport::from_counts(160, 200))
        );
        assert_eq!(GoldenReport::pooled(&[]), None);
    }

    #[test]
    fn the_line_names_the_baseline_rounded_down() {
        // Wilson(151, 200) = [0.69095…, 0.80943…].
        assert_eq!(
            GoldenReport::from_counts(151, 200).line("inf"),
            "rate inf: golden accuracy 0.755 (151 of 200 judged answers correct), 95 % \
             Wilson interval [0.691, 0.809]; as a daemon baseline (the lower bound, rounded \
             down): golden.baseline: 0.690"
        );
        // Wilson(10, 10) = [0.72246…, 1].
        assert!(
            GoldenReport::from_counts(10, 10)
                .line("2")
                .contains("[0.722, 1.000]; as a daemon baseline (the lower bound, rounded down): golden.baseline: 0.722")
        );
        assert!(
            GoldenReport::from_counts(10, 10)
                .line("2")
                .ends_with("; fewer than 50 judged answers: too few for a golden gate")
        );
        assert!(
            !GoldenReport::from_counts(50, 50)
                .line("2")
                .contains("too few")
        );
        // A lower bound under 0.001 is no baseline a daemon accepts.
        assert_eq!(
            GoldenReport::from_counts(0, 114).line("2"),
            "rate 2: golden accuracy 0.000 (0 of 114 judged answers correct), 95 % Wilson \
             interval [0.000, 0.033]; no daemon baseline: the lower bound rounds down to 0"
        );
        assert_eq!(
            GoldenReport::from_counts(0, 0).line("2"),
            "rate 2: golden accuracy unknown: no answer was judged (no request completed)"
        );
    }
}
