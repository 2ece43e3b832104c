//! What every protocol's mock answer is made of: the response's identity
//! ([`ChunkWriter`]) and its tokens (numbered 0..n; the first `reasoning` of them are
//! reasoning, the rest answer, whose text `voice.rs` says). Each protocol writes these
//! in its own form (`protocol/`). Pure: no timing, no IO.

use super::voice::{Voice, tokens_text};

/// What the events of one response are built from.
pub struct ChunkWriter {
    pub id: String,
    pub created: u64,
    pub model: String,
    /// Output tokens 0..reasoning are reasoning.
    pub reasoning: u32,
    /// What the answer tokens say.
    pub voice: Voice,
}

/// The text of tokens `from..to`, split into its reasoning and answer parts.
pub struct Piece {
    pub reasoning: String,
    pub answer: String,
    /// Whether the piece holds the answer's first token (where a tool call opens).
    pub opens_answer: bool,
}

impl Piece {
    /// A piece of answer `text` alone.
    pub fn answer(text: &str) -> Piece {
        Piece {
            reasoning: String::new(),
            answer: text.to_string(),
            opens_answer: false,
        }
    }
}

impl ChunkWriter {
    /// The writer of response `seq`, its id under the protocol's `id_prefix`.
    pub fn new(id_prefix: &str, seq: u64, model: &str, reasoning: u32) -> Self {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Self {
            id: format!("{id_prefix}-mock-{seq}"),
            created,
            model: model.to_string(),
            reasoning,
            voice: Voice::default(),
        }
    }

    /// The same writer with `voice` saying the answer.
    pub fn with_voice(mut self, voice: Voice) -> Self {
        self.voice = voice;
        self
    }

    /// Tokens `from..to` as reasoning and answer text.
    pub fn piece(&self, from: u32, to: u32) -> Piece {
        let split = self.reasoning.clamp(from, to.max(from));
        Piece {
            reasoning: tokens_text(from, split),
            answer: (split..to.max(split))
                .map(|i| self.voice.token(i, self.reasoning))
                .collect(),
            opens_answer: (from..to).contains(&self.reasoning),
        }
    }

    /// The function this answer calls (its tokens are the call's arguments), if any.
    pub fn tool(&self) -> Option<&str> {
        self.voice.tool()
    }

    /// The id of the answer's function call.
    pub fn call_id(&self) -> String {
        format!("call-{}", self.id)
    }

    /// The finish reason as sent: a call that ended by itself finishes with
    /// `tool_calls` (chat's spelling).
    pub fn finish_name<'a>(&self, finish: &'a str) -> &'a str {
        if self.tool().is_some() && finish == "stop" {
            "tool_calls"
        } else {
            finish
        }
    }

    /// Output tokens after which the answer ends by itself (reasoning included), or
    /// `None` when only the length limit ends it.
    pub fn natural_len(&self) -> Option<u32> {
        self.voice.len().map(|n| n.saturating_add(self.reasoning))
    }

    /// Whether a response of `emitted` tokens stopped by itself (`stop`, `end_turn`,
    /// `completed`) rather than at the length limit.
    pub fn stopped(&self, emitted: u32) -> bool {
        emitted == 0 || self.natural_len().is_some_and(|n| emitted >= n)
    }

    /// The usage a stream's end reports: reasoning tokens are those among `emitted`.
    pub fn reasoning_of(&self, emitted: u32) -> u32 {
        self.reasoning.min(emitted)
    }
}

/// The token counts an answer reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u32,
    pub completion: u32,
    /// Of `completion`, how many were reasoning.
    pub reasoning: u32,
    /// Of `prompt`, how many the prefix cache held (None: the cache is off, and the
    /// usage says nothing about it).
    pub cached: Option<u32>,
    /// How long the request has taken so far, from its arrival (Bedrock reports it
    /// as `metrics.latencyMs`).
    pub elapsed: std::time::Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_reasoning_from_answer() {
        let w = ChunkWriter::new("chatcmpl", 1, "m", 2);
        let p = w.piece(1, 4);
        assert_eq!(
            (p.reasoning.as_str(), p.answer.as_str()),
            (" tok1", " tok2 tok3")
        );
        let p = w.piece(3, 4);
        assert_eq!((p.reasoning.as_str(), p.answer.as_str()), ("", " tok3"));
        let p = w.piece(0, 1);
        assert_eq!((p.reasoning.as_str(), p.answer.as_str()), (" tok0", ""));
    }
}
