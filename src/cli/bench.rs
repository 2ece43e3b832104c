//! Flags of `llmprobe bench` and `llmprobe report`: defined next to the command
//! ([`crate::bench::args`]), so `bench` needs nothing from the command-line layer above
//! it.

pub use crate::bench::args::{BenchArgs, MergeArgs, ReportArgs, ReportCommand};
