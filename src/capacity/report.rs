//! The result of the capacity model: the `--json` contract.

use serde::Serialize;

use super::gpu::GpuSpec;
use super::model::{ParamCounts, StateShape, WeightFormat};
use super::roofline::{RooflinePoint, StepModel};

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
    pub state_shape: Option<StateShape>,
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
    /// The decode step the roofline is made of, for its figure at any batch (the
    /// daemon's roofline at the live batch); not part of the JSON.
    #[serde(skip)]
    pub step: StepModel,
    /// Model max_position_embeddings, when known.
    pub max_position_embeddings: Option<u64>,
    /// Things the user should know (context beyond the model's limit, …).
    pub warnings: Vec<String>,
    /// Parts of the checkpoint the model does not cover.
    pub notes: Vec<String>,
}
