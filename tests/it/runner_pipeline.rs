//! Workload → schedule → runner → aggregate under a paused clock, with a fake engine
//! probe whose timing is the ground truth: every figure of the summary is exact.

use std::time::Duration;

use llmprobe::aggregate::Collector;
use llmprobe::latency::{Latency, Slo};
use llmprobe::record::{RequestRecord, TokenSource};
use llmprobe::runner::{self, CapPolicy, ConcurrencyCap, Dispatch, RunConfig, Stop};
use llmprobe::schedule::{ArrivalProcess, Schedule};
use llmprobe::workload::Workload;
use llmprobe::workload::lengths::{LengthDist, Lengths};
use llmprobe::workload::prompt::PromptGenerator;
use tokio::sync::mpsc;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Fake engine: TTFT 50 ms, then chunks of 2 tokens every 10 ms (5 ms per token), with
/// continuous usage. The first chunk carries 1 token.
async fn fake_engine(d: Dispatch, spec: llmprobe::workload::RequestSpec) -> RequestRecord {
    let mut r = RequestRecord::new(d.id, d.t_sched, d.elapsed());
    r.prompt_tokens_sent = spec.prompt_tokens;
    r.max_tokens = spec.max_tokens;
    tokio::time::sleep(ms(50)).await;
    r.push_chunk(d.elapsed(), 3, Some(1));
    let mut left = spec.max_tokens - 1;
    while left > 0 {
        tokio::time::sleep(ms(10)).await;
        let n = left.min(2);
        r.push_chunk(d.elapsed(), 6, Some(n));
        left -= n;
    }
    r.usage_completion_tokens = Some(spec.max_tokens);
    r.t_end = Some(d.elapsed());
    r.resolve_tokens(Some(TokenSource::ContinuousUsage));
    r
}

async fn run(config: RunConfig, rate: f64, slo: Slo) -> llmprobe::aggregate::Summary {
    let workload = Workload::synthetic(
        Lengths::new(64, LengthDist::Uniform { range_ratio: 0.25 }).unwrap(),
        Lengths::fixed(21).unwrap(),
        PromptGenerator::approximate(0),
        7,
    )
    .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let probe = |d: Dispatch| {
        let spec = workload.spec(d.id).unwrap();
        fake_engine(d, spec)
    };
    let sched = Schedule::new(rate, ArrivalProcess::Constant).unwrap();
    runner::run(sched.arrivals(0), config, None, probe, tx).await;
    let mut c = Collector::new(slo, 0);
    while let Some(ev) = rx.recv().await {
        c.push_event(&ev);
    }
    let s = c.summary(&[50.0, 99.0]);
    // The prompts the workload built are what the records carry.
    let want_input: u64 = (0..s.requests)
        .map(|i| u64::from(workload.spec(i).unwrap().prompt_tokens))
        .sum();
    assert_eq!(s.input_tokens, want_input);
    s
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
async fn open_loop_figures_are_the_engine_truth() {
    let slo = Slo::of([(Latency::Ttft, ms(50)), (Latency::Tpot, ms(5))]).unwrap();
    let s = run(count(20), 10.0, slo).await;
    assert_eq!((s.requests, s.completed, s.failed), (20, 20, 0));
    assert_eq!(s.output_tokens, 20 * 21);
    // TTFT exactly 50 ms; 21 tokens = 1 + 10 chunks of 2 → t_last = 150 ms after send.
    assert_eq!(s.ttft.percentile(50.0), Some(0.05));
    assert_eq!(s.ttft.percentile(99.0), Some(0.05));
    // Nothing reasoned: the first answer token is the first token.
    assert_eq!(s.ttfa, s.ttft);
    assert_eq!(s.reasoning_tokens, 0);
    assert_eq!(s.e2e.max, Some(0.15));
    // TPOT = 100 ms / 20 = 5 ms; per-token ITL 5 ms for 20 tokens per request.
    assert!((s.tpot.mean.unwrap() - 0.005).abs() < 1e-15);
    assert_eq!(s.tpot.percentile(50.0), Some(0.005));
    assert_eq!(s.itl.count, 20 * 20);
    assert_eq!(s.itl.percentile(99.0), Some(0.005));
    assert_eq!(s.chunk_gap.percentile(50.0), Some(0.01));
    assert_eq!(s.dispatch_lag.max, Some(0.0));
    // Arrivals every 100 ms from 0; the last (1.9 s) ends at 2.05 s.
    assert!((s.duration_s - 2.05).abs() < 1e-12);
    assert!((s.offered_rate.unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(s.good, 20);
    assert_eq!(s.goodput_ratio, Some(1.0));
    assert_eq!(s.token_sources.get("continuous_usage"), Some(&20));
}

#[tokio::test(start_paused = true)]
async fn a_tight_slo_fails_every_request() {
    let slo = Slo::of([(Latency::Ttft, ms(49))]).unwrap();
    let s = run(count(5), 10.0, slo).await;
    assert_eq!(s.good, 0);
    assert_eq!(s.goodput, 0.0);
}

#[tokio::test(start_paused = true)]
async fn wait_cap_shows_up_as_lag_and_from_sched_latency() {
    // 1 slot, 150 ms per request, arrivals every 100 ms: request i is sent at 150·i,
    // lag 50·i; TTFT from the send stays 50 ms, from the schedule 50 + 50·i.
    let mut config = count(4);
    config.cap = Some(ConcurrencyCap {
        max_inflight: 1,
        policy: CapPolicy::Wait,
    });
    let s = run(config, 10.0, Slo::default()).await;
    assert_eq!(s.ttft.max, Some(0.05));
    assert_eq!(s.dispatch_lag.max, Some(0.15));
    assert_eq!(s.ttft_from_sched.max, Some(0.2));
    // lags 0, 50, 100, 150 ms: p50 = 75 ms.
    assert!((s.dispatch_lag.percentile(50.0).unwrap() - 0.075).abs() < 1e-12);
}
