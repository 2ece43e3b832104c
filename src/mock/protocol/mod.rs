//! Each API's wire shape as the mock writes it: one [`MockProtocol`] per file (chat,
//! completions, Responses, Messages, embeddings, rerank, score) and [`of`], the one place that maps an
//! `Endpoint` to its implementation. Adding a protocol to the mock is a new file here
//! and a row in [`of`]. Pure: no timing, no IO.

mod chat;
mod completions;
mod converse;
mod embeddings;
mod gemini;
pub mod image;
mod messages;
mod openai;
mod prompt;
pub mod ranking;
mod rerank;
mod responses;
mod score;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::answer::{ChunkWriter, Usage};
use crate::client::Endpoint;

pub use openai::error_body;

/// What a whole (non-streamed) answer holds.
#[derive(Clone, Debug)]
pub struct Whole<'a> {
    /// Output tokens generated.
    pub emitted: u32,
    /// `stop` or `length`, in chat's spelling (each protocol renames it).
    pub finish: &'a str,
    pub usage: Usage,
    /// Embeddings: how many vectors the answer holds.
    pub vectors: u32,
    /// Rerank and score: the documents' relevance (None: no result, the
    /// `empty_completion` fault).
    pub ranking: Option<&'a ranking::Ranking>,
    /// The answer's logprobs, when the request asked for them.
    pub logprobs: Option<crate::mock::answer::logprobs::Logprobs>,
}

/// The stream half of [`MockProtocol`] for an API whose answer is one body, never
/// streamed and never generated (embeddings, rerank, score): no open, tokens or close;
/// usage always in the body; errors as OpenAI's. One copy, expanded inside each impl.
macro_rules! one_body_answer {
    () => {
        fn usage_unasked(&self) -> bool {
            true
        }

        fn generates(&self) -> bool {
            false
        }

        fn open(
            &self,
            _w: &crate::mock::answer::ChunkWriter,
            _usage: crate::mock::answer::Usage,
        ) -> Option<bytes::Bytes> {
            None
        }

        fn tokens(
            &self,
            _w: &crate::mock::answer::ChunkWriter,
            _from: u32,
            _to: u32,
            _finish: Option<&str>,
            _usage: Option<crate::mock::answer::Usage>,
        ) -> bytes::Bytes {
            bytes::Bytes::new()
        }

        fn content_json(&self, _w: &crate::mock::answer::ChunkWriter, _text: &str) -> String {
            String::new()
        }

        fn close(
            &self,
            _w: &crate::mock::answer::ChunkWriter,
            _emitted: u32,
            _usage: Option<crate::mock::answer::Usage>,
            _end: bool,
        ) -> bytes::Bytes {
            bytes::Bytes::new()
        }

        fn error_event(&self, message: &str) -> bytes::Bytes {
            super::openai::error_event(message)
        }
    };
}
use one_body_answer;

/// One API as the mock speaks it: what it reads from a request, and the events and
/// bodies of its answers. A stream is `open`, `tokens` per chunk, then `close` (or
/// `error_event`); a non-streamed request gets `full_response`.
pub trait MockProtocol: Sync {
    /// The prefix of this API's response ids (`chatcmpl` in `chatcmpl-mock-1`).
    fn id_prefix(&self) -> &'static str;

    /// The request fields that cap the output length, in order: a later one present
    /// wins.
    fn max_tokens_keys(&self) -> &'static [&'static str];

    /// The prompt's words, hashed, in order; the error is a message for a 400.
    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String>;

    /// Rerank and score: the relevance of each document the request ranks; the error is
    /// a message for a 400.
    fn ranking(&self, _body: &Map<String, Value>) -> Result<Option<ranking::Ranking>, String> {
        Ok(None)
    }

    /// The object holding `name` and `parameters` in one entry of `tools`, when this
    /// API offers the mock functions to call.
    fn tool_function<'a>(&self, _tool: &'a Value) -> Option<&'a Value> {
        None
    }

    /// Whether a stream carries usage without `stream_options.include_usage`.
    fn usage_unasked(&self) -> bool;

    /// Whether the answer is generated token by token (embeddings: one body after
    /// the prefill).
    fn generates(&self) -> bool {
        true
    }

    /// What a stream sends before its first token (possibly nothing); `usage` gives
    /// the prompt's tokens (completion 0).
    fn open(&self, w: &ChunkWriter, usage: Usage) -> Option<Bytes>;

    /// The events carrying tokens `from..to` (one write, so they arrive together):
    /// reasoning, answer text or a tool call's arguments. `finish` marks the last
    /// chunk; `usage` is continuous usage (chat/completions).
    fn tokens(
        &self,
        w: &ChunkWriter,
        from: u32,
        to: u32,
        finish: Option<&str>,
        usage: Option<Usage>,
    ) -> Bytes;

    /// The JSON of an event carrying `text` as answer (the `malformed_json` and
    /// `huge_line` faults cut or fill it).
    fn content_json(&self, w: &ChunkWriter, text: &str) -> String;

    /// What a stream sends after its last token: usage (when `usage` is given) and the
    /// protocol's end marker (unless `end` is false: the `no_done` fault).
    fn close(&self, w: &ChunkWriter, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes;

    /// A stream's error event (the `error_event` fault), followed by whatever ends
    /// that protocol's stream after an error.
    fn error_event(&self, message: &str) -> Bytes;

    /// A complete (non-streamed) answer.
    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value;

    /// The body of an error reply with `status` (OpenAI's shape unless the API has
    /// its own).
    fn error_response(&self, status: u16, message: &str, kind: &str) -> Value {
        error_body(message, kind, status.into())
    }

    /// Headers of an error reply besides its body (Bedrock names the error's kind in
    /// `x-amzn-ErrorType`).
    fn error_headers(&self, _status: u16) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The Content-Type of a streamed answer.
    fn stream_content_type(&self) -> &'static str {
        "text/event-stream"
    }
}

/// The mock's side of `endpoint`: the one mapping from an endpoint to its protocol.
pub fn of(endpoint: Endpoint) -> &'static dyn MockProtocol {
    match endpoint {
        Endpoint::Chat => &chat::Chat,
        Endpoint::Completions => &completions::Completions,
        Endpoint::Responses => &responses::Responses,
        Endpoint::Messages => &messages::Messages,
        Endpoint::Embeddings => &embeddings::Embeddings,
        Endpoint::Rerank => &rerank::Rerank,
        Endpoint::Score => &score::Score,
    }
}

/// Google's `generateContent` (Gemini API, Vertex AI): a provider's, not an endpoint's.
pub fn gemini() -> &'static dyn MockProtocol {
    &gemini::Gemini
}

/// Bedrock's Converse: a provider's, not an endpoint's.
pub fn converse() -> &'static dyn MockProtocol {
    &converse::Converse
}

/// The head and tail of a content event whose text is filled with `x` bytes in
/// between, so a huge line can be streamed without building it.
pub fn huge_event_parts(p: &dyn MockProtocol, w: &ChunkWriter) -> (Bytes, Bytes) {
    let marker = "\u{1}MARK\u{1}";
    let full = p.content_json(w, marker);
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

/// One SSE event: `data: <payload>\n\n`.
pub fn sse(payload: &[u8]) -> Bytes {
    let mut v = Vec::with_capacity(payload.len() + 8);
    v.extend_from_slice(b"data: ");
    v.extend_from_slice(payload);
    v.extend_from_slice(b"\n\n");
    Bytes::from(v)
}

/// One named SSE event: `event: <name>\ndata: <payload>\n\n` (Responses and
/// Messages streams name every event).
fn named_sse(name: &str, payload: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {payload}\n\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_event_parts_frame_a_valid_event_in_every_protocol() {
        for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
            let p = of(endpoint);
            let w = ChunkWriter::new(p.id_prefix(), 1, "m", 0);
            let (head, tail) = huge_event_parts(p, &w);
            let line = [&head[..], b"xxxx", &tail[..]].concat();
            let json = line
                .strip_prefix(b"data: ")
                .unwrap()
                .strip_suffix(b"\n\n")
                .unwrap();
            let v: Value = serde_json::from_slice(json).unwrap();
            assert!(v.to_string().contains("\"xxxx\""), "{endpoint:?}: {v}");
        }
    }

    #[test]
    fn every_endpoint_has_its_own_ids() {
        let prefixes: std::collections::BTreeSet<_> =
            Endpoint::ALL.iter().map(|e| of(*e).id_prefix()).collect();
        assert_eq!(prefixes.len(), Endpoint::ALL.len());
    }
}
