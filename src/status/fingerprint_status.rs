//! A fingerprint scenario's entry on the status board: the limits its baseline holds the
//! endpoint to, the last run's verdict and the failed runs. The daemon's fingerprint
//! loop writes it (src/daemon/fingerprint.rs); `fingerprint_table` shows it.

use std::sync::{Arc, Mutex};

use crate::fingerprint::{Divergence, Threshold};

/// A completed run: when, what it found, and whether that is drift.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FingerprintRun {
    /// Unix time the run completed.
    pub at: f64,
    pub divergence: Divergence,
    pub drifted: bool,
}

/// What the last attempt came to, as the page's state column says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FingerprintState {
    /// No run has completed or failed yet.
    NoRunYet,
    /// The last attempt failed (the last verdict, if any, is older).
    Failing,
    /// The last run diverged beyond the baseline's noise.
    Drift,
    /// The last run stayed within the baseline's noise.
    Same,
}

impl FingerprintState {
    pub fn as_str(self) -> &'static str {
        match self {
            FingerprintState::NoRunYet => "no run yet",
            FingerprintState::Failing => "run failing",
            FingerprintState::Drift => "drift",
            FingerprintState::Same => "same model",
        }
    }
}

/// Live state of one fingerprint scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct FingerprintStatus {
    pub target: String,
    pub model: String,
    pub scenario: String,
    /// The limits derived from the baseline's recorded noise.
    pub threshold: Threshold,
    /// Seconds between runs.
    pub every: f64,
    /// Runs completed (verdicts), and runs that failed.
    pub runs: u64,
    pub failures: u64,
    pub last: Option<FingerprintRun>,
    /// The last failed run: when, and its error (secrets scrubbed by the daemon).
    pub last_failure: Option<(f64, String)>,
}

/// A handle to one fingerprint scenario's entry; its loop holds it.
pub type FingerprintHandle = Arc<Mutex<FingerprintStatus>>;

impl FingerprintStatus {
    pub fn new(
        target: &str,
        model: &str,
        scenario: &str,
        threshold: Threshold,
        every: f64,
    ) -> Self {
        FingerprintStatus {
            target: target.to_string(),
            model: model.to_string(),
            scenario: scenario.to_string(),
            threshold,
            every,
            runs: 0,
            failures: 0,
            last: None,
            last_failure: None,
        }
    }

    /// Records a completed run at `at` and judges it against the threshold.
    pub fn record_run(&mut self, at: f64, divergence: Divergence) {
        self.runs += 1;
        self.last = Some(FingerprintRun {
            at,
            divergence,
            drifted: self.threshold.drifted(&divergence),
        });
    }

    /// Records a failed run at `at` with its (scrubbed) error.
    pub fn record_failure(&mut self, at: f64, error: String) {
        self.failures += 1;
        self.last_failure = Some((at, error));
    }

    /// The newest attempt decides: a failure after the last verdict is `Failing`.
    pub fn state(&self) -> FingerprintState {
        match (&self.last, &self.last_failure) {
            (None, None) => FingerprintState::NoRunYet,
            (Some(run), Some((failed_at, _))) if *failed_at > run.at => FingerprintState::Failing,
            (None, Some(_)) => FingerprintState::Failing,
            (Some(run), _) if run.drifted => FingerprintState::Drift,
            (Some(_), _) => FingerprintState::Same,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn divergence(divergence: f64, token_agreement: f64) -> Divergence {
        Divergence {
            divergence,
            token_agreement,
            first_divergence: (token_agreement < 1.0).then_some(3),
            positions: 16,
        }
    }

    fn status() -> FingerprintStatus {
        let threshold = Threshold {
            divergence: 0.02,
            token_agreement: 0.9,
        };
        FingerprintStatus::new("t", "m", "fp", threshold, 600.0)
    }

    #[test]
    fn the_newest_attempt_decides_the_state() {
        let mut s = status();
        assert_eq!(s.state(), FingerprintState::NoRunYet);
        s.record_failure(10.0, "connection refused".into());
        assert_eq!(s.state(), FingerprintState::Failing);
        s.record_run(20.0, divergence(0.001, 1.0));
        assert_eq!(s.state(), FingerprintState::Same);
        s.record_run(30.0, divergence(0.001, 0.5));
        assert_eq!(s.state(), FingerprintState::Drift, "agreement below 0.9");
        s.record_run(40.0, divergence(0.05, 1.0));
        assert_eq!(s.state(), FingerprintState::Drift, "divergence above 0.02");
        s.record_failure(50.0, "timeout".into());
        assert_eq!(s.state(), FingerprintState::Failing);
        assert_eq!((s.runs, s.failures), (3, 2));
        assert_eq!(s.last.unwrap().at, 40.0);
    }

    #[test]
    fn a_run_at_the_threshold_is_not_drift() {
        let mut s = status();
        s.record_run(1.0, divergence(0.02, 0.9));
        assert_eq!(s.state(), FingerprintState::Same);
    }
}
