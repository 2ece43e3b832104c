//! One running target: a runner per scenario (the shared open-loop runner with the
//! `Skip` policy), a consumer per runner feeding records into its sinks (`sinks/`), the
//! token budget they share, and the engine scraper. Everything stops when the
//! target's cancellation token fires; in-flight probes get the grace period.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::budget::TokenBudget;
use super::engine_scrape::{Scraper, TtftWindow, scrape_loop};
use super::failure_log::{FailureKey, FailureLog};
use super::scenario::{
    ScenarioProber, budget_admission, run_config, scenario_client, scenario_workload,
    stagger_offset,
};
use super::shared::Shared;
use super::sinks::{
    BudgetSink, Consumer, LogSink, MetricsSink, OtlpSink, PageFiling, StatusSink, TtftSink, consume,
};
use crate::client::Client;
use crate::config::{ScenarioPlan, TargetPlan};
use crate::export::ScenarioSeries;
use crate::export::probe_pages::ProbeKey;
use crate::export::status::ScenarioHandle;
use crate::probe::{Conversations, Prober};
use crate::runner::{self, Dispatch};
use crate::schedule::Schedule;
use crate::sink::RecordSink;

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
    let (position, count) = stagger;
    let starting = Starting {
        plan: &plan,
        shared,
        stop: &stop,
        budget: &budget,
        ttft_window: &ttft_window,
    };
    for (i, scenario) in plan.scenarios.iter().enumerate().filter(|_| front_door) {
        tasks.extend(start_scenario(&starting, scenario, (position + i, count))?);
    }
    for fp in plan.fingerprints.iter().filter(|_| front_door) {
        tasks.push(super::fingerprint::start(&plan, fp, shared, stop.clone())?);
    }
    if let Some(url) = plan.engine_metrics_url.clone().filter(|_| front_door) {
        tasks.push(tokio::spawn(scrape_loop(Scraper {
            plan: plan.clone(),
            url,
            metrics: shared.metrics.clone(),
            interval: shared.engine_scrape_interval.clone(),
            summary_interval: shared.failure_summary_interval.clone(),
            ttft_window,
            stop: stop.clone(),
            publish: publish.clone(),
        })?));
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

/// What the scenarios of a starting target share.
struct Starting<'a> {
    plan: &'a TargetPlan,
    shared: &'a Shared,
    stop: &'a CancellationToken,
    budget: &'a Option<Arc<Mutex<TokenBudget>>>,
    ttft_window: &'a Arc<Mutex<TtftWindow>>,
}

/// Starts the runner of one scenario and the consumer of its records. `stagger` is
/// (position, count) of this runner among all runners.
fn start_scenario(
    t: &Starting<'_>,
    scenario: &ScenarioPlan,
    stagger: (usize, usize),
) -> anyhow::Result<[JoinHandle<()>; 2]> {
    let plan = t.plan;
    let metrics = &t.shared.metrics;
    // One client (one connection pool) per scenario: `ignore_eos` is per scenario.
    let client = Arc::new(
        Client::new(scenario_client(plan, scenario), None)?
            .with_checks(scenario.checks.compiled.clone()),
    );
    let kinds: Vec<_> = scenario.checks.compiled.kinds().collect();
    let series = Arc::new(
        metrics
            .scenario(
                &plan.name,
                &plan.model,
                &scenario.name,
                &scenario.slo,
                plan.price,
                &scenario.buckets,
            )?
            .with_checks(metrics.check_series(&plan.name, &plan.model, &scenario.name, &kinds))
            .with_golden(metrics.golden_series(
                &plan.name,
                &plan.model,
                &scenario.name,
                scenario.golden.as_ref().map(|g| (g.window, g.baseline)),
            )),
    );
    metrics.set_rate(&plan.name, &plan.model, &scenario.name, scenario.rate_hz);
    let status = t
        .shared
        .status
        .scenario(&plan.name, &plan.model, &scenario.name);
    // A (re)started scenario starts a fresh window, as its gauges do.
    status.lock().unwrap_or_else(|e| e.into_inner()).golden = scenario
        .golden
        .as_ref()
        .map(|g| crate::export::status::GoldenStatus::new(g.window, g.baseline));
    let workload = scenario_workload(scenario)?.with_run_nonce(t.shared.run_nonce);
    let offset = stagger_offset(scenario.rate_hz, stagger.0, stagger.1);
    let arrivals = std::iter::once(offset).chain(
        Schedule::poisson(scenario.rate_hz)?
            .arrivals(scenario.seed)
            .map(move |t| t + offset),
    );
    let (tx, rx) = mpsc::unbounded_channel();
    let config = run_config(plan, t.stop);
    let estimate = u64::from(scenario.input_tokens) + u64::from(scenario.output_tokens);
    let admission = t
        .budget
        .clone()
        .map(|b| budget_admission(b, plan.name.clone(), estimate));
    let later_series = match scenario.later_name() {
        Some(name) => Some(Arc::new(
            metrics
                .scenario(
                    &plan.name,
                    &plan.model,
                    &name,
                    &scenario.slo,
                    plan.price,
                    &scenario.buckets,
                )?
                .with_checks(metrics.check_series(&plan.name, &plan.model, &name, &kinds)),
        )),
        None => None,
    };
    let prober = ScenarioProber {
        prober: Arc::new(Prober {
            client: client.clone(),
            workload: Arc::new(workload),
            conversations: scenario.turns.map(|turns| Conversations {
                turns,
                seed: scenario.seed,
                timer: runner::Timer::Tokio,
                stop: t.stop.clone(),
                events: tx.clone(),
            }),
        }),
        series: series.clone(),
        status: Some(status.clone()),
    };
    let probe = move |d: Dispatch| prober.probe(d);
    let runner = tokio::spawn(async move {
        runner::run(arrivals, config, admission, probe, tx).await;
    });
    let sinks = scenario_sinks(t, scenario, series, later_series, status, estimate);
    let consumer = tokio::spawn(consume(
        rx,
        Consumer {
            pages: page_filing(t, scenario),
            sinks,
            slo: scenario.slo,
            stop: t.stop.clone(),
        },
    ));
    Ok([runner, consumer])
}

/// Where the front door's probe pages of a scenario are filed.
fn page_filing(t: &Starting<'_>, scenario: &ScenarioPlan) -> PageFiling {
    PageFiling {
        board: t.shared.status.clone(),
        key: ProbeKey {
            target: t.plan.name.clone(),
            scenario: scenario.name.clone(),
            replica: None,
        },
        model: t.plan.model.clone(),
        secrets: t.plan.secrets.clone(),
    }
}

/// Where a scenario's records go, in the order they are fed: metrics, token budget,
/// TTFT window, logs, OTLP, and last the status board.
fn scenario_sinks(
    t: &Starting<'_>,
    scenario: &ScenarioPlan,
    series: Arc<ScenarioSeries>,
    later_series: Option<Arc<ScenarioSeries>>,
    status: ScenarioHandle,
    estimate: u64,
) -> Vec<Box<dyn RecordSink + Send>> {
    let plan = t.plan;
    let summary_interval = t.shared.failure_summary_interval.clone();
    let failures = FailureLog::new(*summary_interval.borrow());
    let mut sinks: Vec<Box<dyn RecordSink + Send>> = vec![Box::new(MetricsSink {
        series,
        later_series,
        slo: scenario.slo,
    })];
    if let Some(budget) = t.budget.clone() {
        sinks.push(Box::new(BudgetSink { budget, estimate }));
    }
    sinks.push(Box::new(TtftSink(t.ttft_window.clone())));
    sinks.push(Box::new(LogSink {
        key: FailureKey::scenario(&plan.name, &scenario.name),
        failures,
        summary_interval,
        target: plan.name.clone(),
        scenario: scenario.name.clone(),
        secrets: plan.secrets.clone(),
    }));
    if let Some(export) = t.shared.otlp.clone() {
        sinks.push(Box::new(OtlpSink::new(
            export,
            plan,
            scenario,
            &plan.client.base_url,
            None,
        )));
    }
    sinks.push(Box::new(StatusSink {
        status,
        secrets: plan.secrets.clone(),
    }));
    sinks
}
