//! The fingerprint kind: every `every` (the first run at once), the baseline's prompts
//! are asked one after the other and the verdict is published in the
//! `llmprobe_fingerprint_*` series (declared here) and on the status board. A failed run
//! is counted and goes through the failure log (its error scrubbed of the target's
//! secrets); the next run comes on time all the same.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::{FrontDoor, ScenarioKind};
use crate::clock::unix_now;
use crate::config::TargetPlan;
use crate::config::kinds::KindName;
use crate::config::kinds::fingerprint::FingerprintPlan;
use crate::daemon::failure_lines::Activity;
use crate::daemon::shared::Shared;
use crate::exposition::families::{counter, gauge};
use crate::exposition::{Family, Registered, Scope};
use crate::fingerprint::{Divergence, Noise, Sampler};
use crate::secret::{Secret, scrub};
use crate::status::fingerprint_status::FingerprintStatus;

/// The fingerprint kind.
pub struct Fingerprint;

impl ScenarioKind for Fingerprint {
    fn runs(&self) -> &'static [KindName] {
        &[KindName::Fingerprint]
    }

    fn families(&self) -> &'static [Family] {
        &FAMILIES
    }

    fn start(&self, at: &FrontDoor<'_>) -> anyhow::Result<Vec<JoinHandle<()>>> {
        let plan = at.target.plan;
        let mut tasks = Vec::new();
        for fp in &plan.kinds.fingerprints {
            tasks.push(start(plan, fp, at.target.shared, at.stop.clone())?);
        }
        Ok(tasks)
    }

    fn retire(&self, shared: &Shared, old: &TargetPlan, new: Option<&TargetPlan>) {
        fn names(p: &TargetPlan) -> Vec<&str> {
            let plans = p.kinds.fingerprints.iter();
            plans.map(|f| f.scenario.as_str()).collect()
        }
        let remove_row = |board: &crate::status::StatusBoard, target: &str, scenario: &str| {
            board.remove_fingerprint(target, scenario);
        };
        super::retire_own(shared, (old, new), &FAMILIES, names, remove_row);
    }
}

const fn fingerprint_gauge(name: &'static str, help: &'static str) -> Family {
    gauge(name, help).scope(Scope::Kind)
}

const DIVERGENCE: Family = fingerprint_gauge(
    "llmprobe_fingerprint_divergence",
    "Mean total-variation distance between the endpoint's top-k distributions and its baseline's, over the compared positions of the last run.",
);
const AGREEMENT: Family = fingerprint_gauge(
    "llmprobe_fingerprint_token_agreement_ratio",
    "Tokens matching the baseline's before the first difference, over the baseline's tokens, in the last run.",
)
.unit("ratio");
const FIRST_DIVERGENCE: Family = fingerprint_gauge(
    "llmprobe_fingerprint_first_divergence_position",
    "Earliest token position where an answer left its baseline in the last run; -1 when none did.",
);
const NOISE: Family = fingerprint_gauge(
    "llmprobe_fingerprint_noise_divergence",
    "The endpoint's own run-to-run divergence, measured when the baseline was recorded.",
);
const THRESHOLD: Family = fingerprint_gauge(
    "llmprobe_fingerprint_threshold_divergence",
    "The divergence above which the endpoint has drifted (from the baseline's noise).",
);
const DRIFT: Family = fingerprint_gauge(
    "llmprobe_fingerprint_drift",
    "1 when the last run diverged beyond the baseline's noise (divergence or token agreement), else 0.",
);
const LAST_RUN: Family = fingerprint_gauge(
    "llmprobe_fingerprint_last_run_timestamp_seconds",
    "When the last fingerprint run completed (Unix time).",
)
.unit("seconds");
const FAILURES: Family = counter(
    "llmprobe_fingerprint_failures_total",
    "Fingerprint runs that failed (a request failed or an answer had no logprobs).",
)
.scope(Scope::Kind);

/// The fingerprint kind's families, in the order of docs/metrics.md.
static FAMILIES: [Family; 8] = [
    DIVERGENCE,
    AGREEMENT,
    FIRST_DIVERGENCE,
    NOISE,
    THRESHOLD,
    DRIFT,
    LAST_RUN,
    FAILURES,
];

/// One fingerprint scenario's series (labels target, model, scenario).
struct Series {
    families: Registered,
    labels: [String; 3],
}

impl Series {
    fn set(&self, family: &Family, value: f64) {
        let l = self.labels();
        if let Ok(v) = self.families.gauge_vec(family) {
            v.with_label_values(&l).set(value);
        }
    }

    fn labels(&self) -> [&str; 3] {
        [&self.labels[0], &self.labels[1], &self.labels[2]]
    }

    /// Publishes one completed run at `now` (Unix seconds).
    fn publish(&self, d: &Divergence, noise: &Noise, now: f64) {
        let t = noise.threshold();
        self.set(&DIVERGENCE, d.divergence);
        self.set(&AGREEMENT, d.token_agreement);
        // -1: no answer left its baseline (a series that comes and goes would read as
        // a gap in the data).
        self.set(
            &FIRST_DIVERGENCE,
            d.first_divergence.map_or(-1.0, |p| p as f64),
        );
        self.set(&NOISE, noise.divergence);
        self.set(&THRESHOLD, t.divergence);
        self.set(&DRIFT, if t.drifted(d) { 1.0 } else { 0.0 });
        self.set(&LAST_RUN, now);
        self.failures(0);
    }

    /// Counts `n` failed runs (0 creates the series at zero).
    fn failures(&self, n: u64) {
        if let Ok(v) = self.families.int_counter_vec(&FAILURES) {
            v.with_label_values(&self.labels()).inc_by(n);
        }
    }
}

/// Starts the loop of fingerprint scenario `fp` of `plan`; it ends when `stop` fires.
fn start(
    plan: &TargetPlan,
    fp: &FingerprintPlan,
    shared: &Shared,
    stop: tokio_util::sync::CancellationToken,
) -> anyhow::Result<JoinHandle<()>> {
    let mut ask = fp.baseline.ask();
    ask.model = plan.model.clone();
    let sampler = Sampler::new(plan.client.clone(), ask)?;
    let series = Series {
        families: shared.metrics.kind_series(&FAMILIES)?,
        labels: [plan.name.clone(), plan.model.clone(), fp.scenario.clone()],
    };
    let (baseline, every) = (Arc::clone(&fp.baseline), fp.every);
    let threshold = baseline.noise.threshold();
    let status = shared.status.fingerprint(FingerprintStatus::new(
        &plan.name,
        &plan.model,
        &fp.scenario,
        threshold,
        every.as_secs_f64(),
    ));
    let secrets = plan.secrets.clone();
    let mut log = super::RunLog::new(shared, &plan.name, &fp.scenario, ACTIVITY, "run_failed");
    let (target, scenario) = (plan.name.clone(), fp.scenario.clone());
    Ok(tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let result = tokio::select! {
                _ = stop.cancelled() => return,
                r = sampler.compare(&baseline) => r,
            };
            let now = unix_now();
            match result {
                Ok(d) => {
                    // The page first: whoever sees the series may read the page next.
                    status
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record_run(now, d);
                    series.publish(&d, &baseline.noise, now);
                    log.succeeded();
                    if threshold.drifted(&d) {
                        tracing::warn!(
                            target = %target,
                            scenario = %scenario,
                            divergence = d.divergence,
                            token_agreement = d.token_agreement,
                            threshold = threshold.divergence,
                            "fingerprint drift: the answers diverge beyond the baseline's noise"
                        );
                    }
                }
                Err(e) => {
                    let error = scrub(&format!("{e:#}"), secrets.iter().map(Secret::expose));
                    log.failed(&error);
                    status
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record_failure(now, error);
                    series.failures(1);
                }
            }
        }
    }))
}

/// Its runs, as the failure log words them.
const ACTIVITY: Activity = Activity::Kind {
    noun: "fingerprint run",
    nouns: "fingerprint runs",
    failed: "fingerprint run failed",
};
