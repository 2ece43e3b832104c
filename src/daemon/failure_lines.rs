//! The failure log's lines as tracing events: each activity's wording, and the fields a
//! log collector filters on (`target`, `scenario`, `replica` and `check` where present,
//! `reason`, and a probe's `probe_id`). A failure that makes no line of its own is
//! still logged at debug level, so `--log-level debug` shows every attempt.

use std::time::Duration;

use tracing::field::display;

use super::failure_log::{FailureKey, Line};

/// What repeats and fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    Probe,
    /// One answer check of the probes that were answered; its reason is the check.
    AnswerCheck,
    EngineScrape,
    /// A target's replica discovery looks.
    Discovery,
    /// The self-check's self-probes.
    SelfCheck,
    /// The runs of a scenario kind that runs on its own, in its words.
    Kind {
        noun: &'static str,
        nouns: &'static str,
        failed: &'static str,
    },
}

impl Activity {
    fn noun(self) -> &'static str {
        match self {
            Activity::Probe => "probe",
            Activity::AnswerCheck => "answer check",
            Activity::EngineScrape => "engine scrape",
            Activity::Discovery => "replica discovery",
            Activity::SelfCheck => "self-probe",
            Activity::Kind { noun, .. } => noun,
        }
    }

    fn nouns(self) -> &'static str {
        match self {
            Activity::Probe => "probes",
            Activity::AnswerCheck => "answer checks",
            Activity::EngineScrape => "engine scrapes",
            Activity::Discovery => "replica discovery looks",
            Activity::SelfCheck => "self-probes",
            Activity::Kind { nouns, .. } => nouns,
        }
    }

    /// The message of a failure's own line (the one it always had).
    fn failed(self) -> &'static str {
        match self {
            Activity::Probe => "probe failed",
            Activity::AnswerCheck => "answer check failed",
            Activity::EngineScrape => "engine scrape failed",
            Activity::Discovery => "replica discovery failed; keeping the last good set",
            Activity::SelfCheck => "self-probe failed",
            Activity::Kind { failed, .. } => failed,
        }
    }
}

/// One attempt as the log shows it: its id (a probe's record id) and, when it
/// failed, its reason and scrubbed error.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    pub id: Option<u64>,
    pub reason: &'a str,
    pub error: &'a str,
}

/// Writes the lines a failure made; without a line of its own, the failure is logged
/// at debug level.
pub fn failure(activity: Activity, key: &FailureKey, attempt: Attempt<'_>, lines: &[Line]) {
    for line in lines {
        write(activity, key, attempt, line);
    }
    if !lines.iter().any(|l| matches!(l, Line::Failed { .. })) {
        tracing::debug!(
            target = %key.target,
            scenario = key.scenario.as_deref().map(display),
            replica = key.replica.as_deref().map(display),
            check = key.check,
            reason = attempt.reason,
            probe_id = attempt.id,
            error = attempt.error,
            "{}",
            activity.failed()
        );
    }
}

/// Writes one line of the failure log.
pub fn write(activity: Activity, key: &FailureKey, attempt: Attempt<'_>, line: &Line) {
    let scenario = key.scenario.as_deref().map(display);
    let replica = key.replica.as_deref().map(display);
    let check = key.check;
    match line {
        Line::Failed { reason, previous } => tracing::warn!(
            target = %key.target,
            scenario,
            replica,
            check,
            reason,
            previous_reason = previous,
            probe_id = attempt.id,
            error = attempt.error,
            "{}",
            activity.failed()
        ),
        Line::Repeated {
            reason,
            failures,
            succeeded,
            over,
            last_error,
        } => {
            let between = match succeeded {
                0 => String::new(),
                n => format!(" ({n} succeeded)"),
            };
            tracing::warn!(
                target = %key.target,
                scenario,
                replica,
                check,
                reason,
                failures,
                succeeded,
                over_seconds = over.as_secs_f64(),
                "{failures} {} failed with {reason} in the last {}{between}; last error: {last_error}",
                if *failures == 1 { activity.noun() } else { activity.nouns() },
                span(*over),
            );
        }
        Line::Recovered { failures, over } => tracing::info!(
            target = %key.target,
            scenario,
            replica,
            check,
            failures,
            over_seconds = over.as_secs_f64(),
            probe_id = attempt.id,
            "{} recovered after {failures} {} over {}",
            activity.noun(),
            if *failures == 1 { "failure" } else { "failures" },
            span(*over),
        ),
    }
}

/// A duration as a person reads it in a log line: tenths of a second below 10 s, whole
/// seconds below two minutes, then minutes and seconds (or hours and minutes).
pub fn span(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 9.95 {
        return format!("{secs:.1}s");
    }
    let whole = d.as_secs() + u64::from(d.subsec_millis() >= 500);
    if whole < 120 {
        return format!("{whole}s");
    }
    let (h, m, s) = (whole / 3600, whole / 60 % 60, whole % 60);
    match (h, s) {
        (0, 0) => format!("{m}m"),
        (0, _) => format!("{m}m {s}s"),
        _ => format!("{h}h {m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_like_a_person_writes_them() {
        let s = Duration::from_secs_f64;
        assert_eq!(span(s(0.0)), "0.0s");
        assert_eq!(span(s(4.56)), "4.6s");
        assert_eq!(span(s(9.96)), "10s");
        assert_eq!(span(s(60.4)), "60s");
        assert_eq!(span(s(119.6)), "2m");
        assert_eq!(span(s(183.0)), "3m 3s");
        assert_eq!(span(s(7380.0)), "2h 3m");
    }
}
