//! Runs the capacity model: weights, KV pool, concurrency and the decode roofline.

use super::error::CapacityError;
use super::gpu::{self, GpuSpec};
use super::inputs::{CapacityInputs, DEFAULT_KV_BYTES, GIB, validate};
use super::kv::{self, KvLayout};
use super::model::{self, Attention, LayerKind, ModelSpec, StateShape, WeightFormat};
use super::presets;
use super::report::{CapacityReport, DecodeTerms, KvGeometry, ResolvedInputs, WeightPart};
use super::roofline::{self, RooflinePoint, StepModel};

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
    let gpu = resolve_gpu(inputs)?;
    let tp = u64::from(inputs.tp);
    let kv_bytes = inputs.kv_bytes.unwrap_or(DEFAULT_KV_BYTES);
    let warnings = context_warnings(spec, inputs);

    // Weights.
    let weights = weight_parts(spec, inputs.weight_bytes);
    let weight_bytes_total: f64 = weights.iter().map(|w| w.bytes).sum();
    let weight_bytes_per_gpu = weight_bytes_total / tp as f64;

    let pool = Pool::size(&gpu, inputs, weight_bytes_per_gpu)?;
    let kv = KvSizing::compute(spec, inputs, kv_bytes, pool.pool)?;
    let roof = Roofline::compute(spec, inputs, &gpu, &weights, weight_bytes_total, &kv);
    let step = &roof.step;
    let single = step.point(1, tp, roof.gpu_hourly);
    let full = step.point(kv.max_running, tp, roof.gpu_hourly);
    let roofline: Vec<RooflinePoint> = roofline::table_batches(kv.max_running)
        .into_iter()
        .map(|b| step.point(b, tp, roof.gpu_hourly))
        .collect();

    Ok(CapacityReport {
        params_total: spec.params.total(),
        params_active: spec.active_params(),
        params_mtp_not_loaded: spec.mtp_params,
        params: spec.params.clone(),
        weight_bytes_total,
        weight_bytes_per_gpu,
        kv_geometry: kv_geometry(spec, tp, kv.state.as_ref()),
        kv_bytes_per_token_per_gpu: kv.per_token,
        kv_bytes_per_sequence_per_gpu: kv.per_seq,
        state_bytes_per_sequence_per_gpu: kv.layout.state_bytes_per_sequence,
        usable_bytes_per_gpu: pool.usable,
        activation_reserve_bytes_per_gpu: pool.reserve,
        kv_pool_bytes_per_gpu: pool.pool,
        kv_pool_tokens: kv.pool_tokens,
        kv_pool_blocks: kv.pool_blocks,
        max_concurrent_sequences: kv.max_concurrent,
        max_running_sequences: kv.max_running,
        peak_tflops: roof.peak_tflops,
        compute_precision: roof.compute_precision,
        flops_per_token_per_gpu: step.flops_per_token,
        decode_terms: decode_terms(spec, step, roof.attention_flops),
        decode_tokens_per_second_per_sequence: single.tokens_per_second_per_sequence,
        decode_tokens_per_second_aggregate: full.tokens_per_second_aggregate,
        cost_per_million_output_tokens: full.cost_per_million_output_tokens,
        crossover_batch: step.crossover_batch(),
        roofline,
        step: *step,
        max_position_embeddings: spec.max_position_embeddings,
        warnings,
        notes: spec.notes.clone(),
        weights,
        inputs: resolved_inputs(spec, inputs, gpu, kv_bytes, &roof),
    })
}

/// The GPU named by the inputs, with the `--gpu-*` overrides applied.
fn resolve_gpu(inputs: &CapacityInputs) -> Result<GpuSpec, CapacityError> {
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
    Ok(gpu)
}

/// Warnings about the inputs that do not stop the model.
fn context_warnings(spec: &ModelSpec, inputs: &CapacityInputs) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(max) = spec.max_position_embeddings
        && inputs.context > max
    {
        warnings.push(format!(
            "--context {} is larger than the model's max_position_embeddings {max}; engines refuse such requests unless you extend the context",
            inputs.context
        ));
    }
    warnings
}

/// GPU memory after the weights and the reserve: what is left for the KV cache.
struct Pool {
    /// util × GPU memory.
    usable: f64,
    /// Activation reserve.
    reserve: f64,
    /// util × memory − weights − reserve (positive).
    pool: f64,
}

impl Pool {
    fn size(
        gpu: &GpuSpec,
        inputs: &CapacityInputs,
        weight_bytes_per_gpu: f64,
    ) -> Result<Self, CapacityError> {
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
        Ok(Self {
            usable,
            reserve,
            pool,
        })
    }
}

/// What the KV pool holds: bytes per token and sequence, and how many sequences fit.
struct KvSizing {
    state: Option<StateShape>,
    layout: KvLayout,
    per_token: f64,
    per_seq: f64,
    max_concurrent: f64,
    max_running: u64,
    pool_tokens: u64,
    pool_blocks: u64,
}

impl KvSizing {
    fn compute(
        spec: &ModelSpec,
        inputs: &CapacityInputs,
        kv_bytes: f64,
        pool: f64,
    ) -> Result<Self, CapacityError> {
        let tp = u64::from(inputs.tp);
        let state = spec.state_shape(tp, kv::STATE_BYTES).map_err(|what| {
            CapacityError::TpDoesNotShard {
                tp: inputs.tp,
                what,
            }
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
        let (pool_tokens, pool_blocks) = if per_token > 0.0 {
            let blocks = (pool / (block as f64 * per_token)).floor() as u64;
            ((pool / per_token).floor() as u64, blocks)
        } else {
            (0, 0)
        };
        Ok(Self {
            state,
            layout,
            per_token,
            per_seq,
            max_concurrent,
            max_running,
            pool_tokens,
            pool_blocks,
        })
    }
}

/// The decode step model and the peak and price it runs at.
struct Roofline {
    step: StepModel,
    peak_tflops: f64,
    compute_precision: &'static str,
    attention_flops: f64,
    gpu_hourly: f64,
    gpu_hourly_source: &'static str,
}

impl Roofline {
    fn compute(
        spec: &ModelSpec,
        inputs: &CapacityInputs,
        gpu: &GpuSpec,
        weights: &[WeightPart],
        weight_bytes_total: f64,
        kv: &KvSizing,
    ) -> Self {
        let tp = u64::from(inputs.tp);
        let (gpu_hourly, gpu_hourly_source) = match inputs.gpu_hourly {
            Some(p) => (p, "flag"),
            None => (gpu.default_hourly_usd, "default"),
        };
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
        let flops_per_token_per_gpu =
            (2.0 * spec.active_matmul_params() + attention_flops) / tp as f64;
        let step = StepModel {
            fixed_weight_bytes: (weight_bytes_total - expert_bytes - not_streamed) / tp as f64,
            expert_weight_bytes: expert_bytes / tp as f64,
            num_experts: spec.moe.as_ref().map_or(0, |m| m.num_experts),
            top_k: spec.moe.as_ref().map_or(0, |m| m.top_k),
            kv_bytes_per_sequence: kv.layout.sequence_bytes_read(inputs.context),
            flops_per_token: flops_per_token_per_gpu,
            effective_bandwidth: gpu.bandwidth_tbs * 1e12 * inputs.mbu,
            effective_flops: peak_tflops * 1e12 * inputs.mfu,
        };
        Self {
            step,
            peak_tflops,
            compute_precision,
            attention_flops,
            gpu_hourly,
            gpu_hourly_source,
        }
    }
}

/// The inputs after defaults and lookups, for the report.
fn resolved_inputs(
    spec: &ModelSpec,
    inputs: &CapacityInputs,
    gpu: GpuSpec,
    kv_bytes: f64,
    roof: &Roofline,
) -> ResolvedInputs {
    ResolvedInputs {
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
        gpu_hourly: roof.gpu_hourly,
        gpu_hourly_source: roof.gpu_hourly_source,
        block_size: inputs.block_size,
        max_num_seqs: inputs.max_num_seqs,
    }
}

/// The KV geometry the report was computed from.
fn kv_geometry(spec: &ModelSpec, tp: u64, state: Option<&StateShape>) -> KvGeometry {
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
    KvGeometry {
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
        state_elements_per_layer_per_gpu: state.map_or(0, |s| s.conv_elements + s.ssm_elements),
        state_bytes_per_element: kv::STATE_BYTES,
        state_shape: state.cloned(),
    }
}

/// The per-GPU terms of the decode roofline.
fn decode_terms(spec: &ModelSpec, step: &StepModel, attention_flops: f64) -> DecodeTerms {
    DecodeTerms {
        weight_bytes_streamed_per_gpu: step.fixed_weight_bytes,
        expert_bytes_per_gpu: step.expert_weight_bytes,
        num_experts: step.num_experts,
        top_k: step.top_k,
        kv_bytes_read_per_sequence_per_gpu: step.kv_bytes_per_sequence,
        matmul_params_per_token: spec.active_matmul_params(),
        attention_flops_per_token: attention_flops,
        effective_bandwidth_bytes_per_second: step.effective_bandwidth,
        effective_flops_per_second: step.effective_flops,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::inputs::{DEFAULT_CONTEXT, DEFAULT_UTIL};

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
            include_str!("../../presets/models/qwen3-8b/config.json"),
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
