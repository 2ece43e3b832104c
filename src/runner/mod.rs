//! The open-loop runner: sends each request at its scheduled time whether or not earlier
//! ones finished, and streams what happened as [`RunEvent`]s. One loop serves the daemon
//! and `bench`: the concurrency cap and its policy, the admission hook and the stop
//! condition are parameters, not variants of the loop.
//!
//! It owns dispatch timing only. What a request does is the probe closure's business
//! (the HTTP client, or a fake in tests); what the records mean is `aggregate`'s and
//! `exposition`'s. It never touches Prometheus.
//!
//! Timing: see [`timer`]: a timerfd on the runtime's own event loop for bench, tokio's
//! timer under a paused clock and where a millisecond of dispatch lag does not matter.

mod timer;
#[cfg(target_os = "linux")]
mod timerfd;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::event::{RunEvent, SkipReason};
use crate::record::{Outcome, RequestRecord};
pub use timer::{COARSE_MARGIN, IN_TASK_SPIN, PreciseTimer, SPIN, Spins, Timer};
#[cfg(target_os = "linux")]
pub use timerfd::FdTimer;

/// What the probe gets: which request, when it was meant to go, and the run's clock
/// origin (every timestamp in a record is an offset from `run_start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatch {
    /// Arrival sequence number (skipped arrivals use up their number too).
    pub id: u64,
    /// Intended send time, offset from `run_start`.
    pub t_sched: Duration,
    pub run_start: Instant,
}

impl Dispatch {
    /// Now, as an offset from the run start (what a probe puts in `t_send`).
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(self.run_start)
    }

    /// The record of a request whose prompt could not be built: the plan checked the
    /// lengths, so this is a bug worth seeing, not a failure of the target.
    pub fn unbuilt(&self, e: &anyhow::Error) -> RequestRecord {
        let mut r = RequestRecord::new(self.id, self.t_sched, self.elapsed());
        r.outcome = Outcome::StreamError;
        r.error = Some(format!("building the prompt: {e:#}"));
        r
    }
}

/// What to do with an arrival when `max_inflight` requests are already in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapPolicy {
    /// Wait for a slot (bench, like `vllm bench serve --max-concurrency`). Later
    /// arrivals queue behind it in order; `t_sched` keeps the scheduled time, so the
    /// wait shows up as dispatch lag.
    Wait,
    /// Drop the arrival and report it (daemon: a probe must not pile onto a server that
    /// is already slow).
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcurrencyCap {
    /// Requests in flight at most; 0 is taken as 1.
    pub max_inflight: usize,
    pub policy: CapPolicy,
}

/// When to stop dispatching. Any combination; with none set the run lasts until the
/// arrivals run out or `cancel` fires.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    /// Stop after this many arrivals (sent or skipped).
    pub max_requests: Option<u64>,
    /// Stop at this offset from the run start: arrivals scheduled at or after it are
    /// not sent.
    pub duration: Option<Duration>,
    /// Stop now (Ctrl-C, daemon reload or shutdown).
    pub cancel: CancellationToken,
}

/// Everything that shapes a run besides the arrivals and the probe.
#[derive(Debug, Clone, Default)]
pub struct RunConfig {
    pub cap: Option<ConcurrencyCap>,
    pub stop: Stop,
    /// After a count or duration stop, how long in-flight requests may still run
    /// (`None`: as long as they take; the client's own timeouts bound them).
    pub drain: Option<Duration>,
    /// After `stop.cancel` fires (before or during the drain), how long in-flight
    /// requests may still run before they are cancelled.
    pub cancel_grace: Duration,
    pub timer: Timer,
}

/// Why dispatching ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Count,
    Duration,
    Cancelled,
    /// The arrival iterator ended.
    Exhausted,
}

/// What the run did, returned when every request has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub run_start: Instant,
    pub stopped_by: StopReason,
    /// Arrivals whose time came: dispatched + skipped, plus the one abandoned when a
    /// cancellation arrives while it waits for a slot under [`CapPolicy::Wait`].
    pub arrivals: u64,
    pub dispatched: u64,
    pub skipped: u64,
    /// Requests cancelled at the end of the drain.
    pub cancelled: u64,
    /// Offset at which dispatching stopped (the duration for a duration stop).
    pub dispatch_end: Duration,
    /// Offset at which the last request ended.
    pub end: Duration,
}

impl RunReport {
    /// The report of a run starting at `run_start`, before any arrival.
    fn starting(run_start: Instant) -> RunReport {
        RunReport {
            run_start,
            stopped_by: StopReason::Exhausted,
            arrivals: 0,
            dispatched: 0,
            skipped: 0,
            cancelled: 0,
            dispatch_end: Duration::ZERO,
            end: Duration::ZERO,
        }
    }
}

/// Decides whether an arrival may go: `Err(reason)` skips it. Called at the arrival's
/// scheduled time, before any wait for a concurrency slot.
pub type Admission = Box<dyn FnMut(&Dispatch) -> Result<(), SkipReason> + Send>;

/// Runs until the stop condition, then drains. `probe` is called once per dispatched
/// arrival at its scheduled time (or when a slot frees, under [`CapPolicy::Wait`]) and
/// must return the request's record; it runs as its own task, so a slow request never
/// delays the next. Events go to `events` as they happen; a closed receiver is ignored
/// (the run still completes).
pub async fn run<P, F>(
    arrivals: impl IntoIterator<Item = Duration>,
    config: RunConfig,
    mut admission: Option<Admission>,
    probe: P,
    events: mpsc::UnboundedSender<RunEvent>,
) -> RunReport
where
    P: Fn(Dispatch) -> F,
    F: Future<Output = RequestRecord> + Send + 'static,
{
    let run_start = Instant::now();
    let RunConfig {
        cap,
        stop,
        drain,
        cancel_grace,
        timer,
    } = config;
    // 0 would deadlock `Wait` and drop everything under `Skip`: treat it as 1. Huge
    // values are clamped to what a semaphore holds (it panics above that).
    let slots = cap.map(|c| {
        let permits = c.max_inflight.clamp(1, Semaphore::MAX_PERMITS);
        (Arc::new(Semaphore::new(permits)), c.policy)
    });
    let kill = CancellationToken::new();
    let cancelled = Arc::new(AtomicU64::new(0));
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut report = RunReport::starting(run_start);
    let mut arrivals = arrivals.into_iter();

    'dispatch: loop {
        // Reap finished tasks so the set does not grow over a long daemon run.
        while tasks.try_join_next().is_some() {}
        if stop.max_requests.is_some_and(|max| report.arrivals >= max) {
            report.stopped_by = StopReason::Count;
            break;
        }
        let Some(t_sched) = arrivals.next() else {
            report.stopped_by = StopReason::Exhausted;
            break;
        };
        if stop.duration.is_some_and(|d| t_sched >= d) {
            report.stopped_by = StopReason::Duration;
            break;
        }
        // An offset beyond what the clock can represent ends the schedule.
        let Some(due) = run_start.checked_add(t_sched) else {
            report.stopped_by = StopReason::Exhausted;
            break;
        };
        tokio::select! {
            biased;
            () = stop.cancel.cancelled() => {
                report.stopped_by = StopReason::Cancelled;
                break;
            }
            () = timer.wait_until(due) => {}
        }
        let dispatch = Dispatch {
            id: report.arrivals,
            t_sched,
            run_start,
        };
        report.arrivals += 1;
        let mut permit = match admit(&slots, &mut admission, &dispatch) {
            Ok(permit) => permit,
            Err(reason) => {
                report.skipped += 1;
                let _ = events.send(RunEvent::Skipped {
                    id: dispatch.id,
                    t_sched,
                    reason,
                });
                continue;
            }
        };
        if let Some((sem, CapPolicy::Wait)) = &slots {
            tokio::select! {
                biased;
                () = stop.cancel.cancelled() => {
                    report.stopped_by = StopReason::Cancelled;
                    break 'dispatch;
                }
                p = sem.clone().acquire_owned() => match p {
                    Ok(p) => permit = Some(p),
                    // The semaphore is never closed; treat it as a stop to be safe.
                    Err(_) => break 'dispatch,
                },
            }
        }
        report.dispatched += 1;
        let fut = probe(dispatch);
        spawn_request(
            &mut tasks, dispatch, fut, permit, &kill, &cancelled, &events,
        );
    }
    report.dispatch_end = match report.stopped_by {
        StopReason::Duration => stop.duration.unwrap_or_default(),
        _ => Instant::now().saturating_duration_since(run_start),
    };

    let was_cancelled = report.stopped_by == StopReason::Cancelled;
    drain_tasks(
        tasks,
        was_cancelled,
        drain,
        cancel_grace,
        &stop.cancel,
        &kill,
    )
    .await;
    report.cancelled = cancelled.load(Ordering::Relaxed);
    report.end = Instant::now().saturating_duration_since(run_start);
    report
}

/// Whether an arrival may go at its scheduled time: a slot under
/// [`CapPolicy::Skip`] (taken now), then the admission hook. `Err` skips it.
fn admit(
    slots: &Option<(Arc<Semaphore>, CapPolicy)>,
    admission: &mut Option<Admission>,
    dispatch: &Dispatch,
) -> Result<Option<OwnedSemaphorePermit>, SkipReason> {
    let mut permit = None;
    if let Some((sem, CapPolicy::Skip)) = slots {
        match sem.clone().try_acquire_owned() {
            Ok(p) => permit = Some(p),
            Err(_) => return Err(SkipReason::MaxInflight),
        }
    }
    if let Some(admit) = admission.as_mut()
        && let Err(reason) = admit(dispatch)
    {
        return Err(reason);
    }
    Ok(permit)
}

/// Runs one request as its own task: its record goes to `events` when it ends, or a
/// cancelled record when `kill` fires first; its concurrency slot is freed then.
fn spawn_request<F>(
    tasks: &mut JoinSet<()>,
    dispatch: Dispatch,
    fut: F,
    permit: Option<OwnedSemaphorePermit>,
    kill: &CancellationToken,
    cancelled: &Arc<AtomicU64>,
    events: &mpsc::UnboundedSender<RunEvent>,
) where
    F: Future<Output = RequestRecord> + Send + 'static,
{
    let kill = kill.clone();
    let cancelled = cancelled.clone();
    let events = events.clone();
    tasks.spawn(async move {
        let t_dispatch = dispatch.elapsed();
        let record = tokio::select! {
            biased;
            record = fut => record,
            () = kill.cancelled() => {
                cancelled.fetch_add(1, Ordering::Relaxed);
                cancelled_record(&dispatch, t_dispatch)
            }
        };
        drop(permit);
        let _ = events.send(RunEvent::Record(record));
    });
}

/// Drain: lets in-flight requests finish within the allowed time (`drain`, or
/// `cancel_grace` once the run is cancelled), then cancels them through `kill`.
async fn drain_tasks(
    mut tasks: JoinSet<()>,
    was_cancelled: bool,
    drain: Option<Duration>,
    cancel_grace: Duration,
    cancel: &CancellationToken,
    kill: &CancellationToken,
) {
    let now = Instant::now();
    let mut deadline = if was_cancelled {
        Some(now + cancel_grace)
    } else {
        drain.map(|d| now + d)
    };
    let mut cancel_seen = was_cancelled;
    while !tasks.is_empty() {
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            joined = tasks.join_next() => {
                if let Some(Err(e)) = joined
                    && e.is_panic()
                {
                    tracing::error!(error = %e, "a probe task panicked; its record is lost");
                }
            }
            () = cancel.cancelled(), if !cancel_seen => {
                cancel_seen = true;
                let by = Instant::now() + cancel_grace;
                deadline = Some(deadline.map_or(by, |d| d.min(by)));
            }
            () = sleep => {
                kill.cancel();
                deadline = None;
            }
        }
    }
}

/// The record of a request cut off at the end of a run. Its `t_send` is when its task
/// started (the probe's own timestamps died with it).
fn cancelled_record(dispatch: &Dispatch, t_dispatch: Duration) -> RequestRecord {
    let mut r = RequestRecord::new(dispatch.id, dispatch.t_sched, t_dispatch);
    r.outcome = Outcome::Cancelled;
    r.t_end = Some(dispatch.elapsed());
    r.error = Some("the run stopped with the request in flight".into());
    r
}
