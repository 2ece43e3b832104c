//! Thin binary: parse the command line, set up tracing and the runtime, hand over to
//! [`llmprobe::run`], and turn its result into an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = llmprobe::cli::Cli::parse();
    if let Err(e) = llmprobe::logging::init(&cli.log) {
        eprintln!("Error: {e:#}");
        return ExitCode::from(llmprobe::exit::USAGE);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
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
