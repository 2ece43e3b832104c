//! `llmprobe mock`: a fake inference engine speaking the OpenAI chat, completions,
//! Responses and embeddings APIs and Anthropic's Messages API, with exact, documented
//! timing and fault injection (docs/mock.md). It runs on the caller's tokio runtime, so
//! `bench --mock`, `daemon --mock` and tests embed it. A leaf: only the front ends start
//! it, and it imports nothing of theirs; of the measurement path it uses only shared
//! types and helpers (`client::Endpoint`, the runner's timers, `schedule::splitmix64`),
//! never the client, runner or exporter logic it exists to test.
//!
//! Here: the configuration, the engine's timing and state (`engine.rs` with its
//! jitter, prefix cache, emission notes, `/metrics` and trace log) and request parsing;
//! in directories: each API's wire shape (`protocol/`), what an answer says
//! (`answer/`), the faults (`fault/`), the HTTP server (`serve/`) and the gateway that
//! fronts several mocks as an llm-d gateway would (`gateway/`).
//!
//! This file only declares the parts and re-exports their public items; the parts
//! import each other directly (a directory through its `mod.rs`), never through here,
//! so no import goes in a circle.

mod answer;
pub mod command;
mod config;
mod emissions;
mod engine;
mod fault;
pub mod gateway;
mod google_tokens;
pub mod gpu;
mod jitter;
pub(crate) mod lora;
mod metrics;
mod prefix_cache;
mod protocol;
mod request;
mod serve;
pub mod trace_log;

pub use command::MockArgs;
pub use config::{
    DEFAULT_BLOCK_SIZE, DEFAULT_MODEL, DEFAULT_NUM_GPU_BLOCKS, DEFAULT_STALL, MockAws, MockConfig,
    MockFlags, parse_fault_flags,
};
pub use emissions::{ChunkLine, Emission, EmissionLine, EmissionLog, EmittedChunk};
pub use fault::{FAULT_HEADER, FAULT_NAMES, FaultKind, FaultSpec};
pub use google_tokens::MockGoogle;
pub use jitter::Jitter;
pub use serve::{MockServer, TRICKLE_BYTE_GAP, start, start_with_emissions};
