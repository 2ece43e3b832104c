//! Flags of `llmprobe fingerprint`: defined next to the command
//! ([`crate::fingerprint::args`]) and re-exported here.

pub use crate::fingerprint::args::FingerprintArgs;
