//! One module per API a target can speak, behind one trait: how to build the request
//! body, which headers carry the key, and how to read the answer (one streamed event
//! at a time, or a whole non-streamed body) into the same [`ChunkData`] and
//! [`FullAnswer`] shapes. The SSE framing (`client::sse`), the timing and the record
//! are shared; only the wire format differs.

mod body;
mod chat;
mod completions;
mod converse;
mod embeddings;
mod endpoint;
mod gemini;
mod messages;
mod rerank;
mod responses;
mod score;

use reqwest::header::{AUTHORIZATION, HeaderName};

pub use body::Fields;
pub use endpoint::{Api, Field, Logprobs, LogprobsIn};

use super::chunk::{ChunkData, ChunkError, Usage};
use super::config::{ClientConfig, Endpoint};
use super::sse::Event;
use crate::check::ToolCall;
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
    /// The response's `model` field.
    pub model: Option<String>,
    /// Embeddings, rerank, score: how many vectors or ranked documents came back.
    pub items: usize,
    /// Rerank, score: the index (in the request's documents) of the one ranked first.
    pub top_document: Option<u32>,
    /// The function calls of the answer (chat `message.tool_calls`, Responses
    /// `function_call` items).
    pub tool_calls: Vec<ToolCall>,
    /// The provider's own latency in milliseconds (Bedrock's `metrics.latencyMs`).
    pub server_latency_ms: Option<u64>,
}

/// One API's wire format.
pub trait Protocol: Sync {
    /// What this API is and can carry.
    fn api(&self) -> &'static Api;

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

    /// How long the body of a 429 answer asks to wait, for APIs that say it there
    /// rather than in `retry-after-ms`/`Retry-After` (read first, `client/retry_after.rs`).
    /// `body` is the start of the error body, as the error message quotes it.
    fn retry_delay(&self, _body: &[u8]) -> Option<std::time::Duration> {
        None
    }
}

/// The protocol of an endpoint.
pub fn of(endpoint: Endpoint) -> &'static dyn Protocol {
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

/// Google's `generateContent` (Gemini API, Vertex AI): spoken by providers only.
pub fn gemini() -> &'static dyn Protocol {
    &gemini::Gemini
}

/// Bedrock's Converse: spoken by a provider only.
pub fn converse() -> &'static dyn Protocol {
    &converse::Converse
}

/// Every protocol a provider speaks besides the endpoints' own, for the decoder tests.
pub const PROVIDERS_ONLY: [fn() -> &'static dyn Protocol; 2] = [gemini, converse];

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// JSON built from the words the decoders look for, nested at random, so the
    /// fuzzing reaches past the first `type` check.
    fn vocab_json() -> impl Strategy<Value = Value> {
        let words = prop::sample::select(vec![
            "type",
            "delta",
            "text",
            "thinking",
            "response",
            "usage",
            "output_tokens",
            "input_tokens",
            "message",
            "error",
            "choices",
            "content",
            "reasoning_content",
            "response.output_text.delta",
            "response.completed",
            "response.failed",
            "content_block_delta",
            "text_delta",
            "thinking_delta",
            "message_delta",
            "message_start",
            "message_stop",
            "data",
            "embedding",
            "results",
            "relevance_score",
            "score",
            "index",
            "output",
            "status",
            "candidates",
            "parts",
            "thought",
            "usageMetadata",
            "finishReason",
            "reasoningContent",
            "stopReason",
            "metrics",
            "latencyMs",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u32>().prop_map(Value::from),
            words.clone().prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(words.clone(), inner, 0..5).prop_map(
                    |m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                ),
            ]
        })
    }

    proptest! {
        #[test]
        fn no_decoder_panics_on_arbitrary_bytes(
            bytes in prop::collection::vec(any::<u8>(), 0..200),
            name in prop::collection::vec(any::<u8>(), 0..24),
        ) {
            let all = Endpoint::ALL.map(of).into_iter().chain(PROVIDERS_ONLY.map(|p| p()));
            for p in all {
                let _ = p.decode_event(&Event { event: &name, data: &bytes });
                let _ = p.decode_full(&bytes);
            }
        }

        #[test]
        fn no_decoder_panics_on_json_of_the_right_words(v in vocab_json()) {
            let bytes = serde_json::to_vec(&v).unwrap();
            let all = Endpoint::ALL.map(of).into_iter().chain(PROVIDERS_ONLY.map(|p| p()));
            for p in all {
                for name in [&b""[..], b"error", b"message_stop", b"response.completed",
                             b"contentBlockDelta", b"metadata", b"throttlingException"] {
                    let _ = p.decode_event(&Event { event: name, data: &bytes });
                }
                let _ = p.decode_full(&bytes);
            }
        }

        #[test]
        fn answer_and_reasoning_text_round_trip(text in ".{0,40}") {
            let cases = [
                (Endpoint::Responses, json!({"type": "response.output_text.delta", "delta": text}), false),
                (Endpoint::Responses, json!({"type": "response.reasoning_text.delta", "delta": text}), true),
                (Endpoint::Messages, json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": text}}), false),
                (Endpoint::Messages, json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": text}}), true),
            ];
            for (e, v, reasoning) in cases {
                let bytes = serde_json::to_vec(&v).unwrap();
                let d = of(e).decode_event(&Event { event: b"", data: &bytes }).unwrap();
                let got = if reasoning { d.reasoning } else { d.content };
                prop_assert_eq!(got.as_deref(), Some(text.as_str()));
                prop_assert!(d.has_choice && !d.done && !d.unknown);
            }
        }
    }
}
