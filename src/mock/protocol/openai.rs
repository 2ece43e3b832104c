//! What OpenAI's chat and completions streams share: the chunk envelope, usage in
//! their names, the usage-only chunk, `[DONE]`, and the error object (also the body
//! of every mock error response).

use bytes::Bytes;
use serde_json::{Value, json};

use super::super::answer::{ChunkWriter, Usage};
use super::sse;

/// `usage` in OpenAI's chat/completions names.
pub fn usage_json(u: Usage) -> Value {
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

fn done_event() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

/// One streamed chunk of `object` (`chat.completion.chunk`, `text_completion`).
pub fn chunk(w: &ChunkWriter, object: &str, choices: Value, usage: Option<Usage>) -> Value {
    let mut v = json!({
        "id": w.id,
        "object": object,
        "created": w.created,
        "model": w.model,
        "choices": choices,
    });
    if let Some(u) = usage {
        v["usage"] = usage_json(u);
    }
    v
}

/// A stream's end: the usage-only chunk (`choices: []`) when `usage` is given, and
/// `[DONE]` unless `end` is false.
pub fn close(w: &ChunkWriter, object: &str, usage: Option<Usage>, end: bool) -> Bytes {
    let mut out = Vec::new();
    if let Some(u) = usage {
        out.extend_from_slice(&sse(chunk(w, object, json!([]), Some(u))
            .to_string()
            .as_bytes()));
    }
    if end {
        out.extend_from_slice(&done_event());
    }
    Bytes::from(out)
}

/// The error event of a chat or completions stream, then `[DONE]` (as vLLM).
pub fn error_event(message: &str) -> Bytes {
    let err = error_body(message, "InternalServerError", 500.into());
    let mut out = sse(err.to_string().as_bytes()).to_vec();
    out.extend_from_slice(&done_event());
    Bytes::from(out)
}

/// An OpenAI-style error object: `{"error": {message, type, param, code}}`.
pub fn error_body(message: &str, kind: &str, code: Value) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
