//! The parts of one scenario's runner that the front door and each discovered replica
//! share: its client settings, its workload, the runner's configuration and admission
//! (the rate-limit pause, the daily cost budget, the token budget),
//! the first probe's stagger, and the prober that counts a probe in flight.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::budget::TokenBudget;
use super::limits::{TargetLimits, WallClock};
use crate::client::ClientConfig;
use crate::config::{ScenarioPlan, TargetPlan};
use crate::exposition::ScenarioSeries;
use crate::probe::Prober;
use crate::record::RequestRecord;
use crate::runner::{self, CapPolicy, ConcurrencyCap, Dispatch, RunConfig, Stop};
use crate::status::StatusBoard;
use crate::status::board::{BudgetHold, ScenarioHandle};
use crate::workload::Workload;
use crate::workload::lengths::Lengths;
use crate::workload::prompt::PromptGenerator;

/// The first probe of a runner goes out after at most this long, so a new target shows
/// data within seconds even at one probe per hour.
pub const MAX_STAGGER: Duration = Duration::from_secs(10);

/// How long a stopped runner itself lets probes run on; `RunningTarget::stop` aborts
/// it at the configured grace period long before.
const RUNNER_GRACE_BACKSTOP: Duration = Duration::from_secs(3600);

/// What a scenario's probes ask: its golden set's questions, its fixed question (after
/// its `messages:` preamble), else synthetic prompts of `input_tokens`.
pub fn scenario_workload(scenario: &ScenarioPlan) -> anyhow::Result<Workload> {
    let output = Lengths::fixed(scenario.output_tokens)?;
    let mut prompts = PromptGenerator::approximate(scenario.shared_prefix_tokens);
    if !scenario.nonce {
        prompts = prompts.without_nonce();
    }
    let workload = match (&scenario.golden, &scenario.prompt) {
        (Some(g), _) => Workload::golden(g.set.clone(), output, prompts, scenario.seed)?,
        (None, Some(text)) => Workload::dataset(
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
        (None, None) => Workload::synthetic(
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
pub fn scenario_client(plan: &TargetPlan, scenario: &ScenarioPlan) -> ClientConfig {
    let mut extra_body = plan.client.extra_body.clone();
    if let Some(seed) = scenario.sampling_seed {
        // The target's own extra_body wins: it is the more specific override.
        extra_body.entry("seed").or_insert(seed.into());
    }
    ClientConfig {
        temperature: scenario.temperature.unwrap_or(plan.client.temperature),
        response_schema: scenario.checks.response_schema(),
        tool: scenario.checks.tool_offer(),
        llm_d: crate::config::llm_d::with_slo(
            &plan.client.llm_d,
            plan.llm_d_slo_headers,
            &scenario.slo,
        ),
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
pub fn run_config(plan: &TargetPlan, stop: &CancellationToken) -> RunConfig {
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

/// What an arrival of a target must pass, in this order: no rate-limit pause, the
/// day's cost budget not spent, and the token budget holding its `estimate` (last: it
/// takes the tokens).
pub struct Gate {
    pub target: String,
    pub limits: Arc<TargetLimits>,
    /// Dollars per UTC day, and where a spent budget is shown.
    pub budget_per_day: Option<(f64, Arc<StatusBoard>)>,
    pub tokens: Option<(Arc<Mutex<TokenBudget>>, u64)>,
    /// Whose day the spend is counted in (the system's; a test's own).
    pub clock: WallClock,
}

impl Gate {
    /// The runner's admission hook.
    pub fn admission(self) -> runner::Admission {
        Box::new(move |_d: &Dispatch| self.admit(Instant::now(), (self.clock)()))
    }

    /// Admits an arrival at `now` (monotonic) and `unix` (the wall clock's day).
    pub fn admit(&self, now: Instant, unix: f64) -> Result<(), runner::SkipReason> {
        if self.limits.paused(now) {
            return Err(runner::SkipReason::RateLimited);
        }
        if let Some((budget, board)) = &self.budget_per_day {
            let spent = self.limits.spent_today(unix);
            if spent >= *budget {
                let resumes_at = super::limits::next_utc_midnight(unix);
                board.update_hold(&self.target, |h| {
                    h.budget_spent = Some(BudgetHold {
                        spent,
                        budget: *budget,
                        resumes_at,
                    });
                });
                return Err(runner::SkipReason::CostBudget);
            }
        }
        if let Some((budget, estimate)) = &self.tokens {
            let mut b = budget.lock().unwrap_or_else(|e| e.into_inner());
            if !b.try_take(now, *estimate) {
                tracing::debug!(
                    target = %self.target,
                    wait = ?b.wait_for(now, *estimate),
                    "token budget spent; skipping a probe"
                );
                return Err(runner::SkipReason::TokenBudget);
            }
        }
        Ok(())
    }
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
pub struct ScenarioProber {
    pub prober: Arc<Prober>,
    pub series: Arc<ScenarioSeries>,
    /// The front door's status row (replicas count their probes on their own).
    pub status: Option<ScenarioHandle>,
}

impl ScenarioProber {
    pub fn probe(
        &self,
        d: Dispatch,
    ) -> impl Future<Output = RequestRecord> + Send + 'static + use<> {
        if let Some(status) = &self.status {
            status.lock().unwrap_or_else(|e| e.into_inner()).sent += 1;
        }
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
