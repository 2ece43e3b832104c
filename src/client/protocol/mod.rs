//! One module per API a target can speak, behind one trait: how to build the request
//! body, which headers carry the key, and how to read the answer (one streamed event
//! at a time, or a whole non-streamed body) into the same [`ChunkData`] and
//! [`FullAnswer`] shapes. The SSE framing (`client::sse`), the timing and the record
//! are shared; only the wire format differs.

mod body;
mod chat;
mod completions;
mod embeddings;
mod messages;
mod responses;

use reqwest::header::{AUTHORIZATION, HeaderName};

pub use body::Fields;

use super::chunk::{ChunkData, ChunkError, Usage};
use super::config::{ClientConfig, Endpoint};
use super::sse::Event;
use crate::workload::RequestSpec;

/// The answer of a non-streamed request (or an embeddings request), decoded whole.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FullAnswer {
    /// Generated answer text (not reasoning).
    pub answer: String,
    /// Generated reasoning text.
    pub reasoning: String,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    /// Embeddings only: how many vectors came back.
    pub embeddings: usize,
}

/// One API's wire format.
pub trait Protocol: Sync {
    /// The JSON request body for one request.
    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>>;

    /// Decodes one SSE event of a streamed answer.
    fn decode_event<'a>(&self, ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError>;

    /// Decodes a whole non-streamed answer.
    fn decode_full(&self, body: &[u8]) -> Result<FullAnswer, ChunkError>;

    /// The header that carries the API key, and its value.
    fn api_key_header(&self, key: &str) -> (HeaderName, String) {
        (AUTHORIZATION, format!("Bearer {key}"))
    }

    /// Headers every request of this protocol carries (besides content type and key).
    fn fixed_headers(&self, _cfg: &ClientConfig) -> Vec<(HeaderName, String)> {
        Vec::new()
    }

    /// Whether the stream must end with `data: [DONE]` (OpenAI chat/completions);
    /// the other protocols end with their own event ([`ChunkData::done`]).
    fn ends_with_done_sentinel(&self) -> bool {
        false
    }

    /// How the stream's last event is spelled, for the error when it never came.
    fn final_event(&self) -> &'static str;
}

/// The protocol of an endpoint.
pub fn of(endpoint: Endpoint) -> &'static dyn Protocol {
    match endpoint {
        Endpoint::Chat => &chat::Chat,
        Endpoint::Completions => &completions::Completions,
        Endpoint::Responses => &responses::Responses,
        Endpoint::Messages => &messages::Messages,
        Endpoint::Embeddings => &embeddings::Embeddings,
    }
}

/// The JSON body for one request of `cfg.endpoint`.
pub fn body(cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
    of(cfg.endpoint).body(cfg, spec)
}

/// Decodes a whole body as JSON of type `T`, as a [`ChunkError::Malformed`] when it
/// is not.
fn parse_full<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> Result<T, ChunkError> {
    serde_json::from_slice(body).map_err(|e| ChunkError::Malformed(e.to_string()))
}

/// The SSE event's type: the `type` field of its data when present (every protocol
/// but chat/completions repeats it there), else the `event:` line.
fn event_type<'s>(ev: &'s Event<'_>, from_data: Option<&'s str>) -> &'s str {
    match from_data {
        Some(t) => t,
        None => std::str::from_utf8(ev.event).unwrap_or(""),
    }
}
