//! One running target: a runner per scenario (the shared open-loop runner with the
//! `Skip` policy), a consumer per runner feeding records into the metrics and the status
//! board, the token budget they share, and the engine scraper. Everything stops when the
//! target's cancellation token fires; in-flight probes get the grace period.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::budget::TokenBudget;
use super::engine::{TtftWindow, scrape_loop};
use crate::client::{Client, ClientConfig};
use crate::config::{ScenarioPlan, TargetPlan};
use crate::export::status::ScenarioHandle;
use crate::export::{Metrics, ScenarioSeries, StatusBoard};
use crate::record::{Outcome, RequestRecord};
use crate::runner::{self, CapPolicy, ConcurrencyCap, Dispatch, RunConfig, RunEvent, Stop};
use crate::schedule::Schedule;
use crate::secret::{REDACTED, Secret};
use crate::workload::Workload;
use crate::workload::lengths::Lengths;
use crate::workload::prompt::PromptGenerator;

/// The first probe of a runner goes out after at most this long, so a new target shows
/// data within seconds even at one probe per hour.
pub const MAX_STAGGER: Duration = Duration::from_secs(10);

/// What every target shares.
#[derive(Clone)]
pub struct Shared {
    pub metrics: Arc<Metrics>,
    pub status: Arc<StatusBoard>,
    pub grace_period: Duration,
    pub engine_scrape_interval: Duration,
    /// Part of every prompt nonce: fresh per daemon start, so a restarted daemon does
    /// not send the prompts of its previous life into a warm prefix cache.
    pub run_nonce: u32,
}

/// A target's tasks and the token that stops them.
pub struct RunningTarget {
    pub plan: TargetPlan,
    pub stop: CancellationToken,
    pub tasks: Vec<JoinHandle<()>>,
}

impl RunningTarget {
    /// Stops scheduling; in-flight probes finish within the grace period. Returns a
    /// handle that resolves when every task of the target has ended.
    pub fn stop(self) -> JoinHandle<()> {
        self.stop.cancel();
        let tasks = self.tasks;
        tokio::spawn(async move {
            for t in tasks {
                let _ = t.await;
            }
        })
    }
}

/// Replaces every secret of the target in a text (an error message from a server may
/// echo the key it rejected) before it is logged or shown.
pub fn scrub(text: &str, secrets: &[Secret]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if !s.is_empty() && out.contains(s.expose()) {
            out = out.replace(s.expose(), REDACTED);
        }
    }
    out
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
    let mut tasks = Vec::new();
    if let Some(cap) = &plan.capacity {
        shared
            .metrics
            .set_capacity(&plan.name, &plan.model, &cap.gauges);
    }
    let (mut position, count) = stagger;
    for scenario in &plan.scenarios {
        // One client (one connection pool) per scenario: `ignore_eos` is per scenario.
        let client = Arc::new(Client::new(
            ClientConfig {
                ignore_eos: scenario.ignore_eos,
                ..plan.client.clone()
            },
            None,
        )?);
        let series = Arc::new(shared.metrics.scenario(
            &plan.name,
            &plan.model,
            &scenario.name,
            &scenario.slo,
            plan.price,
        ));
        let status = shared
            .status
            .scenario(&plan.name, &plan.model, &scenario.name);
        let workload = Workload::synthetic(
            Lengths::fixed(scenario.input_tokens)?,
            Lengths::fixed(scenario.output_tokens)?,
            PromptGenerator::approximate(scenario.shared_prefix_tokens),
            scenario.seed,
        )?
        .with_run_nonce(shared.run_nonce);
        let offset = stagger_offset(scenario.rate_hz, position, count);
        position += 1;
        let arrivals = std::iter::once(offset).chain(
            Schedule::poisson(scenario.rate_hz)?
                .arrivals(scenario.seed)
                .map(move |t| t + offset),
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let config = RunConfig {
            cap: Some(ConcurrencyCap {
                max_inflight: plan.max_inflight as usize,
                policy: CapPolicy::Skip,
            }),
            stop: Stop {
                cancel: stop.clone(),
                ..Stop::default()
            },
            drain: None,
            cancel_grace: shared.grace_period,
            timer: runner::Timer::Tokio,
        };
        let estimate = u64::from(scenario.input_tokens) + u64::from(scenario.output_tokens);
        let admission: Option<runner::Admission> = budget.clone().map(|b| {
            let target = plan.name.clone();
            let f: runner::Admission = Box::new(move |_d: &Dispatch| {
                let mut b = b.lock().unwrap_or_else(|e| e.into_inner());
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
            });
            f
        });
        let probe = {
            let client = client.clone();
            let series = series.clone();
            let workload = Arc::new(workload);
            move |d: Dispatch| {
                let client = client.clone();
                let workload = workload.clone();
                let inflight = InflightGuard::new(series.inflight().clone());
                async move {
                    let _inflight = inflight;
                    match workload.spec(d.id) {
                        Ok(spec) => client.send(&spec, d.id, d.t_sched, d.run_start).await,
                        Err(e) => {
                            // Only a prompt that cannot be built ends here; the plan
                            // checked the lengths, so this is a bug worth seeing.
                            let mut r = RequestRecord::new(d.id, d.t_sched, d.elapsed());
                            r.outcome = Outcome::StreamError;
                            r.error = Some(format!("building the prompt: {e:#}"));
                            r
                        }
                    }
                }
            }
        };
        tasks.push(tokio::spawn(async move {
            runner::run(arrivals, config, admission, probe, tx).await;
        }));
        tasks.push(tokio::spawn(consume(
            rx,
            Consumer {
                target: plan.name.clone(),
                scenario: scenario.clone(),
                series,
                status,
                budget: budget.clone(),
                estimate,
                ttft_window: ttft_window.clone(),
                secrets: plan.secrets.clone(),
                stop: stop.clone(),
            },
        )));
    }
    if let Some(url) = plan.engine_metrics_url.clone() {
        tasks.push(tokio::spawn(scrape_loop(
            plan.clone(),
            url,
            shared.metrics.clone(),
            shared.engine_scrape_interval,
            ttft_window,
            stop.clone(),
        )?));
    }
    tracing::info!(
        target = %plan.name,
        model = %plan.model,
        scenarios = plan.scenarios.len(),
        rate_per_second = plan.scenarios.iter().map(|s| s.rate_hz).sum::<f64>(),
        "target started"
    );
    Ok(RunningTarget { plan, stop, tasks })
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

struct Consumer {
    target: String,
    scenario: ScenarioPlan,
    series: Arc<ScenarioSeries>,
    status: ScenarioHandle,
    budget: Option<Arc<Mutex<TokenBudget>>>,
    estimate: u64,
    ttft_window: Arc<Mutex<TtftWindow>>,
    secrets: Vec<Secret>,
    stop: CancellationToken,
}

async fn consume(mut rx: mpsc::UnboundedReceiver<RunEvent>, c: Consumer) {
    while let Some(event) = rx.recv().await {
        match event {
            RunEvent::Record(r) => c.record(&r),
            RunEvent::Skipped { reason, .. } => {
                c.series.skip(reason);
                c.status.lock().unwrap_or_else(|e| e.into_inner()).skipped += 1;
                tracing::debug!(target = %c.target, scenario = %c.scenario.name, reason = reason.as_str(), "probe skipped");
            }
        }
    }
}

impl Consumer {
    fn record(&self, r: &RequestRecord) {
        // Probes cut off by our own stop (reload, shutdown) say nothing about the target.
        if r.outcome == Outcome::Cancelled && self.stop.is_cancelled() {
            return;
        }
        let good = self.series.observe(r, &self.scenario.slo);
        if let Some(b) = &self.budget {
            let actual = u64::from(r.prompt_tokens()) + u64::from(r.output_tokens());
            b.lock().unwrap_or_else(|e| e.into_inner()).settle(
                Instant::now(),
                self.estimate,
                actual,
            );
        }
        if r.is_success()
            && let Some(t) = r.ttft()
        {
            self.ttft_window
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(t.as_secs_f64());
        }
        let error = r.error.as_deref().map(|e| scrub(e, &self.secrets));
        if r.is_success() {
            tracing::debug!(
                target = %self.target,
                scenario = %self.scenario.name,
                ttft_ms = r.ttft().map(|d| d.as_secs_f64() * 1e3),
                e2e_ms = r.e2e().map(|d| d.as_secs_f64() * 1e3),
                output_tokens = r.output_tokens(),
                good,
                "probe ok"
            );
        } else {
            tracing::warn!(
                target = %self.target,
                scenario = %self.scenario.name,
                reason = r.outcome.as_str(),
                error = error.as_deref().unwrap_or(""),
                "probe failed"
            );
        }
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(r.outcome, good, error, crate::export::metrics::unix_now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_replaces_every_secret() {
        let secrets = vec![Secret::new("sk-123"), Secret::new("")];
        assert_eq!(
            scrub("401: invalid key sk-123 (sk-123)", &secrets),
            "401: invalid key <secret> (<secret>)"
        );
        assert_eq!(scrub("fine", &secrets), "fine");
    }

    #[test]
    fn stagger_spreads_first_probes_within_one_gap() {
        assert_eq!(stagger_offset(1.0, 0, 4), Duration::ZERO);
        assert_eq!(stagger_offset(1.0, 2, 4), Duration::from_millis(500));
        // Slow rates are capped so the first probe still comes within seconds.
        assert_eq!(stagger_offset(1.0 / 3600.0, 1, 2), Duration::from_secs(5));
    }
}
