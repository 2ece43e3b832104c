//! The capacity model's inputs, their defaults, and the range checks on them.

use std::path::PathBuf;

use serde::Deserialize;

use super::error::CapacityError;

/// 2^30: every "GiB" in this module.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Largest `context` accepted (keeps block arithmetic far from u64 overflow).
pub const MAX_CONTEXT: u64 = 1 << 40;

/// Default GPU.
pub const DEFAULT_GPU: &str = "h100";
/// Default tensor-parallel size.
pub const DEFAULT_TP: u32 = 1;
/// Default tokens per sequence (prompt + output) the pool is sized for.
pub const DEFAULT_CONTEXT: u64 = 8192;
/// vLLM's `--gpu-memory-utilization` default.
pub const DEFAULT_UTIL: f64 = 0.9;
/// Per-GPU reserve for activations, CUDA graphs and non-torch memory. 4.89 GiB is what
/// vLLM profiles for Llama-3.1-8B on one H100 (peak activation at the default
/// 8192-token batch plus graphs); bigger vocabularies and batches need more.
pub const DEFAULT_ACTIVATION_GIB: f64 = 4.89;
/// Model bandwidth utilization: the fraction of peak HBM bandwidth a decode step gets.
/// Tuned engines reach roughly 0.6–0.8 on weight streaming (Databricks, "LLM Inference
/// Performance Engineering: Best Practices", 2023, which defines MBU).
pub const DEFAULT_MBU: f64 = 0.7;
/// Model FLOPs utilization during decode; 0.5 is a common planning figure for dense
/// GEMMs at large batch.
pub const DEFAULT_MFU: f64 = 0.5;
/// vLLM's default KV block size in tokens (`--block-size`, CUDA).
pub const DEFAULT_BLOCK_SIZE: u32 = 16;
/// Cap on sequences running at once (`--max-num-seqs`). 256 is vLLM's long-standing
/// default and the reference launch; recent vLLM raises it to 1024 on ≥70 GiB GPUs for
/// the OpenAI server, so pass your engine's value.
pub const DEFAULT_MAX_NUM_SEQS: u32 = 256;
/// KV cache bytes per element when not given (BF16; vLLM `--kv-cache-dtype auto`).
pub const DEFAULT_KV_BYTES: f64 = 2.0;

/// Inputs of the capacity model. Field names match the CLI flags (with `_`), defaults
/// match the CLI defaults; the daemon reads this from its YAML config.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CapacityInputs {
    /// Built-in preset name (see `--list-presets`). Exactly one of `preset`/`hf_config`.
    pub preset: Option<String>,
    /// Path to a Hugging Face `config.json`.
    pub hf_config: Option<PathBuf>,
    /// GPU name (see `--list-gpus`).
    pub gpu: String,
    /// Tensor-parallel size: GPUs per replica.
    pub tp: u32,
    /// Bytes per weight (2 = BF16, 1 = FP8, 0.5 = 4-bit), applied to every parameter.
    /// Default: from the checkpoint's `quantization_config`, else 2.
    pub weight_bytes: Option<f64>,
    /// Bytes per KV-cache element (2 = BF16, 1 = FP8). Default 2.
    pub kv_bytes: Option<f64>,
    /// Tokens per sequence (prompt + output) to size the pool for.
    pub context: u64,
    /// Fraction of GPU memory the engine may use (vLLM `--gpu-memory-utilization`).
    pub util: f64,
    /// Per-GPU reserve in GiB for activations, CUDA graphs and NCCL buffers.
    pub activation_gib: f64,
    /// Model bandwidth utilization, (0, 1]; 1.0 is the physical ceiling.
    pub mbu: f64,
    /// Model FLOPs utilization, (0, 1].
    pub mfu: f64,
    /// $ per GPU-hour. Default: the GPU table's assumed price.
    pub gpu_hourly: Option<f64>,
    /// KV block size in tokens.
    pub block_size: u32,
    /// Cap on concurrently running sequences (vLLM `--max-num-seqs`).
    pub max_num_seqs: u32,
    /// Override the GPU's memory, in GiB.
    pub gpu_mem_gib: Option<f64>,
    /// Override the GPU's bandwidth, in TB/s.
    pub gpu_bandwidth_tbs: Option<f64>,
    /// Override the GPU's dense tensor peak, in TFLOP/s.
    pub gpu_tflops: Option<f64>,
}

impl Default for CapacityInputs {
    fn default() -> Self {
        Self {
            preset: None,
            hf_config: None,
            gpu: DEFAULT_GPU.to_string(),
            tp: DEFAULT_TP,
            weight_bytes: None,
            kv_bytes: None,
            context: DEFAULT_CONTEXT,
            util: DEFAULT_UTIL,
            activation_gib: DEFAULT_ACTIVATION_GIB,
            mbu: DEFAULT_MBU,
            mfu: DEFAULT_MFU,
            gpu_hourly: None,
            block_size: DEFAULT_BLOCK_SIZE,
            max_num_seqs: DEFAULT_MAX_NUM_SEQS,
            gpu_mem_gib: None,
            gpu_bandwidth_tbs: None,
            gpu_tflops: None,
        }
    }
}

fn check(
    ok: bool,
    flag: &'static str,
    value: impl ToString,
    reason: &'static str,
) -> Result<(), CapacityError> {
    if ok {
        Ok(())
    } else {
        Err(CapacityError::InvalidInput {
            flag,
            value: value.to_string(),
            reason,
        })
    }
}

pub(super) fn validate(i: &CapacityInputs) -> Result<(), CapacityError> {
    check(i.tp >= 1, "tp", i.tp, "must be at least 1")?;
    check(
        i.util > 0.0 && i.util <= 1.0,
        "util",
        i.util,
        "must be in (0, 1]",
    )?;
    if let Some(b) = i.weight_bytes {
        check(
            b.is_finite() && b > 0.0,
            "weight-bytes",
            b,
            "must be a positive number of bytes",
        )?;
    }
    if let Some(b) = i.kv_bytes {
        check(
            b.is_finite() && b > 0.0,
            "kv-bytes",
            b,
            "must be a positive number of bytes",
        )?;
    }
    check(
        (1..=MAX_CONTEXT).contains(&i.context),
        "context",
        i.context,
        "must be between 1 and 2^40 tokens",
    )?;
    check(
        i.activation_gib.is_finite() && i.activation_gib >= 0.0,
        "activation-gib",
        i.activation_gib,
        "must be 0 or more GiB",
    )?;
    check(
        i.mbu > 0.0 && i.mbu <= 1.0,
        "mbu",
        i.mbu,
        "must be in (0, 1]",
    )?;
    check(
        i.mfu > 0.0 && i.mfu <= 1.0,
        "mfu",
        i.mfu,
        "must be in (0, 1]",
    )?;
    if let Some(p) = i.gpu_hourly {
        check(
            p.is_finite() && p >= 0.0,
            "gpu-hourly",
            p,
            "must be 0 or more dollars",
        )?;
    }
    check(
        i.block_size >= 1,
        "block-size",
        i.block_size,
        "must be at least 1 token",
    )?;
    check(
        i.max_num_seqs >= 1,
        "max-num-seqs",
        i.max_num_seqs,
        "must be at least 1",
    )?;
    for (flag, v) in [
        ("gpu-mem-gib", i.gpu_mem_gib),
        ("gpu-bandwidth-tbs", i.gpu_bandwidth_tbs),
        ("gpu-tflops", i.gpu_tflops),
    ] {
        if let Some(v) = v {
            check(
                v.is_finite() && v > 0.0,
                flag,
                v,
                "must be a positive number",
            )?;
        }
    }
    Ok(())
}
