//! The embeddings answer as the mock sends it: never streamed; one small
//! deterministic vector per input, OpenAI's list shape, usage with the prompt tokens.

use serde_json::{Map, Value, json};

use super::super::answer::ChunkWriter;
use super::{MockProtocol, Whole, prompt};

pub struct Embeddings;

/// Dimensions of the mock's vectors: small, the client only counts them.
const DIMENSIONS: usize = 8;

fn body(model: &str, vectors: u32, prompt_tokens: u32) -> Value {
    let data: Vec<Value> = (0..vectors)
        .map(|i| {
            let v: Vec<f64> = (0..DIMENSIONS)
                .map(|d| f64::from((i as usize * DIMENSIONS + d) as u32 % 7) / 7.0)
                .collect();
            json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    json!({"object": "list", "data": data, "model": model,
           "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}})
}

/// The stream methods write nothing: the server answers every embeddings request
/// whole, after the prefill (`generates` is false).
impl MockProtocol for Embeddings {
    fn id_prefix(&self) -> &'static str {
        "embd"
    }

    fn max_tokens_keys(&self) -> &'static [&'static str] {
        &[]
    }

    fn prompt_words(&self, body: &Map<String, Value>) -> Result<Vec<u64>, String> {
        prompt::raw(body, "input", "a string or an array")
    }

    super::one_body_answer!();

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        body(&w.model, answer.vectors, answer.usage.prompt)
    }
}
