//! `llmprobe capacity`: turns flags into [`CapacityInputs`], runs the model, prints the
//! result. The only module of `capacity` that writes to stdout/stderr.

use std::process::ExitCode;

use anyhow::Context as _;

use super::{CapacityInputs, evaluate, gpu, presets, text};
use crate::cli::CapacityArgs;
use crate::exit::UsageError;

/// The model inputs a set of flags describes.
pub fn inputs_from_args(args: &CapacityArgs) -> CapacityInputs {
    CapacityInputs {
        preset: args.preset.clone(),
        hf_config: args.hf_config.clone(),
        gpu: args.gpu.clone(),
        tp: args.tp,
        weight_bytes: args.weight_bytes,
        kv_bytes: args.kv_bytes,
        context: args.context,
        util: args.util,
        activation_gib: args.activation_gib,
        mbu: args.mbu,
        mfu: args.mfu,
        gpu_hourly: args.gpu_hourly,
        block_size: args.block_size,
        max_num_seqs: args.max_num_seqs,
        gpu_mem_gib: args.gpu_mem_gib,
        gpu_bandwidth_tbs: args.gpu_bandwidth_tbs,
        gpu_tflops: args.gpu_tflops,
    }
}

pub fn run(args: &CapacityArgs) -> anyhow::Result<ExitCode> {
    if args.list_presets {
        let mut specs = Vec::new();
        for (name, repo) in presets::list() {
            specs.push((name, repo, presets::load(name).map_err(UsageError::from)?));
        }
        let rows: Vec<text::PresetRow<'_>> = specs
            .iter()
            .map(|(name, repo, spec)| text::PresetRow { name, repo, spec })
            .collect();
        print!("{}", text::presets_list(&rows));
        return Ok(ExitCode::SUCCESS);
    }
    if args.list_gpus {
        print!("{}", text::gpus_list(&gpu::all()));
        return Ok(ExitCode::SUCCESS);
    }
    let inputs = inputs_from_args(args);
    let report = evaluate(&inputs).map_err(UsageError::from)?;
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    if args.json {
        let json = serde_json::to_string_pretty(&report).context("serializing the report")?;
        println!("{json}");
    } else {
        print!("{}", text::render(&report));
        if args.explain {
            println!();
            print!("{}", text::explain(&report));
        }
    }
    Ok(ExitCode::SUCCESS)
}
