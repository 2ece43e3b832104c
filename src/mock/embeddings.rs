//! The embeddings answer as the mock sends it: one small deterministic vector per
//! input, OpenAI's list shape, usage with the prompt tokens.

use serde_json::{Value, json};

/// Dimensions of the mock's vectors: small, the client only counts them.
const DIMENSIONS: usize = 8;

pub fn body(model: &str, vectors: u32, prompt_tokens: u32) -> Value {
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
