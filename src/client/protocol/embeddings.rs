//! OpenAI embeddings: `POST /v1/embeddings` with the prompt as `input`. Never
//! streamed: the latency is the whole exchange (E2E), the prompt tokens come from
//! `usage.prompt_tokens`, and a success is a body with at least one vector.

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::Api;
use super::{FullAnswer, Protocol, body, parse_full};
use crate::client::chunk::{ChunkData, ChunkError, ErrorField, Usage};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Embeddings;

#[derive(Deserialize)]
struct Full {
    #[serde(default)]
    data: Vec<Item>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default)]
    model: Option<String>,
}

/// One vector: only whether it is there (a non-empty float array or base64 string).
#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    embedding: Option<Vector>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Vector {
    // IgnoredAny is zero-sized: the floats are skipped, only counted.
    Floats(Vec<IgnoredAny>),
    Base64(String),
}

impl Vector {
    fn is_empty(&self) -> bool {
        match self {
            Vector::Floats(v) => v.is_empty(),
            Vector::Base64(s) => s.is_empty(),
        }
    }
}

/// What the Embeddings API is and can carry.
const API: Api = Api {
    name: "embeddings",
    path: "/v1/embeddings",
    vllm_backend: "openai-embeddings",
    aliases: &[],
    streams: false,
    generates: false,
    message_list: false,
    tools: false,
    images: false,
    documents: false,
    structured_output: None,
    stream_options: false,
    max_completion_tokens: false,
    otel_operation: "embeddings",
    otel_provider: "openai",
    logprobs: None,
};

impl Protocol for Embeddings {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write(cfg, spec, |f| {
            f.put("input", &spec.prompt)?;
            f.put("encoding_format", "float")
        })
    }

    fn decode_event<'a>(&self, _ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        Err(ChunkError::Malformed(
            "an embeddings endpoint answered with an event stream".into(),
        ))
    }

    fn final_event(&self) -> &'static str {
        "the end of the body"
    }

    fn decode_full(&self, body: &[u8]) -> Result<FullAnswer, ChunkError> {
        let full: Full = parse_full(body)?;
        if let Some(e) = full.error {
            return Err(ChunkError::Server(e.describe()));
        }
        let items = full
            .data
            .iter()
            .filter(|i| i.embedding.as_ref().is_some_and(|v| !v.is_empty()))
            .count();
        Ok(FullAnswer {
            usage: full.usage.unwrap_or_default(),
            items,
            model: full.model,
            ..FullAnswer::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_vectors_and_reads_usage() {
        let a = Embeddings
            .decode_full(br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2,3e-5]}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}"#)
            .unwrap();
        assert_eq!((a.items, a.usage.prompt_tokens), (1, Some(7)));
        let a = Embeddings
            .decode_full(br#"{"data":[{"embedding":[]},{"embedding":"AAAA"},{}]}"#)
            .unwrap();
        assert_eq!(a.items, 1);
        assert!(matches!(
            Embeddings.decode_full(br#"{"data":[{"embedding":{"x":1}}]}"#),
            Err(ChunkError::Malformed(_))
        ));
    }
}
