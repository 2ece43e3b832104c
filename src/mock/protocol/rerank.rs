//! The rerank answer as the mock sends it (Cohere/Jina style, as vLLM and llama.cpp
//! serve it): never streamed; `results` best first, each `{index, relevance_score}`,
//! at most `top_n`; usage with the prompt tokens (every document paired with the
//! query).

use serde_json::{Map, Value, json};

use super::super::answer::ChunkWriter;
use super::ranking::{self, Ranking};
use super::{MockProtocol, Whole};

pub struct Rerank;

/// The stream methods write nothing: the server answers every rerank request whole,
/// after the prefill (`generates` is false).
impl MockProtocol for Rerank {
    fn id_prefix(&self) -> &'static str {
        "rerank"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &[]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        let (query, docs) = ranking::read(body, "query", "documents")?;
        Ok(ranking::pair_words(query, &docs))
    }

    fn ranking(&self, body: &Map<String, Value>) -> Result<Option<Ranking>, String> {
        let (query, docs) = ranking::read(body, "query", "documents")?;
        let top_n = match body.get("top_n") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                _ => return Err("'top_n' must be a positive integer".into()),
            },
        };
        Ok(Some(Ranking {
            scores: ranking::scores(query, &docs),
            top_n,
        }))
    }

    super::one_body_answer!();

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        let results: Vec<Value> = answer.ranking.map_or_else(Vec::new, |r| {
            r.order()
                .into_iter()
                .map(|i| json!({"index": i, "relevance_score": r.scores[i]}))
                .collect()
        });
        let tokens = answer.usage.prompt;
        json!({"id": w.id, "model": w.model, "results": results,
               "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
    }
}
