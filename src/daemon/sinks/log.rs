//! The log sink: every probe at debug level, and failures (of the probe, and of each of
//! its answer checks) by state change through the failure log at warn.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::daemon::failure_lines::{self, Activity, Attempt};
use crate::daemon::failure_log::{FailureKey, FailureLog};
use crate::record::RequestRecord;
use crate::secret::{self, Secret};
use crate::sink::{RecordSink, Skip, Verdict};

use super::shown_error;

pub struct LogSink {
    /// Whose failures the log tells of.
    pub key: FailureKey,
    pub failures: FailureLog,
    /// How often a repeating failure is summarised; a reload changes it in place.
    pub summary_interval: watch::Receiver<Duration>,
    pub target: String,
    pub scenario: String,
    /// The target's secrets, scrubbed from every logged error.
    pub secrets: Vec<Secret>,
}

impl RecordSink for LogSink {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        let error = shown_error(r, &self.secrets);
        let now = Instant::now();
        self.log_outcome(r, verdict.good, error.as_deref().unwrap_or(""), now);
        self.log_checks(r, now);
        Ok(())
    }

    fn skipped(&mut self, skip: Skip) -> anyhow::Result<()> {
        tracing::debug!(target = %self.target, scenario = %self.scenario, reason = skip.reason.as_str(), "probe skipped");
        Ok(())
    }
}

impl LogSink {
    /// Logs a probe's outcome: every one at debug level, failures by state change
    /// (the failure log) at warn.
    fn log_outcome(&mut self, r: &RequestRecord, good: bool, error: &str, now: Instant) {
        self.failures
            .set_interval(*self.summary_interval.borrow_and_update());
        let attempt = Attempt {
            id: Some(r.id),
            reason: r.outcome.as_str(),
            error,
        };
        if r.is_success() {
            tracing::debug!(
                target = %self.target,
                scenario = %self.scenario,
                probe_id = r.id,
                ttft_ms = r.ttft().map(|d| d.as_secs_f64() * 1e3),
                e2e_ms = r.e2e().map(|d| d.as_secs_f64() * 1e3),
                output_tokens = r.output_tokens(),
                good,
                "probe ok"
            );
            if let Some(line) = self.failures.success(&self.key, now) {
                failure_lines::write(Activity::Probe, &self.key, attempt, &line);
            }
        } else {
            let lines = self
                .failures
                .failure(&self.key, now, r.outcome.as_str(), error);
            failure_lines::failure(Activity::Probe, &self.key, attempt, &lines);
        }
    }

    /// Logs a probe's answer checks by state change, each check a stream of its own
    /// whose reason is the check.
    fn log_checks(&mut self, r: &RequestRecord, now: Instant) {
        for c in &r.checks {
            let check = c.check.as_str();
            let key = self.key.with_check(check);
            let error = c.reason.as_deref().map_or_else(String::new, |why| {
                secret::scrub(why, self.secrets.iter().map(Secret::expose))
            });
            let attempt = Attempt {
                id: Some(r.id),
                reason: check,
                error: &error,
            };
            if c.passed {
                if let Some(line) = self.failures.success(&key, now) {
                    failure_lines::write(Activity::AnswerCheck, &key, attempt, &line);
                }
            } else {
                let lines = self.failures.failure(&key, now, check, &error);
                failure_lines::failure(Activity::AnswerCheck, &key, attempt, &lines);
            }
        }
    }
}
