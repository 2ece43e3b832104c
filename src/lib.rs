//! llmprobe: a continuous SLO prober, a one-shot load tester and a capacity model for
//! OpenAI-compatible LLM inference servers.
//!
//! Data flows one way: workload → schedule → runner → client → record → aggregate/report
//! or export. The modules form layers, and a module imports only from lower layers;
//! `docs/architecture.md` has the layer table, which `tests/architecture.rs` enforces.
//! `capacity` is pure math and never touches the network.

// No function over 100 lines (clippy.toml); a test may opt out.
#![deny(clippy::too_many_lines)]

pub mod aggregate;
pub mod bench;
pub mod capacity;
pub mod check;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod conversation;
pub mod daemon;
pub mod discovery;
pub mod duration;
pub mod energy;
pub mod engine_metrics;
pub mod event;
pub mod exit;
pub mod exposition;
pub mod fingerprint;
pub mod latency;
pub mod logging;
pub mod manual;
pub mod mock;
pub mod otlp;
pub mod probe;
pub mod rate;
pub mod record;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod secret;
pub mod selfcheck;
pub mod sink;
pub mod status;
pub mod web;
pub mod workload;
pub mod yaml_locate;

use std::process::ExitCode;

use cli::{Cli, Command};

/// Runs one subcommand to completion and returns the process exit code.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    client::tls::install_crypto_provider();
    match cli.command {
        Command::Capacity(args) => capacity::command::run(&args),
        Command::Daemon(args) => daemon::run_cli(args).await,
        Command::Mock(args) => mock::command::run(&args).await,
        Command::Bench(args) => bench::run::run(&args).await,
        Command::Fingerprint(args) => fingerprint::command::run(&args).await,
        Command::Report(args) => bench::report_cmd::run(&args),
        Command::Completions(args) => {
            manual::completions(args.shell, &mut std::io::stdout().lock());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man(args) => {
            match args.dir {
                Some(dir) => {
                    for file in manual::man_pages(&dir)? {
                        println!("{}", dir.join(file).display());
                    }
                }
                None => manual::man_page(&mut std::io::stdout().lock())?,
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
