//! A fingerprint scenario's loop: every `every` (the first run at once), the baseline's
//! prompts are asked one after the other and the verdict is published in the
//! `llmprobe_fingerprint_*` series and on the status board. A failed run is counted and
//! logged (its error scrubbed of the target's secrets); the next run comes on time all
//! the same.

use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::shared::Shared;
use crate::config::TargetPlan;
use crate::config::fingerprint::FingerprintPlan;
use crate::export::fingerprint_status::FingerprintStatus;
use crate::export::unix_now;
use crate::fingerprint::Sampler;
use crate::secret::{Secret, scrub};

/// Starts the loop of fingerprint scenario `fp` of `plan`; it ends when `stop` fires.
pub fn start(
    plan: &TargetPlan,
    fp: &FingerprintPlan,
    shared: &Shared,
    stop: CancellationToken,
) -> anyhow::Result<JoinHandle<()>> {
    let mut ask = fp.baseline.ask();
    ask.model = plan.model.clone();
    let sampler = Sampler::new(plan.client.clone(), ask)?;
    let labels = [plan.name.clone(), plan.model.clone(), fp.scenario.clone()];
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
    let metrics = shared.metrics.clone();
    Ok(tokio::spawn(async move {
        let l = [labels[0].as_str(), labels[1].as_str(), labels[2].as_str()];
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
                    metrics.fingerprint().publish(&l, &d, &baseline.noise, now);
                    if threshold.drifted(&d) {
                        tracing::warn!(
                            target_name = l[0],
                            scenario = l[2],
                            divergence = d.divergence,
                            token_agreement = d.token_agreement,
                            threshold = threshold.divergence,
                            "fingerprint drift: the answers diverge beyond the baseline's noise"
                        );
                    }
                }
                Err(e) => {
                    let error = scrub(&format!("{e:#}"), secrets.iter().map(Secret::expose));
                    tracing::warn!(target_name = l[0], scenario = l[2], error = %error,
                        "fingerprint run failed");
                    status
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record_failure(now, error);
                    metrics.fingerprint().fail(&l);
                }
            }
        }
    }))
}
