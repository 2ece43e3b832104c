//! One running target: its scenarios started kind by kind (`kinds/`), the token budget
//! they share, the engine scraper and the fleet of its discovered replicas. Everything stops when the
//! target's cancellation token fires; in-flight probes get the grace period.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::budget::TokenBudget;
use super::engine_scrape::{Scraper, TtftWindow, scrape_loop};
use super::kinds::{self, FrontDoor};
use super::pipeline::TargetContext;
use super::shared::Shared;
use crate::config::TargetPlan;

/// A target's tasks and the token that stops them.
pub struct RunningTarget {
    pub plan: TargetPlan,
    pub stop: CancellationToken,
    pub tasks: Vec<JoinHandle<()>>,
    /// Held while the engine scraper publishes (after checking `stop`) and while the
    /// control task removes the target's series (after cancelling `stop`): a stopped
    /// scraper can never bring removed gauges back.
    pub publish: Arc<Mutex<()>>,
    /// The discovered replicas whose series exist (empty without `replicas_from`).
    pub members: super::fleet::Members,
    /// The LoRA adapters whose series exist (empty without `adapters`).
    pub adapters: super::adapters::AdapterMembers,
}

impl RunningTarget {
    /// Stops scheduling; in-flight probes finish within `grace` (the grace period in
    /// force now: a reload may have changed it since the target started), then its
    /// tasks are aborted. Returns a handle that resolves when every task has ended.
    pub fn stop(self, grace: Duration) -> JoinHandle<()> {
        self.stop.cancel();
        let tasks = self.tasks;
        tokio::spawn(async move {
            let aborts: Vec<_> = tasks.iter().map(JoinHandle::abort_handle).collect();
            let all = async {
                for t in tasks {
                    let _ = t.await;
                }
            };
            if tokio::time::timeout(grace, all).await.is_err() {
                // Aborting a runner drops its probe tasks (and their in-flight gauges).
                for a in aborts {
                    a.abort();
                }
            }
        })
    }
}

/// Starts a target. `stagger` is (position, count) of this target among all runners,
/// so first probes spread out instead of firing together.
pub fn start(
    plan: TargetPlan,
    shared: &Shared,
    stagger: (usize, usize),
) -> anyhow::Result<RunningTarget> {
    let stop = CancellationToken::new();
    // A start that fails part-way (`?` below) stops what it already spawned.
    let mut stop_on_failure = StopOnDrop(Some(stop.clone()));
    let now = Instant::now();
    let budget = plan
        .token_budget_per_hour
        .map(|b| Arc::new(Mutex::new(TokenBudget::new(b, now))));
    let ttft_window = Arc::new(Mutex::new(TtftWindow::default()));
    let publish = Arc::new(Mutex::new(()));
    let mut tasks = Vec::new();
    // The front door is probed by one shard; the replicas each by their own.
    let front_door = plan.shard.owns_target(&plan.name);
    if let Some(cap) = plan.capacity.as_ref().filter(|_| front_door) {
        shared
            .metrics
            .set_capacity(&plan.name, &plan.model, &cap.gauges);
    }
    let adapters = super::adapters::AdapterMembers::default();
    if let Some(plan_adapters) = plan.adapters.clone().filter(|_| front_door) {
        tasks.push(tokio::spawn(super::adapters::run(
            super::adapters::AdapterContext {
                plan: plan.clone(),
                adapters: plan_adapters,
                shared: shared.clone(),
                budget: budget.clone(),
                stop: stop.clone(),
                ttft_window: ttft_window.clone(),
                stagger,
                publish: publish.clone(),
                members: adapters.clone(),
            },
        )?));
    }
    if front_door {
        tasks.extend(kinds::start_all(&FrontDoor {
            target: TargetContext {
                plan: &plan,
                shared,
                budget: &budget,
            },
            stop: &stop,
            ttft_window: &ttft_window,
            stagger,
        })?);
    }
    if let Some(url) = plan.engine_metrics_url.clone().filter(|_| front_door) {
        tasks.push(tokio::spawn(scrape_loop(Scraper {
            plan: plan.clone(),
            url,
            metrics: shared.metrics.clone(),
            status: shared.status.clone(),
            interval: shared.engine_scrape_interval.clone(),
            summary_interval: shared.failure_summary_interval.clone(),
            ttft_window,
            stop: stop.clone(),
            publish: publish.clone(),
        })?));
    }
    if let Some(url) = plan.router_metrics_url.clone().filter(|_| front_door) {
        tasks.push(tokio::spawn(super::router_scrape::scrape_loop(
            super::router_scrape::RouterScraper {
                plan: plan.clone(),
                url,
                metrics: shared.metrics.clone(),
                interval: shared.engine_scrape_interval.clone(),
                summary_interval: shared.failure_summary_interval.clone(),
                stop: stop.clone(),
                publish: publish.clone(),
            },
        )?));
    }
    let members = super::fleet::Members::default();
    if let Some(replicas) = plan.replicas.clone() {
        tasks.push(tokio::spawn(super::fleet::run(
            super::fleet::FleetContext {
                plan: plan.clone(),
                replicas,
                shared: shared.clone(),
                budget: budget.clone(),
                stop: stop.clone(),
                publish: publish.clone(),
                members: members.clone(),
            },
        )?));
    }
    tracing::info!(
        target = %plan.name,
        model = %plan.model,
        scenarios = plan.scenarios.len(),
        // `+ 0.0`: an empty f64 sum is -0.0.
        rate_per_second = plan.scenarios.iter().map(|s| s.rate_hz).sum::<f64>() + 0.0,
        "target started"
    );
    stop_on_failure.0 = None;
    Ok(RunningTarget {
        plan,
        stop,
        tasks,
        publish,
        members,
        adapters,
    })
}

/// Cancels its token when dropped still holding it: the tasks of a target whose start
/// failed do not run on detached.
struct StopOnDrop(Option<CancellationToken>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            stop.cancel();
        }
    }
}
