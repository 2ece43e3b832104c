//! A streamed answer's framing, whatever the wire: SSE (`client::sse`) or AWS's binary
//! event stream (Bedrock; each frame's CRCs checked by its decoder), both read as
//! [`Event`]s: an event-stream frame becomes an event named by its `:event-type` (an
//! exception frame by its `:exception-type`) with its payload as the data.

use super::provider::Framing;
use super::sse::{Event, SseParser};

/// The reader of one stream's frames.
pub enum Frames {
    Sse(SseParser),
}

impl Frames {
    /// A reader of `framing` that fails on a line, event or frame larger than `max`.
    pub fn new(framing: Framing, max: usize) -> Frames {
        match framing {
            Framing::Sse | Framing::EventStream => Frames::Sse(SseParser::new(max, max)),
        }
    }

    /// Adds a piece of the body.
    pub fn feed(&mut self, bytes: &[u8]) {
        match self {
            Frames::Sse(p) => p.feed(bytes),
        }
    }

    /// The body has ended.
    pub fn end(&mut self) {
        match self {
            Frames::Sse(p) => p.end(),
        }
    }

    /// The next complete event, valid until the next call; the error says what broke.
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, String> {
        match self {
            Frames::Sse(p) => p
                .next_event()
                .map_err(|e| format!("{e} (limits.max_line_bytes)")),
        }
    }
}
