//! The Anthropic Messages API as the mock streams it: `message_start`, a `thinking`
//! content block for the reasoning tokens and a `text` block for the answer (each
//! opened and closed with `content_block_start`/`_stop`), `message_delta` with the
//! stop reason and output usage, and `message_stop`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::super::answer::{ChunkWriter, Piece, Usage};
use super::{MockProtocol, Whole, named_sse, prompt};

pub struct Messages;

/// The index of the answer's content block: 1 after a thinking block, else 0.
fn answer_index(w: &ChunkWriter) -> u32 {
    u32::from(w.reasoning > 0)
}

fn block_start(index: u32, thinking: bool) -> Vec<u8> {
    let block = if thinking {
        json!({"type": "thinking", "thinking": ""})
    } else {
        json!({"type": "text", "text": ""})
    };
    named_sse(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_stop(index: u32) -> Vec<u8> {
    named_sse(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// Anthropic's input usage: `input_tokens` is what was not read from the cache, and
/// `cache_read_input_tokens` the rest (present when the prefix cache is on).
fn input_usage(usage: Usage) -> Value {
    match usage.cached {
        Some(cached) => json!({"input_tokens": usage.prompt.saturating_sub(cached),
                               "cache_read_input_tokens": cached,
                               "output_tokens": usage.completion}),
        None => json!({"input_tokens": usage.prompt, "output_tokens": usage.completion}),
    }
}

fn open(w: &ChunkWriter, usage: Usage) -> Bytes {
    let message = json!({"id": w.id, "type": "message", "role": "assistant", "content": [],
                         "model": w.model, "stop_reason": null, "stop_sequence": null,
                         "usage": input_usage(Usage { completion: 0, ..usage })});
    let mut out = named_sse(
        "message_start",
        &json!({"type": "message_start", "message": message}),
    );
    out.extend(block_start(0, w.reasoning > 0));
    Bytes::from(out)
}

/// The data of one `content_block_delta`.
fn delta_json(index: u32, text: &str, thinking: bool) -> Value {
    let delta = if thinking {
        json!({"type": "thinking_delta", "thinking": text})
    } else {
        json!({"type": "text_delta", "text": text})
    };
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

/// Tokens `from..to`: thinking text, then (when the answer starts in this piece) the
/// thinking block's end and the text block's start, then answer text.
fn delta(w: &ChunkWriter, from: u32, to: u32, piece: &Piece) -> Bytes {
    let mut out = Vec::new();
    if !piece.reasoning.is_empty() {
        out.extend(named_sse(
            "content_block_delta",
            &delta_json(0, &piece.reasoning, true),
        ));
    }
    if !piece.answer.is_empty() {
        let answer_starts = w.reasoning > 0 && (from..to).contains(&w.reasoning);
        if answer_starts {
            out.extend(block_stop(0));
            out.extend(block_start(1, false));
        }
        out.extend(named_sse(
            "content_block_delta",
            &delta_json(answer_index(w), &piece.answer, false),
        ));
    }
    Bytes::from(out)
}

fn close(w: &ChunkWriter, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
    // The open block: the text block once the answer started, else the first one.
    let open = if emitted > w.reasoning {
        answer_index(w)
    } else {
        0
    };
    let mut out = block_stop(open);
    let stop_reason = if w.stopped(emitted) {
        "end_turn"
    } else {
        "max_tokens"
    };
    let mut ev = json!({"type": "message_delta",
                        "delta": {"stop_reason": stop_reason, "stop_sequence": null}});
    if let Some(u) = usage {
        ev["usage"] = json!({"output_tokens": u.completion});
    }
    out.extend(named_sse("message_delta", &ev));
    if end {
        out.extend(named_sse("message_stop", &json!({"type": "message_stop"})));
    }
    Bytes::from(out)
}

fn error_event(message: &str) -> Vec<u8> {
    named_sse(
        "error",
        &json!({"type": "error", "error": {"type": "api_error", "message": message}}),
    )
}

fn full(w: &ChunkWriter, piece: &Piece, usage: Usage) -> Value {
    let mut content = Vec::new();
    if !piece.reasoning.is_empty() {
        content.push(json!({"type": "thinking", "thinking": piece.reasoning,
                            "signature": "mock"}));
    }
    content.push(json!({"type": "text", "text": piece.answer}));
    json!({"id": w.id, "type": "message", "role": "assistant", "model": w.model,
           "content": content,
           "stop_reason": if w.stopped(usage.completion) { "end_turn" } else { "max_tokens" },
           "stop_sequence": null,
           "usage": input_usage(usage)})
}

impl MockProtocol for Messages {
    fn id_prefix(&self) -> &'static str {
        "msg"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &["max_tokens"]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        prompt::messages(body)
    }

    fn usage_unasked(&self) -> bool {
        true
    }

    fn open(&self, w: &ChunkWriter, usage: Usage) -> Option<Bytes> {
        Some(open(w, usage))
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
        delta_json(0, text, false).to_string()
    }

    fn close(&self, w: &ChunkWriter, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
        close(w, emitted, usage, end)
    }

    fn error_event(&self, message: &str) -> Bytes {
        Bytes::from(error_event(message))
    }

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        full(w, &w.piece(0, answer.emitted), answer.usage)
    }
}
