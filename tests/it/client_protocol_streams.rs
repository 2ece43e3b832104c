//! Hostile and odd streams of the Responses and Messages protocols, and a route the
//! server does not have, against a scripted server under a paused clock: unknown
//! events are ignored and counted, missing usage falls back, an error event mid-stream
//! keeps the partial record, and a 404 says which API the server may not speak.

use crate::support::client as client_support;

use std::time::Duration;

use client_support::{Script, TestServer, serve};
use llmprobe::client::{Client, ClientConfig, Endpoint};
use llmprobe::record::{Outcome, RequestRecord, TokenSource};
use llmprobe::secret::Secret;
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn cfg(server: &TestServer, endpoint: Endpoint) -> ClientConfig {
    ClientConfig {
        base_url: server.base_url(),
        model: "m".into(),
        endpoint,
        ..ClientConfig::default()
    }
}

async fn send(cfg: ClientConfig) -> RequestRecord {
    let client = Client::new(cfg, None).unwrap();
    let spec = RequestSpec {
        prompt: "nonce-7 hello".into(),
        prompt_tokens: 2,
        max_tokens: 8,
        history: Vec::new(),
        system: None,
        model: None,
    };
    client.send(&spec, 1, Duration::ZERO, Instant::now()).await
}

fn named(event: &str, json: &str) -> Vec<u8> {
    format!("event: {event}\ndata: {json}\n\n").into_bytes()
}

#[tokio::test(start_paused = true)]
async fn responses_unknown_events_are_counted_and_missing_usage_falls_back() {
    let server = serve(vec![
        Script::sse()
            .raw(&named(
                "response.created",
                r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
            ))
            .raw(&named("vendor.heartbeat", r#"{"type":"vendor.heartbeat"}"#))
            .wait_ms(40)
            .raw(&named(
                "response.reasoning_summary_text.delta",
                r#"{"type":"response.reasoning_summary_text.delta","delta":"plan"}"#,
            ))
            .wait_ms(10)
            .raw(&named(
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            ))
            .wait_ms(10)
            .raw(&named(
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":" there"}"#,
            ))
            .raw(&named(
                "response.completed",
                r#"{"type":"response.completed","response":{"status":"completed"}}"#,
            ))
            .end(),
    ])
    .await;
    let r = send(cfg(&server, Endpoint::Responses)).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(
        (r.ttft(), r.ttfa(), r.e2e()),
        (Some(ms(40)), Some(ms(50)), Some(ms(60)))
    );
    assert_eq!(r.unknown_events, 1);
    // No usage anywhere: one token per chunk, and the record says so.
    assert_eq!(
        (r.token_source, r.output_tokens(), r.reasoning_tokens()),
        (TokenSource::Chunks, 3, 1)
    );
    let body = server.requests()[0].json();
    assert_eq!(body["input"], "nonce-7 hello");
    assert_eq!(body["max_output_tokens"], 8);
    assert!(body.get("stream_options").is_none());
}

#[tokio::test(start_paused = true)]
async fn messages_error_event_mid_stream_keeps_the_partial_record() {
    let server = serve(vec![
        Script::sse()
            .raw(&named("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}"#))
            .wait_ms(30)
            .raw(&named("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#))
            .wait_ms(5)
            .raw(&named("error", r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#))
            .end(),
    ])
    .await;
    let mut c = cfg(&server, Endpoint::Messages);
    c.api_key = Some(Secret::new("sk-ant-test".to_string()));
    c.anthropic_version = "2023-06-01".into();
    let r = send(c).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert_eq!(
        r.error.as_deref(),
        Some("server error in stream: Overloaded (overloaded_error)")
    );
    assert_eq!((r.ttft(), r.usage_prompt_tokens), (Some(ms(30)), Some(3)));
    let req = &server.requests()[0];
    assert_eq!(req.header("x-api-key").as_deref(), Some("sk-ant-test"));
    assert_eq!(
        req.header("anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(req.header("authorization"), None);
}

#[tokio::test(start_paused = true)]
async fn events_of_the_wrong_shape_are_stream_errors() {
    let server = serve(vec![
        Script::sse()
            .wait_ms(10)
            .raw(&named(
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":7}}"#,
            ))
            .end(),
    ])
    .await;
    let r = send(cfg(&server, Endpoint::Messages)).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("malformed JSON chunk"),
        "{:?}",
        r.error
    );
}

#[tokio::test(start_paused = true)]
async fn a_missing_route_names_the_api_the_server_may_not_speak() {
    let server = serve(vec![Script::full(
        404,
        "Not Found",
        "application/json",
        r#"{"error":{"message":"File Not Found","type":"not_found_error","code":404}}"#,
    )])
    .await;
    let mut c = cfg(&server, Endpoint::Responses);
    c.ignore_eos = true;
    let r = send(c).await;
    assert_eq!(r.outcome, Outcome::Http4xx);
    let err = r.error.unwrap();
    assert!(
        err.contains("no POST /v1/responses route: it may not speak the responses API"),
        "{err}"
    );
    // The route is the likely cause, not the extension fields.
    assert!(!err.contains("non-standard"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_non_streamed_answer_of_the_wrong_type_is_a_stream_error() {
    let server = serve(vec![Script::full(
        200,
        "OK",
        "text/html",
        "<html>gateway says hi</html>",
    )])
    .await;
    let mut c = cfg(&server, Endpoint::Chat);
    c.stream = false;
    let r = send(c).await;
    assert_eq!(r.outcome, Outcome::StreamError);
    let err = r.error.unwrap();
    assert!(
        err.contains("expected an application/json response"),
        "{err}"
    );
    assert_eq!(server.requests()[0].json()["stream"], false);
}
