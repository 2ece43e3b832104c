//! One generating request's plan, shared by the streamed and the whole answer: the
//! parsed request, its protocol and fault, its writer and length, when it arrived.

use std::sync::Arc;

use tokio::time::Instant;

use crate::mock::answer::{ChunkWriter, Usage};
use crate::mock::emissions::EmissionRecorder;
use crate::mock::engine::Engine;
use crate::mock::fault::FaultKind;
use crate::mock::prefix_cache::push_words;
use crate::mock::protocol::MockProtocol;
use crate::mock::request::GenRequest;

pub struct Job {
    pub engine: Arc<Engine>,
    pub protocol: &'static dyn MockProtocol,
    pub req: GenRequest,
    pub fault: Option<FaultKind>,
    pub writer: ChunkWriter,
    pub output_tokens: u32,
    pub arrival: Instant,
    pub seed: u64,
    /// Prompt tokens the prefix cache held (None: the cache is off).
    pub cached: Option<u32>,
    /// Where its token chunks are noted as they leave (None: nobody asked).
    pub emission: Option<EmissionRecorder>,
    /// Its LoRA adapter counted in flight until the answer ends (None: the base model).
    pub _adapter: Option<crate::mock::lora::InFlight>,
}

impl Job {
    /// The usage after `completion` output tokens.
    pub fn usage(&self, completion: u32) -> Usage {
        Usage {
            prompt: self.req.prompt_tokens,
            completion,
            reasoning: self.writer.reasoning_of(completion),
            cached: self.cached,
            elapsed: self.arrival.elapsed(),
        }
    }

    /// The prefill time of its prompt tokens the prefix cache did not hold, and of its
    /// images' tiles.
    pub fn prefill(&self) -> std::time::Duration {
        let uncached = self
            .req
            .prompt_tokens
            .saturating_sub(self.cached.unwrap_or(0));
        let cfg = &self.engine.cfg;
        cfg.prefill_per_token
            .saturating_mul(uncached)
            .saturating_add(
                cfg.prefill_per_image_tile
                    .saturating_mul(self.req.image_tiles),
            )
    }

    /// A finished answer: the prefix cache remembers its prompt and generated text.
    pub fn remember(&self, emitted: u32) {
        let Some(cache) = &self.engine.prefix_cache else {
            return;
        };
        let piece = self.writer.piece(0, emitted);
        let mut words = self.req.prompt_words.clone();
        push_words(&mut words, &piece.reasoning);
        push_words(&mut words, &piece.answer);
        cache.insert(&cache.keys(&words));
    }
}
