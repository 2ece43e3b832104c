//! The probe kinds (`probe`, and `golden`: a golden set's questions, judged): a runner
//! per scenario at its rate through the one probe pipeline, into the scenario's series
//! (with its answer checks' and golden set's) and its row of the status board.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::{FrontDoor, ScenarioKind};
use crate::config::kinds::KindName;
use crate::config::{ScenarioPlan, TargetPlan};
use crate::daemon::pipeline::Pipeline;
use crate::daemon::shared::Shared;
use crate::exposition::ScenarioSeries;
use crate::status::board::GoldenStatus;

/// The probe and golden kinds.
pub struct Probe;

impl ScenarioKind for Probe {
    fn runs(&self) -> &'static [KindName] {
        &[KindName::Probe, KindName::Golden]
    }

    fn start(&self, at: &FrontDoor<'_>) -> anyhow::Result<Vec<JoinHandle<()>>> {
        // With adapters, each model's share runs from the adapter task
        // (`daemon/adapters.rs`), which starts them with `start_share`.
        if at.target.plan.adapters.is_some() {
            return Ok(Vec::new());
        }
        let mut tasks = Vec::new();
        let (first, count) = at.stagger;
        for (i, scenario) in at.target.plan.scenarios.iter().enumerate() {
            let share = Share {
                rate_hz: scenario.rate_hz,
                seed: scenario.seed,
                row: scenario.name.clone(),
            };
            tasks.extend(start_share(at, scenario, (first + i, count), &share)?);
        }
        Ok(tasks)
    }

    fn retire(&self, shared: &Shared, old: &TargetPlan, new: Option<&TargetPlan>) {
        let continues =
            |name: &str| new.is_some_and(|n| n.scenarios.iter().any(|ns| ns.name == name));
        for s in &old.scenarios {
            if !continues(&s.name) {
                shared
                    .metrics
                    .remove_scenario(&old.name, &old.model, &s.name);
                shared.status.remove(&old.name, &s.name);
            }
            // A conversation's later turns have their own series: gone with it, or when
            // the scenario stops having later turns.
            if let Some(later) = s.later_name() {
                let still = new.is_some_and(|n| {
                    n.scenarios
                        .iter()
                        .any(|ns| ns.later_name().as_ref() == Some(&later))
                });
                if !still {
                    shared
                        .metrics
                        .remove_scenario(&old.name, &old.model, &later);
                }
            }
        }
    }
}

/// One model's share of a scenario: its rate, its seed and its status row's name. Without
/// adapters the one model takes all of it under the scenario's name.
pub struct Share {
    pub rate_hz: f64,
    pub seed: u64,
    pub row: String,
}

/// Starts the runner of one scenario's share for the model of `at.target.plan` and the
/// consumer of its records. `stagger` is (position, count) of this runner among all
/// runners.
pub fn start_share(
    at: &FrontDoor<'_>,
    scenario: &ScenarioPlan,
    stagger: (usize, usize),
    share: &Share,
) -> anyhow::Result<[JoinHandle<()>; 2]> {
    let plan = at.target.plan;
    let metrics = &at.target.shared.metrics;
    let kinds: Vec<_> = scenario.checks.compiled.kinds().collect();
    let series = |name: &str| -> anyhow::Result<ScenarioSeries> {
        Ok(metrics
            .scenario(
                &plan.name,
                &plan.model,
                name,
                &scenario.slo,
                plan.price,
                &scenario.buckets,
            )?
            .with_checks(metrics.check_series(&plan.name, &plan.model, name, &kinds)))
    };
    let main = series(&scenario.name)?.with_golden(metrics.golden_series(
        &plan.name,
        &plan.model,
        &scenario.name,
        scenario.golden.as_ref().map(|g| (g.window, g.baseline)),
    ));
    let later_series = match scenario.later_name() {
        Some(name) => Some(Arc::new(series(&name)?)),
        None => None,
    };
    metrics.set_rate(&plan.name, &plan.model, &scenario.name, share.rate_hz);
    let status = at
        .target
        .shared
        .status
        .scenario(&plan.name, &plan.model, &share.row);
    // A (re)started scenario starts a fresh window, as its gauges do.
    status.lock().unwrap_or_else(|e| e.into_inner()).golden = scenario
        .golden
        .as_ref()
        .map(|g| GoldenStatus::new(g.window, g.baseline));
    let started = Pipeline {
        target: at.target,
        scenario,
        stop: at.stop,
        base_url: &plan.client.base_url,
        replica: None,
        rate_hz: share.rate_hz,
        seed: share.seed,
        stagger,
        series: Arc::new(main),
        later_series,
        status: Some(status),
        ttft_window: Some(at.ttft_window.clone()),
    }
    .build()?;
    Ok([tokio::spawn(started.runner), tokio::spawn(started.consumer)])
}
