//! One running target: a runner per scenario (the shared open-loop runner with the
//! `Skip` policy), a consumer per runner feeding records into its sinks (`sinks/`), the
//! token budget they share, and the engine scraper. Everything stops when the
//! target's cancellation token fires; in-flight probes get the grace period.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::budget::TokenBudget;
use super::engine_scrape::{Scraper, TtftWindow, scrape_loop};
use super::failure_log::{FailureKey, FailureLog};
use super::sinks::{BudgetSink, Consumer, LogSink, MetricsSink, StatusSink, TtftSink, consume};
use crate::client::{Client, ClientConfig};
use crate::config::{ScenarioPlan, TargetPlan};
use crate::export::status::ScenarioHandle;
use crate::export::{Metrics, ScenarioSeries, StatusBoard};
use crate::probe::{Conversations, Prober};
use crate::record::RequestRecord;
use crate::runner::{self, CapPolicy, ConcurrencyCap, Dispatch, RunConfig, Stop};
use crate::schedule::Schedule;
use crate::sink::RecordSink;
use crate::workload::Workload;
use crate::workload::lengths::Lengths;
use crate::workload::prompt::PromptGenerator;

/// The first probe of a runner goes out after at most this long, so a new target shows
/// data within seconds even at one probe per hour.
pub const MAX_STAGGER: Duration = Duration::from_secs(10);

/// How long a stopped runner itself lets probes run on; `RunningTarget::stop` aborts
/// it at the configured grace period long before.
const RUNNER_GRACE_BACKSTOP: Duration = Duration::from_secs(3600);

/// What every target shares.
#[derive(Clone)]
pub struct Shared {
    pub metrics: Arc<Metrics>,
    pub status: Arc<StatusBoard>,
    /// The engine scrape interval; a reload changes it without restarting targets.
    pub engine_scrape_interval: watch::Receiver<Duration>,
    /// How often the log summarises a repeating failure; a reload changes it in place.
    pub failure_summary_interval: watch::Receiver<Duration>,
    /// Part of every prompt nonce: fresh per daemon start, so a restarted daemon does
    /// not send the prompts of its previous life into a warm prefix cache.
    pub run_nonce: u32,
}

/// A target's tasks and the token that stops them.
pub struct RunningTarget {
    pub plan: TargetPlan,
    pub stop: CancellationToken,
    pub tasks: Vec<JoinHandle<()>>,
    /// Held while the engine scraper publishes (after checking `stop`) and while the
    /// control task removes the target's series (after cancelling `stop`): a stopped
    /// scraper can never bring removed gauges back.
    pub publish: Arc<Mutex<()>>,
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
    let now = Instant::now();
    let budget = plan
        .token_budget_per_hour
        .map(|b| Arc::new(Mutex::new(TokenBudget::new(b, now))));
    let ttft_window = Arc::new(Mutex::new(TtftWindow::default()));
    let publish = Arc::new(Mutex::new(()));
    let mut tasks = Vec::new();
    if let Some(cap) = &plan.capacity {
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
    for (i, scenario) in plan.scenarios.iter().enumerate() {
        tasks.extend(start_scenario(&starting, scenario, (position + i, count))?);
    }
    if let Some(url) = plan.engine_metrics_url.clone() {
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
    tracing::info!(
        target = %plan.name,
        model = %plan.model,
        scenarios = plan.scenarios.len(),
        rate_per_second = plan.scenarios.iter().map(|s| s.rate_hz).sum::<f64>(),
        "target started"
    );
    Ok(RunningTarget {
        plan,
        stop,
        tasks,
        publish,
    })
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
            .with_checks(metrics.check_series(&plan.name, &plan.model, &scenario.name, &kinds)),
    );
    metrics.set_rate(&plan.name, &plan.model, &scenario.name, scenario.rate_hz);
    let status = t
        .shared
        .status
        .scenario(&plan.name, &plan.model, &scenario.name);
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
        status: status.clone(),
    };
    let probe = move |d: Dispatch| prober.probe(d);
    let runner = tokio::spawn(async move {
        runner::run(arrivals, config, admission, probe, tx).await;
    });
    let sinks = scenario_sinks(t, scenario, series, later_series, status, estimate);
    let consumer = tokio::spawn(consume(
        rx,
        Consumer {
            sinks,
            slo: scenario.slo,
            stop: t.stop.clone(),
        },
    ));
    Ok([runner, consumer])
}

/// Where a scenario's records go, in the order they are fed: metrics, token budget,
/// TTFT window, logs, and last the status board.
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
    sinks.push(Box::new(StatusSink {
        status,
        secrets: plan.secrets.clone(),
    }));
    sinks
}

/// What a scenario's probes ask: its fixed question (after its `messages:` preamble),
/// else synthetic prompts of `input_tokens`.
fn scenario_workload(scenario: &ScenarioPlan) -> anyhow::Result<Workload> {
    let output = Lengths::fixed(scenario.output_tokens)?;
    let mut prompts = PromptGenerator::approximate(scenario.shared_prefix_tokens);
    if !scenario.nonce {
        prompts = prompts.without_nonce();
    }
    let workload = match &scenario.prompt {
        Some(text) => Workload::dataset(
            vec![crate::workload::dataset::DatasetEntry {
                prompt: text.clone(),
                output_len: None,
                follow_ups: Vec::new(),
            }],
            output,
            true,
            prompts,
            scenario.seed,
        )?,
        None => Workload::synthetic(
            Lengths::fixed(scenario.input_tokens)?,
            output,
            prompts,
            scenario.seed,
        )?,
    };
    Ok(match &scenario.preamble {
        Some(p) => workload.with_preamble(p.clone()),
        None => workload,
    })
}

/// The client settings of one scenario: the target's, with the scenario's `ignore_eos`
/// and output-token limit.
fn scenario_client(plan: &TargetPlan, scenario: &ScenarioPlan) -> ClientConfig {
    let mut extra_body = plan.client.extra_body.clone();
    if let Some(seed) = scenario.sampling_seed {
        // The target's own extra_body wins: it is the more specific override.
        extra_body.entry("seed").or_insert(seed.into());
    }
    ClientConfig {
        temperature: scenario.temperature.unwrap_or(plan.client.temperature),
        response_schema: scenario.checks.response_schema(),
        tool: scenario.checks.tool_offer(),
        extra_body,
        ignore_eos: scenario.ignore_eos,
        stream: scenario.stream,
        limits: crate::client::Limits {
            max_output_tokens: max_output_tokens(
                scenario.output_tokens,
                plan.client.limits.max_output_tokens,
            ),
            ..plan.client.limits
        },
        ..plan.client.clone()
    }
}

/// A daemon runner: open loop, skipping arrivals at `max_inflight`, until `stop`.
fn run_config(plan: &TargetPlan, stop: &CancellationToken) -> RunConfig {
    RunConfig {
        cap: Some(ConcurrencyCap {
            max_inflight: plan.max_inflight as usize,
            policy: CapPolicy::Skip,
        }),
        stop: Stop {
            cancel: stop.clone(),
            ..Stop::default()
        },
        drain: None,
        // The grace period in force is applied by `RunningTarget::stop`; this is
        // only the runner's own backstop.
        cancel_grace: RUNNER_GRACE_BACKSTOP,
        timer: runner::Timer::Tokio,
    }
}

/// Admits a probe only when the target's token budget has `estimate` tokens left.
fn budget_admission(
    budget: Arc<Mutex<TokenBudget>>,
    target: String,
    estimate: u64,
) -> runner::Admission {
    Box::new(move |_d: &Dispatch| {
        let mut b = budget.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if b.try_take(now, estimate) {
            Ok(())
        } else {
            tracing::debug!(
                target = %target,
                wait = ?b.wait_for(now, estimate),
                "token budget spent; skipping a probe"
            );
            Err(runner::SkipReason::TokenBudget)
        }
    })
}

/// The most output tokens a probe of this scenario may report before the client calls
/// it a `stream_error`: 4× what it asks for, at least 4096 (a model may overrun
/// `max_tokens` by a little, never by orders of magnitude), and never above the
/// target's configured limit. Keeps a lying `usage` from flooding the metrics.
pub fn max_output_tokens(output_tokens: u32, configured: u32) -> u32 {
    output_tokens
        .saturating_mul(4)
        .max(4096)
        .min(configured.max(1))
}

/// When the first probe of runner `position` of `count` goes out: spread evenly over
/// one mean gap of its own rate, capped at [`MAX_STAGGER`].
pub fn stagger_offset(rate_hz: f64, position: usize, count: usize) -> Duration {
    let window = if rate_hz > 0.0 {
        Duration::from_secs_f64((1.0 / rate_hz).min(MAX_STAGGER.as_secs_f64()))
    } else {
        MAX_STAGGER
    };
    window.mul_f64(position as f64 / count.max(1) as f64)
}

/// Keeps `llmprobe_inflight_requests` right even when a probe task is aborted at the end
/// of the grace period.
struct InflightGuard(prometheus::IntGauge);

impl InflightGuard {
    fn new(g: prometheus::IntGauge) -> Self {
        g.inc();
        InflightGuard(g)
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Sends one scenario's probes through the shared prober, each counted as tried (for
/// readiness) and in flight while it runs.
struct ScenarioProber {
    prober: Arc<Prober>,
    series: Arc<ScenarioSeries>,
    status: ScenarioHandle,
}

impl ScenarioProber {
    fn probe(&self, d: Dispatch) -> impl Future<Output = RequestRecord> + Send + 'static + use<> {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).sent += 1;
        let prober = self.prober.clone();
        let inflight = self.series.inflight().cloned().map(InflightGuard::new);
        async move {
            let _inflight = inflight;
            prober.send(d, None).await.unwrap_or_else(|e| d.unbuilt(&e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_token_limit_follows_the_scenario() {
        assert_eq!(max_output_tokens(16, 1 << 20), 4096);
        assert_eq!(max_output_tokens(2000, 1 << 20), 8000);
        assert_eq!(max_output_tokens(u32::MAX, 1 << 20), 1 << 20);
        assert_eq!(max_output_tokens(16, 100), 100);
    }

    #[test]
    fn stagger_spreads_first_probes_within_one_gap() {
        assert_eq!(stagger_offset(1.0, 0, 4), Duration::ZERO);
        assert_eq!(stagger_offset(1.0, 2, 4), Duration::from_millis(500));
        // Slow rates are capped so the first probe still comes within seconds.
        assert_eq!(stagger_offset(1.0 / 3600.0, 1, 2), Duration::from_secs(5));
    }
}
