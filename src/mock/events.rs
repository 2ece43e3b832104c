//! The events and bodies of one mock response in the protocol the request came in
//! on: [`ChunkWriter`]'s methods pick `openai.rs` (chat and completions),
//! `responses.rs` or `anthropic.rs`. Pure: no timing, no IO.

use bytes::Bytes;
use serde_json::Value;

use super::wire::{ChunkWriter, Piece, Usage, sse};
use super::{anthropic, openai, responses};
use crate::client::Endpoint;

impl ChunkWriter {
    /// What a stream sends before its first token (possibly nothing); `usage` gives
    /// the prompt's tokens (completion 0).
    pub fn open(&self, usage: Usage) -> Option<Bytes> {
        match self.endpoint {
            Endpoint::Chat => Some(self.openai_role_event()),
            Endpoint::Completions | Endpoint::Embeddings => None,
            Endpoint::Responses => Some(responses::open(self)),
            Endpoint::Messages => Some(anthropic::open(self, usage)),
        }
    }

    /// The events carrying tokens `from..to` (one write, so they arrive together).
    /// `finish` marks the last chunk; `usage` is continuous usage (chat/completions).
    pub fn tokens(&self, from: u32, to: u32, finish: Option<&str>, usage: Option<Usage>) -> Bytes {
        let piece = self.piece(from, to);
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions | Endpoint::Embeddings => {
                sse(self.openai_content_json(&piece, finish, usage).as_bytes())
            }
            Endpoint::Responses => responses::delta(self, &piece),
            Endpoint::Messages => anthropic::delta(self, from, to, &piece),
        }
    }

    /// The JSON of an event carrying `text` as answer (the `malformed_json` and
    /// `huge_line` faults cut or fill it).
    pub fn content_json(&self, text: &str) -> String {
        let piece = Piece {
            reasoning: String::new(),
            answer: text.to_string(),
            opens_answer: false,
        };
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions | Endpoint::Embeddings => {
                self.openai_content_json(&piece, None, None)
            }
            Endpoint::Responses => responses::delta_json(&piece.answer, false).to_string(),
            Endpoint::Messages => anthropic::delta_json(0, &piece.answer, false).to_string(),
        }
    }

    /// What a stream sends after its last token: usage (when `usage` is given) and the
    /// protocol's end marker (unless `end` is false: the `no_done` fault).
    pub fn close(&self, emitted: u32, usage: Option<Usage>, end: bool) -> Bytes {
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions | Endpoint::Embeddings => {
                let mut out = Vec::new();
                if let Some(u) = usage {
                    out.extend_from_slice(&self.openai_usage_event(u));
                }
                if end {
                    out.extend_from_slice(&openai::done_event());
                }
                Bytes::from(out)
            }
            Endpoint::Responses => responses::close(self, emitted, usage, end),
            Endpoint::Messages => anthropic::close(self, emitted, usage, end),
        }
    }

    /// A stream's error event (the `error_event` fault), followed by whatever ends
    /// that protocol's stream after an error.
    pub fn error_event(&self, message: &str) -> Bytes {
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions | Endpoint::Embeddings => {
                let err = openai::error_body(message, "InternalServerError", 500.into());
                let mut out = sse(err.to_string().as_bytes()).to_vec();
                out.extend_from_slice(&openai::done_event());
                Bytes::from(out)
            }
            Endpoint::Responses => Bytes::from(responses::error_event(message)),
            Endpoint::Messages => Bytes::from(anthropic::error_event(message)),
        }
    }

    /// A complete (non-streamed) answer of `emitted` tokens.
    pub fn full_response(&self, emitted: u32, finish: &str, usage: Usage) -> Value {
        let piece = self.piece(0, emitted);
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions | Endpoint::Embeddings => {
                self.openai_full_response(&piece, finish, usage)
            }
            Endpoint::Responses => responses::full(self, &piece, emitted, usage),
            Endpoint::Messages => anthropic::full(self, &piece, usage),
        }
    }

    /// The head and tail of a content event whose text is filled with `x` bytes in
    /// between, so a huge line can be streamed without building it.
    pub fn huge_event_parts(&self) -> (Bytes, Bytes) {
        let marker = "\u{1}MARK\u{1}";
        let full = self.content_json(marker);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_event_parts_frame_a_valid_event_in_every_protocol() {
        for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
            let w = ChunkWriter::new(endpoint, 1, "m", 0);
            let (head, tail) = w.huge_event_parts();
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
}
