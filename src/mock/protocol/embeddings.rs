//! The embeddings answer as the mock sends it: never streamed; one small
//! deterministic vector per input, OpenAI's list shape, usage with the prompt tokens.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::super::answer::{ChunkWriter, Usage};
use super::{MockProtocol, Whole, openai, prompt};

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

    fn usage_unasked(&self) -> bool {
        true
    }

    fn generates(&self) -> bool {
        false
    }

    fn open(&self, _w: &ChunkWriter, _usage: Usage) -> Option<Bytes> {
        None
    }

    fn tokens(
        &self,
        _w: &ChunkWriter,
        _from: u32,
        _to: u32,
        _finish: Option<&str>,
        _usage: Option<Usage>,
    ) -> Bytes {
        Bytes::new()
    }

    fn content_json(&self, _w: &ChunkWriter, _text: &str) -> String {
        String::new()
    }

    fn close(&self, _w: &ChunkWriter, _emitted: u32, _usage: Option<Usage>, _end: bool) -> Bytes {
        Bytes::new()
    }

    fn error_event(&self, message: &str) -> Bytes {
        openai::error_event(message)
    }

    fn full_response(&self, w: &ChunkWriter, answer: &Whole) -> Value {
        body(&w.model, answer.vectors, answer.usage.prompt)
    }
}
