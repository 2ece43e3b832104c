//! AWS Bedrock's Converse as the mock answers it: `ConverseStream` frames in AWS's
//! binary event stream (`client::auth::event_stream::encode`): `messageStart`, a
//! reasoning content block (`delta.reasoningContent.text`) then a text block
//! (`delta.text`), `messageStop` with the `stopReason` (`end_turn`, `max_tokens`) and
//! `metadata` with the usage and `metrics.latencyMs`; an error mid-stream is an
//! exception frame. The whole answer is Converse's JSON; an error reply is
//! `{"message": ...}` with its kind in `x-amzn-ErrorType`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::super::answer::{ChunkWriter, Piece, Usage};
use super::{MockProtocol, Whole, prompt};
use crate::client::auth::event_stream::encode;

pub struct Converse;

/// One event frame of type `kind`.
fn event(kind: &str, payload: &Value) -> Vec<u8> {
    encode(
        &[
            (":message-type", "event"),
            (":event-type", kind),
            (":content-type", "application/json"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// One exception frame of type `kind`.
pub fn exception(kind: &str, message: &str) -> Vec<u8> {
    encode(
        &[
            (":message-type", "exception"),
            (":exception-type", kind),
            (":content-type", "application/json"),
        ],
        json!({"message": message}).to_string().as_bytes(),
    )
}

/// The content block of the answer: 1 after a reasoning block, else 0.
fn answer_index(w: &ChunkWriter) -> u32 {
    u32::from(w.reasoning > 0)
}

fn stop_reason(w: &ChunkWriter, emitted: u32) -> &'static str {
    if w.stopped(emitted) {
        "end_turn"
    } else {
        "max_tokens"
    }
}

fn usage_json(u: Usage) -> Value {
    let mut v = json!({"inputTokens": u.prompt.saturating_sub(u.cached.unwrap_or(0)),
                       "outputTokens": u.completion,
                       "totalTokens": u64::from(u.prompt) + u64::from(u.completion)});
    if let Some(c) = u.cached {
        v["cacheReadInputTokens"] = json!(c);
    }
    v
}

fn delta(w: &ChunkWriter, from: u32, to: u32, piece: &Piece) -> Bytes {
    let mut out = Vec::new();
    if !piece.reasoning.is_empty() {
        out.extend(event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0,
                    "delta": {"reasoningContent": {"text": piece.reasoning}}}),
        ));
    }
    if !piece.answer.is_empty() {
        if w.reasoning > 0 && (from..to).contains(&w.reasoning) {
            out.extend(event("contentBlockStop", &json!({"contentBlockIndex": 0})));
        }
        out.extend(event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": answer_index(w), "delta": {"text": piece.answer}}),
        ));
    }
    Bytes::from(out)
}

impl MockProtocol for Converse {
    fn id_prefix(&self) -> &'static str {
        "converse"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &["inferenceConfig.maxTokens"]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        prompt::messages(body)
    }

    fn usage_unasked(&self) -> bool {
        true
    }

    fn open(&self, _w: &ChunkWriter, _usage: Usage) -> Option<Bytes> {
        Some(Bytes::from(event(
            "messageStart",
            &json!({"role": "assistant"}),
        )))
    }

    fn tokens(
        &self,
        w: &ChunkWriter,
        from: u32,
        to: u32,
        _finish: Option<&str>,
        _usage: Option<Usage>,
    ) -> Bytes {
        delta(w, from, to, &w.piece(from, to))
    }

    fn content_json(&self, _w: &ChunkWriter, text: &str) -> String {
        json!({"contentBlockIndex": 0, "delta": {"text": text}}).to_string()
    }

    fn close(&self, w: &ChunkWriter, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
        let open = if emitted > w.reasoning {
            answer_index(w)
        } else {
            0
        };
        let mut out = event("contentBlockStop", &json!({"contentBlockIndex": open}));
        out.extend(event(
            "messageStop",
            &json!({"stopReason": stop_reason(w, emitted)}),
        ));
        if end {
            let mut meta = json!({});
            if let Some(u) = usage {
                meta["usage"] = usage_json(u);
                meta["metrics"] = json!({"latencyMs": u.elapsed.as_millis()});
            }
            out.extend(event("metadata", &meta));
        }
        Bytes::from(out)
    }

    fn error_event(&self, message: &str) -> Bytes {
        Bytes::from(exception("modelStreamErrorException", message))
    }

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        let piece = w.piece(0, answer.emitted);
        let mut content = Vec::new();
        if !piece.reasoning.is_empty() {
            content.push(json!({"reasoningContent": {"reasoningText":
                {"text": piece.reasoning, "signature": "mock"}}}));
        }
        content.push(json!({"text": piece.answer}));
        json!({"output": {"message": {"role": "assistant", "content": content}},
               "stopReason": stop_reason(w, answer.emitted),
               "usage": usage_json(answer.usage),
               "metrics": {"latencyMs": answer.usage.elapsed.as_millis()}})
    }

    fn error_response(&self, _status: u16, message: &str, _kind: &str) -> Value {
        json!({"message": message})
    }

    fn error_headers(&self, status: u16) -> Vec<(&'static str, String)> {
        let kind = match status {
            400 => "ValidationException",
            403 => "AccessDeniedException",
            404 => "ResourceNotFoundException",
            429 => "ThrottlingException",
            503 => "ServiceUnavailableException",
            _ => "InternalServerException",
        };
        vec![("x-amzn-errortype", kind.to_string())]
    }

    fn stream_content_type(&self) -> &'static str {
        "application/vnd.amazon.eventstream"
    }
}
