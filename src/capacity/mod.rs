//! Capacity model: pure math over model and GPU specs (weight memory, KV cache, max
//! concurrent sequences, decode roofline, $ per 1M tokens). Never imports tokio or
//! reqwest; the only IO is reading `hf_config` in [`load_model`]. `command.rs` is the
//! CLI front end; the daemon calls [`evaluate`] directly.
//!
//! Equations and sources: `docs/capacity.md`.
//!
//! This file only declares the parts and re-exports their public items; the parts
//! import each other directly, never through here, so no import goes in a circle.

pub mod command;
mod error;
mod evaluate;
pub mod gpu;
mod inputs;
pub mod kv;
pub mod model;
pub mod presets;
mod report;
pub mod roofline;
pub mod text;

pub use command::CapacityArgs;
pub use error::CapacityError;
pub use evaluate::{evaluate, evaluate_spec, load_model};
pub use gpu::GpuSpec;
pub use inputs::{
    CapacityInputs, DEFAULT_ACTIVATION_GIB, DEFAULT_BLOCK_SIZE, DEFAULT_CONTEXT, DEFAULT_GPU,
    DEFAULT_KV_BYTES, DEFAULT_MAX_NUM_SEQS, DEFAULT_MBU, DEFAULT_MFU, DEFAULT_TP, DEFAULT_UTIL,
    GIB, MAX_CONTEXT,
};
pub use model::{ModelSpec, ParamCounts, WeightFormat};
pub use report::{CapacityReport, DecodeTerms, KvGeometry, ResolvedInputs, WeightPart};
pub use roofline::{RooflinePoint, StepModel};
