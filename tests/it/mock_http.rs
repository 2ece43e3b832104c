//! The mock as an OpenAI-compatible server in real time on 127.0.0.1:0: valid SSE for
//! chat and completions, usage / no-usage / continuous usage, non-streaming bodies,
//! the API key, /v1/models, /health, /metrics and request validation.

use crate::support::mock as mock_support;

use std::time::Duration;

use llmprobe::mock::MockConfig;
use mock_support::*;
use serde_json::{Value, json};

fn fast() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    }
}

/// Every event is JSON (or [DONE], last), ids and model are constant.
fn assert_valid_stream(s: &Streamed, object: &str) {
    assert_eq!(s.status, 200);
    assert_eq!(s.content_type, "text/event-stream");
    assert!(s.body_error.is_none(), "{:?}", s.body_error);
    assert_eq!(s.events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    assert_eq!(s.events.iter().filter(|e| e.data == "[DONE]").count(), 1);
    let jsons: Vec<Value> = s.events[..s.events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();
    let id = jsons[0]["id"].clone();
    for v in &jsons {
        assert_eq!(v["object"], object, "{v}");
        assert_eq!(v["id"], id);
        assert_eq!(v["model"], "any-model", "the request's model is echoed");
    }
    // The stream is well-formed SSE: events separated by blank lines, nothing else.
    assert!(s.raw.ends_with(b"data: [DONE]\n\n"));
}

fn text_of(s: &Streamed) -> String {
    s.content()
        .iter()
        .map(|e| {
            let v = e.json();
            let c = &v["choices"][0];
            c["delta"]["content"]
                .as_str()
                .or(c["text"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn chat_stream_is_valid_with_role_chunk_usage_and_done() {
    let mock = start(fast()).await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/chat/completions",
        chat_body(3, true, false),
        &[],
    )
    .await;
    assert_valid_stream(&s, "chat.completion.chunk");
    let role = s.events[0].json();
    assert_eq!(
        role["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(text_of(&s), " tok0 tok1 tok2");
    let content = s.content();
    assert_eq!(
        content.last().unwrap().json()["choices"][0]["finish_reason"],
        "length"
    );
    assert!(content.iter().all(|e| e.json().get("usage").is_none()));
    assert_eq!(
        s.final_usage(),
        Some(
            json!({"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7,
                    "prompt_tokens_details": {"cached_tokens": 0}})
        )
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn completions_stream_uses_text_and_has_no_role_chunk() {
    let mock = start(fast()).await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/completions",
        completions_body(4, true),
        &[],
    )
    .await;
    assert_valid_stream(&s, "text_completion");
    assert!(s.events[0].tokens().is_some(), "first event is content");
    assert_eq!(text_of(&s), " tok0 tok1 tok2 tok3");
    assert_eq!(s.final_usage().unwrap()["prompt_tokens"], 3);
    mock.shutdown().await;
}

#[tokio::test]
async fn usage_only_when_asked_and_not_disabled() {
    let mock = start(fast()).await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/chat/completions",
        chat_body(2, false, false),
        &[],
    )
    .await;
    assert_valid_stream(&s, "chat.completion.chunk");
    assert_eq!(s.final_usage(), None);
    mock.shutdown().await;

    let mock = start(MockConfig {
        usage: false,
        ..fast()
    })
    .await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/chat/completions",
        chat_body(2, true, true),
        &[],
    )
    .await;
    assert_valid_stream(&s, "chat.completion.chunk");
    assert_eq!(s.final_usage(), None);
    assert!(s.events.iter().all(|e| e.json().get("usage").is_none()));
    mock.shutdown().await;
}

#[tokio::test]
async fn continuous_usage_is_cumulative_on_every_content_chunk() {
    let mock = start(MockConfig {
        tokens_per_chunk: 2,
        ..fast()
    })
    .await;
    let s = post_stream(
        &mock.base_url(),
        "/v1/chat/completions",
        chat_body(5, true, true),
        &[],
    )
    .await;
    assert_valid_stream(&s, "chat.completion.chunk");
    let cumulative: Vec<u64> = s
        .content()
        .iter()
        .map(|e| e.json()["usage"]["completion_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(cumulative, vec![1, 3, 5]);
    assert_eq!(s.content_tokens(), vec![1, 2, 2]);
    assert_eq!(s.final_usage().unwrap()["completion_tokens"], 5);
    mock.shutdown().await;
}

#[tokio::test]
async fn non_streaming_completions_body() {
    let mock = start(fast()).await;
    let resp = client()
        .post(format!("{}/v1/completions", mock.base_url()))
        .json(&json!({"model": "m2", "prompt": "a b c d e", "max_tokens": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["model"], "m2");
    assert_eq!(v["choices"][0]["text"], " tok0 tok1");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["prompt_tokens"], 5);
    mock.shutdown().await;
}

/// `n` words: ` w0 w1 …`, each one token to the mock.
fn words(tag: &str, n: u32) -> String {
    (0..n).map(|i| format!(" {tag}{i}")).collect()
}

/// The prefix cache: a conversation's second turn finds its first turn's prompt and
/// answer in whole 16-word blocks; every generating protocol reports it in its own
/// usage field; `prefix_cache: false` reports nothing.
#[tokio::test]
async fn a_second_turn_reports_its_first_turn_as_cached_in_every_protocol() {
    let mock = start(fast()).await;
    let post = |path: &'static str, body: Value| {
        let url = format!("{}{path}", mock.base_url());
        async move {
            let v: Value = client()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v
        }
    };
    // Turn 1: 40 words, answer 10 tokens; turn 2 adds 30 words: 80 words, of which
    // the first 50 were seen: 3 whole blocks of 16 = 48 cached.
    for (path, tag) in [
        ("/v1/chat/completions", "c"),
        ("/v1/messages", "m"),
        ("/v1/responses", "r"),
        ("/v1/completions", "p"),
    ] {
        let first = words(tag, 40);
        let second = words(&format!("{tag}x"), 30);
        let body = |turns: &[(&str, &str)]| -> Value {
            let msgs: Vec<Value> = turns
                .iter()
                .map(|(role, text)| json!({"role": role, "content": text}))
                .collect();
            match path {
                "/v1/responses" => json!({"input": msgs, "max_output_tokens": 10}),
                "/v1/completions" => {
                    let text: String = turns.iter().map(|(_, t)| *t).collect();
                    json!({"prompt": text, "max_tokens": 10})
                }
                _ => json!({"messages": msgs, "max_tokens": 10}),
            }
        };
        let v1 = post(path, body(&[("user", &first)])).await;
        let answer = " tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7 tok8 tok9";
        let v2 = post(
            path,
            body(&[("user", &first), ("assistant", answer), ("user", &second)]),
        )
        .await;
        let cached = |v: &Value| match path {
            "/v1/messages" => {
                let u = &v["usage"];
                assert_eq!(
                    u["input_tokens"].as_u64().unwrap()
                        + u["cache_read_input_tokens"].as_u64().unwrap(),
                    if v == &v1 { 40 } else { 80 },
                    "{v}"
                );
                u["cache_read_input_tokens"].clone()
            }
            "/v1/responses" => v["usage"]["input_tokens_details"]["cached_tokens"].clone(),
            _ => v["usage"]["prompt_tokens_details"]["cached_tokens"].clone(),
        };
        assert_eq!(
            (cached(&v1), cached(&v2)),
            (json!(0), json!(48)),
            "{path}: {v2}"
        );
    }
    mock.shutdown().await;

    let mock = start(MockConfig {
        prefix_cache: false,
        ..fast()
    })
    .await;
    for _ in 0..2 {
        let v: Value = client()
            .post(format!("{}/v1/chat/completions", mock.base_url()))
            .json(&json!({"messages": [{"role": "user", "content": words("a", 40)}], "max_tokens": 2}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(v["usage"].get("prompt_tokens_details").is_none(), "{v}");
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn api_key_is_demanded_on_v1_routes_only() {
    let mock = start(MockConfig {
        api_key: Some("sekrit".into()),
        ..fast()
    })
    .await;
    let base = mock.base_url();
    let c = client();
    let body = chat_body(1, false, false);
    for auth in [None, Some("Bearer wrong"), Some("sekrit")] {
        let mut req = c.post(format!("{base}/v1/chat/completions")).json(&body);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "{auth:?}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], "invalid_api_key");
        assert!(v["error"]["message"].is_string());
    }
    let resp = c.get(format!("{base}/v1/models")).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let s = post_stream(
        &base,
        "/v1/chat/completions",
        body,
        &[("authorization", "Bearer sekrit")],
    )
    .await;
    assert_valid_stream(&s, "chat.completion.chunk");
    let resp = c.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    mock.shutdown().await;
}

#[tokio::test]
async fn models_health_and_metrics() {
    let mock = start(MockConfig {
        num_gpu_blocks: 100,
        block_size: 32,
        ..fast()
    })
    .await;
    let base = mock.base_url();
    let c = client();
    let v: Value = c
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "mock-llm");
    assert_eq!(
        c.get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    post_stream(&base, "/v1/completions", completions_body(3, false), &[]).await;
    let resp = c.get(format!("{base}/metrics")).send().await.unwrap();
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let m = resp.text().await.unwrap();
    let l = "engine=\"0\",model_name=\"mock-llm\"";
    for want in [
        "# TYPE vllm:num_requests_running gauge".to_string(),
        "# TYPE vllm:time_to_first_token_seconds histogram".to_string(),
        "# TYPE vllm:inter_token_latency_seconds histogram".to_string(),
        "# TYPE vllm:generation_tokens_total counter".to_string(),
        format!("vllm:num_requests_running{{{l}}} 0.0"),
        format!("vllm:num_requests_waiting{{{l}}} 0.0"),
        format!("vllm:kv_cache_usage_perc{{{l}}} 0.0"),
        format!("vllm:cache_config_info{{block_size=\"32\",{l},num_gpu_blocks=\"100\"}} 1.0"),
        format!("vllm:generation_tokens_total{{{l}}} 3.0"),
        format!("vllm:prompt_tokens_total{{{l}}} 3.0"),
        format!("vllm:time_to_first_token_seconds_count{{{l}}} 1.0"),
        format!("vllm:inter_token_latency_seconds_count{{{l}}} 2.0"),
        format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"+Inf\"}} 1.0"),
    ] {
        assert!(m.contains(&want), "missing {want}\n{m}");
    }
    // Every sample line is `name{labels} value` with a float value.
    for line in m.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        assert!(
            series.starts_with("vllm:") && series.ends_with('}'),
            "{line}"
        );
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn bad_requests_get_openai_style_errors() {
    let mock = start(fast()).await;
    let base = mock.base_url();
    let c = client();
    for (path, body, header) in [
        ("/v1/chat/completions", "{not json", None),
        ("/v1/chat/completions", r#"{"messages": "hi"}"#, None),
        (
            "/v1/completions",
            r#"{"prompt": "a", "max_tokens": 0}"#,
            None,
        ),
        (
            "/v1/completions",
            r#"{"prompt": "a"}"#,
            Some("no_such_fault"),
        ),
        ("/v1/completions", r#"{"prompt": "a"}"#, Some("http_500=3")),
    ] {
        let mut req = c
            .post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body);
        if let Some(h) = header {
            req = req.header("x-mock-fault", h);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 400, "{body} {header:?}");
        let v: Value = resp.json().await.unwrap();
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{v}"
        );
    }
    let resp = c.get(format!("{base}/v2/nothing")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    mock.shutdown().await;
}

#[tokio::test]
async fn shutdown_finishes_in_flight_streams() {
    let mock = start(MockConfig {
        itl: Duration::from_millis(20),
        ..fast()
    })
    .await;
    let base = mock.base_url();
    let h = tokio::spawn(async move {
        post_stream(&base, "/v1/completions", completions_body(10, true), &[]).await
    });
    // Shut down only once the stream is running (a fixed sleep raced a loaded machine).
    let metrics = format!("{}/metrics", mock.base_url());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = client()
            .get(&metrics)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text
            .lines()
            .any(|l| l.starts_with("vllm:num_requests_running{") && !l.ends_with(" 0.0"))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stream never started"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    mock.shutdown().await;
    let s = h.await.unwrap();
    assert_valid_stream(&s, "text_completion");
    assert_eq!(s.content_tokens().iter().sum::<u32>(), 10);
}
