//! The mock's timing truth, checked exactly under a paused tokio clock over real
//! loopback TCP: TTFT, chunk spacing, tokens per chunk, queueing with max_running,
//! batch slowdown, stalls, and the server-side histograms.

use crate::support::mock as mock_support;

use std::time::Duration;

use llmprobe::mock::MockConfig;
use mock_support::*;
use serde_json::json;

fn cfg(ttft_ms: u64, itl_us: u64) -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_micros(itl_us),
        ..MockConfig::default()
    }
}

#[tokio::test(start_paused = true)]
async fn chat_role_chunk_first_then_exact_ttft_and_itl() {
    let mock = start(MockConfig::default()).await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/chat/completions",
        chat_body(5, true, false),
        &[],
    )
    .await;
    assert_eq!(s.status, 200);
    assert_eq!(s.content_type, "text/event-stream");
    // The role-only chunk comes at once and carries no token.
    let first = &s.events[0];
    assert_eq!(first.at, Duration::ZERO);
    assert_eq!(first.json()["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first.tokens(), None);
    assert_eq!(s.content_times_ms(), vec![50.0, 60.0, 70.0, 80.0, 90.0]);
    assert_eq!(s.content_tokens(), vec![1; 5]);
    assert!(s.has_done());
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn multi_token_chunks_are_spaced_by_their_token_count() {
    // 4 tokens per chunk at 2.5 ms per token: chunks 10 ms apart, ITL 2.5 ms per token.
    let config = MockConfig {
        tokens_per_chunk: 4,
        ..cfg(50, 2500)
    };
    let mock = start(config).await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/completions",
        completions_body(9, true),
        &[],
    )
    .await;
    assert_eq!(s.content_times_ms(), vec![50.0, 60.0, 70.0]);
    assert_eq!(s.content_tokens(), vec![1, 4, 4]);
    assert_eq!(s.final_usage().unwrap()["completion_tokens"], 9);
    // A short last chunk of 1 token is due at 72.5 ms; tokio's timer wheel has 1 ms
    // granularity and fires at the next whole millisecond (documented in docs/mock.md).
    let s = post_stream(
        &mock.base_url(),
        "/v1/completions",
        completions_body(10, true),
        &[],
    )
    .await;
    assert_eq!(s.content_times_ms(), vec![50.0, 60.0, 70.0, 73.0]);
    assert_eq!(s.content_tokens(), vec![1, 4, 4, 1]);
    let last = s.content().last().unwrap().json();
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(s.final_usage().unwrap()["completion_tokens"], 10);
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn output_tokens_flag_overrides_max_tokens_and_default_is_16() {
    let mock = start(MockConfig {
        output_tokens: Some(3),
        ..cfg(20, 1000)
    })
    .await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/completions",
        completions_body(50, false),
        &[],
    )
    .await;
    assert_eq!(s.content_times_ms(), vec![20.0, 21.0, 22.0]);
    mock.shutdown().await;

    let mock = start(cfg(20, 1000)).await;
    let body = json!({"prompt": "x", "stream": true});
    let s = post_stream(&mock.base_url(), "/v1/completions", body, &[]).await;
    assert_eq!(s.content_tokens().iter().sum::<u32>(), 16);
    assert_eq!(s.content_times_ms().last().copied(), Some(35.0));
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn max_running_queues_and_ttft_grows_by_the_wait() {
    let mock = start(MockConfig {
        max_running: Some(1),
        ..cfg(50, 10_000)
    })
    .await;
    let base = mock.base_url();
    let a = tokio::spawn({
        let base = base.clone();
        async move {
            post_stream(
                &base,
                "/v1/chat/completions",
                chat_body(3, false, false),
                &[],
            )
            .await
        }
    });
    // B arrives 5 ms after A, waits until A's last token (70 ms), then needs its TTFT.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let b = tokio::spawn({
        let base = base.clone();
        async move {
            post_stream(
                &base,
                "/v1/chat/completions",
                chat_body(3, false, false),
                &[],
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let metrics = client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("vllm:num_requests_waiting{engine=\"0\",model_name=\"mock-llm\"} 1.0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("vllm:num_requests_running{engine=\"0\",model_name=\"mock-llm\"} 1.0"),
        "{metrics}"
    );
    let a = a.await.unwrap();
    let b = b.await.unwrap();
    assert_eq!(a.content_times_ms(), vec![50.0, 60.0, 70.0]);
    // B's role chunk still comes at once, before the queue.
    assert_eq!(b.events[0].at, Duration::ZERO);
    // Relative to B's own send (t = 5 ms): admitted at 70 → first token at 120.
    assert_eq!(b.content_times_ms(), vec![115.0, 125.0, 135.0]);
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn batch_slowdown_stretches_token_time_with_the_running_batch() {
    // itl × (1 + 0.5 × others running): 15 ms per token while two requests run.
    let mock = start(MockConfig {
        batch_slowdown: 0.5,
        ..cfg(50, 10_000)
    })
    .await;
    let base = mock.base_url();
    let alone = post_stream(&base, "/v1/completions", completions_body(3, false), &[]).await;
    assert_eq!(alone.content_times_ms(), vec![50.0, 60.0, 70.0]);
    let spawn = |n| {
        let base = base.clone();
        tokio::spawn(async move {
            post_stream(&base, "/v1/completions", completions_body(n, false), &[]).await
        })
    };
    let (a, b) = (spawn(3), spawn(5));
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    assert_eq!(a.content_times_ms(), vec![50.0, 65.0, 80.0]);
    // B runs alone once A is done: its chunk scheduled at 80 costs 10 ms again.
    assert_eq!(b.content_times_ms(), vec![50.0, 65.0, 80.0, 90.0, 100.0]);
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn non_streaming_response_comes_after_the_full_time() {
    let mock = start(cfg(50, 10_000)).await;
    let t0 = tokio::time::Instant::now();
    let v: serde_json::Value = client()
        .post(format!("{}/v1/chat/completions", mock.base_url()))
        .json(
            &json!({"messages": [{"role": "user", "content": "a b"}], "max_completion_tokens": 4}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(80));
    assert_eq!(
        v["choices"][0]["message"]["content"],
        " tok0 tok1 tok2 tok3"
    );
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6,
               "prompt_tokens_details": {"cached_tokens": 0}})
    );
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn stall_faults_shift_the_schedule_by_the_stall() {
    let mock = start(MockConfig {
        stall: Duration::from_secs(1),
        ..cfg(50, 10_000)
    })
    .await;
    let base = mock.base_url();
    let s = post_stream(
        &base,
        "/v1/completions",
        completions_body(4, false),
        &[("x-mock-fault", "stall_after_tokens:2")],
    )
    .await;
    assert_eq!(s.content_times_ms(), vec![50.0, 60.0, 1070.0, 1080.0]);
    assert!(s.has_done());

    let t0 = tokio::time::Instant::now();
    let s = post_stream(
        &base,
        "/v1/completions",
        completions_body(2, false),
        &[("x-mock-fault", "stall_before_headers")],
    )
    .await;
    // Headers only after the stall; then the request is timed from the stall's end.
    assert!(t0.elapsed() >= Duration::from_millis(1060));
    assert_eq!(s.content_times_ms(), vec![1050.0, 1060.0]);
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn server_side_histograms_hold_the_exact_truth() {
    let mock = start(MockConfig {
        tokens_per_chunk: 2,
        ..cfg(40, 5000)
    })
    .await;
    let base = mock.base_url();
    for _ in 0..2 {
        post_stream(&base, "/v1/completions", completions_body(5, false), &[]).await;
    }
    let m = client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let l = "engine=\"0\",model_name=\"mock-llm\"";
    for want in [
        format!("vllm:time_to_first_token_seconds_count{{{l}}} 2.0"),
        format!("vllm:time_to_first_token_seconds_sum{{{l}}} 0.08"),
        format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"0.04\"}} 2.0"),
        format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"0.02\"}} 0.0"),
        // Chunks of 2 tokens at 5 ms per token: one 10 ms observation per chunk gap.
        format!("vllm:inter_token_latency_seconds_count{{{l}}} 4.0"),
        format!("vllm:inter_token_latency_seconds_bucket{{{l},le=\"0.01\"}} 4.0"),
        format!("vllm:generation_tokens_total{{{l}}} 10.0"),
        format!("vllm:prompt_tokens_total{{{l}}} 6.0"),
        format!("vllm:num_requests_running{{{l}}} 0.0"),
        format!("vllm:kv_cache_usage_perc{{{l}}} 0.0"),
    ] {
        assert!(m.contains(&want), "missing {want}\n{m}");
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn kv_cache_usage_counts_blocks_of_running_requests() {
    // 2 blocks of 4 tokens: a 3-word prompt plus 1 token = 4 tokens = 1 block = 50%.
    let mock = start(MockConfig {
        block_size: 4,
        num_gpu_blocks: 2,
        ..cfg(10, 100_000)
    })
    .await;
    let base = mock.base_url();
    let h = tokio::spawn({
        let base = base.clone();
        async move { post_stream(&base, "/v1/completions", completions_body(3, false), &[]).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let m = client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        m.contains("vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"mock-llm\"} 0.5"),
        "{m}"
    );
    assert!(m.contains("vllm:cache_config_info{block_size=\"4\",engine=\"0\",model_name=\"mock-llm\",num_gpu_blocks=\"2\"} 1.0"), "{m}");
    h.await.unwrap();
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn trickle_writes_one_byte_per_millisecond() {
    let mock = start(cfg(10, 1000)).await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/completions",
        completions_body(1, false),
        &[("x-mock-fault", "trickle")],
    )
    .await;
    assert!(s.has_done());
    assert_eq!(s.content_tokens(), vec![1]);
    let content = s.content()[0];
    // The content event takes (bytes − 1) ms to trickle out after its 10 ms deadline.
    let event_len = content.data.len() + "data: ".len() + 2;
    assert_eq!(content.at, ms(10.0 + (event_len - 1) as f64));
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn abandoned_and_queued_clients_free_their_slots() {
    let mock = start(MockConfig {
        max_running: Some(1),
        ..cfg(50, 10_000)
    })
    .await;
    let base = mock.base_url();
    // A holds the only slot with a long stream, then its client goes away.
    let resp = client()
        .post(format!("{base}/v1/completions"))
        .json(&completions_body(100_000, false))
        .send()
        .await
        .unwrap();
    // C queues behind A, then gives up while waiting.
    let queued = tokio::spawn({
        let base = base.clone();
        async move { post_stream(&base, "/v1/completions", completions_body(1, false), &[]).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let metrics = |base: String| async move {
        client()
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let m = metrics(base.clone()).await;
    assert!(
        m.contains("vllm:num_requests_waiting{engine=\"0\",model_name=\"mock-llm\"} 1.0"),
        "{m}"
    );
    queued.abort();
    drop(resp);
    // The mock notices at its next writes (one token-time or two), then B runs at once.
    let t0 = tokio::time::Instant::now();
    let b = post_stream(&base, "/v1/completions", completions_body(2, false), &[]).await;
    assert!(
        t0.elapsed() < Duration::from_millis(200),
        "B waited {:?}",
        t0.elapsed()
    );
    assert_eq!(b.content_tokens(), vec![1, 1]);
    let m = metrics(base.clone()).await;
    for g in [
        "vllm:num_requests_waiting",
        "vllm:num_requests_running",
        "vllm:kv_cache_usage_perc",
    ] {
        assert!(
            m.contains(&format!("{g}{{engine=\"0\",model_name=\"mock-llm\"}} 0.0")),
            "{g}\n{m}"
        );
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn jitter_is_bounded_and_reproducible_from_the_seed() {
    let times = |seed| async move {
        let jitter = "uniform:0.2".parse().unwrap();
        let mock = start(MockConfig {
            jitter,
            seed,
            ..cfg(50, 10_000)
        })
        .await;
        let mut all = Vec::new();
        for _ in 0..3 {
            let s = post_stream(
                &mock.base_url(),
                "/v1/completions",
                completions_body(20, false),
                &[],
            )
            .await;
            all.push(s.content_times_ms());
        }
        mock.shutdown().await;
        all
    };
    let a = times(9).await;
    assert_eq!(a, times(9).await, "same seed, same schedule");
    assert_ne!(a, times(10).await);
    for run in &a {
        // TTFT within ±20% (plus the timer's 1 ms rounding), every gap too.
        assert!((40.0..=61.0).contains(&run[0]), "{run:?}");
        for w in run.windows(2) {
            assert!((7.0..=13.0).contains(&(w[1] - w[0])), "{run:?}");
        }
    }
    assert_ne!(a[0], a[1], "each request draws its own factors");
}
