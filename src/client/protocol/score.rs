//! Score (vLLM's cross-encoder API): `POST /v1/score` with the prompt as `text_1` and
//! the scenario's `documents` as `text_2`, one score per document,
//! `data: [{index, score}]`. Never streamed: the latency is the whole exchange (E2E); a
//! success is a body with at least one score; the prompt tokens come from `usage`.

use serde::Deserialize;

use super::Api;
use super::rerank::{RankUsage, top};
use super::{FullAnswer, Protocol, body, parse_full};
use crate::client::chunk::{ChunkData, ChunkError, ErrorField};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Score;

#[derive(Deserialize)]
struct Full {
    #[serde(default)]
    data: Vec<Scored>,
    #[serde(default)]
    usage: Option<RankUsage>,
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default)]
    model: Option<String>,
}

/// One document's score, by its index in `text_2`.
#[derive(Deserialize)]
struct Scored {
    index: u32,
    score: f64,
}

/// What the score API is and can carry.
const API: Api = Api {
    name: "score",
    path: "/v1/score",
    vllm_backend: "vllm-score",
    aliases: &[],
    streams: false,
    generates: false,
    message_list: false,
    tools: false,
    images: false,
    documents: true,
    structured_output: None,
    stream_options: false,
    max_completion_tokens: false,
    // No well-known operation or provider for it in the GenAI conventions: vLLM's own.
    otel_operation: "score",
    otel_provider: "vllm",
    logprobs: None,
};

impl Protocol for Score {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write(cfg, spec, |f| {
            f.put("text_1", &spec.prompt)?;
            f.put("text_2", cfg.documents.texts.as_slice())
        })
    }

    fn decode_event<'a>(&self, _ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        Err(ChunkError::Malformed(
            "a score endpoint answered with an event stream".into(),
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
        Ok(FullAnswer {
            usage: RankUsage::usage(full.usage),
            items: full.data.len(),
            top_document: top(full.data.iter().map(|d| (d.index, d.score))),
            model: full.model,
            ..FullAnswer::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_best_scored_document() {
        let a = Score
            .decode_full(br#"{"id":"score-1","object":"list","model":"m",
                "data":[{"index":0,"object":"score","score":0.25},{"index":1,"object":"score","score":0.75}],
                "usage":{"prompt_tokens":12,"total_tokens":12}}"#)
            .unwrap();
        assert_eq!(
            (a.items, a.top_document, a.usage.prompt_tokens),
            (2, Some(1), Some(12))
        );
        // vLLM 0.32's own answer (CPU, a tiny cross-encoder), byte for byte.
        let a = Score
            .decode_full(br#"{"id":"score-ba3f9bed2381712c","object":"list","created":1796570634,"model":"tiny","data":[{"index":0,"object":"score","score":0.497761070728302},{"index":1,"object":"score","score":0.49772924184799194},{"index":2,"object":"score","score":0.49771973490715027},{"index":3,"object":"score","score":0.4977034330368042}],"usage":{"prompt_tokens":55,"total_tokens":55,"completion_tokens":0,"prompt_tokens_details":null,"completion_tokens_details":null}}"#)
            .unwrap();
        assert_eq!(
            (a.items, a.top_document, a.usage.prompt_tokens),
            (4, Some(0), Some(55))
        );
        assert!(matches!(
            Score.decode_full(br#"{"data":[{"index":0}]}"#),
            Err(ChunkError::Malformed(_))
        ));
    }
}
