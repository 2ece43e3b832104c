//! The OpenAI chat/completions wire format as the mock speaks it, and request
//! parsing for every protocol: what the engine needs from a body. Pure: no timing, no
//! IO.

use bytes::Bytes;
use serde_json::{Value, json};

use super::prefix_cache::{push_words, word_hash};
use super::tool::{self, OfferedTool};
use super::wire::{ChunkWriter, Piece, Usage, sse};
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
    /// Those words, hashed in order (what the prefix cache compares).
    pub prompt_words: Vec<u64>,
    pub include_usage: bool,
    pub continuous_usage: bool,
    /// Embeddings: how many inputs (one vector each).
    pub inputs: u32,
    /// The first function offered in `tools` (chat and responses).
    pub tool: Option<OfferedTool>,
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
    let keys: &[&str] = match endpoint {
        Endpoint::Chat | Endpoint::Completions => &["max_tokens", "max_completion_tokens"],
        Endpoint::Responses => &["max_output_tokens"],
        Endpoint::Messages => &["max_tokens"],
        Endpoint::Embeddings => &[],
    };
    for &key in keys {
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
    let prompt_words = prompt_words(endpoint, obj)?;
    let inputs = match obj.get("input") {
        Some(Value::Array(items)) if items.iter().all(|i| !i.is_number()) => items.len(),
        _ => 1,
    };
    Ok(GenRequest {
        endpoint,
        model,
        stream,
        max_tokens,
        prompt_tokens: u32::try_from(prompt_words.len()).unwrap_or(u32::MAX),
        prompt_words,
        include_usage,
        continuous_usage,
        inputs: u32::try_from(inputs).unwrap_or(u32::MAX),
        tool: tool::offered(endpoint, obj),
    })
}

/// The prompt's words, hashed, in order (its size in tokens is their count): chat and
/// messages `messages` (after a Messages `system`), completions `prompt`, responses and
/// embeddings `input`. Roles are not words: a conversation's turns run on as one text.
fn prompt_words(
    endpoint: Endpoint,
    obj: &serde_json::Map<String, Value>,
) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    match endpoint {
        Endpoint::Chat | Endpoint::Messages => match obj.get("messages") {
            Some(Value::Array(msgs)) => {
                content_words(&mut out, obj.get("system"));
                for m in msgs {
                    content_words(&mut out, m.get("content"));
                }
            }
            _ => return Err("'messages' must be an array".into()),
        },
        Endpoint::Completions => match obj.get("prompt") {
            Some(p @ (Value::String(_) | Value::Array(_))) => raw_prompt_words(&mut out, p),
            _ => return Err("'prompt' must be a string or an array".into()),
        },
        Endpoint::Responses => match obj.get("input") {
            Some(Value::String(s)) => push_words(&mut out, s),
            Some(Value::Array(items)) => {
                for i in items {
                    content_words(&mut out, i.get("content"));
                }
            }
            _ => return Err("'input' must be a string or an array of messages".into()),
        },
        Endpoint::Embeddings => match obj.get("input") {
            Some(p @ (Value::String(_) | Value::Array(_))) => raw_prompt_words(&mut out, p),
            _ => return Err("'input' must be a string or an array".into()),
        },
    }
    Ok(out)
}

/// Words in a chat message `content`: a string, or an array of parts with `text`.
fn content_words(out: &mut Vec<u64>, content: Option<&Value>) {
    match content {
        Some(Value::String(s)) => push_words(out, s),
        Some(Value::Array(parts)) => {
            for p in parts {
                match p {
                    Value::String(s) => push_words(out, s),
                    other => content_words(out, other.get("text")),
                }
            }
        }
        _ => {}
    }
}

/// Completions `prompt`: a string, an array of strings, token ids (one each), or
/// arrays of token ids.
fn raw_prompt_words(out: &mut Vec<u64>, p: &Value) {
    match p {
        Value::String(s) => push_words(out, s),
        Value::Array(items) => {
            for i in items {
                match i {
                    Value::Number(n) => out.push(word_hash(&n.to_string())),
                    other => raw_prompt_words(out, other),
                }
            }
        }
        _ => {}
    }
}

/// `usage` in OpenAI's chat/completions names.
fn usage_json(u: Usage) -> Value {
    let mut v = json!({
        "prompt_tokens": u.prompt,
        "completion_tokens": u.completion,
        "total_tokens": u64::from(u.prompt) + u64::from(u.completion),
    });
    if u.reasoning > 0 {
        v["completion_tokens_details"] = json!({"reasoning_tokens": u.reasoning});
    }
    if let Some(cached) = u.cached {
        v["prompt_tokens_details"] = json!({"cached_tokens": cached});
    }
    v
}

pub fn done_event() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

/// Chat and completions chunks and bodies.
impl ChunkWriter {
    fn openai_chunk(&self, choices: Value, usage: Option<Usage>) -> Value {
        let object = match self.endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            _ => "text_completion",
        };
        let mut v = json!({
            "id": self.id,
            "object": object,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        if let Some(u) = usage {
            v["usage"] = usage_json(u);
        }
        v
    }

    /// Chat only: `delta: {role: "assistant", content: ""}`, sent before any token.
    pub(super) fn openai_role_event(&self) -> Bytes {
        let choice = json!([{"index": 0, "delta": {"role": "assistant", "content": ""},
                             "logprobs": null, "finish_reason": null}]);
        sse(self.openai_chunk(choice, None).to_string().as_bytes())
    }

    /// The JSON text of a content chunk (before SSE framing). Chat streams reasoning
    /// as `delta.reasoning_content`; completions have no reasoning field, so it is
    /// part of the text there.
    pub(super) fn openai_content_json(
        &self,
        piece: &Piece,
        finish: Option<&str>,
        usage: Option<Usage>,
    ) -> String {
        let choice = match self.endpoint {
            Endpoint::Chat => {
                let mut delta = serde_json::Map::new();
                if !piece.reasoning.is_empty() {
                    delta.insert("reasoning_content".into(), json!(piece.reasoning));
                }
                match self.tool() {
                    Some(name) if !piece.answer.is_empty() || piece.opens_answer => {
                        // The name opens the call; the arguments follow in fragments.
                        let mut call = json!({"index": 0, "function": {"arguments": piece.answer}});
                        if piece.opens_answer {
                            call["id"] = json!(self.call_id());
                            call["type"] = json!("function");
                            call["function"]["name"] = json!(name);
                        }
                        delta.insert("tool_calls".into(), json!([call]));
                    }
                    _ if !piece.answer.is_empty() || piece.reasoning.is_empty() => {
                        delta.insert("content".into(), json!(piece.answer));
                    }
                    _ => {}
                }
                let finish = finish.map(|f| self.finish_name(f));
                json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}])
            }
            _ => json!([{"index": 0, "text": format!("{}{}", piece.reasoning, piece.answer),
                         "logprobs": null, "finish_reason": finish}]),
        };
        self.openai_chunk(choice, usage).to_string()
    }

    /// The final usage-only chunk: `choices: []`.
    pub(super) fn openai_usage_event(&self, usage: Usage) -> Bytes {
        sse(self
            .openai_chunk(json!([]), Some(usage))
            .to_string()
            .as_bytes())
    }

    pub(super) fn openai_full_response(&self, piece: &Piece, finish: &str, usage: Usage) -> Value {
        match self.endpoint {
            Endpoint::Chat => {
                let mut message = json!({"role": "assistant", "content": piece.answer});
                if let Some(name) = self.tool() {
                    message["content"] = Value::Null;
                    message["tool_calls"] = json!([{"id": self.call_id(), "type": "function",
                        "function": {"name": name, "arguments": piece.answer}}]);
                }
                let finish = self.finish_name(finish);
                if !piece.reasoning.is_empty() {
                    message["reasoning_content"] = json!(piece.reasoning);
                }
                json!({
                    "id": self.id, "object": "chat.completion", "created": self.created,
                    "model": self.model,
                    "choices": [{"index": 0, "message": message, "logprobs": null,
                                 "finish_reason": finish}],
                    "usage": usage_json(usage),
                })
            }
            _ => json!({
                "id": self.id, "object": "text_completion", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "text": format!("{}{}", piece.reasoning, piece.answer),
                             "logprobs": null, "finish_reason": finish}],
                "usage": usage_json(usage),
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
            (Endpoint::Responses, br#"{"input":3}"#),
            (
                Endpoint::Responses,
                br#"{"input":"x","max_output_tokens":0}"#,
            ),
            (Endpoint::Messages, br#"{"messages":{}}"#),
            (Endpoint::Embeddings, br#"{"input":{}}"#),
        ] {
            assert!(
                parse_request(ep, body, "m").is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
