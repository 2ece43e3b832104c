//! The mock's precise emission timer (`MockConfig::precise_timer`, on in the
//! `llmprobe mock` process) in real time: deadlines that are not whole milliseconds
//! are honoured in order and never early. (How late is a measurement, not a test:
//! docs/measurement.md.)

use crate::support::mock as mock_support;

use std::time::Duration;

use llmprobe::mock::MockConfig;
use mock_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precise_timer_writes_every_chunk_in_order_and_never_early() {
    let config = MockConfig {
        ttft: Duration::from_micros(2_500),
        itl: Duration::from_micros(1_300),
        precise_timer: true,
        ..MockConfig::default()
    };
    let mock = start(config).await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/completions",
        completions_body(8, true),
        &[],
    )
    .await;
    assert_eq!(s.status, 200);
    assert_eq!(s.content_tokens(), vec![1; 8]);
    assert!(s.has_done());
    // The client's clock starts before the request is written, so the mock's time zero
    // is later: every arrival is at least its deadline after the client's start.
    let times = s.content_times_ms();
    for (i, at) in times.iter().enumerate() {
        let due = 2.5 + 1.3 * i as f64;
        assert!(
            *at >= due - 1e-9,
            "chunk {i} at {at} ms, due {due} ms: early"
        );
    }
    mock.shutdown().await;
}
