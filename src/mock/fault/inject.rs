//! Where each fault acts on the wire: one function per acting point ([`Act`]), each
//! acting only on the faults whose row of the fault table (`table.rs`) lists that
//! point. The server's answer paths (`serve/generate.rs`, `serve/stream.rs`,
//! `serve/whole.rs`) call these at their points and know no fault by name; the voice's
//! faults are in `answer/voice.rs`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;

use super::table::{Act, FaultKind};
use crate::mock::answer::ChunkWriter;
use crate::mock::engine::Engine;
use crate::mock::protocol::{MockProtocol, sse};
use crate::mock::serve::{ConnCtl, protocol_error};

/// The fault if it acts at `act`.
fn at(fault: Option<FaultKind>, act: Act) -> Option<FaultKind> {
    fault.filter(|f| f.acts_at(act))
}

/// [`Act::Status`]: the error response sent at once instead of the answer.
pub fn status(fault: Option<FaultKind>, protocol: &dyn MockProtocol) -> Option<Response> {
    let (status, message, kind, retry_after) = match at(fault, Act::Status)? {
        FaultKind::Http500 => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "mock fault http_500: internal server error",
            "InternalServerError",
            None,
        ),
        FaultKind::Http503 => (
            StatusCode::SERVICE_UNAVAILABLE,
            "mock fault http_503: service unavailable",
            "ServiceUnavailableError",
            None,
        ),
        FaultKind::Http429 { retry_after_secs } => (
            StatusCode::TOO_MANY_REQUESTS,
            "mock fault http_429: rate limit reached",
            "rate_limit_error",
            Some(retry_after_secs),
        ),
        _ => return None,
    };
    let mut r = protocol_error(protocol, status, message, kind);
    if let Some(secs) = retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    Some(r)
}

/// What happened before the headers.
pub enum BeforeHeaders {
    /// Nothing: answer as usual.
    Answer,
    /// A stall: answer, timed from now.
    AnswerFromNow,
    /// The connection was closed: send nothing.
    Closed,
}

/// [`Act::BeforeHeaders`]: close the connection without a byte, or hold back the
/// headers for the stall.
pub async fn before_headers(
    fault: Option<FaultKind>,
    engine: &Engine,
    ctl: &ConnCtl,
) -> BeforeHeaders {
    match at(fault, Act::BeforeHeaders) {
        Some(FaultKind::CloseBeforeResponse) => {
            ctl.close();
            BeforeHeaders::Closed
        }
        Some(FaultKind::StallBeforeHeaders) => {
            engine.stall().await;
            BeforeHeaders::AnswerFromNow
        }
        _ => BeforeHeaders::Answer,
    }
}

/// How the response is framed.
pub struct Framing {
    /// Whether a request that asked for a stream gets one.
    pub streams: bool,
    /// The content type instead of the normal one.
    pub content_type: Option<&'static str>,
    /// Every body byte its own HTTP chunk.
    pub trickle: bool,
}

/// [`Act::Framing`]: the response's content type, chunking, and whether it streams.
pub fn framing(fault: Option<FaultKind>) -> Framing {
    let mut f = Framing {
        streams: true,
        content_type: None,
        trickle: false,
    };
    match at(fault, Act::Framing) {
        Some(FaultKind::JsonInsteadOfSse) => f.streams = false,
        Some(FaultKind::WrongContentType) => f.content_type = Some("text/plain; charset=utf-8"),
        Some(FaultKind::Trickle) => f.trickle = true,
        _ => {}
    }
    f
}

/// What a stream sends at the first token's deadline, before any token.
pub enum First {
    Nothing,
    /// An answer of no tokens: one empty chunk that finishes it.
    EmptyChunk,
    /// One valid event line of this many bytes.
    HugeLine(usize),
}

/// What comes before the next chunk of a stream.
pub enum BeforeChunk {
    Chunk,
    /// Nothing for the stall, then the chunk.
    Stall,
    /// The connection reset instead.
    Reset,
}

/// What comes after a chunk of a stream.
pub enum AfterChunk {
    Next,
    /// One more event, then the next chunk.
    Extra(Bytes),
    /// One more event, and the stream ends there.
    Last(Bytes),
}

/// [`Act::Tokens`]: the faults around the answer's token chunks, streamed or whole.
pub struct Tokens(Option<FaultKind>);

impl Tokens {
    pub fn of(fault: Option<FaultKind>) -> Tokens {
        Tokens(at(fault, Act::Tokens))
    }

    /// Whether the answer has no tokens at all.
    pub fn empty(&self) -> bool {
        self.0 == Some(FaultKind::EmptyCompletion)
    }

    /// What a stream sends at the first token's deadline.
    pub fn first(&self) -> First {
        match self.0 {
            Some(FaultKind::EmptyCompletion) => First::EmptyChunk,
            Some(FaultKind::HugeLine { bytes }) => First::HugeLine(bytes),
            _ => First::Nothing,
        }
    }

    /// Before a stream's next chunk, `so_far` of `n` tokens out (`stalled`: the stall
    /// happened). Due once `after_tokens` are out: before the first chunk when 0, after
    /// the last one when the answer is no longer than that.
    pub fn before_chunk(&self, so_far: u32, n: u32, stalled: bool) -> BeforeChunk {
        match self.0 {
            Some(FaultKind::ResetMidStream { after_tokens }) if so_far >= after_tokens => {
                BeforeChunk::Reset
            }
            Some(FaultKind::StallAfterTokens { after_tokens })
                if !stalled && (so_far >= after_tokens || so_far == n) =>
            {
                BeforeChunk::Stall
            }
            _ => BeforeChunk::Chunk,
        }
    }

    /// The bytes of a stream's chunk of tokens from `from`.
    pub fn chunk(&self, from: u32, event: Bytes) -> Bytes {
        match self.0 {
            Some(FaultKind::InvalidUtf8) if from == 0 => {
                Bytes::from(with_invalid_utf8(event.to_vec()))
            }
            _ => event,
        }
    }

    /// After a stream's chunk of tokens from `from`.
    pub fn after_chunk(&self, p: &dyn MockProtocol, w: &ChunkWriter, from: u32) -> AfterChunk {
        match self.0 {
            Some(FaultKind::MalformedJson) if from == 0 => AfterChunk::Extra(malformed_event(p, w)),
            Some(FaultKind::ErrorEvent) if from == 0 => AfterChunk::Last(
                p.error_event("mock fault error_event: the engine failed mid-stream"),
            ),
            _ => AfterChunk::Next,
        }
    }

    /// A whole answer: whether it stalls once `emitted` tokens are generated.
    pub fn whole_stalls(&self, emitted: u32, stalled: bool) -> bool {
        matches!(self.0, Some(FaultKind::StallAfterTokens { after_tokens })
            if !stalled && emitted >= after_tokens)
    }

    /// Embeddings: whether the answer stalls after the prefill.
    pub fn prefill_stalls(&self) -> bool {
        matches!(self.0, Some(FaultKind::StallAfterTokens { .. }))
    }
}

/// [`Act::End`]: whether the answer ends with the connection reset (no end, no body).
pub fn resets_at_end(fault: Option<FaultKind>) -> bool {
    matches!(at(fault, Act::End), Some(FaultKind::ResetMidStream { .. }))
}

/// [`Act::End`]: whether a stream sends its protocol's end marker.
pub fn end_marker(fault: Option<FaultKind>) -> bool {
    at(fault, Act::End) != Some(FaultKind::NoDone)
}

/// [`Act::Body`]: a whole answer's bytes, as the fault spoils them.
pub fn body(fault: Option<FaultKind>, mut bytes: Vec<u8>) -> Vec<u8> {
    match at(fault, Act::Body) {
        Some(FaultKind::MalformedJson) => bytes.truncate(bytes.len() / 2),
        Some(FaultKind::InvalidUtf8) => bytes = with_invalid_utf8(bytes),
        _ => {}
    }
    bytes
}

/// Inserts two bytes that are never valid UTF-8 right after the first token's text.
fn with_invalid_utf8(mut bytes: Vec<u8>) -> Vec<u8> {
    let marker = b" tok0";
    if let Some(pos) = bytes.windows(marker.len()).position(|w| w == marker) {
        let at = pos + marker.len();
        bytes.splice(at..at, [0xff, 0xfe]);
    }
    bytes
}

/// The malformed event of `malformed_json`: a chunk cut in the middle of its JSON.
fn malformed_event(p: &dyn MockProtocol, w: &ChunkWriter) -> Bytes {
    let full = p.content_json(w, " tok");
    sse(&full.as_bytes()[..full.len() / 2])
}
