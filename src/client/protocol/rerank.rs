//! Rerank (Cohere/Jina style, as vLLM and llama.cpp serve it): `POST /v1/rerank` with
//! the prompt as `query`, the scenario's `documents` and `top_n`. Never streamed: the
//! latency is the whole exchange (E2E); a success is a body with at least one result,
//! `results: [{index, relevance_score, document?}]`; the prompt tokens come from
//! `usage` when the server sends it (`prompt_tokens`, else `total_tokens`, all that older
//! vLLMs' rerank sends).

use serde::Deserialize;

use super::Api;
use super::{FullAnswer, Protocol, body, parse_full};
use crate::client::chunk::{ChunkData, ChunkError, ErrorField, Usage};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Rerank;

#[derive(Deserialize)]
struct Full {
    #[serde(default)]
    results: Vec<Ranked>,
    #[serde(default)]
    usage: Option<RankUsage>,
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default)]
    model: Option<String>,
}

/// One ranked document: its index in the request and its score (the document's text,
/// when echoed, is not read).
#[derive(Deserialize)]
struct Ranked {
    index: u32,
    relevance_score: f64,
}

/// `usage` of a ranking answer: `prompt_tokens` (llama.cpp; vLLM 0.32's rerank and score),
/// or only `total_tokens` (older vLLMs' rerank), which is the prompt's since nothing is
/// generated.
#[derive(Deserialize)]
pub(super) struct RankUsage {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    total_tokens: Option<u32>,
}

impl RankUsage {
    pub(super) fn usage(u: Option<RankUsage>) -> Usage {
        Usage {
            prompt_tokens: u.and_then(|u| u.prompt_tokens.or(u.total_tokens)),
            ..Usage::default()
        }
    }
}

/// The index of the best-scored document: the highest score, the lower index on a tie
/// (a NaN score never wins).
pub(super) fn top(scores: impl Iterator<Item = (u32, f64)>) -> Option<u32> {
    scores
        .filter(|(_, s)| !s.is_nan())
        .fold(None, |best: Option<(u32, f64)>, (i, s)| match best {
            Some((bi, bs)) if bs > s || (bs == s && bi < i) => Some((bi, bs)),
            _ => Some((i, s)),
        })
        .map(|(i, _)| i)
}

/// What the rerank API is and can carry.
const API: Api = Api {
    name: "rerank",
    path: "/v1/rerank",
    vllm_backend: "vllm-rerank",
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
    // No well-known operation for it in the GenAI conventions: a custom value.
    otel_operation: "rerank",
    otel_provider: "cohere",
    logprobs: None,
};

impl Protocol for Rerank {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write(cfg, spec, |f| {
            f.put("query", &spec.prompt)?;
            f.put("documents", cfg.documents.texts.as_slice())?;
            match cfg.documents.top_n {
                Some(n) => f.put("top_n", &n),
                None => Ok(()),
            }
        })
    }

    fn decode_event<'a>(&self, _ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        Err(ChunkError::Malformed(
            "a rerank endpoint answered with an event stream".into(),
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
            items: full.results.len(),
            top_document: top(full.results.iter().map(|r| (r.index, r.relevance_score))),
            model: full.model,
            ..FullAnswer::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_top_document_and_usage() {
        let a = Rerank
            .decode_full(
                br#"{"id":"rerank-1","model":"m","usage":{"total_tokens":31},
                "results":[{"index":2,"document":{"text":"c"},"relevance_score":0.9},
                           {"index":0,"relevance_score":0.1}]}"#,
            )
            .unwrap();
        assert_eq!(
            (a.items, a.top_document, a.usage.prompt_tokens),
            (2, Some(2), Some(31))
        );
        // The server's order is not trusted: the score is.
        let a = Rerank
            .decode_full(br#"{"results":[{"index":0,"relevance_score":0.2},{"index":1,"relevance_score":0.7},{"index":3,"relevance_score":0.7}],"usage":{"prompt_tokens":9,"total_tokens":9}}"#)
            .unwrap();
        assert_eq!((a.top_document, a.usage.prompt_tokens), (Some(1), Some(9)));
        let a = Rerank.decode_full(br#"{"results":[]}"#).unwrap();
        assert_eq!((a.items, a.top_document), (0, None));
        assert!(matches!(
            Rerank.decode_full(br#"{"results":[{"index":"x","relevance_score":1}]}"#),
            Err(ChunkError::Malformed(_))
        ));
    }

    #[test]
    fn reads_vllm_0_32s_answer() {
        // vLLM 0.32 (CPU) serving a cross-encoder: the documents echoed with a
        // `multi_modal` field, and both token counts.
        let a = Rerank
            .decode_full(br#"{"id":"score-89f5dd77487121a1","model":"tiny","usage":{"prompt_tokens":55,"total_tokens":55},"results":[{"index":0,"document":{"text":"The Moon orbits the Earth.","multi_modal":null},"relevance_score":0.497761070728302},{"index":1,"document":{"text":"Saturn is a planet with rings.","multi_modal":null},"relevance_score":0.49772924184799194}]}"#)
            .unwrap();
        assert_eq!(
            (
                a.items,
                a.top_document,
                a.usage.prompt_tokens,
                a.model.as_deref()
            ),
            (2, Some(0), Some(55), Some("tiny"))
        );
    }

    #[test]
    fn sends_the_prompt_as_the_query_with_the_documents() {
        let cfg = ClientConfig {
            endpoint: crate::client::Endpoint::Rerank,
            model: "r".into(),
            documents: crate::client::Documents {
                texts: std::sync::Arc::new(vec!["a cat".into(), "a dog".into()]),
                top_n: Some(1),
            },
            ..ClientConfig::default()
        };
        let spec = RequestSpec {
            prompt: "cat?".into(),
            prompt_tokens: 1,
            max_tokens: 1,
            history: Vec::new(),
            system: None,
            model: None,
        };
        let v: serde_json::Value =
            serde_json::from_slice(&Rerank.body(&cfg, &spec).unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model": "r", "query": "cat?", "documents": ["a cat", "a dog"], "top_n": 1})
        );
    }
}
