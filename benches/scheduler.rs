//! Dispatch-lag benchmark of the open-loop runner (not a timed test): real time, a
//! no-op probe, Poisson arrivals at 10, 100, 1000 and 5000 requests/s, with tokio's
//! timer alone, with the precise timer (default spins) and with the precise timer
//! without spinning (`Spins::NONE`). Prints dispatch lag p50/p99/p99.9/max and
//! the process CPU time per second of run (how much of a core the dispatcher costs).
//!
//! `cargo bench --bench scheduler [-- SECONDS [RATE…]]` (default 10 s per point, the four
//! rates above). The figures in docs/measurement.md come from this program.

use std::time::Duration;

use llmprobe::aggregate::Collector;
use llmprobe::latency::Slo;
use llmprobe::record::RequestRecord;
use llmprobe::runner::{self, Dispatch, FdTimer, PreciseTimer, RunConfig, Spins, Stop, Timer};
use llmprobe::schedule::Schedule;
use tokio::sync::mpsc;

/// User + system CPU time of this process.
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

async fn point(rate: f64, seconds: f64, timer: Timer) -> (Collector, Duration, Duration) {
    let n = ((rate * seconds) as u64).max(100);
    let config = RunConfig {
        stop: Stop {
            max_requests: Some(n),
            ..Stop::default()
        },
        timer,
        ..RunConfig::default()
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let probe = |d: Dispatch| async move {
        let t = d.elapsed();
        let mut r = RequestRecord::new(d.id, d.t_sched, t);
        r.t_end = Some(t);
        r
    };
    let collect = tokio::spawn(async move {
        let mut c = Collector::new(Slo::default(), 0);
        while let Some(ev) = rx.recv().await {
            c.push_event(&ev);
        }
        c
    });
    let cpu0 = cpu_time();
    let report = runner::run(
        Schedule::poisson(rate).unwrap().arrivals(1),
        config,
        None,
        probe,
        tx,
    )
    .await;
    let cpu = cpu_time() - cpu0;
    (collect.await.unwrap(), cpu, report.end)
}

fn main() {
    // Arguments: [SECONDS [RATE…]]. `cargo bench` passes `--bench`; without it (`cargo
    // test --all-targets` runs bench targets too) this is a 0.2 s smoke run.
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let measuring = raw.iter().any(|a| a == "--bench");
    let args: Vec<f64> = raw
        .iter()
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| a.parse().ok())
        .collect();
    let (seconds, rates) = if !measuring {
        (0.2, vec![100.0])
    } else if args.len() > 1 {
        (args[0], args[1..].to_vec())
    } else {
        (
            args.first().copied().unwrap_or(10.0),
            vec![10.0, 100.0, 1000.0, 5000.0],
        )
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // What `bench` runs on: one thread, the timerfd in its event loop.
    let one_thread = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    println!(
        "{:<8} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "timer", "rate", "n", "lag p50", "lag p99", "p99.9", "max", "cpu/s"
    );
    for rate in rates {
        for mode in ["tokio", "precise", "nospin", "timerfd"] {
            let timer = match mode {
                "timerfd" => Timer::Fd(FdTimer::new()),
                "tokio" => Timer::Tokio,
                // The spins of the measurement in docs/measurement.md (then the default).
                "precise" => Timer::Precise(
                    PreciseTimer::with_spins(Spins::TIGHT).expect("the timer thread"),
                ),
                _ => {
                    Timer::Precise(PreciseTimer::with_spins(Spins::NONE).expect("the timer thread"))
                }
            };
            let on = if mode == "timerfd" { &one_thread } else { &rt };
            let (c, cpu, wall) = on.block_on(point(rate, seconds, timer));
            let s = c.summary(&[50.0, 99.0, 99.9]);
            let us = |v: Option<f64>| format!("{:.1}µs", v.unwrap_or(f64::NAN) * 1e6);
            println!(
                "{:<8} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8.1}%",
                mode,
                rate,
                s.requests,
                us(s.dispatch_lag.percentile(50.0)),
                us(s.dispatch_lag.percentile(99.0)),
                us(s.dispatch_lag.percentile(99.9)),
                us(s.dispatch_lag.max),
                100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
            );
        }
    }
}
