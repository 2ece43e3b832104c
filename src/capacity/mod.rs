//! Capacity model: pure math over model and GPU specs (weight memory, KV cache, max
//! concurrent sequences, decode roofline, $ per 1M tokens). Never imports tokio or
//! reqwest; the only IO is reading `hf_config` in [`load_model`]. `command.rs` is the
//! CLI front end; the daemon calls [`evaluate`] directly.
//!
//! Equations and sources: `docs/capacity.md`.

pub mod command;
pub mod gpu;
pub mod kv;
pub mod model;
pub mod presets;
pub mod roofline;
pub mod text;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use gpu::GpuSpec;
pub use model::{ModelSpec, ParamCounts, WeightFormat};
pub use roofline::RooflinePoint;

use kv::KvLayout;
use model::{Attention, LayerKind};
use roofline::StepModel;

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

impl From<CapacityError> for crate::exit::UsageError {
    fn from(e: CapacityError) -> Self {
        crate::exit::UsageError::new(e.to_string())
    }
}

/// What went wrong; every variant is the caller's input (exit code 2 at the CLI).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapacityError {
    #[error("unknown preset {name:?}; valid presets: {valid}")]
    UnknownPreset { name: String, valid: String },
    #[error("unknown GPU {name:?}; valid GPUs: {valid}")]
    UnknownGpu { name: String, valid: String },
    #[error("no model given: pass --preset NAME or --hf-config PATH")]
    NoModel,
    #[error("--preset and --hf-config are mutually exclusive; pass one")]
    BothModels,
    #[error("cannot read {path}: {message}")]
    ReadConfig { path: String, message: String },
    #[error("{source_name}: not a valid config.json: {message}")]
    ConfigSyntax {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: config.json has no field {field:?} (needed by the capacity model)")]
    MissingField { source_name: String, field: String },
    #[error("{source_name}: config.json field {field:?} is invalid: {reason}")]
    InvalidField {
        source_name: String,
        field: String,
        reason: String,
    },
    #[error("{source_name}: {what} not modelled yet")]
    Unsupported { source_name: String, what: String },
    #[error(
        "invalid --tp {tp} for this model: {what}; vLLM shards Mamba/linear-attention state evenly, pick a tp that divides it"
    )]
    TpDoesNotShard { tp: u32, what: String },
    #[error("invalid --{flag} {value}: {reason}")]
    InvalidInput {
        flag: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error(
        "the weights do not fit: {weights_gib:.2} GiB of weights per GPU + {reserve_gib:.2} GiB reserve > util {util} × {memory_gib:.2} GiB = {usable_gib:.2} GiB; raise --tp, lower --weight-bytes or --activation-gib"
    )]
    WeightsDoNotFit {
        weights_gib: f64,
        reserve_gib: f64,
        util: f64,
        memory_gib: f64,
        usable_gib: f64,
    },
    #[error(
        "the KV pool cannot hold one sequence of {context} tokens: pool {pool_gib:.3} GiB per GPU, one sequence needs {sequence_gib:.3} GiB per GPU; lower --context, raise --tp or lower --kv-bytes"
    )]
    PoolTooSmall {
        context: u64,
        pool_gib: f64,
        sequence_gib: f64,
    },
}

/// One part of the weights and what it costs in memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WeightPart {
    /// Component name (embedding, attention, routed_experts, …).
    pub part: &'static str,
    /// Parameters in that part (whole model).
    pub params: u64,
    /// Bytes per parameter used for it.
    pub bytes_per_param: f64,
    /// params × bytes_per_param (whole model).
    pub bytes: f64,
}

/// KV geometry the report was computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KvGeometry {
    /// "gqa" or "mla".
    pub attention: &'static str,
    /// Layers with full attention.
    pub full_layers: u64,
    /// Layers with sliding-window attention.
    pub sliding_layers: u64,
    /// Linear-attention / SSM layers (fixed state per sequence).
    pub linear_layers: u64,
    /// Window of the sliding layers, tokens.
    pub sliding_window: Option<u64>,
    /// KV heads in the model (GQA).
    pub kv_heads: Option<u64>,
    /// max(1, kv_heads / tp) (GQA).
    pub kv_heads_per_gpu: Option<u64>,
    /// Head dimension (GQA).
    pub head_dim: Option<u64>,
    /// kv_lora_rank + qk_rope_head_dim (MLA).
    pub mla_latent_dim: Option<u64>,
    /// Elements one attention layer caches per token on one GPU.
    pub elements_per_token_per_layer: u64,
    /// Blocks with only an MLP (Nemotron-H `-`): no per-sequence memory.
    pub mlp_only_layers: u64,
    /// Recurrent state elements per linear layer per sequence per GPU.
    pub state_elements_per_layer_per_gpu: u64,
    /// Bytes per recurrent-state element (model dtype; `state_shape` says when the SSM
    /// part uses another).
    pub state_bytes_per_element: f64,
    /// Conv and SSM state of one linear/Mamba layer on one GPU (vLLM
    /// `MambaStateShapeCalculator`); null without such layers.
    pub state_shape: Option<model::StateShape>,
}

/// Per-GPU quantities behind the roofline, so the arithmetic can be checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeTerms {
    /// Weight bytes read every step whatever the routing (embedding lookup and vision
    /// tower excluded), per GPU.
    pub weight_bytes_streamed_per_gpu: f64,
    /// Bytes of all routed experts per GPU; a step reads the touched fraction.
    pub expert_bytes_per_gpu: f64,
    /// Routed experts per MoE layer (0 for dense models).
    pub num_experts: u64,
    /// Experts each token picks.
    pub top_k: u64,
    /// KV and state bytes one sequence reads per step at `context`, per GPU.
    pub kv_bytes_read_per_sequence_per_gpu: f64,
    /// Matmul parameters a token runs through (whole model).
    pub matmul_params_per_token: f64,
    /// Attention-score FLOPs per token at `context` (whole model).
    pub attention_flops_per_token: f64,
    /// bandwidth × MBU, bytes/s.
    pub effective_bandwidth_bytes_per_second: f64,
    /// peak × MFU, FLOP/s.
    pub effective_flops_per_second: f64,
}

/// The inputs after defaults and lookups, echoed in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedInputs {
    /// Preset name or config path.
    pub model: String,
    /// `model_type` from the config.
    pub model_type: String,
    /// GPU after overrides.
    pub gpu: GpuSpec,
    /// Tensor-parallel size.
    pub tp: u32,
    /// Bytes per weight given with --weight-bytes (null: from the checkpoint format).
    pub weight_bytes: Option<f64>,
    /// Checkpoint weight format from `quantization_config`.
    pub weight_format: WeightFormat,
    /// Bytes per KV element used.
    pub kv_bytes: f64,
    /// Tokens per sequence.
    pub context: u64,
    /// GPU memory utilization.
    pub util: f64,
    /// Activation reserve per GPU, GiB.
    pub activation_gib: f64,
    /// Model bandwidth utilization.
    pub mbu: f64,
    /// Model FLOPs utilization.
    pub mfu: f64,
    /// $ per GPU-hour used.
    pub gpu_hourly: f64,
    /// "flag" when given, "default" when taken from the GPU table.
    pub gpu_hourly_source: &'static str,
    /// KV block size, tokens.
    pub block_size: u32,
    /// Cap on running sequences.
    pub max_num_seqs: u32,
}

/// Result of the capacity model. This struct is the `--json` contract and the source
/// of the daemon's `llmprobe_capacity_*` gauges; all sizes are bytes unless named.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityReport {
    /// The inputs after defaults and lookups.
    pub inputs: ResolvedInputs,
    /// Parameters loaded for serving (MTP weights excluded).
    pub params_total: u64,
    /// Parameters a token uses (routed experts at top_k / num_experts; vision excluded).
    pub params_active: f64,
    /// Multi-token-prediction parameters in the checkpoint, not loaded for plain decode.
    pub params_mtp_not_loaded: u64,
    /// Parameters by component.
    pub params: ParamCounts,
    /// Weight memory by component (whole model).
    pub weights: Vec<WeightPart>,
    /// Weight bytes of the whole model.
    pub weight_bytes_total: f64,
    /// Weight bytes each GPU holds (total / tp).
    pub weight_bytes_per_gpu: f64,
    /// KV geometry used.
    pub kv_geometry: KvGeometry,
    /// KV bytes one token adds on one GPU, over all attention layers.
    pub kv_bytes_per_token_per_gpu: f64,
    /// Bytes one sequence at `context` occupies on one GPU (whole blocks, windows capped,
    /// recurrent state included).
    pub kv_bytes_per_sequence_per_gpu: f64,
    /// Recurrent (linear-attention/SSM) state per sequence per GPU.
    pub state_bytes_per_sequence_per_gpu: f64,
    /// util × GPU memory.
    pub usable_bytes_per_gpu: f64,
    /// Activation reserve per GPU.
    pub activation_reserve_bytes_per_gpu: f64,
    /// util × memory − weights − reserve.
    pub kv_pool_bytes_per_gpu: f64,
    /// Pool bytes / KV bytes per token (vLLM's "GPU KV cache size: N tokens").
    pub kv_pool_tokens: u64,
    /// Whole KV blocks of `block_size` tokens in the pool.
    pub kv_pool_blocks: u64,
    /// vLLM's "Maximum concurrency for N tokens per request: X x" (a float).
    pub max_concurrent_sequences: f64,
    /// Sequences that can actually run: floor(max_concurrent_sequences) capped by max_num_seqs.
    pub max_running_sequences: u64,
    /// Dense peak used for the compute bound, TFLOP/s.
    pub peak_tflops: f64,
    /// "fp8" or "bf16": which tensor peak applies.
    pub compute_precision: &'static str,
    /// FLOPs per generated token per GPU at `context`.
    pub flops_per_token_per_gpu: f64,
    /// The terms of the decode roofline.
    pub decode_terms: DecodeTerms,
    /// Decode tok/s of one sequence at batch 1.
    pub decode_tokens_per_second_per_sequence: f64,
    /// Decode tok/s of the replica at max_running_sequences.
    pub decode_tokens_per_second_aggregate: f64,
    /// $ per 1M output tokens at max_running_sequences.
    pub cost_per_million_output_tokens: f64,
    /// Smallest batch at which decode becomes compute-bound (null: never, KV dominates).
    pub crossover_batch: Option<u64>,
    /// Roofline over batch sizes up to max_running_sequences.
    pub roofline: Vec<RooflinePoint>,
    /// Model max_position_embeddings, when known.
    pub max_position_embeddings: Option<u64>,
    /// Things the user should know (context beyond the model's limit, …).
    pub warnings: Vec<String>,
    /// Parts of the checkpoint the model does not cover.
    pub notes: Vec<String>,
}

/// Loads the model named by `inputs`: a preset, or a `config.json` from disk.
pub fn load_model(inputs: &CapacityInputs) -> Result<ModelSpec, CapacityError> {
    match (&inputs.preset, &inputs.hf_config) {
        (Some(_), Some(_)) => Err(CapacityError::BothModels),
        (None, None) => Err(CapacityError::NoModel),
        (Some(name), None) => presets::load(name),
        (None, Some(path)) => {
            let label = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| CapacityError::ReadConfig {
                path: label.clone(),
                message: e.to_string(),
            })?;
            model::parse_hf_config(&label, &text)
        }
    }
}

/// Loads the model and runs the capacity model.
pub fn evaluate(inputs: &CapacityInputs) -> Result<CapacityReport, CapacityError> {
    validate(inputs)?;
    let spec = load_model(inputs)?;
    evaluate_spec(&spec, inputs)
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

fn validate(i: &CapacityInputs) -> Result<(), CapacityError> {
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

/// Bytes per parameter of each component for a checkpoint format. FP8 block scales
/// (one f32 per 128×128 block, DeepSeek-V3) add 4/16384 bytes per parameter; MXFP4 is
/// 4 bits plus one 8-bit scale per 32 values = 4.25 bits (OCP MX spec v1.0).
fn bytes_per_param(format: WeightFormat, part: &str) -> f64 {
    let linear = matches!(
        part,
        "attention" | "dense_mlp" | "routed_experts" | "shared_experts"
    );
    match format {
        WeightFormat::Bf16 => 2.0,
        WeightFormat::Fp8 if linear => 1.0 + 4.0 / (128.0 * 128.0),
        WeightFormat::Fp8 => 2.0,
        WeightFormat::Mxfp4 if part == "routed_experts" => 4.25 / 8.0,
        WeightFormat::Mxfp4 => 2.0,
    }
}

fn weight_parts(spec: &ModelSpec, override_bytes: Option<f64>) -> Vec<WeightPart> {
    let p = &spec.params;
    [
        ("embedding", p.embedding),
        ("lm_head", p.lm_head),
        ("attention", p.attention),
        ("dense_mlp", p.dense_mlp),
        ("routed_experts", p.routed_experts),
        ("shared_experts", p.shared_experts),
        ("router", p.router),
        ("norms", p.norms),
        ("vision", p.vision),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(part, params)| {
        let b = override_bytes.unwrap_or_else(|| bytes_per_param(spec.weight_format, part));
        WeightPart {
            part,
            params,
            bytes_per_param: b,
            bytes: params as f64 * b,
        }
    })
    .collect()
}

/// Attention FLOPs per generated token (whole model) at `context`: QKᵀ and AV are
/// 2 FLOPs per multiply-add each (Hoffmann et al. 2022, "Chinchilla", Appendix F); MLA decode runs in the
/// absorbed form over the latent (DeepSeek-V2, §2.1); a linear layer updates and reads
/// its state matrix once per token.
fn attention_flops_per_token(spec: &ModelSpec, context: u64) -> f64 {
    let ctx_full = context as f64;
    let ctx_sliding = context.min(spec.sliding_window.unwrap_or(0)) as f64;
    let per_ctx_token = match &spec.attention {
        Attention::Gqa {
            num_heads,
            head_dim,
            ..
        } => 4.0 * (*num_heads * *head_dim) as f64,
        Attention::Mla {
            num_heads,
            kv_lora_rank,
            qk_rope_head_dim,
            ..
        } => 2.0 * *num_heads as f64 * (2 * kv_lora_rank + qk_rope_head_dim) as f64,
    };
    // A recurrent layer reads and rewrites its state matrix once per token: about 4
    // FLOPs per SSM-state element (decay/update, then the output contraction).
    let linear = spec
        .state_shape(1, kv::STATE_BYTES)
        .ok()
        .flatten()
        .map_or(0.0, |s| 4.0 * s.ssm_elements as f64);
    spec.count_layers(LayerKind::Full) as f64 * per_ctx_token * ctx_full
        + spec.count_layers(LayerKind::Sliding) as f64 * per_ctx_token * ctx_sliding
        + spec.count_layers(LayerKind::Linear) as f64 * linear
}

/// Runs the capacity model on an already loaded model.
pub fn evaluate_spec(
    spec: &ModelSpec,
    inputs: &CapacityInputs,
) -> Result<CapacityReport, CapacityError> {
    validate(inputs)?;
    let mut gpu = gpu::lookup(&inputs.gpu).ok_or_else(|| CapacityError::UnknownGpu {
        name: inputs.gpu.clone(),
        valid: gpu::names().join(", "),
    })?;
    if let Some(m) = inputs.gpu_mem_gib {
        gpu.memory_gib = m;
    }
    if let Some(b) = inputs.gpu_bandwidth_tbs {
        gpu.bandwidth_tbs = b;
    }
    if let Some(t) = inputs.gpu_tflops {
        gpu.bf16_tflops = t;
        gpu.fp8_tflops = Some(t);
    }
    let tp = u64::from(inputs.tp);
    let kv_bytes = inputs.kv_bytes.unwrap_or(DEFAULT_KV_BYTES);
    let (gpu_hourly, gpu_hourly_source) = match inputs.gpu_hourly {
        Some(p) => (p, "flag"),
        None => (gpu.default_hourly_usd, "default"),
    };

    let mut warnings = Vec::new();
    if let Some(max) = spec.max_position_embeddings
        && inputs.context > max
    {
        warnings.push(format!(
            "--context {} is larger than the model's max_position_embeddings {max}; engines refuse such requests unless you extend the context",
            inputs.context
        ));
    }

    // Weights.
    let weights = weight_parts(spec, inputs.weight_bytes);
    let weight_bytes_total: f64 = weights.iter().map(|w| w.bytes).sum();
    let weight_bytes_per_gpu = weight_bytes_total / tp as f64;

    // Pool.
    let memory_bytes = gpu.memory_gib * GIB;
    let usable = inputs.util * memory_bytes;
    let reserve = inputs.activation_gib * GIB;
    let pool = kv::pool_bytes(memory_bytes, inputs.util, weight_bytes_per_gpu, reserve);
    if pool <= 0.0 {
        return Err(CapacityError::WeightsDoNotFit {
            weights_gib: weight_bytes_per_gpu / GIB,
            reserve_gib: inputs.activation_gib,
            util: inputs.util,
            memory_gib: gpu.memory_gib,
            usable_gib: usable / GIB,
        });
    }

    // KV.
    let state =
        spec.state_shape(tp, kv::STATE_BYTES)
            .map_err(|what| CapacityError::TpDoesNotShard {
                tp: inputs.tp,
                what,
            })?;
    let layout = KvLayout::new(spec, tp, kv_bytes, state.as_ref());
    let block = u64::from(inputs.block_size);
    let per_token = layout.bytes_per_token();
    let per_seq = layout.sequence_bytes_allocated(inputs.context, block);
    let max_concurrent = kv::max_concurrency(pool, &layout, inputs.context, block);
    if max_concurrent < 1.0 {
        return Err(CapacityError::PoolTooSmall {
            context: inputs.context,
            pool_gib: pool / GIB,
            sequence_gib: per_seq / GIB,
        });
    }
    let max_running = (max_concurrent.floor() as u64).min(u64::from(inputs.max_num_seqs));
    let (kv_pool_tokens, kv_pool_blocks) = if per_token > 0.0 {
        let blocks = (pool / (block as f64 * per_token)).floor() as u64;
        ((pool / per_token).floor() as u64, blocks)
    } else {
        (0, 0)
    };

    // Roofline.
    // FP8 weights run FP8 GEMMs; MXFP4 checkpoints (gpt-oss) dequantize to BF16 on
    // most engines and GPUs, so they get the BF16 peak.
    let fp8_gemms = match inputs.weight_bytes {
        Some(b) => b <= 1.0,
        None => spec.weight_format == WeightFormat::Fp8,
    };
    let (peak_tflops, compute_precision) = match gpu.fp8_tflops {
        Some(fp8) if fp8_gemms => (fp8, "fp8"),
        _ => (gpu.bf16_tflops, "bf16"),
    };
    let expert_bytes: f64 = weights
        .iter()
        .filter(|w| w.part == "routed_experts")
        .map(|w| w.bytes)
        // fold from +0.0: an empty f64 `sum()` is −0.0, which would print as -0.0 in JSON.
        .fold(0.0, |a, b| a + b);
    // The embedding is a lookup (one row per token) and the vision tower does not run
    // during text decode, so neither is streamed per step.
    let not_streamed: f64 = weights
        .iter()
        .filter(|w| w.part == "vision" || (w.part == "embedding" && !spec.tie_word_embeddings))
        .map(|w| w.bytes)
        .fold(0.0, |a, b| a + b);
    let attention_flops = attention_flops_per_token(spec, inputs.context);
    let flops_per_token_per_gpu = (2.0 * spec.active_matmul_params() + attention_flops) / tp as f64;
    let step = StepModel {
        fixed_weight_bytes: (weight_bytes_total - expert_bytes - not_streamed) / tp as f64,
        expert_weight_bytes: expert_bytes / tp as f64,
        num_experts: spec.moe.as_ref().map_or(0, |m| m.num_experts),
        top_k: spec.moe.as_ref().map_or(0, |m| m.top_k),
        kv_bytes_per_sequence: layout.sequence_bytes_read(inputs.context),
        flops_per_token: flops_per_token_per_gpu,
        effective_bandwidth: gpu.bandwidth_tbs * 1e12 * inputs.mbu,
        effective_flops: peak_tflops * 1e12 * inputs.mfu,
    };
    let roofline: Vec<RooflinePoint> = roofline::table_batches(max_running)
        .into_iter()
        .map(|b| step.point(b, tp, gpu_hourly))
        .collect();
    let single = step.point(1, tp, gpu_hourly);
    let full = step.point(max_running, tp, gpu_hourly);

    let (kv_heads, kv_heads_per_gpu, head_dim, mla_latent_dim, attention) = match &spec.attention {
        Attention::Gqa {
            num_kv_heads,
            head_dim,
            ..
        } => (
            Some(*num_kv_heads),
            Some(kv::kv_heads_per_gpu(*num_kv_heads, tp)),
            Some(*head_dim),
            None,
            "gqa",
        ),
        Attention::Mla {
            kv_lora_rank,
            qk_rope_head_dim,
            ..
        } => (
            None,
            None,
            None,
            Some(kv_lora_rank + qk_rope_head_dim),
            "mla",
        ),
    };

    Ok(CapacityReport {
        inputs: ResolvedInputs {
            model: spec.name.clone(),
            model_type: spec.model_type.clone(),
            gpu,
            tp: inputs.tp,
            weight_bytes: inputs.weight_bytes,
            weight_format: spec.weight_format,
            kv_bytes,
            context: inputs.context,
            util: inputs.util,
            activation_gib: inputs.activation_gib,
            mbu: inputs.mbu,
            mfu: inputs.mfu,
            gpu_hourly,
            gpu_hourly_source,
            block_size: inputs.block_size,
            max_num_seqs: inputs.max_num_seqs,
        },
        params_total: spec.params.total(),
        params_active: spec.active_params(),
        params_mtp_not_loaded: spec.mtp_params,
        params: spec.params.clone(),
        weights,
        weight_bytes_total,
        weight_bytes_per_gpu,
        kv_geometry: KvGeometry {
            attention,
            full_layers: spec.count_layers(LayerKind::Full),
            sliding_layers: spec.count_layers(LayerKind::Sliding),
            linear_layers: spec.count_layers(LayerKind::Linear),
            sliding_window: spec.sliding_window,
            kv_heads,
            kv_heads_per_gpu,
            head_dim,
            mla_latent_dim,
            elements_per_token_per_layer: kv::elements_per_token_per_layer(&spec.attention, tp),
            mlp_only_layers: spec.count_layers(LayerKind::Mlp),
            state_elements_per_layer_per_gpu: state
                .as_ref()
                .map_or(0, |s| s.conv_elements + s.ssm_elements),
            state_bytes_per_element: kv::STATE_BYTES,
            state_shape: state.clone(),
        },
        kv_bytes_per_token_per_gpu: per_token,
        kv_bytes_per_sequence_per_gpu: per_seq,
        state_bytes_per_sequence_per_gpu: layout.state_bytes_per_sequence,
        usable_bytes_per_gpu: usable,
        activation_reserve_bytes_per_gpu: reserve,
        kv_pool_bytes_per_gpu: pool,
        kv_pool_tokens,
        kv_pool_blocks,
        max_concurrent_sequences: max_concurrent,
        max_running_sequences: max_running,
        peak_tflops,
        compute_precision,
        flops_per_token_per_gpu,
        decode_terms: DecodeTerms {
            weight_bytes_streamed_per_gpu: step.fixed_weight_bytes,
            expert_bytes_per_gpu: step.expert_weight_bytes,
            num_experts: step.num_experts,
            top_k: step.top_k,
            kv_bytes_read_per_sequence_per_gpu: step.kv_bytes_per_sequence,
            matmul_params_per_token: spec.active_matmul_params(),
            attention_flops_per_token: attention_flops,
            effective_bandwidth_bytes_per_second: step.effective_bandwidth,
            effective_flops_per_second: step.effective_flops,
        },
        decode_tokens_per_second_per_sequence: single.tokens_per_second_per_sequence,
        decode_tokens_per_second_aggregate: full.tokens_per_second_aggregate,
        cost_per_million_output_tokens: full.cost_per_million_output_tokens,
        crossover_batch: step.crossover_batch(),
        roofline,
        max_position_embeddings: spec.max_position_embeddings,
        warnings,
        notes: spec.notes.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> CapacityInputs {
        CapacityInputs {
            preset: Some(name.to_string()),
            ..CapacityInputs::default()
        }
    }

    fn run(inputs: CapacityInputs) -> CapacityReport {
        match evaluate(&inputs) {
            Ok(r) => r,
            Err(e) => panic!("evaluate failed: {e}"),
        }
    }

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b
    }

    #[test]
    fn llama_3_1_8b_known_values() {
        let r = run(preset("llama-3.1-8b"));
        assert_eq!(r.params_total, 8_030_261_248);
        assert_eq!(r.kv_bytes_per_token_per_gpu, 131_072.0);
        assert_eq!(r.weight_bytes_total, 2.0 * 8_030_261_248.0);
        // H100, util 0.9, 4.89 GiB reserve: 0.9 × 79.2 − 14.957 − 4.89 = 51.43 GiB.
        let pool_gib = r.kv_pool_bytes_per_gpu / GIB;
        assert!((pool_gib - 51.43).abs() < 0.01, "{pool_gib}");
        // vLLM: whole blocks / blocks per sequence at 8192 tokens (512 blocks).
        assert_eq!(r.kv_pool_blocks, 26_333);
        assert!((r.max_concurrent_sequences - 26_333.0 / 512.0).abs() < 1e-9);
        assert_eq!(r.max_running_sequences, 51);
    }

    #[test]
    fn deepseek_v3_mla_kv_is_the_same_at_any_tp() {
        for tp in [1, 2, 8, 16] {
            let r = evaluate_spec(
                &presets::load("deepseek-v3").unwrap_or_else(|e| panic!("{e}")),
                &CapacityInputs {
                    tp,
                    gpu: "h200".into(),
                    // Weights at 1 B so tp 1 still fits nothing; we only need the KV
                    // number, so give the GPU room.
                    gpu_mem_gib: Some(2000.0),
                    ..preset("deepseek-v3")
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.kv_bytes_per_token_per_gpu, 61.0 * 576.0 * 2.0, "tp {tp}");
            assert_eq!(r.kv_bytes_per_token_per_gpu, 70_272.0);
        }
    }

    #[test]
    fn qwen3_235b_keeps_one_kv_head_per_gpu_at_tp_8() {
        let r = run(CapacityInputs {
            tp: 8,
            gpu: "h200".into(),
            ..preset("qwen3-235b-a22b")
        });
        assert_eq!(r.kv_geometry.kv_heads, Some(4));
        assert_eq!(r.kv_geometry.kv_heads_per_gpu, Some(1));
        assert_eq!(r.kv_bytes_per_token_per_gpu, 94.0 * 2.0 * 128.0 * 2.0);
    }

    /// Published totals, with the tolerance each one allows. Sources: Hugging Face
    /// safetensors counts / model cards (Llama 3.1, Qwen3, Mixtral, Gemma 3), the
    /// DeepSeek-V3 report (671B main model; 685B on the card includes the MTP module),
    /// OpenAI's gpt-oss model card (116.83B / 20.91B total; 5.13B / 3.61B active,
    /// embedding excluded), the Qwen3-Next card (80B total, rounded), the AI21 Jamba 1.5
    /// card (52B total, 51.6B on the Hub) and the Nemotron-H-8B-Base-8K checkpoint.
    #[test]
    fn preset_parameter_counts_match_published_totals() {
        // (preset, published total, relative tolerance)
        let cases: &[(&str, f64, f64)] = &[
            ("llama-3.1-8b", 8_030_261_248.0, 0.0),
            ("llama-3.1-70b", 70.55e9, 0.001),
            ("llama-3.1-405b", 405.85e9, 0.001),
            ("qwen3-8b", 8.19e9, 0.002),
            ("qwen3-32b", 32.76e9, 0.002),
            ("qwen3-235b-a22b", 235.09e9, 0.001),
            ("qwen3-next-80b-a3b", 80e9, 0.005),
            ("mixtral-8x7b", 46.70e9, 0.001),
            ("deepseek-v3", 671.03e9, 0.0005),
            ("gpt-oss-20b", 20.91e9, 0.001),
            ("gpt-oss-120b", 116.83e9, 0.001),
            ("gemma-3-27b", 27.43e9, 0.001),
            // AI21: "12B active and 52B total" (Jamba 1.5 card; 51.6B on the Hub).
            ("jamba-mini-1.5", 51.6e9, 0.001),
            // Nemotron-H-8B-Base-8K safetensors: 8,100,852,736 ("8B").
            ("nemotron-h-8b", 8_100_852_736.0, 0.0),
        ];
        assert_eq!(
            cases.len(),
            presets::names().len(),
            "every preset is checked"
        );
        for (name, published, tol) in cases {
            let spec = presets::load(name).unwrap_or_else(|e| panic!("{e}"));
            let total = spec.params.total() as f64;
            assert!(
                rel(total, *published) <= *tol,
                "{name}: {total} vs published {published} (tolerance {tol})"
            );
        }
    }

    #[test]
    fn moe_active_parameters_match_published_figures() {
        let active_no_embedding = |name: &str| {
            let s = presets::load(name).unwrap_or_else(|e| panic!("{e}"));
            s.active_params() - s.params.embedding as f64
        };
        // (preset, published active without the input embedding, tolerance)
        let cases: &[(&str, f64, f64)] = &[
            ("gpt-oss-120b", 5.13e9, 0.005),
            ("gpt-oss-20b", 3.61e9, 0.005),
            ("deepseek-v3", 36.6e9, 0.005), // 37B incl. embedding
            ("mixtral-8x7b", 12.9e9 - 0.131e9, 0.01),
            ("qwen3-235b-a22b", 22e9, 0.03), // "A22B" is rounded
            ("jamba-mini-1.5", 12e9 - 0.268e9, 0.02), // "12B active", rounded
        ];
        for (name, published, tol) in cases {
            let a = active_no_embedding(name);
            assert!(rel(a, *published) <= *tol, "{name}: {a} vs {published}");
        }
        // Qwen3-Next publishes only "3B activated" of 80B: check the sparsity instead.
        let s = presets::load("qwen3-next-80b-a3b").unwrap_or_else(|e| panic!("{e}"));
        let share = s.active_params() / s.params.total() as f64;
        assert!(share > 0.03 && share < 0.05, "{share}");
    }

    #[test]
    fn deepseek_mtp_weights_are_reported_but_not_loaded() {
        let s = presets::load("deepseek-v3").unwrap_or_else(|e| panic!("{e}"));
        let checkpoint = (s.params.total() + s.mtp_params) as f64;
        // The model card's 685B is the checkpoint: 671B + the MTP layer with its own
        // embedding and head copies.
        assert!(rel(checkpoint, 685e9) < 0.002, "{checkpoint}");
        assert_eq!(s.weight_format, WeightFormat::Fp8);
    }

    #[test]
    fn quantization_config_sets_default_weight_bytes() {
        // gpt-oss: MXFP4 experts; the 120b checkpoint is 60.8 GiB on disk.
        let r = run(CapacityInputs {
            gpu: "h200".into(),
            ..preset("gpt-oss-120b")
        });
        assert!(
            rel(r.weight_bytes_total / GIB, 60.8) < 0.01,
            "{}",
            r.weight_bytes_total / GIB
        );
        let experts = r.weights.iter().find(|w| w.part == "routed_experts");
        assert_eq!(experts.map(|w| w.bytes_per_param), Some(0.53125));
        // --weight-bytes overrides the checkpoint format for every part.
        let r = run(CapacityInputs {
            gpu: "h200".into(),
            tp: 2,
            weight_bytes: Some(2.0),
            ..preset("gpt-oss-120b")
        });
        assert_eq!(r.weight_bytes_total, 2.0 * r.params_total as f64);
        // DeepSeek FP8: linear layers ~1 B, embedding and head stay BF16.
        let s = presets::load("deepseek-v3").unwrap_or_else(|e| panic!("{e}"));
        let parts = weight_parts(&s, None);
        for w in &parts {
            let want = if matches!(w.part, "embedding" | "lm_head" | "norms" | "router") {
                2.0
            } else {
                1.0 + 4.0 / 16384.0
            };
            assert_eq!(w.bytes_per_param, want, "{}", w.part);
        }
    }

    #[test]
    fn sliding_and_linear_layers_are_recognised() {
        let g = presets::load("gemma-3-27b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(g.count_layers(LayerKind::Full), 10); // every 6th of 62
        assert_eq!(g.count_layers(LayerKind::Sliding), 52);
        assert_eq!(g.sliding_window, Some(1024));
        assert!(g.tie_word_embeddings);
        let o = presets::load("gpt-oss-120b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.count_layers(LayerKind::Sliding), 18);
        assert_eq!(o.sliding_window, Some(128));
        let n = presets::load("qwen3-next-80b-a3b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n.count_layers(LayerKind::Full), 12);
        assert_eq!(n.count_layers(LayerKind::Linear), 36);
        let m = presets::load("mixtral-8x7b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.count_layers(LayerKind::Full), 32);
    }

    #[test]
    fn sliding_windows_and_state_shrink_the_per_sequence_footprint() {
        let r = run(CapacityInputs {
            context: 32_768,
            ..preset("gemma-3-27b")
        });
        let full_only = r.kv_bytes_per_token_per_gpu * 32_768.0;
        assert!(r.kv_bytes_per_sequence_per_gpu < 0.25 * full_only);
        let n = run(CapacityInputs {
            gpu: "h200".into(),
            tp: 2,
            ..preset("qwen3-next-80b-a3b")
        });
        // 36 layers × (conv 8192 × 3 + 32 × 128 × 128) / tp 2 × 2 B.
        assert_eq!(
            n.state_bytes_per_sequence_per_gpu,
            36.0 * (8192.0 * 3.0 + 32.0 * 128.0 * 128.0) / 2.0 * 2.0
        );
        // Only the 12 full-attention layers grow with context: 12 × 2 × (2 kv heads / tp 2)
        // × 256 × 2 B.
        assert_eq!(n.kv_bytes_per_token_per_gpu, 12_288.0);
    }

    #[test]
    fn mamba_hybrids_hold_a_fixed_state_per_sequence() {
        let j = presets::load("jamba-mini-1.5").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(j.count_layers(LayerKind::Full), 4); // layers 4, 12, 20, 28
        assert_eq!(j.count_layers(LayerKind::Linear), 28);
        assert_eq!(j.moe.as_ref().map(|m| m.moe_layers), Some(16));
        let n = presets::load("nemotron-h-8b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n.count_layers(LayerKind::Full), 4);
        assert_eq!(n.count_layers(LayerKind::Linear), 24);
        assert_eq!(n.count_layers(LayerKind::Mlp), 24);

        // Jamba, Mamba-1 (vLLM mamba1_state_shape): 28 layers × (conv 3 × 8192/tp +
        // ssm 8192/tp × 16) × 2 B. KV: 4 attention layers × 2 × (8 heads / tp) × 128 × 2 B.
        for tp in [2u32, 4] {
            let r = run(CapacityInputs {
                tp,
                ..preset("jamba-mini-1.5")
            });
            let t = f64::from(tp);
            assert_eq!(
                r.state_bytes_per_sequence_per_gpu,
                28.0 * (3.0 * 8192.0 / t + 8192.0 / t * 16.0) * 2.0
            );
            assert_eq!(
                r.kv_bytes_per_token_per_gpu,
                4.0 * 2.0 * (8.0 / t) * 128.0 * 2.0
            );
        }
        // Nemotron-H-8B, Mamba-2 (mamba2_state_shape): 24 × (conv 3 × (8192 + 2×8×128)
        // + ssm 128 × 64 × 128) × 2 B = 51,806,208 B per sequence, at any context.
        let short = run(CapacityInputs {
            context: 1024,
            ..preset("nemotron-h-8b")
        });
        let long = run(preset("nemotron-h-8b"));
        for r in [&short, &long] {
            assert_eq!(r.state_bytes_per_sequence_per_gpu, 51_806_208.0);
            assert_eq!(r.kv_bytes_per_token_per_gpu, 16_384.0);
        }
        // Concurrency = pool (whole blocks) / (KV blocks at context + state).
        let per_seq = 512.0 * 16.0 * 16_384.0 + 51_806_208.0;
        assert_eq!(long.kv_bytes_per_sequence_per_gpu, per_seq);
        let usable = long.kv_pool_blocks as f64 * 16.0 * 16_384.0;
        assert!(rel(long.max_concurrent_sequences, usable / per_seq) < 1e-12);
        assert!(short.max_concurrent_sequences > 2.5 * long.max_concurrent_sequences);
        let g = &long.kv_geometry;
        assert_eq!(g.mlp_only_layers, 24);
        assert_eq!(
            g.state_shape
                .as_ref()
                .map(|s| (s.conv_elements, s.ssm_elements)),
            Some((30_720, 1_048_576))
        );
        // tp that does not divide the Mamba heads is refused, as vLLM does.
        let e = evaluate(&CapacityInputs {
            tp: 3,
            ..preset("nemotron-h-8b")
        });
        assert!(
            matches!(&e, Err(CapacityError::TpDoesNotShard { tp: 3, .. })),
            "{e:?}"
        );
    }

    #[test]
    fn moe_decode_reads_fewer_bytes_than_all_experts_at_batch_1() {
        let r = run(CapacityInputs {
            gpu: "h200".into(),
            tp: 8,
            weight_bytes: Some(1.0),
            kv_bytes: Some(1.0),
            context: 32_768,
            ..preset("deepseek-v3")
        });
        let d = &r.decode_terms;
        let b1 = &r.roofline[0];
        let expected = d.weight_bytes_streamed_per_gpu
            + d.expert_bytes_per_gpu * 8.0 / 256.0
            + d.kv_bytes_read_per_sequence_per_gpu;
        assert!(rel(b1.bytes_read_per_gpu, expected) < 1e-12);
        assert!(b1.bytes_read_per_gpu < 0.1 * r.weight_bytes_per_gpu);
        assert_eq!(r.kv_bytes_per_token_per_gpu, 35_136.0);
    }

    #[test]
    fn cost_uses_all_gpus_of_the_replica() {
        let r = run(CapacityInputs {
            tp: 4,
            gpu_hourly: Some(2.0),
            ..preset("llama-3.1-70b")
        });
        let want = 2.0 * 4.0 / (3600.0 * r.decode_tokens_per_second_aggregate) * 1e6;
        assert!(rel(r.cost_per_million_output_tokens, want) < 1e-12);
        assert_eq!(r.inputs.gpu_hourly_source, "flag");
    }

    #[test]
    fn bad_inputs_are_named_errors() {
        let bad = |i: CapacityInputs| match evaluate(&i) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted {i:?}"),
        };
        assert!(
            bad(CapacityInputs {
                tp: 0,
                ..preset("llama-3.1-8b")
            })
            .contains("--tp 0")
        );
        for u in [0.0, -0.1, 1.01] {
            assert!(
                bad(CapacityInputs {
                    util: u,
                    ..preset("llama-3.1-8b")
                })
                .contains("(0, 1]")
            );
        }
        assert!(
            bad(CapacityInputs {
                weight_bytes: Some(-1.0),
                ..preset("llama-3.1-8b")
            })
            .contains("--weight-bytes -1")
        );
        assert!(
            bad(CapacityInputs {
                kv_bytes: Some(-2.0),
                ..preset("llama-3.1-8b")
            })
            .contains("--kv-bytes -2")
        );
        let e = bad(preset("llama-9"));
        assert!(
            e.contains("llama-3.1-8b") && e.contains("gpt-oss-120b"),
            "{e}"
        );
        let e = bad(CapacityInputs {
            gpu: "v100".into(),
            ..preset("llama-3.1-8b")
        });
        assert!(e.contains("mi355x") && e.contains("h100-pcie"), "{e}");
        assert_eq!(
            evaluate(&CapacityInputs::default()),
            Err(CapacityError::NoModel)
        );
        let e = bad(preset("llama-3.1-405b"));
        assert!(e.contains("weights do not fit"), "{e}");
        let e = bad(CapacityInputs {
            context: 2_000_000,
            ..preset("llama-3.1-8b")
        });
        assert!(
            e.contains("cannot hold one sequence of 2000000 tokens"),
            "{e}"
        );
        assert!(e.contains("51.43") && e.contains("GiB"), "{e}");
    }

    #[test]
    fn context_beyond_the_model_limit_is_a_warning() {
        let r = run(CapacityInputs {
            context: 65_536,
            ..preset("qwen3-8b")
        });
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].contains("40960"));
    }

    #[test]
    fn hf_config_is_read_from_disk() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            include_str!("../../tests/fixtures/models/qwen3-8b/config.json"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let from_file = run(CapacityInputs {
            hf_config: Some(path.clone()),
            ..CapacityInputs::default()
        });
        let from_preset = run(preset("qwen3-8b"));
        assert_eq!(from_file.params_total, from_preset.params_total);
        assert_eq!(from_file.inputs.model, path.display().to_string());
        let missing = evaluate(&CapacityInputs {
            hf_config: Some(dir.path().join("nope.json")),
            ..CapacityInputs::default()
        });
        assert!(matches!(missing, Err(CapacityError::ReadConfig { .. })));
    }

    #[test]
    fn inputs_deserialize_with_cli_defaults_and_reject_unknown_fields() {
        let i: CapacityInputs = serde_json::from_str(r#"{"preset": "llama-3.1-8b", "tp": 2}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(i.tp, 2);
        assert_eq!(i.context, DEFAULT_CONTEXT);
        assert_eq!(i.util, DEFAULT_UTIL);
        assert!(serde_json::from_str::<CapacityInputs>(r#"{"tpp": 2}"#).is_err());
        let schema = serde_json::to_string(&schemars::schema_for!(CapacityInputs))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(schema.contains("activation_gib"));
    }

    #[test]
    fn report_has_the_json_contract_keys_as_numbers() {
        let v = serde_json::to_value(run(preset("llama-3.1-8b"))).unwrap_or_else(|e| panic!("{e}"));
        for key in [
            "weight_bytes_per_gpu",
            "kv_bytes_per_token_per_gpu",
            "kv_pool_bytes_per_gpu",
            "kv_pool_tokens",
            "max_concurrent_sequences",
            "max_running_sequences",
            "decode_tokens_per_second_per_sequence",
            "decode_tokens_per_second_aggregate",
            "cost_per_million_output_tokens",
        ] {
            assert!(v[key].is_number(), "{key}: {}", v[key]);
        }
    }
}
