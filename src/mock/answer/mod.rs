//! What the mock's answer is made of, whatever its protocol or framing: its text (the
//! voice: numbered tokens, `--answer`, a golden answer, or a wrong one under a fault),
//! the call to an offered tool, the seeded logprobs, and the writer that hands each
//! protocol its identity and tokens. Pure: no timing, no IO.

pub mod logprobs;
pub mod tool;
pub mod voice;
mod wire;

pub use voice::{Voice, split_answer};
pub use wire::{ChunkWriter, Piece, Usage};
