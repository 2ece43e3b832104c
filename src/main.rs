//! Thin binary: parse the command line, set up tracing and the runtime, hand over to
//! [`llmprobe::run`], and turn its result into an exit code.

#![deny(clippy::too_many_lines)]

use std::process::ExitCode;

use clap::Parser;
use llmprobe::cli::Command;

/// Whether a command runs on a current-thread runtime; otherwise tokio's multi-thread
/// runtime with its default workers (one per core, or `TOKIO_WORKER_THREADS`).
///
/// Clients (`bench`, `daemon`) run on one thread: a streamed token arrives alone and
/// wakes the process, and every other thread a token or a dispatch has to wake (a
/// second worker, a `block_on` thread, a timer thread) is another cross-thread wake-up,
/// which on a VM costs more than reading the token. On one thread the dispatcher waits
/// on a timerfd in the same event loop as the sockets (`runner::FdTimer`), so a
/// dispatch and a token each cost one wake-up. One core keeps up with the request rates
/// a client drives. The mock, the server side, keeps a worker per core; setting
/// `TOKIO_WORKER_THREADS` puts every command on the multi-thread runtime.
fn runs_on_one_thread(command: &Command) -> bool {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return false;
    }
    match command {
        Command::Mock(_) => false,
        // With --mock the same process serves the streams too.
        Command::Bench(a) if a.mock => false,
        Command::Daemon(a) if a.mock => false,
        _ => true,
    }
}

fn main() -> ExitCode {
    let cli = llmprobe::cli::Cli::parse();
    if let Err(e) = llmprobe::logging::init(&cli.log) {
        eprintln!("Error: {e:#}");
        return ExitCode::from(llmprobe::exit::USAGE);
    }
    let mut builder = if runs_on_one_thread(&cli.command) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
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
