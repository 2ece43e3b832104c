//! The streaming client against a scripted server under a paused tokio clock: exact
//! TTFT/ITL/TPOT, every token source, chat and completions, reasoning content, byte
//! splits, and every failure reason with its partial record.

use crate::support::client as client_support;

use std::sync::Arc;
use std::time::Duration;

use client_support::{Script, Step, TestServer, serve};
use llmprobe::client::{Client, ClientConfig, Endpoint};
use llmprobe::record::{Outcome, RequestRecord, TokenSource};
use llmprobe::secret::Secret;
use llmprobe::workload::{RequestSpec, TokenCounter};
use serde_json::json;
use tokio::time::Instant;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn spec() -> RequestSpec {
    RequestSpec {
        prompt: "nonce-42 tell me a story".into(),
        prompt_tokens: 6,
        max_tokens: 16,
        history: Vec::new(),
        system: None,
        model: None,
    }
}

fn cfg(server: &TestServer) -> ClientConfig {
    ClientConfig {
        base_url: server.base_url(),
        model: "test-model".into(),
        ..ClientConfig::default()
    }
}

/// Sends one request with t_sched = 0 at the run start.
async fn send(cfg: ClientConfig, counter: Option<TokenCounter>) -> RequestRecord {
    let client = Client::new(cfg, counter).unwrap();
    let run_start = Instant::now();
    client.send(&spec(), 1, Duration::ZERO, run_start).await
}

fn at(r: &RequestRecord) -> Vec<(Duration, u32)> {
    r.chunks.iter().map(|c| (c.at, c.tokens)).collect()
}

const ROLE: &str = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":{"prompt_tokens":11,"completion_tokens":0}}"#;

#[tokio::test(start_paused = true)]
async fn chat_with_continuous_usage_gives_exact_timing() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(30)
            .data(ROLE)
            .wait_ms(20)
            .content("Hi", Some(1))
            .wait_ms(10)
            .content("abcd", Some(5))
            .wait_ms(10)
            .content("efgh", Some(9))
            .wait_ms(10)
            .data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":11,"completion_tokens":10}}"#)
            .data(r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":10,"total_tokens":21}}"#)
            .done()
            .end(),
    ])
    .await;
    let mut c = cfg(&server);
    c.api_key = Some(Secret::new("sk-test-key"));
    c.headers.push(("X-Team".into(), Secret::new("infra")));
    let r = send(c, None).await;

    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(r.http_status, Some(200));
    assert_eq!(r.t_send, Duration::ZERO);
    assert_eq!(r.t_headers, Some(Duration::ZERO));
    assert_eq!(r.ttft(), Some(ms(50)));
    assert_eq!(
        at(&r),
        vec![(ms(50), 1), (ms(60), 4), (ms(70), 4), (ms(80), 1)]
    );
    assert_eq!(r.token_source, TokenSource::ContinuousUsage);
    assert_eq!(r.output_tokens(), 10);
    assert_eq!(r.usage_prompt_tokens, Some(11));
    assert_eq!(r.prompt_tokens_sent, 6);
    assert_eq!(r.max_tokens, 16);
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    // (80 - 50) ms / (10 - 1)
    assert_eq!(r.tpot(), Some(ms(30) / 9));
    let itl: Vec<_> = r.itl().collect();
    assert_eq!(
        itl,
        vec![
            (Duration::from_micros(2500), 4),
            (Duration::from_micros(2500), 4),
            (ms(10), 1)
        ]
    );
    assert_eq!(r.t_end, Some(ms(80)));
    assert_eq!(r.error, None);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        reqs[0]
            .head
            .starts_with("POST /v1/chat/completions HTTP/1.1")
    );
    assert_eq!(
        reqs[0].header("authorization").as_deref(),
        Some("Bearer sk-test-key")
    );
    assert_eq!(reqs[0].header("x-team").as_deref(), Some("infra"));
    assert_eq!(
        reqs[0].header("accept").as_deref(),
        Some("text/event-stream")
    );
    let body = reqs[0].json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["stream_options"],
        json!({"include_usage": true, "continuous_usage_stats": true})
    );
    assert_eq!(body["messages"][0]["content"], "nonce-42 tell me a story");
    assert_eq!(body["max_tokens"], 16);
}

#[tokio::test(start_paused = true)]
async fn completions_with_final_usage_spreads_tokens_by_bytes() {
    let text = |t: &str, fin: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"text":{},"finish_reason":{fin}}}]}}"#,
            json!(t)
        )
    };
    let server = serve(vec![
        Script::sse()
            .wait_ms(20)
            .data(&text(" ab", "null"))
            .wait_ms(10)
            .data(&text("cdefgh", "null"))
            .wait_ms(10)
            .data(&text("ijk", "\"stop\""))
            .data(r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":8}}"#)
            .done()
            .end(),
    ])
    .await;
    let mut c = cfg(&server);
    c.endpoint = Endpoint::Completions;
    let r = send(c, None).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(r.token_source, TokenSource::Usage);
    assert_eq!(at(&r), vec![(ms(20), 2), (ms(30), 4), (ms(40), 2)]);
    assert_eq!(r.ttft(), Some(ms(20)));
    assert_eq!(r.tpot(), Some(ms(20) / 7));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    let req = &server.requests()[0];
    assert!(req.head.starts_with("POST /v1/completions HTTP/1.1"));
    assert_eq!(req.json()["prompt"], "nonce-42 tell me a story");
}

/// A server that sends no usage at all (llama.cpp-style).
fn no_usage_script() -> Script {
    Script::sse()
        .wait_ms(40)
        .content("one two", None)
        .wait_ms(10)
        .content(" three", None)
        .wait_ms(10)
        .content(" four five six", None)
        .done()
        .end()
}

#[tokio::test(start_paused = true)]
async fn without_usage_each_chunk_counts_one_token() {
    let server = serve(vec![no_usage_script()]).await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.token_source, TokenSource::Chunks);
    assert_eq!(at(&r), vec![(ms(40), 1), (ms(50), 1), (ms(60), 1)]);
    assert_eq!(r.usage_completion_tokens, None);
    assert_eq!(r.output_tokens(), 3);
}

#[tokio::test(start_paused = true)]
async fn without_usage_a_tokenizer_counts_each_chunk() {
    let server = serve(vec![no_usage_script()]).await;
    let words: TokenCounter = Arc::new(|s: &str| s.split_whitespace().count() as u32);
    let r = send(cfg(&server), Some(words)).await;
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.token_source, TokenSource::Tokenizer);
    assert_eq!(at(&r), vec![(ms(40), 2), (ms(50), 1), (ms(60), 3)]);
    assert_eq!(r.output_tokens(), 6);
    assert_eq!(r.tpot(), Some(ms(20) / 5));
}

#[tokio::test(start_paused = true)]
async fn reasoning_content_starts_ttft_and_role_chunks_do_not() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(5)
            .data(r#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#)
            .wait_ms(5)
            .data(r#"{"choices":[{"index":0,"delta":{"content":""}}]}"#)
            .wait_ms(15)
            .data(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Let me think"}}]}"#)
            .wait_ms(10)
            .data(r#"{"choices":[{"index":0,"delta":{"reasoning":"more"}}]}"#)
            .wait_ms(10)
            .content("Answer", None)
            .done()
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.ttft(), Some(ms(25)));
    assert_eq!(r.chunks.len(), 3);
    assert_eq!(r.chunks[0].text_bytes, 12);
}

#[tokio::test(start_paused = true)]
async fn events_split_anywhere_are_timed_by_the_piece_that_completes_them() {
    // CRLF endings, a piece boundary between \r and \n, and one inside "é" (2 bytes).
    let e1 = "data: {\"choices\":[{\"delta\":{\"content\":\"caf\u{e9}\"}}]}\r\n\r\n".as_bytes();
    let cut = e1.iter().position(|&b| b == 0xC3).unwrap() + 1;
    let cr = e1.len() - 1; // between the last \r and \n
    let server = serve(vec![
        Script::sse()
            .wait_ms(10)
            .raw(&e1[..cut])
            .wait_ms(10)
            .raw(&e1[cut..cr])
            .wait_ms(10)
            .raw(&e1[cr..])
            .wait_ms(10)
            .raw(b": keep-alive comment\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r")
            .wait_ms(10)
            .raw(b"\n\r\ndata: [DONE]")
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    // Event 1 is complete at 20 ms: the `\r` of its blank line ends the line, the
    // parser does not wait for the `\n` (which arrives at 30 ms and is skipped).
    // Event 2's blank line completes at 50 ms.
    assert_eq!(at(&r), vec![(ms(20), 1), (ms(50), 1)]);
    assert_eq!(r.chunks[0].text_bytes, 5);
    // The final `data: [DONE]` had no trailing blank line and still ended the stream.
    assert_eq!(r.t_end, Some(ms(50)));
}

/// Real time on purpose: under a paused clock, body data of a second request on a
/// reused pooled connection is not delivered until unrelated timers fire (a
/// reqwest/hyper + tokio test-util interaction; a first request per connection is
/// exact, see the next test). So this test checks reuse and sanity, not exact times.
#[tokio::test]
async fn connections_are_reused() {
    let server = serve(vec![no_usage_script()]).await;
    let client = Client::new(cfg(&server), None).unwrap();
    let run_start = Instant::now();
    for id in 0..3 {
        let t = run_start.elapsed();
        let r = client.send(&spec(), id, t, run_start).await;
        assert_eq!(r.outcome, Outcome::Ok, "request {id}: {:?}", r.error);
        let ttft = r.ttft().unwrap();
        assert!(ttft >= ms(40) && ttft < ms(2000), "{ttft:?}");
        assert_eq!(r.chunks.len(), 3);
    }
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.connections(), 1);
}

#[tokio::test(start_paused = true)]
async fn without_reuse_every_request_gets_a_new_connection_and_exact_timing() {
    let server = serve(vec![no_usage_script()]).await;
    let mut c = cfg(&server);
    c.reuse_connections = false;
    let client = Client::new(c, None).unwrap();
    let run_start = Instant::now();
    for id in 0..3 {
        let t = run_start.elapsed();
        let r = client.send(&spec(), id, t, run_start).await;
        assert_eq!(r.outcome, Outcome::Ok, "request {id}: {:?}", r.error);
        assert_eq!(r.ttft(), Some(ms(40)));
        assert_eq!(r.t_send, ms(60) * id as u32);
    }
    assert_eq!(server.connections(), 3);
}

#[tokio::test(start_paused = true)]
async fn error_event_mid_stream_keeps_the_message_and_the_partial_record() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(20)
            .content("partial", Some(1))
            .wait_ms(10)
            .data(r#"{"error":{"message":"KV cache exhausted","type":"InternalServerError","code":500}}"#)
            .done()
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    let err = r.error.as_deref().unwrap();
    assert!(err.contains("KV cache exhausted"), "{err}");
    assert_eq!(r.ttft(), Some(ms(20)));
    assert_eq!(r.chunks.len(), 1);
    assert_eq!(r.t_end, Some(ms(30)));
    assert!(!r.is_success());
}

#[tokio::test(start_paused = true)]
async fn named_error_event_and_string_error_are_stream_errors() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(5)
            .raw(b"event: error\ndata: overloaded, retry later\n\n")
            .end(),
        Script::sse()
            .wait_ms(5)
            .data(r#"{"error":"rate limited upstream"}"#)
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("overloaded, retry later")
    );
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("rate limited upstream")
    );
}

#[tokio::test(start_paused = true)]
async fn stream_without_done_is_a_stream_error_with_partial_record() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(20)
            .content("a", None)
            .wait_ms(10)
            .content("b", None)
            .wait_ms(5)
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(r.error.as_deref().unwrap().contains("[DONE]"));
    assert_eq!(at(&r), vec![(ms(20), 1), (ms(30), 1)]);
    assert_eq!(r.t_end, Some(ms(35)));
}

#[tokio::test(start_paused = true)]
async fn a_stream_with_no_text_is_empty_output() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(5)
            .data(ROLE)
            .data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#)
            .data(r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":0}}"#)
            .done()
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::EmptyOutput);
    assert_eq!(r.t_first, None);
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test(start_paused = true)]
async fn http_errors_map_to_outcomes_and_keep_the_body() {
    let server = serve(vec![
        Script::full(
            500,
            "Internal Server Error",
            "application/json",
            r#"{"message":"engine dead"}"#,
        ),
        Script::full(429, "Too Many Requests", "text/plain", "slow down"),
        Script::full(
            503,
            "Service Unavailable",
            "text/plain",
            &"x".repeat(10_000),
        ),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Http5xx);
    assert_eq!(r.http_status, Some(500));
    let err = r.error.unwrap();
    assert!(err.starts_with("HTTP 500 Internal Server Error: "), "{err}");
    assert!(err.contains("engine dead"));
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Http429);
    assert!(r.error.as_deref().unwrap().contains("slow down"));
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Http5xx);
    let err = r.error.unwrap();
    assert!(err.len() < 4200 && err.ends_with('…'), "{}", err.len());
}

#[tokio::test(start_paused = true)]
async fn a_4xx_names_the_non_standard_fields_and_their_switches() {
    let body = r#"{"object":"error","message":"extra fields not permitted","code":400}"#;
    let server = serve(vec![Script::full(
        400,
        "Bad Request",
        "application/json",
        body,
    )])
    .await;
    let mut c = cfg(&server);
    c.ignore_eos = true;
    c.min_tokens = true;
    let r = send(c, None).await;
    assert_eq!(r.outcome, Outcome::Http4xx);
    let err = r.error.unwrap();
    assert!(err.contains("extra fields not permitted"), "{err}");
    for needle in [
        "ignore_eos, min_tokens, stream_options.continuous_usage_stats",
        "ignore_eos: false",
        "min_tokens: false",
        "continuous_usage_stats: false",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in {err}");
    }
    // A plain request gets no hint.
    let mut plain = cfg(&server);
    plain.include_usage = false;
    plain.continuous_usage_stats = false;
    let r = send(plain, None).await;
    assert!(!r.error.as_deref().unwrap().contains("non-standard"));
    assert!(server.requests()[1].json().get("stream_options").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_json_body_instead_of_sse_is_a_stream_error() {
    let server = serve(vec![Script::full(
        200,
        "OK",
        "application/json",
        r#"{"choices":[{"message":{"content":"hi"}}]}"#,
    )])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    let err = r.error.unwrap();
    assert!(
        err.contains("application/json") && err.contains("choices"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn malformed_json_and_invalid_utf8_are_stream_errors() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(5)
            .data(r#"{"choices":[{"delta":"#)
            .end(),
        Script::sse()
            .wait_ms(5)
            .raw(b"data: {\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n")
            .end(),
    ])
    .await;
    for _ in 0..2 {
        let r = send(cfg(&server), None).await;
        assert_eq!(r.outcome, Outcome::StreamError);
        assert!(r.error.as_deref().unwrap().contains("malformed JSON chunk"));
    }
}

#[tokio::test(start_paused = true)]
async fn connection_refused_is_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let c = ClientConfig {
        base_url: format!("http://{addr}/v1"),
        ..ClientConfig::default()
    };
    let r = send(c, None).await;
    assert_eq!(r.outcome, Outcome::Connect);
    assert_eq!(r.http_status, None);
    let err = r.error.unwrap();
    assert!(err.contains("cannot connect"), "{err}");
    assert!(
        !err.contains(&addr.to_string()),
        "no URL in the error: {err}"
    );
}

#[tokio::test(start_paused = true)]
async fn closed_before_the_response_is_connect() {
    let server = serve(vec![Script::default().then(Step::Close)]).await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Connect, "{:?}", r.error);
}

#[tokio::test(start_paused = true)]
async fn reset_mid_stream_is_a_stream_error_with_partial_record() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(15)
            .content("a", None)
            .wait_ms(10)
            .then(Step::Reset),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError, "{:?}", r.error);
    assert!(r.error.as_deref().unwrap().contains("mid-stream"));
    assert_eq!(r.ttft(), Some(ms(15)));
    assert_eq!(r.t_end, Some(ms(25)));
}

fn short_timeouts(server: &TestServer) -> ClientConfig {
    let mut c = cfg(server);
    c.timeouts.first_token = ms(500);
    c.timeouts.idle = ms(200);
    c.timeouts.total = ms(2000);
    c
}

#[tokio::test(start_paused = true)]
async fn stall_before_headers_hits_the_first_token_timeout() {
    let server = serve(vec![Script::default().then(Step::Hang)]).await;
    let r = send(short_timeouts(&server), None).await;
    assert_eq!(r.outcome, Outcome::Timeout);
    let err = r.error.unwrap();
    assert!(
        err.contains("first token timeout (500ms)") && err.contains("headers"),
        "{err}"
    );
    assert_eq!(r.t_end, Some(ms(500)));
    assert_eq!(r.t_headers, None);
}

#[tokio::test(start_paused = true)]
async fn stall_after_role_chunk_hits_the_first_token_timeout() {
    let server = serve(vec![Script::sse().wait_ms(100).data(ROLE).then(Step::Hang)]).await;
    let r = send(short_timeouts(&server), None).await;
    assert_eq!(r.outcome, Outcome::Timeout);
    assert!(r.error.as_deref().unwrap().contains("first token timeout"));
    assert_eq!(r.t_end, Some(ms(500)));
}

#[tokio::test(start_paused = true)]
async fn stall_after_tokens_hits_the_idle_timeout() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(100)
            .content("a", None)
            .wait_ms(150)
            .content("b", None)
            .then(Step::Hang),
    ])
    .await;
    let r = send(short_timeouts(&server), None).await;
    assert_eq!(r.outcome, Outcome::Timeout);
    assert!(r.error.as_deref().unwrap().contains("idle timeout (200ms)"));
    assert_eq!(at(&r), vec![(ms(100), 1), (ms(250), 1)]);
    assert_eq!(r.t_end, Some(ms(450)));
}

#[tokio::test(start_paused = true)]
async fn a_slow_trickle_hits_the_total_timeout() {
    let mut script = Script::sse();
    for _ in 0..100 {
        script = script.wait_ms(150).content("t", None);
    }
    let server = serve(vec![script.done().end()]).await;
    let r = send(short_timeouts(&server), None).await;
    assert_eq!(r.outcome, Outcome::Timeout);
    assert!(r.error.as_deref().unwrap().contains("total timeout (2s)"));
    assert_eq!(r.t_end, Some(ms(2000)));
    assert_eq!(r.chunks.len(), 13);
}

#[tokio::test(start_paused = true)]
async fn limits_stop_hostile_streams() {
    let long = format!("data: {}\n\n", "x".repeat(5000));
    let server = serve(vec![
        Script::sse().wait_ms(5).raw(long.as_bytes()).done().end(),
        Script::sse()
            .content("aaaa", None)
            .content("bbbb", None)
            .content("cccc", None)
            .done()
            .end(),
    ])
    .await;
    let mut c = cfg(&server);
    c.limits.max_line_bytes = 4096;
    let r = send(c, None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(r.error.as_deref().unwrap().contains("max_line_bytes"));

    let mut c = cfg(&server);
    c.limits.max_output_tokens = 2;
    let r = send(c, None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("max_output_tokens (2)")
    );
    assert_eq!(r.chunks.len(), 3);

    let mut c = cfg(&server);
    c.limits.max_response_bytes = 150;
    let r = send(c, None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(r.error.as_deref().unwrap().contains("max_response_bytes"));
}

#[tokio::test(start_paused = true)]
async fn continuous_usage_with_held_back_text_stays_exact() {
    // Token 2 is half a character: its chunk has no text but the cumulative count moves,
    // so the token is timed when it arrived (20 ms). Token 3 completes the character;
    // the "!" chunk at 40 ms carries text released with no new token.
    let server = serve(vec![
        Script::sse()
            .wait_ms(10)
            .content("a", Some(1))
            .wait_ms(10)
            .data(r#"{"choices":[{"index":0,"delta":{"content":""}}],"usage":{"completion_tokens":2}}"#)
            .wait_ms(10)
            .content("\u{1F600}", Some(3))
            .wait_ms(10)
            .content("!", Some(3))
            .data(r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}"#)
            .done()
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(r.token_source, TokenSource::ContinuousUsage);
    assert_eq!(
        at(&r),
        vec![(ms(10), 1), (ms(20), 1), (ms(30), 1), (ms(40), 0)]
    );
    assert_eq!(r.chunks[1].text_bytes, 0);
    assert_eq!(r.output_tokens(), 3);
}

#[tokio::test(start_paused = true)]
async fn secrets_never_reach_records_or_debug_output() {
    const CANARY: &str = "sk-canary-7d1f0c";
    let server = serve(vec![Script::full(
        401,
        "Unauthorized",
        "text/plain",
        "bad key",
    )])
    .await;
    let mut c = cfg(&server);
    c.api_key = Some(Secret::new(CANARY));
    c.headers.push(("X-Api-Key".into(), Secret::new(CANARY)));
    let client = Client::new(c, None).unwrap();
    let r = client
        .send(&spec(), 0, Duration::ZERO, Instant::now())
        .await;
    assert_eq!(r.outcome, Outcome::Http4xx);
    let outputs = [
        format!("{client:?}"),
        format!("{r:?}"),
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(client.config()).unwrap(),
    ];
    for out in outputs {
        assert!(!out.contains(CANARY), "leak in {out}");
    }
    // It was sent, though.
    let req = &server.requests()[0];
    assert_eq!(req.header("x-api-key").as_deref(), Some(CANARY));
}

#[tokio::test(start_paused = true)]
async fn reset_before_the_response_is_connect() {
    let server = serve(vec![Script::default().then(Step::Reset)]).await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Connect, "{:?}", r.error);
    assert_eq!(r.t_headers, None);
}

#[tokio::test(start_paused = true)]
async fn a_byte_at_a_time_trickle_is_parsed_and_timed_by_its_last_byte() {
    let stream = b"data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n";
    let mut script = Script::sse();
    for b in stream {
        script = script.wait_ms(1).raw(&[*b]);
    }
    let server = serve(vec![script.end()]).await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    // Byte k (1-based) is written at k ms; the first event completes with its blank line.
    let first_len = stream.windows(2).position(|w| w == b"\n\n").unwrap() as u64 + 2;
    assert_eq!(at(&r), vec![(ms(first_len), 1)]);
    assert_eq!(r.t_end, Some(ms(stream.len() as u64)));
}

#[tokio::test(start_paused = true)]
async fn cancellation_keeps_the_partial_record() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(20)
            .content("a", None)
            .then(Step::Hang),
    ])
    .await;
    let client = Client::new(cfg(&server), None).unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(ms(100)).await;
        trigger.cancel();
    });
    let run_start = Instant::now();
    let r = client
        .send_cancellable(&spec(), 3, Duration::ZERO, run_start, &cancel)
        .await;
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_eq!(at(&r), vec![(ms(20), 1)]);
    assert_eq!(r.t_end, Some(ms(100)));
    // A token that never fires changes nothing.
    let done = tokio_util::sync::CancellationToken::new();
    let server2 = serve(vec![no_usage_script()]).await;
    let client2 = Client::new(cfg(&server2), None).unwrap();
    let r = client2
        .send_cancellable(&spec(), 4, Duration::ZERO, Instant::now(), &done)
        .await;
    assert_eq!(r.outcome, Outcome::Ok);
}

/// A server's usage counts are input too: an absurd final `completion_tokens` (here 4e9
/// after two text chunks) must fail the request instead of becoming N_out (TPOT ≈ 0 and
/// billions of per-token ITL samples downstream).
#[tokio::test(start_paused = true)]
async fn absurd_usage_counts_are_stream_errors() {
    let server = serve(vec![
        Script::sse()
            .content("aaaa", None)
            .content("bbbb", None)
            .data(r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4000000000}}"#)
            .done()
            .end(),
        Script::sse()
            .content("aaaa", None)
            .data(r#"{"choices":[],"usage":{"prompt_tokens":4000000000,"completion_tokens":1}}"#)
            .done()
            .end(),
    ])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("usage.completion_tokens 4000000000 exceeds limits.max_output_tokens"),
        "{:?}",
        r.error
    );
    assert_eq!(r.usage_completion_tokens, None);
    assert_eq!(r.chunks.len(), 2, "the partial record is kept");
    let r = send(cfg(&server), None).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(r.error.as_deref().unwrap().contains("usage.prompt_tokens"));
}

/// A redirect is reported, not followed (following would turn the POST into a GET
/// against another URL and time that instead).
#[tokio::test(start_paused = true)]
async fn redirects_are_not_followed() {
    let server = serve(vec![Script::full(
        307,
        "Temporary Redirect",
        "text/plain",
        "moved",
    )])
    .await;
    let r = send(cfg(&server), None).await;
    assert_eq!(r.http_status, Some(307));
    assert_eq!(r.outcome, Outcome::Http3xx);
    assert_eq!(server.requests().len(), 1);
}
