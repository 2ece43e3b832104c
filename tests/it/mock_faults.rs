//! The wire behaviour of every fault the mock injects (docs/mock.md), in real time
//! on 127.0.0.1:0. Connection-level faults are checked on a raw TCP socket so that a
//! FIN (clean close) and an RST (reset) can be told apart. `TESTS` says which test
//! checks each fault, and is held to the fault table.

use crate::support::mock as mock_support;

use std::io::ErrorKind;
use std::time::Duration;

use llmprobe::mock::{FaultKind, FaultSpec, MockConfig};
use mock_support::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Each fault of the table and the test of this file that checks it.
const TESTS: &[(&str, &str)] = &[
    ("http_500", "http_errors_have_bodies_and_retry_after"),
    ("http_503", "http_errors_have_bodies_and_retry_after"),
    ("http_429", "http_errors_have_bodies_and_retry_after"),
    (
        "close_before_response",
        "close_before_response_is_a_clean_close_with_no_bytes",
    ),
    ("reset_mid_stream", "reset_mid_stream_sends_tokens_then_rst"),
    (
        "stall_before_headers",
        "stalls_hold_back_headers_and_tokens",
    ),
    ("stall_after_tokens", "stalls_hold_back_headers_and_tokens"),
    (
        "malformed_json",
        "malformed_json_event_then_the_stream_continues",
    ),
    ("no_done", "no_done_ends_the_stream_cleanly_without_done"),
    ("invalid_utf8", "invalid_utf8_in_the_first_content_chunk"),
    ("huge_line", "huge_line_is_one_line_of_exactly_16_mib"),
    ("trickle", "trickle_delivers_a_valid_stream_in_tiny_reads"),
    ("wrong_content_type", "content_type_faults"),
    ("json_instead_of_sse", "content_type_faults"),
    ("error_event", "error_event_mid_stream_then_done"),
    (
        "empty_completion",
        "empty_completion_has_no_text_and_zero_usage",
    ),
    ("garbage", "answer_faults_change_only_what_the_answer_says"),
    ("repeat", "answer_faults_change_only_what_the_answer_says"),
    (
        "wrong_model",
        "answer_faults_change_only_what_the_answer_says",
    ),
    ("bad_json", "answer_faults_change_only_what_the_answer_says"),
    (
        "template_leak",
        "answer_faults_change_only_what_the_answer_says",
    ),
    (
        "wrong_answer",
        "answer_faults_change_only_what_the_answer_says",
    ),
    (
        "no_tool_call",
        "answer_faults_change_only_what_the_answer_says",
    ),
];

/// Every fault has a row in `TESTS`, every row names a fault, and the test a row names
/// is in this file and sends that fault.
#[test]
fn every_fault_of_the_table_has_its_test() {
    let rows: Vec<&str> = TESTS.iter().map(|(fault, _)| *fault).collect();
    let mut bad = crate::support::faults::gaps(&rows);
    bad.extend(missing_tests(include_str!("mock_faults.rs"), TESTS));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Rows whose test is not a function of `source`, or whose test's body never names the
/// fault as a header value (`"fault"`, `"fault=…"`, `"fault:…"`).
fn missing_tests(source: &str, rows: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for (fault, test) in rows {
        let Some(at) = source.find(&format!("async fn {test}(")) else {
            out.push(format!("{fault}: no test {test} in this file"));
            continue;
        };
        // The body runs to the next item at column 0.
        let body = &source[at..];
        let body = &body[..body[1..].find("\n}\n").map_or(body.len(), |p| p + 1)];
        let named = ['"', '=', ':']
            .iter()
            .any(|end| body.contains(&format!("\"{fault}{end}")));
        if !named {
            out.push(format!("{fault}: {test} never sends it"));
        }
    }
    out
}

#[test]
fn the_test_table_check_finds_a_missing_test_and_a_fault_not_sent() {
    let source = "async fn a(x: u8) {\n    send(\"http_500\");\n}\nasync fn b() {\n    send(\"http_503=1\");\n}\n";
    assert_eq!(
        missing_tests(source, &[("http_500", "a"), ("http_503", "b")]),
        Vec::<String>::new()
    );
    assert_eq!(
        missing_tests(source, &[("http_503", "a"), ("no_done", "c")]),
        [
            "http_503: a never sends it",
            "no_done: no test c in this file"
        ]
    );
}

fn fast() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    }
}

async fn faulted(base: &str, fault: &str, body: Value) -> Streamed {
    post_stream(
        base,
        "/v1/chat/completions",
        body,
        &[("x-mock-fault", fault)],
    )
    .await
}

/// Sends a raw HTTP/1.1 request and reads until EOF or error: (bytes, how it ended).
async fn raw_exchange(
    addr: std::net::SocketAddr,
    fault: &str,
    stream: bool,
) -> (Vec<u8>, std::io::Result<()>) {
    let body = json!({"prompt": "a b", "max_tokens": 5, "stream": stream}).to_string();
    let req = format!(
        "POST /v1/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\nx-mock-fault: {fault}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
            Err(_) => panic!("no end of response; got {}", String::from_utf8_lossy(&got)),
            Ok(Ok(0)) => break Ok(()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => break Err(e),
        }
    };
    (got, end)
}

#[tokio::test]
async fn http_errors_have_bodies_and_retry_after() {
    let mock = start(fast()).await;
    let c = client();
    for (fault, status, retry) in [
        ("http_500", 500, None),
        ("http_503", 503, None),
        ("http_429", 429, Some("1")),
        ("http_429:7", 429, Some("7")),
    ] {
        let resp = c
            .post(format!("{}/v1/chat/completions", mock.base_url()))
            .header("x-mock-fault", fault)
            .json(&chat_body(3, true, false))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), status, "{fault}");
        assert_eq!(
            resp.headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap()),
            retry,
            "{fault}"
        );
        let v: Value = resp.json().await.unwrap();
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("mock fault"),
            "{v}"
        );
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn close_before_response_is_a_clean_close_with_no_bytes() {
    let mock = start(fast()).await;
    let (got, end) = raw_exchange(mock.addr(), "close_before_response", true).await;
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
    assert!(end.is_ok(), "FIN, not RST: {end:?}");
    mock.shutdown().await;
}

#[tokio::test]
async fn reset_mid_stream_sends_tokens_then_rst() {
    let mock = start(fast()).await;
    let (got, end) = raw_exchange(mock.addr(), "reset_mid_stream", true).await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains(" tok0") && text.contains(" tok1"), "{text}");
    assert!(
        !text.contains(" tok2") && !text.contains("[DONE]"),
        "{text}"
    );
    assert_eq!(end.map_err(|e| e.kind()), Err(ErrorKind::ConnectionReset));

    let (got, end) = raw_exchange(mock.addr(), "reset_mid_stream=0", true).await;
    assert!(!String::from_utf8_lossy(&got).contains(" tok0"));
    assert_eq!(end.map_err(|e| e.kind()), Err(ErrorKind::ConnectionReset));

    // Non-streaming: the reset comes instead of the response.
    let (got, end) = raw_exchange(mock.addr(), "reset_mid_stream", false).await;
    assert!(got.is_empty());
    assert_eq!(end.map_err(|e| e.kind()), Err(ErrorKind::ConnectionReset));
    mock.shutdown().await;
}

#[tokio::test]
async fn stalls_hold_back_headers_and_tokens() {
    let mock = start(MockConfig {
        stall: Duration::from_secs(30),
        ..fast()
    })
    .await;
    let c = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let err = c
        .post(format!("{}/v1/completions", mock.base_url()))
        .header("x-mock-fault", "stall_before_headers")
        .json(&completions_body(2, false))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");

    // stall_after_tokens: the first N tokens come, then nothing.
    let resp = client()
        .post(format!("{}/v1/completions", mock.base_url()))
        .header("x-mock-fault", "stall_after_tokens=1")
        .json(&completions_body(5, false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let mut got = Vec::new();
    let waited = tokio::time::timeout(Duration::from_millis(300), async {
        use futures_util::StreamExt;
        while let Some(Ok(b)) = body.next().await {
            got.extend_from_slice(&b);
        }
    })
    .await;
    assert!(waited.is_err(), "the stream must still be stalled");
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains(" tok0") && !text.contains(" tok1"), "{text}");
    // Shutdown ends stalls, so the server stops promptly.
    mock.shutdown().await;
}

#[tokio::test]
async fn malformed_json_event_then_the_stream_continues() {
    let mock = start(fast()).await;
    let s = faulted(
        &mock.base_url(),
        "malformed_json",
        chat_body(3, true, false),
    )
    .await;
    let bad: Vec<_> = s
        .events
        .iter()
        .filter(|e| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", s.events);
    assert!(bad[0].data.starts_with('{'));
    assert_eq!(s.content_tokens().iter().sum::<u32>(), 3);
    assert!(s.has_done());
    // Non-streaming: the JSON body is cut in half.
    let resp = client()
        .post(format!("{}/v1/completions", mock.base_url()))
        .header("x-mock-fault", "malformed_json")
        .json(&json!({"prompt": "a", "max_tokens": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let bytes = resp.bytes().await.unwrap();
    assert!(serde_json::from_slice::<Value>(&bytes).is_err());
    mock.shutdown().await;
}

#[tokio::test]
async fn no_done_ends_the_stream_cleanly_without_done() {
    let mock = start(fast()).await;
    let s = faulted(&mock.base_url(), "no_done", chat_body(3, true, false)).await;
    assert!(s.body_error.is_none());
    assert!(!s.has_done());
    assert_eq!(s.content_tokens().iter().sum::<u32>(), 3);
    assert_eq!(s.final_usage().unwrap()["completion_tokens"], 3);
    mock.shutdown().await;
}

#[tokio::test]
async fn invalid_utf8_in_the_first_content_chunk() {
    let mock = start(fast()).await;
    let s = faulted(&mock.base_url(), "invalid_utf8", chat_body(2, false, false)).await;
    assert!(std::str::from_utf8(&s.raw).is_err());
    assert!(memchr::memmem::find(&s.raw, b" tok0\xff\xfe").is_some());
    assert!(s.has_done());
    mock.shutdown().await;
}

#[tokio::test]
async fn huge_line_is_one_line_of_exactly_16_mib() {
    let mock = start(fast()).await;
    let s = faulted(&mock.base_url(), "huge_line", chat_body(2, false, false)).await;
    let longest = s.raw.split(|b| *b == b'\n').map(<[u8]>::len).max().unwrap();
    assert_eq!(longest, 16 << 20);
    // It is a well-formed chunk, and the normal tokens follow it.
    let huge = s.events.iter().find(|e| e.data.len() > 1 << 20).unwrap();
    let content = huge.json()["choices"][0]["delta"]["content"]
        .as_str()
        .unwrap()
        .len();
    assert!(content > (16 << 20) - 300);
    let normal: u32 = s
        .content()
        .iter()
        .filter(|e| e.data.len() < 1 << 20)
        .filter_map(|e| e.tokens())
        .sum();
    assert_eq!(normal, 2);
    assert!(s.has_done());
    let s = faulted(
        &mock.base_url(),
        "huge_line=5000",
        chat_body(1, false, false),
    )
    .await;
    assert_eq!(
        s.raw.split(|b| *b == b'\n').map(<[u8]>::len).max(),
        Some(5000)
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn trickle_delivers_a_valid_stream_in_tiny_reads() {
    let mock = start(fast()).await;
    let (got, end) = raw_exchange(mock.addr(), "trickle", true).await;
    assert!(end.is_ok());
    // Every body byte is its own HTTP chunk: "1\r\nX\r\n".
    let head_end = memchr::memmem::find(&got, b"\r\n\r\n").unwrap() + 4;
    let mut rest = &got[head_end..];
    let mut body = Vec::new();
    let mut frames = 0;
    while let Some(nl) = memchr::memmem::find(rest, b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap(), 16).unwrap();
        if size == 0 {
            break;
        }
        assert_eq!(size, 1, "a frame of {size} bytes");
        body.extend_from_slice(&rest[nl + 2..nl + 2 + size]);
        rest = &rest[nl + 2 + size + 2..];
        frames += 1;
    }
    let text = String::from_utf8(body).unwrap();
    assert_eq!(frames, text.len());
    assert!(
        text.contains("\"text\":\" tok4\"") && text.ends_with("data: [DONE]\n\n"),
        "{text}"
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn content_type_faults() {
    let mock = start(fast()).await;
    let s = faulted(
        &mock.base_url(),
        "wrong_content_type",
        chat_body(2, false, false),
    )
    .await;
    assert_eq!(s.content_type, "text/plain; charset=utf-8");
    assert!(s.has_done() && s.content_tokens().iter().sum::<u32>() == 2);

    let resp = client()
        .post(format!("{}/v1/chat/completions", mock.base_url()))
        .header("x-mock-fault", "json_instead_of_sse")
        .json(&chat_body(2, true, false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], " tok0 tok1");
    mock.shutdown().await;
}

#[tokio::test]
async fn error_event_mid_stream_then_done() {
    let mock = start(fast()).await;
    let s = faulted(&mock.base_url(), "error_event", chat_body(5, true, false)).await;
    assert_eq!(s.status, 200);
    assert_eq!(s.content_tokens(), vec![1], "one token before the error");
    let err = s
        .events
        .iter()
        .find(|e| e.json().get("error").is_some())
        .unwrap()
        .json();
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mid-stream")
    );
    assert_eq!(s.events.last().unwrap().data, "[DONE]");
    assert_eq!(s.final_usage(), None);
    mock.shutdown().await;
}

#[tokio::test]
async fn empty_completion_has_no_text_and_zero_usage() {
    let mock = start(fast()).await;
    let s = faulted(
        &mock.base_url(),
        "empty_completion",
        chat_body(5, true, false),
    )
    .await;
    assert!(s.content().is_empty());
    let fin = s
        .events
        .iter()
        .find(|e| e.json()["choices"][0]["finish_reason"] == "stop")
        .unwrap();
    assert_eq!(fin.json()["choices"][0]["delta"]["content"], "");
    assert_eq!(s.final_usage().unwrap()["completion_tokens"], 0);
    assert!(s.has_done());
    mock.shutdown().await;
}

#[tokio::test]
async fn configured_faults_are_drawn_from_the_seed_and_header_overrides() {
    let run = |seed| async move {
        let faults = vec![FaultSpec {
            kind: FaultKind::Http500,
            probability: 0.5,
        }];
        let mock = start(MockConfig {
            faults,
            seed,
            ..fast()
        })
        .await;
        let c = client();
        let mut statuses = Vec::new();
        for _ in 0..40 {
            let r = c
                .post(format!("{}/v1/completions", mock.base_url()))
                .json(&json!({"prompt": "a", "max_tokens": 1}))
                .send()
                .await
                .unwrap();
            statuses.push(r.status().as_u16());
        }
        mock.shutdown().await;
        statuses
    };
    let a = run(42).await;
    assert_eq!(a, run(42).await, "same seed, same faults");
    let fails = a.iter().filter(|s| **s == 500).count();
    assert!((8..=32).contains(&fails), "{fails} of 40 at p = 0.5");
    assert!(a.iter().all(|s| *s == 500 || *s == 200));

    let faults = vec!["http_503".parse::<FaultSpec>().unwrap()];
    let mock = start(MockConfig { faults, ..fast() }).await;
    let s = faulted(&mock.base_url(), "no_done", chat_body(1, false, false)).await;
    assert_eq!(s.status, 200, "the header wins over --fault");
    let r = client()
        .post(format!("{}/v1/completions", mock.base_url()))
        .json(&json!({"prompt": "a"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    mock.shutdown().await;
}

/// A streamed chat request's answer: the text of its chunks, and the model each names.
fn answer_of(s: &Streamed) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut models = Vec::new();
    for e in &s.events {
        let v = e.json();
        if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
            text.push_str(t);
        }
        if let Some(m) = v["model"].as_str() {
            models.push(m.to_string());
        }
    }
    (text, models)
}

#[tokio::test]
async fn answer_faults_change_only_what_the_answer_says() {
    type Says = fn(&str, &[String], &Streamed) -> bool;
    // (fault, a tool offered, what the faulted answer says and the normal one does not)
    let rows: [(&str, bool, Says); 7] = [
        ("garbage", false, |text, _, _| {
            !text.trim().is_empty() && !text.contains(" tok")
        }),
        ("repeat", false, |text, _, _| text == " tok0".repeat(4)),
        ("wrong_model", false, |_, models, _| {
            !models.is_empty() && models.iter().all(|m| m == "mock-wrong-model")
        }),
        ("bad_json", false, |text, _, _| {
            text.contains("{\"answer\": ") && serde_json::from_str::<Value>(text).is_err()
        }),
        ("template_leak", false, |text, _, _| {
            text.contains("<|im_start|>assistant")
        }),
        ("wrong_answer", false, |text, _, _| {
            text.contains("know.") && !text.contains(" tok")
        }),
        ("no_tool_call", true, |text, _, s| {
            text.contains(" tok0") && !String::from_utf8_lossy(&s.raw).contains("tool_calls")
        }),
    ];
    let mock = start(fast()).await;
    for (fault, tools, says) in rows {
        let mut body = chat_body(4, true, false);
        if tools {
            body["tools"] = json!([{"type": "function", "function": {"name": "f",
                "parameters": {"type": "object", "required": ["a"],
                               "properties": {"a": {"type": "string"}}}}}]);
        }
        let normal = post_stream(&mock.base_url(), "/v1/chat/completions", body.clone(), &[]).await;
        let faulted = faulted(&mock.base_url(), fault, body).await;
        for (s, what) in [(&faulted, "faulted"), (&normal, "normal")] {
            // A well-formed stream either way: status, events, its end marker.
            assert_eq!(s.status, 200, "{fault} ({what})");
            assert!(s.body_error.is_none() && s.has_done(), "{fault} ({what})");
        }
        let (text, models) = answer_of(&faulted);
        assert!(
            says(&text, &models, &faulted),
            "{fault}: {text:?} {models:?}"
        );
        let (text, models) = answer_of(&normal);
        assert!(
            !says(&text, &models, &normal),
            "{fault} without the fault: {text:?}"
        );
    }
    mock.shutdown().await;
}
