//! OpenAI (legacy) completions as the mock speaks it: `text` per chunk (reasoning has
//! no field here, so it is part of the text), usage when asked, `[DONE]`; whole, a
//! `text_completion`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::super::answer::logprobs;
use super::super::answer::{ChunkWriter, Piece, Usage};
use super::{MockProtocol, Whole, openai, prompt, sse};

pub struct Completions;

const OBJECT: &str = "text_completion";

fn content_json(
    w: &ChunkWriter,
    piece: &Piece,
    finish: Option<&str>,
    usage: Option<Usage>,
) -> String {
    let choice = json!([{"index": 0, "text": format!("{}{}", piece.reasoning, piece.answer),
                         "logprobs": null, "finish_reason": finish}]);
    openai::chunk(w, OBJECT, choice, usage).to_string()
}

impl MockProtocol for Completions {
    fn id_prefix(&self) -> &'static str {
        "cmpl"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &["max_tokens", "max_completion_tokens"]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        prompt::raw(body, "prompt", "a string or an array")
    }

    fn usage_unasked(&self) -> bool {
        false
    }

    fn open(&self, _w: &ChunkWriter, _usage: Usage) -> Option<Bytes> {
        None
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
        openai::close(w, OBJECT, usage, end)
    }

    fn error_event(&self, message: &str) -> Bytes {
        openai::error_event(message)
    }

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        let piece = w.piece(0, answer.emitted);
        json!({
            "id": w.id, "object": OBJECT, "created": w.created,
            "model": w.model,
            "choices": [{"index": 0, "text": format!("{}{}", piece.reasoning, piece.answer),
                         "logprobs": answer.logprobs.as_ref().map(|l| logprobs::completions_json(l.asked, &l.tokens)),
                         "finish_reason": answer.finish}],
            "usage": openai::usage_json(answer.usage),
        })
    }
}
