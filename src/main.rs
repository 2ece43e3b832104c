//! Thin binary: parse the command line, set up tracing and the runtime, hand over to
//! [`llmprobe::run`], and turn its result into an exit code.

#![deny(clippy::too_many_lines)]

use std::process::ExitCode;

use clap::Parser;
use llmprobe::cli::Command;

/// Worker threads of the runtime for a command; `None` is tokio's default (one per
/// core, or `TOKIO_WORKER_THREADS`).
///
/// Clients (`bench`, `daemon`) get one worker: a streamed token arrives alone and
/// wakes the process, and with two workers the one woken by the socket also wakes the
/// other to share the work, a second cross-core wake-up per token. One worker costs
/// the client less CPU and does not widen the TTFT error, and one core keeps up with
/// the request rates a client drives. The dispatcher runs on the main thread and the
/// precise timer on its own, so neither waits behind the streams. The mock, the
/// server side, keeps a worker per core; `TOKIO_WORKER_THREADS` overrides both.
fn worker_threads(command: &Command) -> Option<usize> {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return None;
    }
    match command {
        Command::Mock(_) => None,
        // With --mock the same process serves the streams too.
        Command::Bench(a) if a.mock => None,
        Command::Daemon(a) if a.mock => None,
        _ => Some(1),
    }
}

fn main() -> ExitCode {
    let cli = llmprobe::cli::Cli::parse();
    if let Err(e) = llmprobe::logging::init(&cli.log) {
        eprintln!("Error: {e:#}");
        return ExitCode::from(llmprobe::exit::USAGE);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = worker_threads(&cli.command) {
        builder.worker_threads(n);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return ExitCode::from(llmprobe::exit::FAILURE);
        }
    };
    match runtime.block_on(llmprobe::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::from(llmprobe::exit::code_for(&e))
        }
    }
}
