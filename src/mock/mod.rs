//! `llmprobe mock`: a fake inference engine speaking the OpenAI chat, completions,
//! Responses and embeddings APIs and Anthropic's Messages API, with exact, documented
//! timing and fault injection (docs/mock.md). It runs on the caller's tokio runtime, so
//! `bench --mock`, `daemon --mock` and tests embed it. A leaf: only the front ends start
//! it, and it imports nothing of theirs; of the measurement path it uses only shared
//! types and helpers (`client::Endpoint`, the runner's timers, `schedule::splitmix64`),
//! never the client, runner or exporter logic it exists to test.
//!
//! This file only declares the parts and re-exports their public items; the parts
//! import each other directly, never through here, so no import goes in a circle.

mod answer;
pub mod command;
mod config;
mod conn;
mod emissions;
mod engine;
mod fault;
#[cfg(test)]
mod fault_walk;
mod inject;
mod jitter;
mod job;
mod logprobs;
mod metrics;
mod prefix_cache;
mod protocol;
mod reply;
mod request;
mod server;
mod stream;
mod tool;
pub mod trace_log;
mod voice;
mod whole;
mod wire;

pub use command::MockArgs;
pub use config::{
    DEFAULT_BLOCK_SIZE, DEFAULT_MODEL, DEFAULT_NUM_GPU_BLOCKS, DEFAULT_STALL, MockConfig,
    MockFlags, parse_fault_flags,
};
pub use emissions::{ChunkLine, Emission, EmissionLine, EmissionLog, EmittedChunk};
pub use fault::{FAULT_HEADER, FAULT_NAMES, FaultKind, FaultSpec};
pub use jitter::Jitter;
pub use server::{MockServer, start, start_with_emissions};
pub use stream::TRICKLE_BYTE_GAP;
