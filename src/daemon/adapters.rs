//! A target's LoRA adapters (`adapters:`): one task per target runs every probe scenario
//! once per model, the base model and each adapter at the scenario's rate × its share
//! (`workload::lora`), each as its own `model` (its series, its status row, the
//! `model` field of its requests). Listed adapters run from the start; discovered ones
//! are read from `/v1/models` every interval (models whose `parent` is the target's
//! model): one that appears starts, one that goes stops and its series go at once (as a
//! replica's do), and a changed count re-splits the rates. A failed read keeps the last
//! split (before any read worked: the base model alone).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::engine_scrape::TtftWindow;
use super::kinds::FrontDoor;
use super::kinds::probe::{Share, start_share};
use super::pipeline::{Budget, TargetContext};
use super::shared::Shared;
use crate::client::Client;
use crate::config::TargetPlan;
use crate::config::adapters::AdapterPlan;
use crate::workload::lora::ModelSplit;

/// The adapters whose series exist now, shared with the control task so that a stopped
/// target's adapter series can be removed without waiting for this task.
pub type AdapterMembers = Arc<Mutex<BTreeSet<String>>>;

/// What a target's adapter task works with.
pub struct AdapterContext {
    pub plan: TargetPlan,
    pub adapters: AdapterPlan,
    pub shared: Shared,
    pub budget: Budget,
    pub stop: CancellationToken,
    pub ttft_window: Arc<Mutex<TtftWindow>>,
    pub stagger: (usize, usize),
    /// Held while series are removed (see `RunningTarget::publish`).
    pub publish: Arc<Mutex<()>>,
    pub members: AdapterMembers,
}

/// The status row of `model`'s share of `scenario`: the scenario's own name for the
/// base model, `SCENARIO@ADAPTER` for an adapter.
pub fn row_name(plan: &TargetPlan, scenario: &str, model: &str) -> String {
    if model == plan.model {
        scenario.to_string()
    } else {
        format!("{scenario}@{model}")
    }
}

/// `plan` as the model `model` sees it: its `model` label and requests' `model` field.
pub fn plan_for(plan: &TargetPlan, model: &str) -> TargetPlan {
    let mut p = plan.clone();
    p.model = model.to_string();
    p.client.model = model.to_string();
    p
}

/// The adapters of `base` in a `/v1/models` answer: the models whose `parent` is it.
pub fn adapters_of(body: &serde_json::Value, base: &str) -> anyhow::Result<Vec<String>> {
    let Some(data) = body.get("data").and_then(|d| d.as_array()) else {
        anyhow::bail!("the answer has no data list of models");
    };
    let mut names: Vec<String> = data
        .iter()
        .filter(|m| m.get("parent").and_then(|p| p.as_str()) == Some(base))
        .filter_map(|m| m.get("id").and_then(|id| id.as_str()))
        .filter(|id| *id != base)
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Removes every series and status row of adapter `model` on target `plan`.
pub fn remove_model(shared: &Shared, plan: &TargetPlan, model: &str) {
    for s in &plan.scenarios {
        shared.metrics.remove_scenario(&plan.name, model, &s.name);
        if let Some(later) = s.later_name() {
            shared.metrics.remove_scenario(&plan.name, model, &later);
        }
        shared
            .status
            .remove(&plan.name, &row_name(plan, &s.name, model));
    }
}

/// Removes the series of every adapter of a stopped target (the caller holds its publish
/// lock after cancelling it).
pub fn remove_all(shared: &Shared, plan: &TargetPlan, members: &AdapterMembers) {
    let gone = std::mem::take(&mut *members.lock().unwrap_or_else(|e| e.into_inner()));
    for model in gone {
        remove_model(shared, plan, &model);
    }
}

/// One model's share of one scenario, running.
struct Running {
    rate_hz: f64,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

/// Builds the adapter task of a target.
pub fn run(ctx: AdapterContext) -> anyhow::Result<impl std::future::Future<Output = ()> + Send> {
    let client = Client::new(ctx.plan.client.clone(), None)?;
    Ok(async move {
        let mut task = Adapters {
            ctx,
            running: BTreeMap::new(),
            split: None,
            failing: false,
        };
        match task.ctx.adapters.clone() {
            AdapterPlan::Fixed(split) => {
                task.apply(&split);
                task.ctx.stop.cancelled().await;
            }
            AdapterPlan::Discover { weight, interval } => {
                task.discover(&client, weight, interval).await;
            }
        }
        task.wait().await;
    })
}

struct Adapters {
    ctx: AdapterContext,
    /// By (scenario position, model).
    running: BTreeMap<(usize, String), Running>,
    /// The split in force.
    split: Option<ModelSplit>,
    /// Whether the last read failed (logged once per failure spell).
    failing: bool,
}

impl Adapters {
    async fn discover(&mut self, client: &Client, weight: Option<f64>, interval: Duration) {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let base = self.ctx.plan.model.clone();
        loop {
            tokio::select! {
                biased;
                () = self.ctx.stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let found = tokio::select! {
                biased;
                () = self.ctx.stop.cancelled() => return,
                r = client.get_json("/v1/models") => r.and_then(|b| adapters_of(&b, &base)),
            };
            match found {
                Ok(names) => {
                    if std::mem::take(&mut self.failing) {
                        tracing::info!(target = %self.ctx.plan.name, "adapter discovery works again");
                    }
                    let split = ModelSplit::discovered(&base, &names, weight);
                    if weight.is_some_and(|w| w * names.len() as f64 > 1.0)
                        && self.split.as_ref() != Some(&split)
                    {
                        tracing::warn!(target = %self.ctx.plan.name, adapters = names.len(),
                            "the discovered adapters' weights add up to more than 1: each gets 1/count, the base model none");
                    }
                    if self.split.as_ref() != Some(&split) {
                        self.apply(&split);
                    }
                }
                Err(e) => {
                    if !std::mem::replace(&mut self.failing, true) {
                        // `get_json` scrubbed the target's secrets from its error.
                        tracing::warn!(target = %self.ctx.plan.name, error = %format!("{e:#}"),
                            "adapter discovery failed: the last adapters found stay probed");
                    }
                    if self.split.is_none() {
                        self.apply(&ModelSplit::discovered(&base, &[], weight));
                    }
                }
            }
        }
    }

    /// Makes the running shares match `split` (under the publish lock).
    fn apply(&mut self, split: &ModelSplit) {
        let publish = self.ctx.publish.clone();
        let _publishing = publish.lock().unwrap_or_else(|e| e.into_inner());
        if self.ctx.stop.is_cancelled() {
            return;
        }
        let plan = &self.ctx.plan;
        let shares: BTreeMap<&str, f64> = split.shares().into_iter().collect();
        let mut wanted = BTreeMap::new();
        for (i, s) in plan.scenarios.iter().enumerate() {
            for (model, share) in &shares {
                wanted.insert((i, (*model).to_string()), s.rate_hz * share);
            }
        }
        let stale: Vec<(usize, String)> = self
            .running
            .iter()
            .filter(|(k, r)| wanted.get(*k) != Some(&r.rate_hz))
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            if let Some(r) = self.running.remove(&key) {
                retire(r, plan.client.timeouts.total);
            }
        }
        let had: Vec<String> = self
            .ctx
            .members
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        for model in had.iter().filter(|m| !shares.contains_key(m.as_str())) {
            tracing::info!(target = %plan.name, adapter = %model, "adapter gone: its series go");
            remove_model(&self.ctx.shared, plan, model);
            self.ctx
                .members
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(model);
        }
        let count = wanted.len();
        for (position, ((i, model), rate_hz)) in wanted.into_iter().enumerate() {
            if self.running.contains_key(&(i, model.clone())) {
                continue;
            }
            match self.start(i, &model, rate_hz, split, (position, count)) {
                Ok(r) => {
                    if model != plan.model
                        && self
                            .ctx
                            .members
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(model.clone())
                    {
                        tracing::info!(target = %plan.name, adapter = %model, "adapter probed");
                    }
                    self.running.insert((i, model), r);
                }
                Err(e) => tracing::error!(target = %plan.name, model = %model,
                    error = %format!("{e:#}"), "cannot probe this model"),
            }
        }
        self.split = Some(split.clone());
    }

    /// Starts `model`'s share of scenario `i`.
    fn start(
        &self,
        i: usize,
        model: &str,
        rate_hz: f64,
        split: &ModelSplit,
        (position, count): (usize, usize),
    ) -> anyhow::Result<Running> {
        let ctx = &self.ctx;
        let scenario = &ctx.plan.scenarios[i];
        let plan = plan_for(&ctx.plan, model);
        let stop = ctx.stop.child_token();
        let at = FrontDoor {
            target: TargetContext {
                plan: &plan,
                shared: &ctx.shared,
                budget: &ctx.budget,
            },
            stop: &stop,
            ttft_window: &ctx.ttft_window,
            stagger: (ctx.stagger.0 + position, ctx.stagger.1.max(count)),
        };
        let share = Share {
            rate_hz,
            seed: split.seed_for(scenario.seed, model),
            row: row_name(&ctx.plan, &scenario.name, model),
        };
        let tasks = start_share(&at, scenario, at.stagger, &share)?;
        Ok(Running {
            rate_hz,
            stop,
            tasks: tasks.into(),
        })
    }

    /// After the target's stop: every share's runner ends once its in-flight probes do
    /// (the target's grace period aborts this task, and with it them, if not).
    async fn wait(&mut self) {
        for (_, r) in std::mem::take(&mut self.running) {
            for t in r.tasks {
                let _ = t.await;
            }
        }
    }
}

/// Stops one share: no new probes; in-flight ones may end within the total timeout,
/// then they are aborted.
fn retire(r: Running, total: Duration) {
    r.stop.cancel();
    let grace = total + Duration::from_secs(1);
    tokio::spawn(async move {
        let aborts: Vec<_> = r.tasks.iter().map(JoinHandle::abort_handle).collect();
        let all = async {
            for t in r.tasks {
                let _ = t.await;
            }
        };
        if tokio::time::timeout(grace, all).await.is_err() {
            for a in aborts {
                a.abort();
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn adapters_are_the_models_whose_parent_is_the_base() {
        let body = json!({"data": [
            {"id": "tiny", "parent": null}, {"id": "ad2", "parent": "tiny"},
            {"id": "ad1", "parent": "tiny"}, {"id": "other", "parent": "big"}, {"id": "x"}]});
        assert_eq!(adapters_of(&body, "tiny").unwrap(), ["ad1", "ad2"]);
        assert!(adapters_of(&json!({}), "tiny").is_err());
    }
}
