//! The OpenAI Responses API as the mock streams it: `response.created`, one
//! `response.output_text.delta` or `response.reasoning_text.delta` per piece of text,
//! and `response.incomplete` at the length limit (`response.completed` when an `--answer`
//! ended first) with usage.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::super::answer::logprobs;
use super::super::answer::{ChunkWriter, Piece, Usage};
use super::{MockProtocol, Whole, named_sse, prompt};

pub struct Responses;

fn response_object(w: &ChunkWriter, status: &str) -> Value {
    json!({"id": w.id, "object": "response", "created_at": w.created, "status": status,
           "model": w.model})
}

fn open(w: &ChunkWriter) -> Bytes {
    let mut out = named_sse(
        "response.created",
        &json!({"type": "response.created", "response": response_object(w, "in_progress")}),
    );
    out.extend(named_sse(
        "response.in_progress",
        &json!({"type": "response.in_progress", "response": response_object(w, "in_progress")}),
    ));
    Bytes::from(out)
}

/// The data of one delta event.
fn delta_json(text: &str, reasoning: bool) -> Value {
    let kind = if reasoning {
        "response.reasoning_text.delta"
    } else {
        "response.output_text.delta"
    };
    json!({"type": kind, "item_id": "item-0", "output_index": 0, "content_index": 0,
           "delta": text})
}

fn delta(w: &ChunkWriter, piece: &Piece) -> Bytes {
    let mut out = Vec::new();
    for (text, reasoning) in [(&piece.reasoning, true), (&piece.answer, false)] {
        if let (Some(name), false) = (w.tool(), reasoning) {
            out.extend(call_delta(w, name, piece));
        } else if !text.is_empty() {
            let ev = delta_json(text, reasoning);
            out.extend(named_sse(ev["type"].as_str().unwrap_or_default(), &ev));
        }
    }
    Bytes::from(out)
}

/// The function-call item of this answer, with `arguments` and `status`.
fn call_item(w: &ChunkWriter, name: &str, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": CALL_ITEM, "call_id": w.call_id(), "name": name,
           "arguments": arguments, "status": status})
}

/// The item id of the mock's function call.
const CALL_ITEM: &str = "fc-0";

/// A function call's events for one piece: the item added with the first token, then
/// an arguments delta.
fn call_delta(w: &ChunkWriter, name: &str, piece: &Piece) -> Vec<u8> {
    let mut out = Vec::new();
    if piece.opens_answer {
        let kind = "response.output_item.added";
        out.extend(named_sse(
            kind,
            &json!({"type": kind, "output_index": 0,
                    "item": call_item(w, name, "", "in_progress")}),
        ));
    }
    if !piece.answer.is_empty() {
        let kind = "response.function_call_arguments.delta";
        out.extend(named_sse(
            kind,
            &json!({"type": kind, "item_id": CALL_ITEM, "output_index": 0,
                    "delta": piece.answer}),
        ));
    }
    out
}

/// The events that close a function call: the whole arguments, and the item done.
fn call_done(w: &ChunkWriter, name: &str, emitted: u32) -> Vec<u8> {
    if emitted <= w.reasoning {
        return Vec::new();
    }
    let arguments = w.piece(w.reasoning, emitted).answer;
    let kind = "response.function_call_arguments.done";
    let mut out = named_sse(
        kind,
        &json!({"type": kind, "item_id": CALL_ITEM, "output_index": 0,
                "arguments": arguments}),
    );
    let kind = "response.output_item.done";
    out.extend(named_sse(
        kind,
        &json!({"type": kind, "output_index": 0,
                "item": call_item(w, name, &arguments, "completed")}),
    ));
    out
}

fn usage_json(usage: Usage) -> Value {
    let mut v = json!({"input_tokens": usage.prompt, "output_tokens": usage.completion,
           "total_tokens": u64::from(usage.prompt) + u64::from(usage.completion),
           "output_tokens_details": {"reasoning_tokens": usage.reasoning}});
    if let Some(cached) = usage.cached {
        v["input_tokens_details"] = json!({"cached_tokens": cached});
    }
    v
}

/// `response.incomplete` (`max_output_tokens`) when the length limit cut the answer,
/// else `response.completed`, each with usage unless the mock reports none.
fn close(w: &ChunkWriter, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
    if !end {
        return Bytes::new();
    }
    let cut = !w.stopped(emitted);
    let (kind, status) = if cut {
        ("response.incomplete", "incomplete")
    } else {
        ("response.completed", "completed")
    };
    let mut response = response_object(w, status);
    if cut {
        response["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    if let Some(u) = usage {
        response["usage"] = usage_json(u);
    }
    let mut out = w.tool().map_or(Vec::new(), |t| call_done(w, t, emitted));
    out.extend(named_sse(
        kind,
        &json!({"type": kind, "response": response}),
    ));
    Bytes::from(out)
}

fn error_event(message: &str) -> Vec<u8> {
    named_sse(
        "error",
        &json!({"type": "error", "code": "server_error", "message": message, "param": null}),
    )
}

fn full(w: &ChunkWriter, piece: &Piece, emitted: u32, usage: Usage) -> Value {
    let mut output = Vec::new();
    if !piece.reasoning.is_empty() {
        output.push(json!({"type": "reasoning", "id": "rs-0", "summary": [],
                           "content": [{"type": "reasoning_text", "text": piece.reasoning}]}));
    }
    match w.tool() {
        Some(name) => output.push(call_item(w, name, &piece.answer, "completed")),
        None => output.push(
            json!({"type": "message", "id": "item-0", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": piece.answer, "annotations": []}]}),
        ),
    }
    let cut = !w.stopped(emitted);
    let mut v = response_object(w, if cut { "incomplete" } else { "completed" });
    if cut {
        v["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    v["output"] = Value::Array(output);
    v["usage"] = usage_json(usage);
    v
}

/// The prompt: `input` as text, or as messages whose `content` holds it.
fn prompt_words(body: &Map<String, Value>) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    match body.get("input") {
        Some(Value::String(s)) => prompt::push_words(&mut out, s),
        Some(Value::Array(items)) => {
            for i in items {
                prompt::content_words(&mut out, i.get("content"));
            }
        }
        _ => return Err("'input' must be a string or an array of messages".into()),
    }
    Ok(out)
}

impl MockProtocol for Responses {
    fn id_prefix(&self) -> &'static str {
        "resp"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &["max_output_tokens"]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        prompt_words(body)
    }

    /// Tools are flat here: `{type: function, name, parameters}`.
    fn tool_function<'a>(&self, tool: &'a Value) -> Option<&'a Value> {
        Some(tool)
    }

    fn usage_unasked(&self) -> bool {
        true
    }

    fn open(&self, w: &ChunkWriter, _usage: Usage) -> Option<Bytes> {
        Some(open(w))
    }

    fn tokens(
        &self,
        w: &ChunkWriter,
        from: u32,
        to: u32,
        _finish: Option<&str>,
        _usage: Option<Usage>,
    ) -> Bytes {
        delta(w, &w.piece(from, to))
    }

    fn content_json(&self, _w: &ChunkWriter, text: &str) -> String {
        delta_json(text, false).to_string()
    }

    fn close(&self, w: &ChunkWriter, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
        close(w, emitted, usage, end)
    }

    fn error_event(&self, message: &str) -> Bytes {
        Bytes::from(error_event(message))
    }

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        let mut v = full(w, &w.piece(0, answer.emitted), answer.emitted, answer.usage);
        if let (Some(l), Some(part)) = (&answer.logprobs, v.pointer_mut("/output/0/content/0"))
            && part["type"] == "output_text"
        {
            part["logprobs"] = Value::Array(logprobs::entries(l.asked, &l.tokens));
        }
        v
    }
}
