//! OpenAI chat completions as the mock speaks it: a role-only chunk first, then
//! `delta.reasoning_content`, `delta.content` or `delta.tool_calls` per chunk, usage
//! when asked, `[DONE]`; whole, a `chat.completion` with one message.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::super::answer::logprobs;
use super::super::answer::{ChunkWriter, Piece, Usage};
use super::{MockProtocol, Whole, openai, prompt, sse};

pub struct Chat;

const CHUNK: &str = "chat.completion.chunk";

/// The JSON text of a content chunk: reasoning, then the answer as text or as the
/// fragments of a tool call.
fn content_json(
    w: &ChunkWriter,
    piece: &Piece,
    finish: Option<&str>,
    usage: Option<Usage>,
) -> String {
    let mut delta = Map::new();
    if !piece.reasoning.is_empty() {
        delta.insert("reasoning_content".into(), json!(piece.reasoning));
    }
    match w.tool() {
        Some(name) if !piece.answer.is_empty() || piece.opens_answer => {
            // The name opens the call; the arguments follow in fragments.
            let mut call = json!({"index": 0, "function": {"arguments": piece.answer}});
            if piece.opens_answer {
                call["id"] = json!(w.call_id());
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
    let finish = finish.map(|f| w.finish_name(f));
    let choice = json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    openai::chunk(w, CHUNK, choice, usage).to_string()
}

impl MockProtocol for Chat {
    fn id_prefix(&self) -> &'static str {
        "chatcmpl"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        // max_completion_tokens wins over the deprecated max_tokens, as in OpenAI's API.
        &["max_tokens", "max_completion_tokens"]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        prompt::messages(body)
    }

    fn tool_function<'a>(&self, tool: &'a Value) -> Option<&'a Value> {
        tool.get("function")
    }

    fn usage_unasked(&self) -> bool {
        false
    }

    /// Like vLLM: `delta: {role: "assistant", content: ""}`, before any token.
    fn open(&self, w: &ChunkWriter, _usage: Usage) -> Option<Bytes> {
        let choice = json!([{"index": 0, "delta": {"role": "assistant", "content": ""},
                             "logprobs": null, "finish_reason": null}]);
        Some(sse(openai::chunk(w, CHUNK, choice, None)
            .to_string()
            .as_bytes()))
    }

    fn tokens(
        &self,
        w: &ChunkWriter,
        from: u32,
        to: u32,
        finish: Option<&str>,
        usage: Option<Usage>,
    ) -> Bytes {
        sse(content_json(w, &w.piece(from, to), finish, usage).as_bytes())
    }

    fn content_json(&self, w: &ChunkWriter, text: &str) -> String {
        content_json(w, &Piece::answer(text), None, None)
    }

    fn close(&self, w: &ChunkWriter, _emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
        openai::close(w, CHUNK, usage, end)
    }

    fn error_event(&self, message: &str) -> Bytes {
        openai::error_event(message)
    }

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        let piece = w.piece(0, answer.emitted);
        let mut message = json!({"role": "assistant", "content": piece.answer});
        if let Some(name) = w.tool() {
            message["content"] = Value::Null;
            message["tool_calls"] = json!([{"id": w.call_id(), "type": "function",
                "function": {"name": name, "arguments": piece.answer}}]);
        }
        let finish = w.finish_name(answer.finish);
        if !piece.reasoning.is_empty() {
            message["reasoning_content"] = json!(piece.reasoning);
        }
        json!({
            "id": w.id, "object": "chat.completion", "created": w.created,
            "model": w.model,
            "choices": [{"index": 0, "message": message,
                         "logprobs": answer.logprobs.as_ref().map(|l| logprobs::chat_json(l.asked, &l.tokens)),
                         "finish_reason": finish}],
            "usage": openai::usage_json(answer.usage),
        })
    }
}
