//! A daemon scenario with `turns`: each probe is a conversation; its first turns are
//! observed under the scenario's name and its later turns, which resend the history
//! (the warm prefix-cache path), under `NAME:later`. The mock counts prompt words, so
//! the prompt tokens per probe are known exactly: 40 on turn 1, then 40 + 8 + 40 = 88
//! and 136 on turns 2 and 3.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::mock::MockConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_turns_have_their_own_series_and_carry_the_history() {
    let mock = MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    };
    let (mock, d) = with_mock(mock, |base| {
        format!(
            "targets:\n  - name: chat\n    base_url: {base}\n    model: m\n    endpoint: chat\n    \
             rate: 10/s\n    scenarios:\n      - {{name: talk, input_tokens: 40, output_tokens: 8, \
             turns: 3, think_time: 20ms, think_time_dist: constant}}\n"
        )
    })
    .await;
    let addr = d.addr();
    // Probes go on while /metrics is read, and a scrape reads its series one after
    // another: a probe that ends in between tears it (its prompt tokens counted, not yet
    // its request). A scrape that the next one agrees with fell between two probes.
    let counts = |s: &[Sample]| {
        ["talk", "talk:later"].map(|sc| {
            let of = |name| value(s, name, &[("scenario", sc)]).unwrap_or(0.0);
            [
                of("llmprobe_requests_total"),
                of("llmprobe_prompt_tokens_total"),
            ]
        })
    };
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let again = scrape(addr).await;
        let [talk, later] = counts(&s);
        (talk[0] >= 3.0 && later[0] >= 6.0 && counts(&again) == [talk, later]).then_some(s)
    })
    .await;
    d.shutdown().await.unwrap();
    mock.shutdown().await;
    let per_probe = |sc| {
        let prompt = value(&s, "llmprobe_prompt_tokens_total", &[("scenario", sc)]).unwrap();
        let requests = value(&s, "llmprobe_requests_total", &[("scenario", sc)]).unwrap();
        let failed = sum(&s, "llmprobe_request_failures_total", &[("scenario", sc)]);
        assert_eq!(failed, 0.0, "{sc}");
        prompt / requests
    };
    assert_eq!(per_probe("talk"), 40.0);
    let later = per_probe("talk:later");
    assert!(
        (88.0..=136.0).contains(&later),
        "later turns' prompt tokens per probe {later}"
    );
}
