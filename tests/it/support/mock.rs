//! Shared helpers of the mock's integration tests: start a mock on 127.0.0.1:0 and read
//! its SSE streams with reqwest directly, stamping every event with the (possibly
//! paused) tokio clock.

#![allow(dead_code)]

use std::time::Duration;

use futures_util::StreamExt;
use llmprobe::mock::{MockConfig, MockServer};
use serde_json::Value;
use tokio::time::Instant;

pub async fn start(config: MockConfig) -> MockServer {
    llmprobe::mock::start(config, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("mock starts")
}

pub fn client() -> reqwest::Client {
    // reqwest is built with `rustls-no-provider`; plain HTTP still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

/// One SSE event (its `data:` payload) and when it was read, from the request start.
#[derive(Debug, Clone)]
pub struct Event {
    pub at: Duration,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }

    /// Tokens of generated text in a content chunk (one word per token), or None for
    /// role-only, usage-only and [DONE] events.
    pub fn tokens(&self) -> Option<u32> {
        let v = self.json();
        let c = &v["choices"][0];
        let text = c["delta"]["content"].as_str().or(c["text"].as_str())?;
        (!text.is_empty()).then(|| text.split_whitespace().count() as u32)
    }

    pub fn ms(&self) -> f64 {
        self.at.as_secs_f64() * 1e3
    }
}

pub struct Streamed {
    pub status: u16,
    pub content_type: String,
    pub events: Vec<Event>,
    pub raw: Vec<u8>,
    /// The body ended with an error (reset, truncated chunked encoding).
    pub body_error: Option<String>,
}

impl Streamed {
    pub fn content(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.tokens().is_some())
            .collect()
    }

    pub fn content_times_ms(&self) -> Vec<f64> {
        self.content().iter().map(|e| e.ms()).collect()
    }

    pub fn content_tokens(&self) -> Vec<u32> {
        self.content().iter().filter_map(|e| e.tokens()).collect()
    }

    pub fn has_done(&self) -> bool {
        self.events.iter().any(|e| e.data == "[DONE]")
    }

    /// The event carrying usage with `choices: []`.
    pub fn final_usage(&self) -> Option<Value> {
        self.events.iter().find_map(|e| {
            let v = e.json();
            (v["choices"].as_array().is_some_and(|c| c.is_empty())).then(|| v["usage"].clone())
        })
    }
}

/// POSTs `body` to `path` and reads the whole response as SSE.
pub async fn post_stream(
    base: &str,
    path: &str,
    body: Value,
    headers: &[(&str, &str)],
) -> Streamed {
    let client = client();
    let mut req = client.post(format!("{base}{path}")).json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let t0 = Instant::now();
    let resp = req.send().await.expect("response headers");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut stream = resp.bytes_stream();
    let mut raw = Vec::new();
    let mut events = Vec::new();
    let mut scanned = 0;
    let mut body_error = None;
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                body_error = Some(format!("{e:?}"));
                break;
            }
        };
        let at = t0.elapsed();
        raw.extend_from_slice(&chunk);
        while let Some(end) = memchr::memmem::find(&raw[scanned..], b"\n\n") {
            let block = &raw[scanned..scanned + end];
            for line in block.split(|b| *b == b'\n') {
                if let Some(d) = line.strip_prefix(b"data: ") {
                    events.push(Event {
                        at,
                        data: String::from_utf8_lossy(d).into_owned(),
                    });
                }
            }
            scanned += end + 2;
        }
    }
    Streamed {
        status,
        content_type,
        events,
        raw,
        body_error,
    }
}

pub fn chat_body(max_tokens: u32, include_usage: bool, continuous: bool) -> Value {
    serde_json::json!({
        "model": "any-model",
        "messages": [{"role": "user", "content": "one two three four"}],
        "stream": true,
        "max_tokens": max_tokens,
        "stream_options": {"include_usage": include_usage, "continuous_usage_stats": continuous},
    })
}

pub fn completions_body(max_tokens: u32, include_usage: bool) -> Value {
    serde_json::json!({
        "model": "any-model",
        "prompt": "alpha beta gamma",
        "stream": true,
        "max_tokens": max_tokens,
        "stream_options": {"include_usage": include_usage},
    })
}

pub fn ms(v: f64) -> Duration {
    Duration::from_nanos((v * 1e6).round() as u64)
}
