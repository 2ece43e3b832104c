//! One scenario's probe pipeline, written once for the front door and for each
//! discovered replica: client → workload → open-loop runner → consumer → sinks. What
//! differs between the two is a parameter ([`Pipeline`]): the address, the rate and
//! seed, the series, the status row and whether the engine scraper's TTFT window is fed.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::budget::TokenBudget;
use super::engine_scrape::TtftWindow;
use super::failure_log::{FailureKey, FailureLog};
use super::limits::{TargetLimits, system_clock};
use super::scenario::{
    Gate, ScenarioProber, run_config, scenario_client, scenario_workload, stagger_offset,
};
use super::shared::Shared;
use super::sinks::{
    BudgetSink, Consumer, LimitsSink, LogSink, MetricsSink, OtlpSink, PageFiling,
    ReplicaStatusSink, StatusSink, TtftSink, consume,
};
use crate::client::Client;
use crate::config::{ScenarioPlan, TargetPlan};
use crate::exposition::ScenarioSeries;
use crate::probe::{Conversations, Prober};
use crate::runner::{self, Dispatch};
use crate::schedule::Schedule;
use crate::sink::RecordSink;
use crate::status::board::ScenarioHandle;
use crate::status::probe_pages::ProbeKey;

/// A target's token budget, shared by its front door and its replicas.
pub type Budget = Option<Arc<Mutex<TokenBudget>>>;

/// What the scenarios of one target share, front door and replicas alike.
#[derive(Clone, Copy)]
pub struct TargetContext<'a> {
    pub plan: &'a TargetPlan,
    pub shared: &'a Shared,
    pub budget: &'a Budget,
}

/// Where one scenario's probes go and what their records feed.
pub struct Pipeline<'a> {
    pub target: TargetContext<'a>,
    pub scenario: &'a ScenarioPlan,
    /// Stops the runner; in-flight probes it cuts off are not counted.
    pub stop: &'a CancellationToken,
    /// The base URL probed: the front door's, or a replica's with the front door's path.
    pub base_url: &'a str,
    /// The replica probed (`host:port`); `None` for the front door.
    pub replica: Option<&'a str>,
    pub rate_hz: f64,
    /// Seed of the arrivals and, for conversations, the think times.
    pub seed: u64,
    /// (position, count) of this runner among the runners that start together.
    pub stagger: (usize, usize),
    pub series: Arc<ScenarioSeries>,
    /// A conversation's later turns (front door only).
    pub later_series: Option<Arc<ScenarioSeries>>,
    /// The front door's status row; a replica's probes go to its replica row.
    pub status: Option<ScenarioHandle>,
    /// The client TTFTs the engine scraper compares with the server's (front door only).
    pub ttft_window: Option<Arc<Mutex<TtftWindow>>>,
}

/// The runner's and the consumer's futures: spawned by the caller, on a `JoinSet` or
/// not.
pub struct Started {
    pub runner: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
    pub consumer: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Pipeline<'_> {
    /// Builds the client, the workload, the arrivals and the sinks.
    pub fn build(self) -> anyhow::Result<Started> {
        let (plan, scenario) = (self.target.plan, self.scenario);
        let mut config = scenario_client(plan, scenario);
        config.base_url = self.base_url.to_string();
        // One client (one connection pool) per scenario: `ignore_eos` is per scenario.
        let client =
            Arc::new(Client::new(config, None)?.with_checks(scenario.checks.compiled.clone()));
        let workload = scenario_workload(scenario)?.with_run_nonce(self.target.shared.run_nonce);
        let offset = stagger_offset(self.rate_hz, self.stagger.0, self.stagger.1);
        let arrivals = std::iter::once(offset).chain(
            Schedule::poisson(self.rate_hz)?
                .arrivals(self.seed)
                .map(move |t| t + offset),
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let estimate = u64::from(scenario.input_tokens) + u64::from(scenario.output_tokens);
        let limits = self.target.shared.limits.of(&plan.name);
        let admission = Some(
            Gate {
                target: plan.name.clone(),
                limits: limits.clone(),
                budget_per_day: plan
                    .budget_per_day
                    .map(|b| (b, self.target.shared.status.clone())),
                tokens: self.target.budget.clone().map(|b| (b, estimate)),
                clock: system_clock(),
            }
            .admission(),
        );
        let prober = ScenarioProber {
            prober: Arc::new(Prober {
                client,
                workload: Arc::new(workload),
                conversations: scenario.turns.map(|turns| Conversations {
                    turns,
                    seed: self.seed,
                    timer: runner::Timer::Tokio,
                    stop: self.stop.clone(),
                    events: tx.clone(),
                }),
            }),
            series: self.series.clone(),
            status: self.status.clone(),
        };
        let config = run_config(plan, self.stop);
        let runner = Box::pin(async move {
            runner::run(
                arrivals,
                config,
                admission,
                move |d: Dispatch| prober.probe(d),
                tx,
            )
            .await;
        });
        let (pages, stop) = (self.page_filing(), self.stop.clone());
        let consumer = Consumer {
            pages,
            sinks: self.sinks(estimate, limits),
            slo: scenario.slo,
            stop,
        };
        Ok(Started {
            runner,
            consumer: Box::pin(consume(rx, consumer)),
        })
    }

    /// Where each probe's page is filed.
    fn page_filing(&self) -> PageFiling {
        let plan = self.target.plan;
        PageFiling {
            board: self.target.shared.status.clone(),
            key: ProbeKey {
                target: plan.name.clone(),
                scenario: self.scenario.name.clone(),
                replica: self.replica.map(str::to_string),
            },
            model: plan.model.clone(),
            secrets: plan.secrets.clone(),
        }
    }

    /// Where the records go, in the order they are fed: metrics, token budget, limits, TTFT
    /// window, logs, OTLP, and last the status board (a probe it shows is already in
    /// the metrics).
    fn sinks(self, estimate: u64, limits: Arc<TargetLimits>) -> Vec<Box<dyn RecordSink + Send>> {
        let (plan, scenario, shared) = (self.target.plan, self.scenario, self.target.shared);
        let summary_interval = shared.failure_summary_interval.clone();
        let failures = FailureLog::new(*summary_interval.borrow());
        let mut sinks: Vec<Box<dyn RecordSink + Send>> = vec![Box::new(MetricsSink {
            series: self.series,
            later_series: self.later_series,
            slo: scenario.slo,
        })];
        if let Some(budget) = self.target.budget.clone() {
            sinks.push(Box::new(BudgetSink { budget, estimate }));
        }
        sinks.push(Box::new(LimitsSink {
            target: plan.name.clone(),
            limits,
            price: plan.price,
            board: shared.status.clone(),
            clock: system_clock(),
        }));
        if let Some(window) = self.ttft_window {
            sinks.push(Box::new(TtftSink(window)));
        }
        let mut key = FailureKey::scenario(&plan.name, &scenario.name);
        if let Some(replica) = self.replica {
            key = key.with_replica(replica);
        }
        sinks.push(Box::new(LogSink {
            key,
            failures,
            summary_interval,
            target: plan.name.clone(),
            scenario: scenario.name.clone(),
            secrets: plan.secrets.clone(),
        }));
        if let Some(export) = shared.otlp.clone() {
            sinks.push(Box::new(OtlpSink::new(
                export,
                plan,
                scenario,
                self.base_url,
                self.replica,
            )));
        }
        match (self.status, self.replica) {
            (Some(status), _) => sinks.push(Box::new(StatusSink {
                status,
                secrets: plan.secrets.clone(),
            })),
            (None, Some(replica)) => sinks.push(Box::new(ReplicaStatusSink {
                status: shared.status.replica(&plan.name, &plan.model, replica),
                secrets: plan.secrets.clone(),
            })),
            (None, None) => {}
        }
        sinks
    }
}
