//! The open-loop runner under a paused tokio clock with a fake probe: exact dispatch
//! lag, open-loop behaviour, the concurrency cap policies, admission, stop conditions
//! and the drain.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use llmprobe::record::{Outcome, RequestRecord};
use llmprobe::runner::{
    self, Admission, CapPolicy, ConcurrencyCap, Dispatch, RunConfig, RunEvent, RunReport,
    SkipReason, Stop, StopReason,
};
use llmprobe::schedule::{ArrivalProcess, Schedule};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A probe that records t_send on entry, "streams" for `service`, and ends.
fn fake_probe(
    service: Duration,
) -> impl Fn(Dispatch) -> std::pin::Pin<Box<dyn Future<Output = RequestRecord> + Send>> {
    move |d: Dispatch| {
        Box::pin(async move {
            let mut r = RequestRecord::new(d.id, d.t_sched, d.elapsed());
            tokio::time::sleep(service).await;
            r.push_chunk(d.elapsed(), 4, Some(1));
            r.t_end = Some(d.elapsed());
            r.resolve_tokens(None);
            r
        })
    }
}

/// Every `gap`, starting at 0.
fn every(gap: Duration) -> impl Iterator<Item = Duration> {
    (0u32..).map(move |i| gap * i)
}

async fn collect(
    arrivals: impl IntoIterator<Item = Duration>,
    config: RunConfig,
    admission: Option<Admission>,
    service: Duration,
) -> (
    RunReport,
    Vec<RequestRecord>,
    Vec<(u64, Duration, SkipReason)>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let report = runner::run(arrivals, config, admission, fake_probe(service), tx).await;
    let mut records = Vec::new();
    let mut skips = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        match ev {
            RunEvent::Record(r) => records.push(r),
            RunEvent::Skipped {
                id,
                t_sched,
                reason,
            } => skips.push((id, t_sched, reason)),
        }
    }
    records.sort_by_key(|r| r.id);
    (report, records, skips)
}

fn count(n: u64) -> RunConfig {
    RunConfig {
        stop: Stop {
            max_requests: Some(n),
            ..Stop::default()
        },
        ..RunConfig::default()
    }
}

#[tokio::test(start_paused = true)]
async fn dispatch_lag_is_the_tokio_timer_rounding_only() {
    let sched = Schedule::poisson(20.0).unwrap();
    let arrivals: Vec<Duration> = sched.arrivals(11).take(50).collect();
    let (report, records, skips) = collect(arrivals.clone(), count(50), None, ms(5)).await;
    assert!(skips.is_empty());
    assert_eq!(report.stopped_by, StopReason::Count);
    assert_eq!((report.arrivals, report.dispatched), (50, 50));
    assert_eq!(records.len(), 50);
    for (r, want) in records.iter().zip(&arrivals) {
        assert_eq!(r.t_sched, *want);
        // tokio's timer wheel fires at whole milliseconds: the send is the schedule
        // rounded up to the next millisecond, never earlier, never later.
        let ceil_ms = Duration::from_millis(want.as_nanos().div_ceil(1_000_000) as u64);
        assert_eq!(r.t_send, ceil_ms, "request {}", r.id);
        assert!(r.dispatch_lag() < ms(1));
        assert_eq!(r.ttft(), Some(ms(5)));
        assert_eq!(r.e2e_from_sched(), Some(r.dispatch_lag() + ms(5)));
    }
}

#[tokio::test(start_paused = true)]
async fn open_loop_slow_requests_do_not_delay_later_ones() {
    // Every request takes 10 s; arrivals every 100 ms must still go on time.
    let (report, records, _) = collect(every(ms(100)), count(20), None, ms(10_000)).await;
    assert_eq!(records.len(), 20);
    assert!(records.iter().all(|r| r.dispatch_lag().is_zero()));
    assert!(records.iter().all(|r| r.outcome == Outcome::Ok));
    // The run ends when the last request (sent at 1.9 s) ends at 11.9 s.
    assert_eq!(report.end, ms(11_900));
    assert_eq!(report.dispatch_end, ms(1_900));
}

#[tokio::test(start_paused = true)]
async fn wait_policy_queues_and_records_the_lag() {
    let mut config = count(5);
    config.cap = Some(ConcurrencyCap {
        max_inflight: 1,
        policy: CapPolicy::Wait,
    });
    // One slot, 250 ms per request, arrivals every 100 ms: request i goes at 250·i ms.
    let (report, records, skips) = collect(every(ms(100)), config, None, ms(250)).await;
    assert!(skips.is_empty());
    assert_eq!(report.dispatched, 5);
    for r in &records {
        assert_eq!(
            r.t_sched,
            ms(100 * r.id),
            "t_sched stays the scheduled time"
        );
        assert_eq!(r.t_send, ms(250 * r.id));
        assert_eq!(r.dispatch_lag(), ms(150 * r.id));
        assert_eq!(r.ttft_from_sched(), Some(ms(150 * r.id + 250)));
    }
}

#[tokio::test(start_paused = true)]
async fn skip_policy_drops_arrivals_over_the_cap() {
    let mut config = count(10);
    config.cap = Some(ConcurrencyCap {
        max_inflight: 1,
        policy: CapPolicy::Skip,
    });
    // Busy 0–250, 300–550, 600–850, 900–1150: the arrivals in between are dropped.
    let (report, records, skips) = collect(every(ms(100)), config, None, ms(250)).await;
    let sent: Vec<u64> = records.iter().map(|r| r.id).collect();
    assert_eq!(sent, vec![0, 3, 6, 9]);
    assert!(records.iter().all(|r| r.dispatch_lag().is_zero()));
    let skipped: Vec<u64> = skips.iter().map(|s| s.0).collect();
    assert_eq!(skipped, vec![1, 2, 4, 5, 7, 8]);
    assert!(
        skips
            .iter()
            .all(|s| s.2 == SkipReason::MaxInflight && s.1 == ms(100 * s.0))
    );
    assert_eq!(
        (report.arrivals, report.dispatched, report.skipped),
        (10, 4, 6)
    );
}

#[tokio::test(start_paused = true)]
async fn admission_hook_can_refuse_with_token_budget() {
    let admit: Admission = Box::new(|d: &Dispatch| {
        if d.id % 3 == 2 {
            Err(SkipReason::TokenBudget)
        } else {
            Ok(())
        }
    });
    let (report, records, skips) = collect(every(ms(10)), count(9), Some(admit), ms(1)).await;
    assert_eq!(
        records.iter().map(|r| r.id).collect::<Vec<_>>(),
        [0, 1, 3, 4, 6, 7]
    );
    assert_eq!(
        skips,
        vec![
            (2, ms(20), SkipReason::TokenBudget),
            (5, ms(50), SkipReason::TokenBudget),
            (8, ms(80), SkipReason::TokenBudget)
        ]
    );
    assert_eq!(report.skipped, 3);
    assert_eq!(SkipReason::TokenBudget.as_str(), "token_budget");
    assert_eq!(SkipReason::MaxInflight.as_str(), "max_inflight");
}

#[tokio::test(start_paused = true)]
async fn duration_stop_sends_only_arrivals_before_the_end() {
    let config = RunConfig {
        stop: Stop {
            duration: Some(ms(1000)),
            ..Stop::default()
        },
        ..RunConfig::default()
    };
    let (report, records, _) = collect(every(ms(100)), config, None, ms(30)).await;
    assert_eq!(report.stopped_by, StopReason::Duration);
    assert_eq!(records.len(), 10); // 0, 100, …, 900
    assert_eq!(report.dispatch_end, ms(1000));
    assert_eq!(report.end, ms(930));
}

#[tokio::test(start_paused = true)]
async fn first_stop_condition_wins() {
    let config = RunConfig {
        stop: Stop {
            max_requests: Some(3),
            duration: Some(ms(1000)),
            ..Stop::default()
        },
        ..RunConfig::default()
    };
    let (report, records, _) = collect(every(ms(100)), config, None, ms(1)).await;
    assert_eq!(report.stopped_by, StopReason::Count);
    assert_eq!(records.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn exhausted_arrivals_end_the_run() {
    let (report, records, _) = collect(vec![ms(0), ms(5)], RunConfig::default(), None, ms(1)).await;
    assert_eq!(report.stopped_by, StopReason::Exhausted);
    assert_eq!(records.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_dispatch_and_cancels_after_the_grace() {
    let cancel = CancellationToken::new();
    let config = RunConfig {
        stop: Stop {
            cancel: cancel.clone(),
            ..Stop::default()
        },
        cancel_grace: ms(100),
        ..RunConfig::default()
    };
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(ms(450)).await;
        trigger.cancel();
    });
    // Requests take 120 ms: the last one, sent at 400, ends at 520, inside the grace
    // period (450 + 100): nothing is cut.
    let (report, records, _) = collect(every(ms(100)), config, None, ms(120)).await;
    assert_eq!(report.stopped_by, StopReason::Cancelled);
    assert_eq!(records.len(), 5);
    assert!(records.iter().all(|r| r.outcome == Outcome::Ok));
    assert_eq!(report.cancelled, 0);
    assert_eq!(report.end, ms(520));
}

#[tokio::test(start_paused = true)]
async fn requests_still_running_after_the_grace_are_cancelled_records() {
    let cancel = CancellationToken::new();
    let config = RunConfig {
        stop: Stop {
            cancel: cancel.clone(),
            ..Stop::default()
        },
        cancel_grace: ms(100),
        ..RunConfig::default()
    };
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(ms(450)).await;
        trigger.cancel();
    });
    // 10 s requests: all 5 in flight at 450 ms are cut at 550 ms.
    let (report, records, _) = collect(every(ms(100)), config, None, ms(10_000)).await;
    assert_eq!(records.len(), 5);
    assert_eq!(report.cancelled, 5);
    for r in &records {
        assert_eq!(r.outcome, Outcome::Cancelled);
        assert_eq!(r.t_send, ms(100 * r.id));
        assert_eq!(r.t_end, Some(ms(550)));
        assert!(r.error.is_some());
    }
    assert_eq!(report.end, ms(550));
}

#[tokio::test(start_paused = true)]
async fn drain_timeout_bounds_a_count_stop_and_cancel_shortens_it() {
    let mut config = count(2);
    config.drain = Some(ms(1000));
    let (report, records, _) = collect(every(ms(100)), config, None, ms(5000)).await;
    // Dispatch ends at 100 ms (after the second arrival); drain until 1100 ms.
    assert_eq!(report.end, ms(1100));
    assert_eq!(report.cancelled, 2);
    assert!(records.iter().all(|r| r.outcome == Outcome::Cancelled));

    // With an unlimited drain, a cancel during the drain gives `cancel_grace`.
    let cancel = CancellationToken::new();
    let mut config = count(2);
    config.stop.cancel = cancel.clone();
    config.cancel_grace = ms(50);
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(ms(300)).await;
        trigger.cancel();
    });
    let (report, _, _) = collect(every(ms(100)), config, None, ms(5000)).await;
    assert_eq!(report.stopped_by, StopReason::Count);
    assert_eq!(report.end, ms(350));
    assert_eq!(report.cancelled, 2);
}

#[tokio::test(start_paused = true)]
async fn infinite_rate_sends_everything_at_time_zero_with_wait_cap() {
    let mut config = count(6);
    config.cap = Some(ConcurrencyCap {
        max_inflight: 2,
        policy: CapPolicy::Wait,
    });
    let sched = Schedule::new(f64::INFINITY, ArrivalProcess::Poisson).unwrap();
    let (_, records, _) = collect(sched.arrivals(0), config, None, ms(100)).await;
    let sends: Vec<Duration> = records.iter().map(|r| r.t_send).collect();
    assert_eq!(
        sends,
        vec![ms(0), ms(0), ms(100), ms(100), ms(200), ms(200)]
    );
    assert!(records.iter().all(|r| r.t_sched.is_zero()));
}

#[tokio::test(start_paused = true)]
async fn a_closed_receiver_does_not_stop_the_run() {
    let (tx, rx) = mpsc::unbounded_channel();
    drop(rx);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let probe = move |d: Dispatch| {
        c.fetch_add(1, Ordering::Relaxed);
        async move { RequestRecord::new(d.id, d.t_sched, d.elapsed()) }
    };
    let report = runner::run(every(ms(1)), count(7), None, probe, tx).await;
    assert_eq!(report.dispatched, 7);
    assert_eq!(calls.load(Ordering::Relaxed), 7);
}

#[tokio::test(start_paused = true)]
async fn degenerate_caps_do_not_deadlock_or_panic() {
    for (max, policy, sent) in [
        (0, CapPolicy::Wait, 3),
        (0, CapPolicy::Skip, 2),
        (usize::MAX, CapPolicy::Wait, 3),
    ] {
        let mut config = count(3);
        config.cap = Some(ConcurrencyCap {
            max_inflight: max,
            policy,
        });
        // Requests take 150 ms, arrivals every 100 ms.
        let (report, records, _) = collect(every(ms(100)), config, None, ms(150)).await;
        assert_eq!(report.dispatched, sent, "{max} {policy:?}");
        assert_eq!(records.len() as u64, sent);
    }
}
