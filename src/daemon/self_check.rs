//! The daemon's self-check: self-probes of the reference engine (src/selfcheck/) at the
//! configured Poisson rate, forever, through the same client, runner and timer as every
//! target's probes, on the same runtime. Each record's errors against what the engine
//! did go to the `llmprobe_self_check_*` series.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::failure_lines::{self, Activity, Attempt};
use super::failure_log::{FailureKey, FailureLog};

use crate::config::schema::SelfCheckConfig;
use crate::exposition::{Metrics, SelfProbe};
use crate::runner::{self, Dispatch, RunConfig, RunEvent, Stop};
use crate::schedule::Schedule;
use crate::selfcheck::{ReferenceEngine, SelfProbes, Truth};

/// When the first self-probe goes out after a start.
const FIRST_PROBE: Duration = Duration::from_secs(1);

/// A running self-check: its config (to notice a change on reload) and its task.
pub struct RunningSelfCheck {
    pub config: SelfCheckConfig,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl RunningSelfCheck {
    /// Stops the self-check; a self-probe in flight is dropped (it measures nothing a
    /// user needs), and so is the reference engine.
    pub fn stop(self) {
        self.stop.cancel();
        self.task.abort();
    }
}

/// Starts the self-check in the background. The engine starts inside the task, so a
/// failure to start is logged, never fatal: the daemon then just lacks its error bar.
pub fn start(
    config: SelfCheckConfig,
    metrics: Arc<Metrics>,
    seed: u64,
    summary_interval: watch::Receiver<Duration>,
) -> RunningSelfCheck {
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(
        config.clone(),
        metrics,
        seed,
        stop.clone(),
        summary_interval,
    ));
    RunningSelfCheck { config, stop, task }
}

/// Twice the self-probes in flight on average (rate × one answer's duration), at least
/// two.
fn max_inflight(c: &SelfCheckConfig) -> usize {
    let answer = c.ttft + c.itl * c.output_tokens.saturating_sub(1);
    let busy = c.rate.hz() * answer.as_secs_f64();
    (2.0 * busy).ceil().max(2.0) as usize
}

fn truth(c: &SelfCheckConfig) -> Truth {
    Truth {
        ttft: c.ttft,
        itl: c.itl,
        output_tokens: c.output_tokens,
    }
}

async fn run(
    config: SelfCheckConfig,
    metrics: Arc<Metrics>,
    seed: u64,
    stop: CancellationToken,
    mut summary_interval: watch::Receiver<Duration>,
) {
    let engine = match ReferenceEngine::start(truth(&config)).await {
        Ok(e) => Arc::new(e),
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "self-check disabled: its reference engine did not start");
            return;
        }
    };
    let (probes, schedule) = match (
        SelfProbes::new(engine.clone(), seed),
        Schedule::poisson(config.rate.hz()),
    ) {
        (Ok(p), Ok(s)) => (Arc::new(p), s),
        (Err(e), _) => {
            tracing::error!(error = %format!("{e:#}"), "self-check disabled");
            return;
        }
        (_, Err(e)) => {
            tracing::error!(error = %e, "self-check disabled");
            return;
        }
    };
    tracing::info!(
        rate_per_second = config.rate.hz(),
        ttft = ?config.ttft,
        itl = ?config.itl,
        engine = engine.base_url(),
        "self-check started"
    );
    let config = RunConfig {
        // Like a target's runner: self-probes stuck in a throttled process must not
        // pile up more of them; twice the self-probes a healthy process has in flight.
        cap: Some(runner::ConcurrencyCap {
            max_inflight: max_inflight(&config),
            policy: runner::CapPolicy::Skip,
        }),
        stop: Stop {
            cancel: stop,
            ..Stop::default()
        },
        drain: None,
        cancel_grace: Duration::ZERO,
        timer: runner::Timer::Tokio,
    };
    let sender = probes.clone();
    let probe = move |d: Dispatch| {
        let probes = sender.clone();
        async move { probes.send(d).await }
    };
    // The first self-probe soon (the series fill within seconds of a start), but not
    // together with the targets' first probes.
    let arrivals =
        std::iter::once(FIRST_PROBE).chain(schedule.arrivals(seed).map(|t| t + FIRST_PROBE));
    let (tx, mut rx) = mpsc::unbounded_channel();
    // A failing self-check is logged by state change, as a failing target is.
    let key = FailureKey::target("self-check");
    let mut failures = FailureLog::new(*summary_interval.borrow_and_update());
    let observe = async {
        while let Some(event) = rx.recv().await {
            if let RunEvent::Record(r) = event {
                let error = probes.error(&r);
                failures.set_interval(*summary_interval.borrow_and_update());
                let text = r.error.clone().unwrap_or_default();
                let attempt = Attempt {
                    id: Some(r.id),
                    reason: r.outcome.as_str(),
                    error: &text,
                };
                if error.is_none() {
                    let lines = failures.failure(&key, Instant::now(), r.outcome.as_str(), &text);
                    failure_lines::failure(Activity::SelfCheck, &key, attempt, &lines);
                } else if let Some(line) = failures.success(&key, Instant::now()) {
                    failure_lines::write(Activity::SelfCheck, &key, attempt, &line);
                }
                metrics.self_check().observe(&SelfProbe {
                    dispatch_lag: r.dispatch_lag(),
                    ttft_error: error.as_ref().map(|e| e.ttft),
                    itl_errors: error.as_ref().map_or(&[][..], |e| &e.itl),
                });
            }
        }
    };
    tokio::join!(runner::run(arrivals, config, None, probe, tx), observe);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_for_the_rate() {
        let mut c = SelfCheckConfig::default();
        // 6/min × 125 ms: well under one in flight.
        assert_eq!(max_inflight(&c), 2);
        c.rate = "20/s".parse().unwrap();
        // 20/s × 125 ms = 2.5 in flight on average.
        assert_eq!(max_inflight(&c), 5);
    }
}
