//! Flags of `llmprobe fingerprint` (clap types only; `cli` re-exports them). Turning
//! them into a client and a request is `command.rs`' job.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::client::Endpoint;

/// `llmprobe fingerprint record|compare`.
#[derive(Debug, Clone, Args)]
pub struct FingerprintArgs {
    #[command(subcommand)]
    pub command: FingerprintCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum FingerprintCommand {
    /// Ask each prompt several times at temperature 0 with logprobs and write the
    /// answers and the endpoint's own run-to-run noise to a baseline file.
    Record(RecordArgs),
    /// Ask a candidate endpoint the baseline's prompts and judge its divergence
    /// against the baseline's noise.
    #[command(
        after_help = "Exit codes: 0 same model (within noise), 1 runtime failure, \
2 bad input, 3 drift: the answers diverge beyond the baseline's noise."
    )]
    Compare(CompareArgs),
}

/// Where to send and how to authenticate, shared by both subcommands.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Server base URL, with or without a trailing /v1.
    #[arg(long)]
    pub base_url: String,
    /// Bearer API key.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra HTTP header `Name:Value` (repeatable).
    #[arg(long = "header", value_name = "K:V")]
    pub headers: Vec<String>,
    /// A JSON object merged into every request body last (its keys replace ours).
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,
    /// Time limit per request (e.g. `120s`; a bare number is seconds).
    #[arg(long, default_value = "120s")]
    pub timeout: String,
}

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Model name sent in requests.
    #[arg(long)]
    pub model: String,
    /// API: chat, completions or responses (messages and embeddings have no logprobs).
    #[arg(long, value_enum, default_value_t = Endpoint::Chat)]
    pub endpoint: Endpoint,
    /// Prompts, one a line (a line starting with `"` is a JSON string); default: a
    /// built-in set of 8 short prompts.
    #[arg(long, value_name = "FILE")]
    pub prompts: Option<PathBuf>,
    /// The baseline file to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Times each prompt is asked: the first answer is the baseline, the others measure
    /// the endpoint's noise (every other repeat sends all prompts at once, so batching
    /// shows).
    #[arg(long, default_value_t = 5)]
    pub repeats: u32,
    /// Alternatives per position (1 to 20).
    #[arg(long, default_value_t = 5)]
    pub top_logprobs: u32,
    /// Most tokens per answer.
    #[arg(long, default_value_t = 16)]
    pub max_tokens: u32,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline file `fingerprint record` wrote.
    #[arg(value_name = "BASELINE")]
    pub baseline: PathBuf,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Model name sent in requests (default: the baseline's).
    #[arg(long)]
    pub model: Option<String>,
    /// Print the result as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}
