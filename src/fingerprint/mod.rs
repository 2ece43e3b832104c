//! Logprob fingerprints: whether an endpoint still serves the model it served when a
//! baseline was recorded (docs/measurement.md, "Fingerprints"). Prompts asked at
//! temperature 0 with top-k logprobs, their answers compared position by position with
//! the baseline's and judged against the endpoint's own run-to-run noise.
//!
//! Owns: the fingerprint request and its parsing, the baseline file, the divergence
//! math. Uses the client for HTTP; knows nothing of the daemon or of metrics.

pub mod answer;
pub mod args;
pub mod baseline;
pub mod command;
pub mod compare;
pub mod prompts;
pub mod request;
pub mod sample;

pub use answer::{Alt, Answer, Position};
pub use baseline::Baseline;
pub use compare::{Divergence, Noise, Threshold};
pub use prompts::{default_prompts, read_prompts};
pub use request::Ask;
pub use sample::Sampler;
