//! Capacity model: pure math over model and GPU specs. Never imports tokio or reqwest.

pub mod command;
