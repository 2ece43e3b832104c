//! The daemon's admission of a target's arrivals (`daemon/scenario.rs`'s `Gate`) and the
//! limits sink that feeds it (`daemon/sinks/limits.rs`), driven by the real runner
//! under a paused clock with a fake engine whose answers are known: the day's dollar
//! budget stops probing after exactly the probes that spend it and starts again at the
//! next UTC day, and a 429's retry delay skips exactly the arrivals inside it.

use std::sync::Arc;
use std::time::Duration;

use llmprobe::daemon::limits::{LimitStore, WallClock, next_utc_midnight};
use llmprobe::daemon::scenario::Gate;
use llmprobe::daemon::sinks::LimitsSink;
use llmprobe::exposition::TokenPrice;
use llmprobe::record::{Outcome, RequestRecord, TokenSource};
use llmprobe::runner::{self, Dispatch, RunConfig, RunEvent, SkipReason, Stop};
use llmprobe::sink::{RecordSink, Verdict};
use llmprobe::status::StatusBoard;
use tokio::sync::mpsc;
use tokio::time::Instant;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Every 100 ms, `n` arrivals.
fn arrivals(n: u64) -> impl Iterator<Item = Duration> {
    (0..n).map(|i| ms(100 * i))
}

/// A fake engine answering in 50 ms with 1000 prompt and 100 output tokens of usage,
/// or with 429 and `retry_after` for the ids `refuse` names.
fn engine(
    refuse: impl Fn(u64) -> Option<Option<Duration>> + Copy + Send + 'static,
) -> impl Fn(Dispatch) -> std::pin::Pin<Box<dyn Future<Output = RequestRecord> + Send>> {
    move |d: Dispatch| {
        Box::pin(async move {
            let mut r = RequestRecord::new(d.id, d.t_sched, d.elapsed());
            r.prompt_tokens_sent = 1000;
            tokio::time::sleep(ms(50)).await;
            if let Some(retry_after) = refuse(d.id) {
                r.http_status = Some(429);
                r.outcome = Outcome::Http429;
                r.retry_after = retry_after;
                r.t_end = Some(d.elapsed());
                return r;
            }
            r.http_status = Some(200);
            r.push_chunk(d.elapsed(), 4, Some(100));
            r.usage_prompt_tokens = Some(1000);
            r.usage_completion_tokens = Some(100);
            r.t_end = Some(d.elapsed());
            r.resolve_tokens(Some(TokenSource::Usage));
            r
        })
    }
}

/// Runs `n` arrivals through the gate and the sink; returns the ids sent and the
/// skipped ones with their reasons, and the board.
async fn run(
    n: u64,
    budget_per_day: Option<f64>,
    clock: WallClock,
    refuse: impl Fn(u64) -> Option<Option<Duration>> + Copy + Send + 'static,
) -> (Vec<u64>, Vec<(u64, SkipReason)>, Arc<StatusBoard>) {
    let store = LimitStore::default();
    let limits = store.of("hosted");
    let board = StatusBoard::new();
    // $1 per million prompt tokens, $10 per million output tokens: $0.002 a probe.
    let price = TokenPrice {
        input_per_million: 1.0,
        output_per_million: 10.0,
    };
    let gate = Gate {
        target: "hosted".into(),
        limits: limits.clone(),
        budget_per_day: budget_per_day.map(|b| (b, board.clone())),
        tokens: None,
        clock: clock.clone(),
    };
    let mut sink = LimitsSink {
        target: "hosted".into(),
        limits,
        price: Some(price),
        board: board.clone(),
        clock,
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let config = RunConfig {
        stop: Stop::default(),
        ..RunConfig::default()
    };
    let runner = runner::run(
        arrivals(n),
        config,
        Some(gate.admission()),
        engine(refuse),
        tx,
    );
    let consumer = async {
        let (mut sent, mut skipped) = (Vec::new(), Vec::new());
        while let Some(ev) = rx.recv().await {
            match ev {
                RunEvent::Record(r) => {
                    sink.record(&r, Verdict::of(&r, &Default::default()))
                        .unwrap();
                    sent.push(r.id);
                }
                RunEvent::Skipped { id, reason, .. } => skipped.push((id, reason)),
            }
        }
        (sent, skipped)
    };
    let (_, (sent, skipped)) = tokio::join!(runner, consumer);
    (sent, skipped, board)
}

/// A wall clock `offset` seconds before a UTC midnight at the tokio clock's start.
fn clock_before_midnight(offset: f64) -> (WallClock, f64) {
    let midnight = next_utc_midnight(1_796_500_000.0);
    let start = Instant::now();
    let clock: WallClock = Arc::new(move || midnight - offset + start.elapsed().as_secs_f64());
    (clock, midnight)
}

#[tokio::test(start_paused = true)]
async fn the_dollar_budget_stops_probing_for_the_rest_of_the_utc_day() {
    // Midnight falls 1.55 s in: arrivals 0..=15 are on the first day, 16.. on the next.
    let (clock, midnight) = clock_before_midnight(1.55);
    let (sent, skipped, board) = run(25, Some(0.01), clock, |_| None).await;
    // $0.01 pays for exactly five $0.002 probes; each is settled 50 ms after it is sent,
    // before the next arrival.
    assert_eq!(sent, [0, 1, 2, 3, 4, 16, 17, 18, 19, 20]);
    let want: Vec<(u64, SkipReason)> = (5..16)
        .chain(21..25)
        .map(|id| (id, SkipReason::CostBudget))
        .collect();
    assert_eq!(skipped, want);
    assert_eq!(SkipReason::CostBudget.as_str(), "cost_budget");
    // The board says when probing resumes: the next midnight after the second day's.
    let hold = board.hold("hosted").unwrap().budget_spent.unwrap();
    assert!((hold.spent - 0.01).abs() < 1e-12, "{hold:?}");
    assert_eq!((hold.budget, hold.resumes_at), (0.01, midnight + 86_400.0));
}

#[tokio::test(start_paused = true)]
async fn a_429_with_a_retry_delay_skips_exactly_the_arrivals_inside_it() {
    let (clock, _) = clock_before_midnight(3600.0);
    // Probe 2 (sent at 200 ms) is refused at 250 ms with 250 ms to wait: arrivals at
    // 300 and 400 ms fall in the pause, the one at 500 ms does not. Probe 6's 429 has
    // no delay (a missing or malformed header): counted, and probing goes on.
    let refuse = |id| match id {
        2 => Some(Some(ms(250))),
        6 => Some(None),
        _ => None,
    };
    let (sent, skipped, board) = run(10, None, clock, refuse).await;
    assert_eq!(sent, [0, 1, 2, 5, 6, 7, 8, 9]);
    assert_eq!(
        skipped,
        [(3, SkipReason::RateLimited), (4, SkipReason::RateLimited)]
    );
    assert_eq!(SkipReason::RateLimited.as_str(), "rate_limited");
    // The page was told when the pause ends: 500 ms in, on the test's wall clock.
    let until = board.hold("hosted").unwrap().rate_limited_until.unwrap();
    let start = next_utc_midnight(1_796_500_000.0) - 3600.0;
    assert!((until - (start + 0.5)).abs() < 1e-6, "{until}");
}

#[tokio::test(start_paused = true)]
async fn a_429_that_asks_for_days_pauses_at_most_an_hour() {
    let (clock, _) = clock_before_midnight(7200.0);
    let day = Duration::from_secs(86_400);
    // One arrival every 100 ms for 2 hours: probe 0 asks for a day.
    let n = 72_001;
    let (sent, skipped, _) = run(n, None, clock, move |id| (id == 0).then_some(Some(day))).await;
    // Refused at 50 ms: the pause ends at 3600.05 s; the arrival at 3600.1 s is sent.
    assert_eq!(sent.len() as u64, n - 36_000);
    assert_eq!(sent[..2], [0, 36_001]);
    assert_eq!(skipped.len(), 36_000);
    assert!(skipped.iter().all(|(_, r)| *r == SkipReason::RateLimited));
}

mod live {
    //! The daemon against the mock answering every probe with 429 and a Retry-After of
    //! a day: the first refusals pause the target (capped at an hour), every later
    //! arrival is skipped as `rate_limited` and never sent, the status page says until
    //! when, and a reload that restarts the target keeps the pause.

    use std::net::SocketAddr;
    use std::time::Duration;

    use crate::support::daemon::*;
    use llmprobe::mock::MockConfig;

    fn config(base: &str, rate: &str) -> String {
        format!(
            "grace_period: 1s\ntargets:\n  - name: hosted\n    base_url: {base}\n    \
             model: mock-llm\n    rate: {rate}\n    max_inflight: 64\n"
        )
    }

    /// (probes sent and answered, arrivals skipped as rate-limited).
    async fn counts(addr: SocketAddr) -> (f64, f64) {
        let s = scrape(addr).await;
        let l = [("target", "hosted")];
        (
            sum(&s, "llmprobe_requests_total", &l),
            sum(
                &s,
                "llmprobe_probes_skipped_total",
                &[("target", "hosted"), ("reason", "rate_limited")],
            ),
        )
    }

    async fn skips_reach(addr: SocketAddr, n: f64) -> (f64, f64) {
        wait_for(Duration::from_secs(30), || async {
            let c = counts(addr).await;
            (c.1 >= n).then_some(c)
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_429_pauses_the_target_across_a_reload() {
        let mock = MockConfig {
            faults: vec!["http_429=86400".parse().unwrap()],
            ..MockConfig::default()
        };
        let (m, d) = with_mock(mock, |base| config(base, "20/s")).await;
        let addr = d.addr();
        // Probes in flight when the first refusal came back still end (refused too);
        // after a second of skips nothing is in flight any more.
        let (sent, _) = skips_reach(addr, 20.0).await;
        let page = get(&format!("http://{addr}/")).await.1;
        assert!(page.contains("rate-limited until "), "{page}");
        // Forty more arrivals later, still nothing more sent, and all that was sent
        // was refused.
        let (still, _) = skips_reach(addr, 60.0).await;
        assert_eq!(still, sent);
        let s = scrape(addr).await;
        let refused = sum(
            &s,
            "llmprobe_request_failures_total",
            &[("target", "hosted"), ("reason", "http_429")],
        );
        assert!(
            sent >= 1.0 && refused == sent,
            "{sent} sent, {refused} refused"
        );

        // A reload that changes the target restarts it: the pause is kept.
        std::fs::write(d.path(), config(&m.base_url(), "25/s")).unwrap();
        d.reload().await.unwrap();
        let (_, skipped) = counts(addr).await;
        let (after, _) = skips_reach(addr, skipped + 20.0).await;
        // The restarted target kept its series and its pause: still nothing sent.
        assert_eq!(after, sent);
        assert!(
            get(&format!("http://{addr}/"))
                .await
                .1
                .contains("rate-limited until ")
        );
        d.shutdown().await.unwrap();
        m.shutdown().await;
    }
}
