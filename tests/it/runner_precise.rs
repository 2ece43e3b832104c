//! The precise timer in real time: correctness only (never early, earliest deadline
//! first, every request dispatched). How late it is gets measured by
//! `benches/scheduler.rs`, not asserted here.

use std::time::Duration;

use llmprobe::record::RequestRecord;
use llmprobe::runner::{self, Dispatch, PreciseTimer, RunConfig, RunEvent, Spins, Stop, Timer};
use llmprobe::schedule::Schedule;
use tokio::sync::mpsc;

#[tokio::test]
async fn precise_timer_never_fires_early() {
    for spins in [Spins::TIGHT, Spins::NONE] {
        let timer = PreciseTimer::with_spins(spins).unwrap();
        for micros in [0u64, 50, 300, 1500, 4000] {
            let deadline = std::time::Instant::now() + Duration::from_micros(micros);
            timer.wait_until(deadline).await;
            assert!(std::time::Instant::now() >= deadline);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precise_timer_serves_several_waiters_earliest_first() {
    let timer = PreciseTimer::spawn().unwrap();
    let start = std::time::Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Submitted latest deadline first. The deadlines are 200 ms apart: all three must
    // be waiting before the first is due, and each woken waiter must report before the
    // next is due, which a busy machine delays by milliseconds, not by hundreds of them.
    for ms in [600u64, 400, 200] {
        let (timer, tx) = (timer.clone(), tx.clone());
        tokio::spawn(async move {
            let deadline = start + Duration::from_millis(ms);
            timer.wait_until(deadline).await;
            assert!(std::time::Instant::now() >= deadline);
            let _ = tx.send(ms);
        });
        tokio::task::yield_now().await;
    }
    drop(tx);
    let mut order = Vec::new();
    while let Some(ms) = rx.recv().await {
        order.push(ms);
    }
    assert_eq!(order, vec![200, 400, 600]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_with_the_precise_timer_sends_everything_never_early() {
    for spins in [Spins::TIGHT, Spins::NONE] {
        let config = RunConfig {
            stop: Stop {
                max_requests: Some(200),
                ..Stop::default()
            },
            timer: Timer::Precise(PreciseTimer::with_spins(spins).unwrap()),
            ..RunConfig::default()
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let probe = |d: Dispatch| async move { RequestRecord::new(d.id, d.t_sched, d.elapsed()) };
        let arrivals = Schedule::poisson(1000.0).unwrap().arrivals(3);
        let report = runner::run(arrivals, config, None, probe, tx).await;
        assert_eq!(report.dispatched, 200);
        let mut n = 0;
        while let Some(ev) = rx.recv().await {
            let RunEvent::Record(r) = ev else {
                panic!("unexpected skip")
            };
            assert!(
                r.t_send >= r.t_sched,
                "request {} sent early ({spins:?})",
                r.id
            );
            n += 1;
        }
        assert_eq!(n, 200);
    }
}
