//! The score answer as the mock sends it (vLLM's `/v1/score`): never streamed; one
//! `{index, object: "score", score}` per document of `text_2`, in the request's order;
//! usage with the prompt tokens (every document paired with `text_1`).

use serde_json::{Map, Value, json};

use super::super::answer::ChunkWriter;
use super::ranking::{self, Ranking};
use super::{MockProtocol, Whole};

pub struct Score;

/// The stream methods write nothing: the server answers every score request whole,
/// after the prefill (`generates` is false).
impl MockProtocol for Score {
    fn id_prefix(&self) -> &'static str {
        "score"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &[]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        let (query, docs) = ranking::read(body, "text_1", "text_2")?;
        Ok(ranking::pair_words(query, &docs))
    }

    fn ranking(&self, body: &Map<String, Value>) -> Result<Option<Ranking>, String> {
        let (query, docs) = ranking::read(body, "text_1", "text_2")?;
        Ok(Some(Ranking {
            scores: ranking::scores(query, &docs),
            top_n: None,
        }))
    }

    super::one_body_answer!();

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        let data: Vec<Value> = answer.ranking.map_or_else(Vec::new, |r| {
            r.scores
                .iter()
                .enumerate()
                .map(|(i, s)| json!({"index": i, "object": "score", "score": s}))
                .collect()
        });
        let tokens = answer.usage.prompt;
        json!({"id": w.id, "object": "list", "model": w.model, "data": data,
               "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
    }
}
