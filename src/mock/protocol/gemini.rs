//! Google's `generateContent` as the mock answers it (Gemini API and Vertex AI): one
//! `GenerateContentResponse` per SSE event, reasoning tokens as parts with
//! `thought: true`, and a last event with the `finishReason` (`STOP`, `MAX_TOKENS`) and
//! `usageMetadata` (reasoning counted apart, as `thoughtsTokenCount`). Errors are
//! `{"error": {code, message, status}}`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::super::answer::{ChunkWriter, Piece, Usage};
use super::{MockProtocol, Whole, prompt, sse};

pub struct Gemini;

/// The parts of tokens `from..to`: thoughts first, then answer text.
fn parts(piece: &Piece) -> Vec<Value> {
    let mut out = Vec::new();
    if !piece.reasoning.is_empty() {
        out.push(json!({"text": piece.reasoning, "thought": true}));
    }
    if !piece.answer.is_empty() {
        out.push(json!({"text": piece.answer}));
    }
    out
}

fn usage_metadata(u: Usage) -> Value {
    let candidates = u.completion.saturating_sub(u.reasoning);
    let mut v = json!({"promptTokenCount": u.prompt, "candidatesTokenCount": candidates,
                       "totalTokenCount": u64::from(u.prompt) + u64::from(u.completion)});
    if u.reasoning > 0 {
        v["thoughtsTokenCount"] = json!(u.reasoning);
    }
    if let Some(c) = u.cached {
        v["cachedContentTokenCount"] = json!(c);
    }
    v
}

fn finish_reason(w: &ChunkWriter, emitted: u32) -> &'static str {
    if w.stopped(emitted) {
        "STOP"
    } else {
        "MAX_TOKENS"
    }
}

fn response(
    w: &ChunkWriter,
    parts: Vec<Value>,
    finish: Option<&str>,
    usage: Option<Usage>,
) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    let mut v = json!({"candidates": [candidate], "modelVersion": w.model, "responseId": w.id});
    if let Some(u) = usage {
        v["usageMetadata"] = usage_metadata(u);
    }
    v
}

/// Google's error body: `{"error": {code, message, status}}`.
pub fn error_body(code: u16, message: &str) -> Value {
    let status = match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": code, "message": message, "status": status}})
}

impl MockProtocol for Gemini {
    fn id_prefix(&self) -> &'static str {
        "gemini"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &["generationConfig.maxOutputTokens"]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        let Some(Value::Array(contents)) = body.get("contents") else {
            return Err("'contents' must be an array".into());
        };
        let mut out = Vec::new();
        if let Some(system) = body.get("systemInstruction") {
            prompt::content_words(&mut out, system.get("parts"));
        }
        for c in contents {
            prompt::content_words(&mut out, c.get("parts"));
        }
        Ok(out)
    }

    fn usage_unasked(&self) -> bool {
        true
    }

    fn open(&self, _w: &ChunkWriter, _usage: Usage) -> Option<Bytes> {
        None
    }

    fn tokens(
        &self,
        w: &ChunkWriter,
        from: u32,
        to: u32,
        _finish: Option<&str>,
        _usage: Option<Usage>,
    ) -> Bytes {
        let piece = w.piece(from, to);
        sse(response(w, parts(&piece), None, None)
            .to_string()
            .as_bytes())
    }

    fn content_json(&self, w: &ChunkWriter, text: &str) -> String {
        response(w, vec![json!({"text": text})], None, None).to_string()
    }

    fn close(&self, w: &ChunkWriter, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
        if !end {
            return Bytes::new();
        }
        let last = response(
            w,
            vec![json!({"text": ""})],
            Some(finish_reason(w, emitted)),
            usage,
        );
        sse(last.to_string().as_bytes())
    }

    fn error_event(&self, message: &str) -> Bytes {
        sse(error_body(500, message).to_string().as_bytes())
    }

    fn error_response(&self, status: u16, message: &str, _kind: &str) -> Value {
        error_body(status, message)
    }

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        let piece = w.piece(0, answer.emitted);
        response(
            w,
            parts(&piece),
            Some(finish_reason(w, answer.emitted)),
            Some(answer.usage),
        )
    }
}
