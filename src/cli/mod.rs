//! Command-line types only (clap derive). Turning them into checked options is each
//! command's job; nothing here does IO.

use clap::{Args, Parser, Subcommand, ValueEnum};

mod bench;
mod capacity;
mod daemon;
mod fingerprint;
mod mock;
pub use bench::{BenchArgs, MergeArgs, ReportArgs, ReportCommand};
pub use capacity::CapacityArgs;
pub use daemon::DaemonArgs;
pub use fingerprint::FingerprintArgs;
pub use mock::MockArgs;

/// `--version`: the crate version and the git commit it was built from (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LLMPROBE_GIT_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "llmprobe",
    version = VERSION,
    about = "Continuous SLO prober, load tester and capacity model for OpenAI-compatible LLM servers",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub log: LogArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Capacity model: weight memory, KV cache, max concurrent sequences, decode roofline, $ per 1M tokens.
    Capacity(Box<CapacityArgs>),
    /// Continuous SLO prober: probes targets at a low Poisson rate and exports Prometheus metrics.
    Daemon(DaemonArgs),
    /// Fake OpenAI-compatible streaming engine with exact timing and fault injection.
    Mock(Box<MockArgs>),
    /// One-shot open-loop load test: one rate, a --sweep, or --find-max-rate, with SLO gates.
    Bench(Box<BenchArgs>),
    /// Logprob fingerprints: record an endpoint's answers and noise, or compare a
    /// candidate with a recorded baseline (is it still the same model?).
    Fingerprint(FingerprintArgs),
    /// Work on saved bench results (merge the --records of shards).
    Report(ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Print the man page on stdout, or write one page per command into --dir.
    Man(ManArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for. Install, e.g. for bash:
    /// `llmprobe completions bash > ~/.local/share/bash-completion/completions/llmprobe`.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write llmprobe.1 and one llmprobe-COMMAND.1 per command into this directory
    /// instead of printing llmprobe.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Log level or filter (error, warn, info, debug, trace, or a tracing filter spec).
    #[arg(
        long,
        global = true,
        default_value = "info",
        env = "LLMPROBE_LOG_LEVEL"
    )]
    pub log_level: String,
    /// Log line format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Human,
    Json,
}
