//! The entry of a scenario whose kind has no table of its own: its state, its last
//! run's findings as short label/value pairs, and its failed runs. The kind's loop
//! writes it (`src/daemon/kinds/`); `kind_table` shows it. A new kind gets its rows on
//! the page without a change here.

use std::sync::{Arc, Mutex};

/// A completed run: when, its verdict and what it found.
#[derive(Debug, Clone, PartialEq)]
pub struct KindRun {
    /// Unix time the run completed.
    pub at: f64,
    /// The verdict in a few words ("model listed"), and whether it is the healthy one.
    pub verdict: String,
    pub ok: bool,
    /// What it found, in the kind's order.
    pub findings: Vec<(String, String)>,
}

/// Live state of one such scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct KindStatus {
    pub target: String,
    pub model: String,
    pub scenario: String,
    /// The `kind:` value.
    pub kind: &'static str,
    /// Seconds between runs.
    pub every: f64,
    pub runs: u64,
    pub failures: u64,
    pub last: Option<KindRun>,
    /// The last failed run: when, and its error (secrets scrubbed by the kind).
    pub last_failure: Option<(f64, String)>,
}

/// A handle to one entry; its loop holds it.
pub type KindHandle = Arc<Mutex<KindStatus>>;

/// What the newest attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindState {
    NoRunYet,
    Failing,
    /// The last run's verdict is not the healthy one.
    Bad,
    Ok,
}

impl KindStatus {
    pub fn new(target: &str, model: &str, scenario: &str, kind: &'static str, every: f64) -> Self {
        KindStatus {
            target: target.to_string(),
            model: model.to_string(),
            scenario: scenario.to_string(),
            kind,
            every,
            runs: 0,
            failures: 0,
            last: None,
            last_failure: None,
        }
    }

    pub fn record_run(&mut self, run: KindRun) {
        self.runs += 1;
        self.last = Some(run);
    }

    /// Records a failed run at `at` with its (scrubbed) error.
    pub fn record_failure(&mut self, at: f64, error: String) {
        self.failures += 1;
        self.last_failure = Some((at, error));
    }

    /// The newest attempt decides: a failure after the last run is `Failing`.
    pub fn state(&self) -> KindState {
        match (&self.last, &self.last_failure) {
            (None, None) => KindState::NoRunYet,
            (Some(run), Some((failed_at, _))) if *failed_at > run.at => KindState::Failing,
            (None, Some(_)) => KindState::Failing,
            (Some(run), _) if !run.ok => KindState::Bad,
            (Some(_), _) => KindState::Ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(at: f64, ok: bool) -> KindRun {
        KindRun {
            at,
            verdict: if ok { "fine" } else { "broken" }.into(),
            ok,
            findings: Vec::new(),
        }
    }

    #[test]
    fn the_newest_attempt_decides_the_state() {
        let mut s = KindStatus::new("t", "m", "s", "demo", 60.0);
        assert_eq!(s.state(), KindState::NoRunYet);
        s.record_failure(10.0, "refused".into());
        assert_eq!(s.state(), KindState::Failing);
        s.record_run(run(20.0, true));
        assert_eq!(s.state(), KindState::Ok);
        s.record_run(run(30.0, false));
        assert_eq!(s.state(), KindState::Bad);
        s.record_failure(40.0, "timeout".into());
        assert_eq!(s.state(), KindState::Failing);
        assert_eq!((s.runs, s.failures), (2, 2));
    }
}
