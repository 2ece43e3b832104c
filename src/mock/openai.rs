//! The OpenAI wire format as the mock speaks it: parsing a chat/completions request
//! into what the engine needs, and building SSE chunks and full responses. Pure: no
//! timing, no IO.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::client::Endpoint;

/// Output length when the request gives neither `max_completion_tokens` nor `max_tokens`
/// (vLLM's OpenAI server default for `/v1/completions`).
pub const DEFAULT_MAX_TOKENS: u32 = 16;
/// Largest output a request may ask for, so one request cannot make the mock build
/// gigabytes of text (a real server rejects max_tokens beyond its context the same way).
pub const MAX_OUTPUT_TOKENS: u32 = 1_000_000;

/// What the engine needs to know about one request.
#[derive(Clone, Debug, PartialEq)]
pub struct GenRequest {
    pub endpoint: Endpoint,
    /// Echoed back in every chunk (any model name is accepted).
    pub model: String,
    pub stream: bool,
    /// `max_completion_tokens`, else `max_tokens`, else absent.
    pub max_tokens: Option<u32>,
    /// Whitespace-separated words of the prompt/messages (an approximation).
    pub prompt_tokens: u32,
    pub include_usage: bool,
    pub continuous_usage: bool,
}

/// Parses a request body; the error is a message for a 400 response.
pub fn parse_request(
    endpoint: Endpoint,
    body: &[u8],
    default_model: &str,
) -> Result<GenRequest, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("request body is not valid JSON: {e}"))?;
    let Some(obj) = v.as_object() else {
        return Err("request body must be a JSON object".into());
    };
    let model = match obj.get("model") {
        None | Some(Value::Null) => default_model.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("'model' must be a string".into()),
    };
    let stream = match obj.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("'stream' must be a boolean".into()),
    };
    let mut max_tokens = None;
    // max_completion_tokens wins over the deprecated max_tokens, as in OpenAI's API.
    for key in ["max_tokens", "max_completion_tokens"] {
        match obj.get(key) {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 && n <= u64::from(MAX_OUTPUT_TOKENS) => {
                    max_tokens = Some(n as u32)
                }
                _ => {
                    return Err(format!(
                        "'{key}' must be an integer between 1 and {MAX_OUTPUT_TOKENS}"
                    ));
                }
            },
        }
    }
    let (include_usage, continuous_usage) = match obj.get("stream_options") {
        Some(Value::Object(so)) => (
            so.get("include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            so.get("continuous_usage_stats")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ),
        _ => (false, false),
    };
    let prompt_tokens = match endpoint {
        Endpoint::Chat => match obj.get("messages") {
            Some(Value::Array(msgs)) => msgs.iter().map(|m| words(m.get("content"))).sum(),
            _ => return Err("'messages' must be an array".into()),
        },
        Endpoint::Completions => match obj.get("prompt") {
            Some(p @ (Value::String(_) | Value::Array(_))) => prompt_words(p),
            _ => return Err("'prompt' must be a string or an array".into()),
        },
    };
    Ok(GenRequest {
        endpoint,
        model,
        stream,
        max_tokens,
        prompt_tokens: u32::try_from(prompt_tokens).unwrap_or(u32::MAX),
        include_usage,
        continuous_usage,
    })
}

/// Words in a chat message `content`: a string, or an array of parts with `text`.
fn words(content: Option<&Value>) -> u64 {
    match content {
        Some(Value::String(s)) => s.split_whitespace().count() as u64,
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.split_whitespace().count() as u64,
                other => words(other.get("text")),
            })
            .sum(),
        _ => 0,
    }
}

/// Completions `prompt`: a string, an array of strings, token ids (one each), or
/// arrays of token ids.
fn prompt_words(p: &Value) -> u64 {
    match p {
        Value::String(s) => s.split_whitespace().count() as u64,
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Number(_) => 1,
                other => prompt_words(other),
            })
            .sum(),
        _ => 0,
    }
}

/// The text of output token `i` (0-based): one word per token, so a client counting
/// whitespace-separated words gets the token count exactly.
pub fn token_text(i: u32) -> String {
    format!(" tok{i}")
}

/// The text of tokens `from..to`.
pub fn tokens_text(from: u32, to: u32) -> String {
    (from..to).map(token_text).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u32,
    pub completion: u32,
}

impl Usage {
    fn json(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": u64::from(self.prompt) + u64::from(self.completion),
        })
    }
}

/// Builds the chunks of one response.
pub struct ChunkWriter {
    pub endpoint: Endpoint,
    pub id: String,
    pub created: u64,
    pub model: String,
}

/// One SSE event: `data: <payload>\n\n`.
pub fn sse(payload: &[u8]) -> Bytes {
    let mut v = Vec::with_capacity(payload.len() + 8);
    v.extend_from_slice(b"data: ");
    v.extend_from_slice(payload);
    v.extend_from_slice(b"\n\n");
    Bytes::from(v)
}

pub fn done_event() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

impl ChunkWriter {
    pub fn new(endpoint: Endpoint, seq: u64, model: &str) -> Self {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let id = match endpoint {
            Endpoint::Chat => format!("chatcmpl-mock-{seq}"),
            Endpoint::Completions => format!("cmpl-mock-{seq}"),
        };
        Self {
            endpoint,
            id,
            created,
            model: model.to_string(),
        }
    }

    fn chunk(&self, choices: Value, usage: Option<Usage>) -> Value {
        let object = match self.endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            Endpoint::Completions => "text_completion",
        };
        let mut v = json!({
            "id": self.id,
            "object": object,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        if let Some(u) = usage {
            v["usage"] = u.json();
        }
        v
    }

    /// Chat only: `delta: {role: "assistant", content: ""}`, sent before any token.
    pub fn role_event(&self) -> Bytes {
        let choice = json!([{"index": 0, "delta": {"role": "assistant", "content": ""},
                             "logprobs": null, "finish_reason": null}]);
        sse(self.chunk(choice, None).to_string().as_bytes())
    }

    /// The JSON text of a content chunk (before SSE framing).
    pub fn content_json(&self, text: &str, finish: Option<&str>, usage: Option<Usage>) -> String {
        let choice = match self.endpoint {
            Endpoint::Chat => json!([{"index": 0, "delta": {"content": text},
                                      "logprobs": null, "finish_reason": finish}]),
            Endpoint::Completions => json!([{"index": 0, "text": text,
                                             "logprobs": null, "finish_reason": finish}]),
        };
        self.chunk(choice, usage).to_string()
    }

    pub fn content_event(&self, text: &str, finish: Option<&str>, usage: Option<Usage>) -> Bytes {
        sse(self.content_json(text, finish, usage).as_bytes())
    }

    /// The final usage-only chunk: `choices: []`.
    pub fn usage_event(&self, usage: Usage) -> Bytes {
        sse(self.chunk(json!([]), Some(usage)).to_string().as_bytes())
    }

    /// The head and tail of a content chunk whose text is `fill` bytes of `x`, so a
    /// huge line can be streamed without building it.
    pub fn huge_event_parts(&self) -> (Bytes, Bytes) {
        let marker = "\u{1}MARK\u{1}";
        let full = self.content_json(marker, None, None);
        let escaped = serde_json::to_string(marker).unwrap_or_default();
        let inner = &escaped[1..escaped.len().saturating_sub(1)];
        match full.split_once(inner) {
            Some((head, tail)) => (
                Bytes::from(format!("data: {head}")),
                Bytes::from(format!("{tail}\n\n")),
            ),
            None => (Bytes::from_static(b"data: "), Bytes::from_static(b"\n\n")),
        }
    }

    /// A complete (non-streaming) response body.
    pub fn full_response(&self, text: &str, finish: &str, usage: Usage) -> Value {
        match self.endpoint {
            Endpoint::Chat => json!({
                "id": self.id, "object": "chat.completion", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "logprobs": null, "finish_reason": finish}],
                "usage": usage.json(),
            }),
            Endpoint::Completions => json!({
                "id": self.id, "object": "text_completion", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": finish}],
                "usage": usage.json(),
            }),
        }
    }
}

/// An OpenAI-style error object: `{"error": {message, type, param, code}}`.
pub fn error_body(message: &str, kind: &str, code: Value) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_chat_and_completions() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hello big world"},
            {"role":"user","content":[{"type":"text","text":"two words"}]}],
            "stream":true,"max_tokens":5,"max_completion_tokens":7,
            "stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#;
        let r = parse_request(Endpoint::Chat, body, "mock-llm").unwrap();
        assert_eq!(r.model, "m");
        assert_eq!(r.max_tokens, Some(7));
        assert_eq!(r.prompt_tokens, 5);
        assert!(r.stream && r.include_usage && r.continuous_usage);

        let r = parse_request(
            Endpoint::Completions,
            br#"{"prompt":["a b", [1,2,3]]}"#,
            "mock-llm",
        )
        .unwrap();
        assert_eq!(
            (r.model.as_str(), r.prompt_tokens, r.max_tokens, r.stream),
            ("mock-llm", 5, None, false)
        );
    }

    #[test]
    fn rejects_bad_requests() {
        for (ep, body) in [
            (Endpoint::Chat, &b"{"[..]),
            (Endpoint::Chat, br#"{"messages":"x"}"#),
            (Endpoint::Chat, br#"{"messages":[],"max_tokens":0}"#),
            (Endpoint::Chat, br#"{"messages":[],"max_tokens":-3}"#),
            (Endpoint::Chat, br#"{"messages":[],"max_tokens":1000001}"#),
            (Endpoint::Completions, br#"{"prompt":3}"#),
            (Endpoint::Completions, br#"[1]"#),
        ] {
            assert!(
                parse_request(ep, body, "m").is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn huge_event_parts_frame_a_valid_chunk() {
        let w = ChunkWriter::new(Endpoint::Chat, 1, "m");
        let (head, tail) = w.huge_event_parts();
        let line = [&head[..], b"xxxx", &tail[..]].concat();
        let json = line
            .strip_prefix(b"data: ")
            .unwrap()
            .strip_suffix(b"\n\n")
            .unwrap();
        let v: Value = serde_json::from_slice(json).unwrap();
        assert_eq!(v["choices"][0]["delta"]["content"], "xxxx");
    }

    #[test]
    fn token_text_is_one_word_per_token() {
        assert_eq!(tokens_text(0, 3), " tok0 tok1 tok2");
        assert_eq!(tokens_text(0, 40).split_whitespace().count(), 40);
    }
}
