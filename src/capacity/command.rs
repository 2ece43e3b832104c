//! `llmprobe capacity`: its flags, turned into [`CapacityInputs`]; runs the model and
//! prints the result. The only module of `capacity` that writes to stdout/stderr.
//! `cli` re-exports [`CapacityArgs`] into the command line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::evaluate::evaluate;
use super::gpu;
use super::inputs::{
    CapacityInputs, DEFAULT_ACTIVATION_GIB, DEFAULT_BLOCK_SIZE, DEFAULT_CONTEXT, DEFAULT_GPU,
    DEFAULT_MAX_NUM_SEQS, DEFAULT_MBU, DEFAULT_MFU, DEFAULT_TP, DEFAULT_UTIL,
};
use super::presets;
use super::text;
use crate::exit::UsageError;

/// Flags of `llmprobe capacity` (names kept from capacity.py).
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Equations and sources: docs/capacity.md. Add --explain to see the arithmetic."
)]
pub struct CapacityArgs {
    /// List the built-in model presets and exit.
    #[arg(long)]
    pub list_presets: bool,
    /// List the GPU table (memory, bandwidth, dense peaks, assumed price) and exit.
    #[arg(long)]
    pub list_gpus: bool,
    /// Built-in model (see --list-presets).
    #[arg(long, value_name = "NAME", conflicts_with = "hf_config")]
    pub preset: Option<String>,
    /// A Hugging Face config.json.
    #[arg(long, value_name = "PATH")]
    pub hf_config: Option<PathBuf>,
    /// GPU (see --list-gpus).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_GPU)]
    pub gpu: String,
    /// Tensor-parallel size (GPUs per replica).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TP)]
    pub tp: u32,
    /// Bytes per weight for every parameter: 2 = BF16, 1 = FP8, 0.5 = 4-bit [default: from the checkpoint's quantization_config, else 2].
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub weight_bytes: Option<f64>,
    /// Bytes per KV-cache element: 2 = BF16, 1 = FP8 [default: 2].
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub kv_bytes: Option<f64>,
    /// Tokens per sequence (prompt + output) the pool is sized for.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONTEXT)]
    pub context: u64,
    /// Fraction of GPU memory the engine may use (vLLM --gpu-memory-utilization).
    #[arg(long, value_name = "F", default_value_t = DEFAULT_UTIL, allow_negative_numbers = true)]
    pub util: f64,
    /// Per-GPU reserve in GiB for activations, CUDA graphs and NCCL buffers (what the engine profiles at startup).
    #[arg(long, value_name = "F", default_value_t = DEFAULT_ACTIVATION_GIB, allow_negative_numbers = true)]
    pub activation_gib: f64,
    /// Model bandwidth utilization (1.0 = physical ceiling).
    #[arg(long, value_name = "F", default_value_t = DEFAULT_MBU, allow_negative_numbers = true)]
    pub mbu: f64,
    /// Model FLOPs utilization.
    #[arg(long, value_name = "F", default_value_t = DEFAULT_MFU, allow_negative_numbers = true)]
    pub mfu: f64,
    /// $ per GPU-hour [default: the GPU table's assumed price].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub gpu_hourly: Option<f64>,
    /// KV block size in tokens (vLLM --block-size).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Cap on concurrently running sequences (vLLM --max-num-seqs).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_NUM_SEQS)]
    pub max_num_seqs: u32,
    /// Override the GPU's engine-visible memory, GiB.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub gpu_mem_gib: Option<f64>,
    /// Override the GPU's memory bandwidth, TB/s.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub gpu_bandwidth_tbs: Option<f64>,
    /// Override the GPU's dense tensor peak, TFLOP/s.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub gpu_tflops: Option<f64>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Print every equation with the numbers substituted.
    #[arg(long)]
    pub explain: bool,
}

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
