//! Model specs: parses a Hugging Face `config.json` into the few numbers the capacity
//! model needs (layer kinds, KV geometry, MoE shape) and counts parameters by component.
//! Pure: takes the JSON text, never opens files (presets and `--hf-config` both land here).

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::CapacityError;

/// How a layer keeps per-sequence state during decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    /// Full attention: keeps K/V for every token of the sequence.
    Full,
    /// Sliding-window attention: keeps K/V for at most `window` tokens.
    Sliding,
    /// Linear attention / SSM (Gated DeltaNet, Mamba): a fixed-size state per sequence.
    Linear,
    /// A block with only an MLP and no sequence mixer (Nemotron-H `-`): no per-sequence
    /// state at all.
    Mlp,
}

/// Attention geometry that determines the KV-cache layout.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Attention {
    /// Multi-head / grouped-query attention: K and V per KV head.
    Gqa {
        num_heads: u64,
        num_kv_heads: u64,
        head_dim: u64,
    },
    /// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): one compressed latent of
    /// `kv_lora_rank` plus a shared RoPE key of `qk_rope_head_dim` per token and layer.
    Mla {
        num_heads: u64,
        q_lora_rank: Option<u64>,
        kv_lora_rank: u64,
        qk_nope_head_dim: u64,
        qk_rope_head_dim: u64,
        v_head_dim: u64,
    },
}

/// Mixture-of-experts shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moe {
    /// Routed experts per MoE layer (all of them resident in memory).
    pub num_experts: u64,
    /// Routed experts each token uses.
    pub top_k: u64,
    /// Intermediate size of one routed expert.
    pub expert_intermediate_size: u64,
    /// Layers whose MLP is an MoE block (the rest are dense).
    pub moe_layers: u64,
}

/// Gated DeltaNet / linear-attention state geometry (Qwen3-Next).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinearAttention {
    pub num_key_heads: u64,
    pub num_value_heads: u64,
    pub key_head_dim: u64,
    pub value_head_dim: u64,
    pub conv_kernel: u64,
}

/// Mamba mixer geometry. Jamba uses Mamba-1 (selective scan, one state row per inner
/// channel); Nemotron-H uses Mamba-2 (SSD: a head_dim × d_state matrix per head, B/C
/// shared within `n_groups` groups).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mamba {
    Mamba1 {
        /// mamba_expand × hidden_size.
        d_inner: u64,
        d_state: u64,
        d_conv: u64,
        dt_rank: u64,
        conv_bias: bool,
        proj_bias: bool,
    },
    Mamba2 {
        num_heads: u64,
        head_dim: u64,
        n_groups: u64,
        d_state: u64,
        conv_kernel: u64,
        conv_bias: bool,
        proj_bias: bool,
        /// Bytes per SSM-state element when the config pins `mamba_ssm_cache_dtype`
        /// (vLLM applies it for Nemotron-H); `None` = the model dtype.
        ssm_cache_bytes: Option<f64>,
    },
}

impl Mamba {
    /// Inner (expanded) width: what in_proj's x branch and out_proj's input are.
    pub fn d_inner(&self) -> u64 {
        match self {
            Mamba::Mamba1 { d_inner, .. } => *d_inner,
            // vLLM and transformers size Mamba-2 as heads × head_dim; the config's
            // `expand` is not read.
            Mamba::Mamba2 {
                num_heads,
                head_dim,
                ..
            } => num_heads * head_dim,
        }
    }

    /// Parameters of one Mamba mixer (without the block's norm), following the modules
    /// of `transformers` `JambaMambaMixer` / `NemotronHMamba2Mixer` (= vLLM `MambaMixer`
    /// / `MambaMixer2`).
    pub fn params(&self, hidden: u64) -> u64 {
        let di = self.d_inner();
        match *self {
            Mamba::Mamba1 {
                d_state,
                d_conv,
                dt_rank,
                conv_bias,
                proj_bias,
                ..
            } => {
                let in_proj = hidden * 2 * di + if proj_bias { 2 * di } else { 0 };
                let conv = di * d_conv + if conv_bias { di } else { 0 };
                let x_proj = di * (dt_rank + 2 * d_state);
                let dt_proj = dt_rank * di + di;
                let a_log_and_d = di * d_state + di;
                let out_proj = di * hidden + if proj_bias { hidden } else { 0 };
                // Jamba's dt/B/C RMSNorms inside the mixer.
                let inner_norms = dt_rank + 2 * d_state;
                in_proj + conv + x_proj + dt_proj + a_log_and_d + out_proj + inner_norms
            }
            Mamba::Mamba2 {
                num_heads,
                n_groups,
                d_state,
                conv_kernel,
                conv_bias,
                proj_bias,
                ..
            } => {
                let conv_dim = di + 2 * n_groups * d_state;
                // in_proj emits z (gate), x·B·C (through the conv) and dt per head.
                let proj = di + conv_dim + num_heads;
                let in_proj = hidden * proj + if proj_bias { proj } else { 0 };
                let conv = conv_dim * conv_kernel + if conv_bias { conv_dim } else { 0 };
                let dt_bias_a_log_d = 3 * num_heads;
                let gated_norm = di;
                let out_proj = di * hidden + if proj_bias { hidden } else { 0 };
                in_proj + conv + dt_bias_a_log_d + gated_norm + out_proj
            }
        }
    }
}

impl Mamba {
    /// vLLM `MambaStateShapeCalculator.mamba1_state_shape` / `mamba2_state_shape`.
    pub fn state_shape(&self, tp: u64, state_bytes: f64) -> Result<StateShape, String> {
        let di = self.d_inner();
        match *self {
            Mamba::Mamba1 {
                d_state, d_conv, ..
            } => {
                // conv (d_conv − 1, d_inner / tp), ssm (d_inner / tp, d_state).
                let di_gpu = shard(di, tp, "Mamba d_inner (mamba_expand × hidden_size)")?;
                let k1 = d_conv.saturating_sub(1);
                Ok(StateShape {
                    kind: "mamba1",
                    conv_elements: k1 * di_gpu,
                    ssm_elements: di_gpu * d_state,
                    conv_bytes_per_element: state_bytes,
                    ssm_bytes_per_element: state_bytes,
                    formula: format!(
                        "conv (d_conv − 1) {k1} × d_inner {di} / tp {tp} + ssm d_inner {di} / tp {tp} × d_state {d_state}"
                    ),
                })
            }
            Mamba::Mamba2 {
                num_heads,
                head_dim,
                n_groups,
                d_state,
                conv_kernel,
                ssm_cache_bytes,
                ..
            } => {
                // Groups that tp does not divide are replicated so every head shard has
                // its group: n_groups + (tp − n_groups) = tp (`extra_groups_for_head_shards`).
                let groups = if n_groups.is_multiple_of(tp) {
                    n_groups
                } else {
                    tp
                };
                let conv_dim = di + 2 * groups * d_state;
                let conv_gpu = shard(
                    conv_dim,
                    tp,
                    "Mamba-2 conv width (d_inner + 2 × n_groups × d_state)",
                )?;
                let heads_gpu = shard(num_heads, tp, "mamba_num_heads")?;
                let k1 = conv_kernel.saturating_sub(1);
                Ok(StateShape {
                    kind: "mamba2",
                    conv_elements: k1 * conv_gpu,
                    ssm_elements: heads_gpu * head_dim * d_state,
                    conv_bytes_per_element: state_bytes,
                    ssm_bytes_per_element: ssm_cache_bytes.unwrap_or(state_bytes),
                    formula: format!(
                        "conv (kernel − 1) {k1} × (d_inner {di} + 2 × n_groups {groups} × d_state {d_state}) / tp {tp} + ssm heads {num_heads} / tp {tp} × head_dim {head_dim} × d_state {d_state}"
                    ),
                })
            }
        }
    }
}

/// Recurrent state one linear/SSM layer keeps per sequence on one GPU, as vLLM's
/// `MambaStateShapeCalculator` (`model_executor/layers/mamba/mamba_utils.py`) sizes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateShape {
    /// "gated_delta_net", "mamba1" or "mamba2".
    pub kind: &'static str,
    /// Short-convolution history, elements per layer per GPU (model dtype).
    pub conv_elements: u64,
    /// Recurrent SSM / delta-rule matrix, elements per layer per GPU.
    pub ssm_elements: u64,
    /// Bytes per conv-state element.
    pub conv_bytes_per_element: f64,
    /// Bytes per SSM-state element.
    pub ssm_bytes_per_element: f64,
    /// The shapes with the numbers in, for `--explain`.
    pub formula: String,
}

impl StateShape {
    /// Bytes one layer holds per sequence on one GPU.
    pub fn bytes_per_layer(&self) -> f64 {
        self.conv_elements as f64 * self.conv_bytes_per_element
            + self.ssm_elements as f64 * self.ssm_bytes_per_element
    }

    /// Human name of the layer kind.
    pub fn label(&self) -> &'static str {
        match self.kind {
            "mamba1" => "Mamba-1",
            "mamba2" => "Mamba-2",
            _ => "Gated DeltaNet",
        }
    }
}

/// `divide(n, tp)` as vLLM does it: the shard must be exact.
fn shard(n: u64, tp: u64, what: &str) -> Result<u64, String> {
    if tp == 0 || !n.is_multiple_of(tp) {
        return Err(format!("{what} {n} is not divisible by --tp {tp}"));
    }
    Ok(n / tp)
}

/// How the checkpoint stores its weights (sets the default bytes per parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightFormat {
    /// BF16/FP16 everywhere.
    Bf16,
    /// FP8 linear layers; embeddings, norms and routers stay BF16.
    Fp8,
    /// MXFP4 routed experts (4-bit values + one 8-bit scale per 32), the rest BF16.
    Mxfp4,
}

/// Parameter counts split by what they are, so quantization and MoE routing can treat
/// each part differently. Plain numbers of parameters, not bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ParamCounts {
    /// Input token embedding.
    pub embedding: u64,
    /// Output projection (0 when tied to the embedding).
    pub lm_head: u64,
    /// Sequence mixers: attention projections, linear-attention and Mamba mixers, their
    /// biases, q/k norms, sinks.
    pub attention: u64,
    /// Dense MLPs.
    pub dense_mlp: u64,
    /// Routed experts (all resident; a token uses top_k of them).
    pub routed_experts: u64,
    /// Shared experts (every token uses them).
    pub shared_experts: u64,
    /// MoE routers (and their biases).
    pub router: u64,
    /// Layer norms.
    pub norms: u64,
    /// Vision tower and multimodal projector.
    pub vision: u64,
}

impl ParamCounts {
    pub fn total(&self) -> u64 {
        self.embedding
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
            + self.norms
            + self.vision
    }
}

/// A language model as the capacity model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSpec {
    /// Preset name or the config file path.
    pub name: String,
    /// `model_type` of the text model.
    pub model_type: String,
    pub hidden_size: u64,
    pub num_layers: u64,
    pub vocab_size: u64,
    pub max_position_embeddings: Option<u64>,
    pub tie_word_embeddings: bool,
    pub attention: Attention,
    /// One entry per decoder layer.
    pub layers: Vec<LayerKind>,
    /// Window of the sliding layers in tokens (when there are any).
    pub sliding_window: Option<u64>,
    pub moe: Option<Moe>,
    pub linear_attention: Option<LinearAttention>,
    /// Mamba mixer of the `Linear` layers of Mamba hybrids (Jamba, Nemotron-H).
    pub mamba: Option<Mamba>,
    pub weight_format: WeightFormat,
    pub params: ParamCounts,
    /// Multi-token-prediction weights stored in the checkpoint but not loaded for plain
    /// decoding (DeepSeek-V3's layer 61 with its own copies of embedding and head).
    pub mtp_params: u64,
    /// Things the parser could not model, for the report.
    pub notes: Vec<String>,
}

impl ModelSpec {
    pub fn count_layers(&self, kind: LayerKind) -> u64 {
        self.layers.iter().filter(|k| **k == kind).count() as u64
    }

    /// Per-sequence state of one `Linear` layer on one GPU at `tensor parallel = tp`, or
    /// `None` when the model has no such layers. `state_bytes` is the model dtype's
    /// size (conv state, and the SSM state unless the config pins another dtype).
    /// Errors name the dimension that tp does not divide (vLLM refuses such a split).
    pub fn state_shape(&self, tp: u64, state_bytes: f64) -> Result<Option<StateShape>, String> {
        if let Some(m) = &self.mamba {
            return m.state_shape(tp, state_bytes).map(Some);
        }
        let Some(la) = &self.linear_attention else {
            return Ok(None);
        };
        // gated_delta_net_state_shape: conv (conv_dim / tp, kernel − 1) and the delta-rule
        // matrix (v_heads / tp, k_head_dim, v_head_dim).
        let conv_dim =
            2 * la.num_key_heads * la.key_head_dim + la.num_value_heads * la.value_head_dim;
        let conv_dim_gpu = shard(conv_dim, tp, "linear-attention conv width")?;
        let v_heads_gpu = shard(la.num_value_heads, tp, "linear_num_value_heads")?;
        let k1 = la.conv_kernel.saturating_sub(1);
        Ok(Some(StateShape {
            kind: "gated_delta_net",
            conv_elements: conv_dim_gpu * k1,
            ssm_elements: v_heads_gpu * la.key_head_dim * la.value_head_dim,
            conv_bytes_per_element: state_bytes,
            ssm_bytes_per_element: state_bytes,
            formula: format!(
                "conv (2·k_dim + v_dim) {conv_dim} / tp {tp} × (kernel − 1) {k1} + v_heads {} / tp {tp} × k_head_dim {} × v_head_dim {}",
                la.num_value_heads, la.key_head_dim, la.value_head_dim
            ),
        }))
    }

    /// Parameters whose matmuls run for every token: everything except the embedding
    /// lookup and the vision tower, with routed experts scaled to top_k / num_experts.
    pub fn active_matmul_params(&self) -> f64 {
        let p = &self.params;
        let routed = match &self.moe {
            Some(m) if m.num_experts > 0 => {
                p.routed_experts as f64 * m.top_k as f64 / m.num_experts as f64
            }
            _ => p.routed_experts as f64,
        };
        (p.lm_head.max(if self.tie_word_embeddings {
            p.embedding
        } else {
            0
        }) + p.attention
            + p.dense_mlp
            + p.shared_experts
            + p.router
            + p.norms) as f64
            + routed
    }

    /// Parameters a token touches, the "active" figure model cards publish (embedding
    /// and head included, vision excluded).
    pub fn active_params(&self) -> f64 {
        let p = &self.params;
        let routed = match &self.moe {
            Some(m) if m.num_experts > 0 => {
                p.routed_experts as f64 * m.top_k as f64 / m.num_experts as f64
            }
            _ => p.routed_experts as f64,
        };
        (p.embedding
            + p.lm_head
            + p.attention
            + p.dense_mlp
            + p.shared_experts
            + p.router
            + p.norms) as f64
            + routed
    }
}

/// Reads config fields with the field name in every error.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    source: &'a str,
}

impl<'a> Fields<'a> {
    fn invalid(&self, field: &str, reason: impl Into<String>) -> CapacityError {
        CapacityError::InvalidField {
            source_name: self.source.to_string(),
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    fn missing(&self, field: &str) -> CapacityError {
        CapacityError::MissingField {
            source_name: self.source.to_string(),
            field: field.to_string(),
        }
    }

    /// A positive integer under the first of `keys` that is present and not null.
    fn opt_u64(&self, keys: &[&str]) -> Result<Option<u64>, CapacityError> {
        for key in keys {
            match self.obj.get(*key) {
                None | Some(Value::Null) => continue,
                Some(Value::Number(n)) => {
                    if let Some(v) = n.as_u64() {
                        return Ok(Some(v));
                    }
                    // Some configs write integers as 4096.0.
                    if let Some(f) = n.as_f64()
                        && f >= 0.0
                        && f.fract() == 0.0
                        && f < 9.0e15
                    {
                        return Ok(Some(f as u64));
                    }
                    return Err(
                        self.invalid(key, format!("expected a non-negative integer, got {n}"))
                    );
                }
                Some(other) => {
                    return Err(self.invalid(key, format!("expected an integer, got {other}")));
                }
            }
        }
        Ok(None)
    }

    fn req_u64(&self, keys: &[&str]) -> Result<u64, CapacityError> {
        self.opt_u64(keys)?.ok_or_else(|| self.missing(keys[0]))
    }

    fn positive(&self, keys: &[&str]) -> Result<u64, CapacityError> {
        let v = self.req_u64(keys)?;
        if v == 0 {
            return Err(self.invalid(keys[0], "must be greater than 0"));
        }
        Ok(v)
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, CapacityError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.invalid(key, format!("expected true or false, got {other}"))),
        }
    }

    fn opt_str(&self, key: &str) -> Option<&'a str> {
        self.obj.get(key).and_then(Value::as_str)
    }
}

/// Class defaults from `transformers` for fields that real checkpoints leave out
/// (gemma-3-27b's `text_config` omits vocab size, context and the sliding pattern).
fn family_default(model_type: &str, field: &str) -> Option<u64> {
    match (model_type, field) {
        // transformers/models/gemma3/configuration_gemma3.py (Gemma3TextConfig)
        ("gemma3_text", "vocab_size") => Some(262_208),
        ("gemma3_text", "max_position_embeddings") => Some(131_072),
        ("gemma3_text", "sliding_window_pattern") => Some(6),
        // Gemma 2 alternates local and global layers.
        ("gemma2", "sliding_window_pattern") => Some(2),
        _ => None,
    }
}

/// Parses a Hugging Face `config.json`. `name` labels the model in errors and reports.
pub fn parse_hf_config(name: &str, json: &str) -> Result<ModelSpec, CapacityError> {
    let root = parse_root(name, json)?;
    // Multimodal wrappers (Gemma 3, Llama 4, Qwen-VL) keep the language model in
    // `text_config`; its fields win, the wrapper's fill gaps (quantization_config).
    let text = match root.get("text_config") {
        Some(Value::Object(t)) => t,
        _ => &root,
    };
    let f = Fields {
        obj: text,
        source: name,
    };
    let top = Fields {
        obj: &root,
        source: name,
    };
    let model_type = f
        .opt_str("model_type")
        .or_else(|| top.opt_str("model_type"))
        .unwrap_or("unknown")
        .to_string();
    let with_default = |keys: &[&str]| -> Result<Option<u64>, CapacityError> {
        Ok(f.opt_u64(keys)?
            .or_else(|| family_default(&model_type, keys[0])))
    };

    refuse_unknown_ssm(&f, &model_type)?;
    let hidden = f.positive(&["hidden_size", "n_embd", "d_model"])?;
    let num_layers = f.positive(&["num_hidden_layers", "n_layer", "num_layers"])?;
    if num_layers > MAX_LAYERS {
        return Err(f.invalid(
            "num_hidden_layers",
            format!("{num_layers} is beyond any real model (at most {MAX_LAYERS})"),
        ));
    }
    let num_heads = f.positive(&["num_attention_heads", "n_head"])?;
    let vocab_size = with_default(&["vocab_size"])?.ok_or_else(|| f.missing("vocab_size"))?;
    let max_pos = with_default(&["max_position_embeddings", "n_positions"])?;
    let is_gemma = model_type.starts_with("gemma");
    let tie = f
        .opt_bool("tie_word_embeddings")?
        .or(top.opt_bool("tie_word_embeddings")?)
        // Gemma ties its embeddings by class default; most other families do not.
        .unwrap_or(is_gemma);

    let mut notes = Vec::new();
    let attention = attention_geometry(&f, hidden, num_heads)?;
    let mixers = Mixers::parse(&f, &model_type, num_layers, hidden, with_default)?;
    let (moe, moe_mask) = moe_shape(&f, num_layers)?;
    let dense_layers = num_layers - moe.as_ref().map_or(0, |m| m.moe_layers);
    let intermediate = if dense_layers > 0 {
        f.positive(&["intermediate_size", "n_inner", "ffn_dim"])?
    } else {
        0
    };

    let shared_inter = shared_expert_size(&f)?;
    check_scale(
        &f,
        num_layers,
        &[
            hidden,
            intermediate,
            moe.as_ref().map_or(0, |m| m.expert_intermediate_size),
            shared_inter,
            attention_width(&attention),
            mixers.mamba.as_ref().map_or(0, mamba_width),
            mixers
                .linear_attention
                .as_ref()
                .map_or(0, linear_attention_width),
        ],
        moe.as_ref().map_or(0, |m| m.num_experts),
        vocab_size,
    )?;
    let weight_format = weight_format(&root, text, name, &mut notes)?;

    let mut spec = ModelSpec {
        name: name.to_string(),
        model_type: model_type.clone(),
        hidden_size: hidden,
        num_layers,
        vocab_size,
        max_position_embeddings: max_pos,
        tie_word_embeddings: tie,
        attention,
        layers: mixers.layers,
        sliding_window: mixers.sliding_window,
        moe,
        linear_attention: mixers.linear_attention,
        mamba: mixers.mamba,
        weight_format,
        params: ParamCounts::default(),
        mtp_params: 0,
        notes,
    };
    spec.params = count_params(&spec, &f, intermediate, shared_inter, &moe_mask)?;
    spec.params.vision = vision_params(&root, hidden, &mut spec.notes)?;
    spec.mtp_params = mtp_params(&spec, &f, shared_inter)?;
    Ok(spec)
}

/// The top-level JSON object of a config.
fn parse_root(name: &str, json: &str) -> Result<Map<String, Value>, CapacityError> {
    let root: Value = serde_json::from_str(json).map_err(|e| CapacityError::ConfigSyntax {
        source_name: name.to_string(),
        message: e.to_string(),
    })?;
    let Value::Object(root) = root else {
        return Err(CapacityError::ConfigSyntax {
            source_name: name.to_string(),
            message: "the top level is not a JSON object".to_string(),
        });
    };
    Ok(root)
}

/// SSM fields without a layout we know (pure Mamba, Zamba, Falcon-H1 …) would have
/// their Mamba layers counted as attention: refuse rather than guess.
fn refuse_unknown_ssm(f: &Fields<'_>, model_type: &str) -> Result<(), CapacityError> {
    let known_hybrid =
        f.obj.contains_key("hybrid_override_pattern") || f.obj.contains_key("attn_layer_period");
    for key in ["mamba_d_state", "ssm_state_size", "state_size"] {
        if !known_hybrid && f.obj.contains_key(key) {
            return Err(CapacityError::Unsupported {
                source_name: f.source.to_string(),
                what: format!(
                    "SSM layers ({key}, model_type {model_type}) without attn_layer_period (Jamba) or hybrid_override_pattern (Nemotron-H)"
                ),
            });
        }
    }
    Ok(())
}

/// Attention geometry: MLA when the config has `kv_lora_rank`, else GQA (MHA being
/// GQA with as many KV heads as heads).
fn attention_geometry(
    f: &Fields<'_>,
    hidden: u64,
    num_heads: u64,
) -> Result<Attention, CapacityError> {
    if f.opt_u64(&["kv_lora_rank"])?.is_some() {
        return Ok(Attention::Mla {
            num_heads,
            q_lora_rank: f.opt_u64(&["q_lora_rank"])?,
            kv_lora_rank: f.positive(&["kv_lora_rank"])?,
            qk_nope_head_dim: f.req_u64(&["qk_nope_head_dim"])?,
            qk_rope_head_dim: f.req_u64(&["qk_rope_head_dim"])?,
            v_head_dim: f.positive(&["v_head_dim"])?,
        });
    }
    let num_kv_heads = f
        .opt_u64(&["num_key_value_heads", "num_kv_heads"])?
        .unwrap_or(num_heads);
    if num_kv_heads == 0 {
        return Err(f.invalid("num_key_value_heads", "must be greater than 0"));
    }
    // An explicit head_dim wins: Qwen3 and Gemma 3 use head_dim × heads ≠ hidden.
    let head_dim = match f.opt_u64(&["head_dim", "attention_head_dim"])? {
        Some(0) => return Err(f.invalid("head_dim", "must be greater than 0")),
        Some(d) => d,
        None => {
            if !hidden.is_multiple_of(num_heads) {
                return Err(f.invalid(
                    "head_dim",
                    format!(
                        "absent, and hidden_size {hidden} is not divisible by num_attention_heads {num_heads}"
                    ),
                ));
            }
            hidden / num_heads
        }
    };
    Ok(Attention::Gqa {
        num_heads,
        num_kv_heads,
        head_dim,
    })
}

/// The token mixer of every layer: layer kinds, the sliding window, and the Mamba or
/// linear-attention shape of the `Linear` layers.
struct Mixers {
    layers: Vec<LayerKind>,
    sliding_window: Option<u64>,
    mamba: Option<Mamba>,
    linear_attention: Option<LinearAttention>,
}

impl Mixers {
    fn parse(
        f: &Fields<'_>,
        model_type: &str,
        num_layers: u64,
        hidden: u64,
        with_default: impl Fn(&[&str]) -> Result<Option<u64>, CapacityError>,
    ) -> Result<Self, CapacityError> {
        let sliding_window = f.opt_u64(&["sliding_window"])?;
        let layers = layer_kinds(f, model_type, num_layers, sliding_window, with_default)?;
        let has_sliding = layers.contains(&LayerKind::Sliding);
        let sliding_window = if has_sliding {
            match sliding_window {
                Some(0) | None => {
                    return Err(f.invalid(
                        "sliding_window",
                        "sliding-window layers need a positive sliding_window",
                    ));
                }
                w => w,
            }
        } else {
            None
        };
        let mamba = if layers.contains(&LayerKind::Linear) {
            mamba_mixer(f, f.source, hidden)?
        } else {
            None
        };
        let linear_attention = if mamba.is_none() && layers.contains(&LayerKind::Linear) {
            Some(LinearAttention {
                num_key_heads: f.positive(&["linear_num_key_heads"])?,
                num_value_heads: f.positive(&["linear_num_value_heads"])?,
                key_head_dim: f.positive(&["linear_key_head_dim"])?,
                value_head_dim: f.positive(&["linear_value_head_dim"])?,
                conv_kernel: f.opt_u64(&["linear_conv_kernel_dim"])?.unwrap_or(4),
            })
        } else {
            None
        };
        Ok(Self {
            layers,
            sliding_window,
            mamba,
            linear_attention,
        })
    }
}

/// MoE shape and which layers carry it (`None` and no MoE layers for a dense model).
fn moe_shape(f: &Fields<'_>, num_layers: u64) -> Result<(Option<Moe>, Vec<bool>), CapacityError> {
    let num_experts = f.opt_u64(&["num_local_experts", "num_experts", "n_routed_experts"])?;
    let e = match num_experts {
        Some(e) if e > 1 => e,
        _ => return Ok((None, vec![false; num_layers as usize])),
    };
    let top_k = f.positive(&["num_experts_per_tok", "experts_per_token", "moe_topk"])?;
    if top_k > e {
        return Err(f.invalid(
            "num_experts_per_tok",
            format!("{top_k} is more than the {e} experts"),
        ));
    }
    let expert_inter = f.positive(&["moe_intermediate_size", "intermediate_size"])?;
    let first_dense = f.opt_u64(&["first_k_dense_replace"])?.unwrap_or(0);
    let step = f.opt_u64(&["decoder_sparse_step"])?.unwrap_or(1).max(1);
    let mlp_only: Vec<u64> = match f.obj.get("mlp_only_layers") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_u64).collect(),
        _ => Vec::new(),
    };
    let moe_mask: Vec<bool> = match f.opt_u64(&["expert_layer_period"])? {
        // Jamba: layer i is MoE when i % period == offset.
        Some(0) => return Err(f.invalid("expert_layer_period", "must be greater than 0")),
        Some(period) => {
            let offset = f.opt_u64(&["expert_layer_offset"])?.unwrap_or(0);
            (0..num_layers).map(|i| i % period == offset).collect()
        }
        None => (0..num_layers)
            .map(|i| i >= first_dense && (i + 1) % step == 0 && !mlp_only.contains(&i))
            .collect(),
    };
    let moe = Moe {
        num_experts: e,
        top_k,
        expert_intermediate_size: expert_inter,
        moe_layers: moe_mask.iter().filter(|m| **m).count() as u64,
    };
    Ok((Some(moe), moe_mask))
}

/// Widest projection of one Mamba mixer (for [`check_scale`]).
fn mamba_width(m: &Mamba) -> u64 {
    let (di, extra) = match m {
        Mamba::Mamba1 {
            d_inner,
            d_state,
            dt_rank,
            d_conv,
            ..
        } => (
            *d_inner,
            dt_rank
                .saturating_add(d_state.saturating_mul(2))
                .max(*d_conv),
        ),
        Mamba::Mamba2 {
            num_heads,
            head_dim,
            n_groups,
            d_state,
            conv_kernel,
            ..
        } => (
            num_heads.saturating_mul(*head_dim),
            n_groups
                .saturating_mul(*d_state)
                .saturating_mul(2)
                .max(*conv_kernel),
        ),
    };
    di.saturating_mul(2).saturating_add(extra)
}

/// Widest projection of one linear-attention layer (for [`check_scale`]).
fn linear_attention_width(la: &LinearAttention) -> u64 {
    let k = la.num_key_heads.saturating_mul(la.key_head_dim);
    let v = la.num_value_heads.saturating_mul(la.value_head_dim);
    k.saturating_add(v).saturating_mul(2).max(la.conv_kernel)
}

/// Multi-token-prediction parameters in the checkpoint (`num_nextn_predict_layers`).
fn mtp_params(spec: &ModelSpec, f: &Fields<'_>, shared_inter: u64) -> Result<u64, CapacityError> {
    let Some(n) = f.opt_u64(&["num_nextn_predict_layers"])? else {
        return Ok(0);
    };
    if n == 0 {
        return Ok(0);
    }
    if n > 64 {
        return Err(f.invalid(
            "num_nextn_predict_layers",
            format!("{n} is implausible (at most 64)"),
        ));
    }
    let (hidden, vocab_size) = (spec.hidden_size, spec.vocab_size);
    let layer = attention_params(spec, f)? + moe_layer_params(spec, f, shared_inter)?;
    // eh_proj (2h → h), enorm, hnorm, the layer's two norms, shared_head norm, and
    // the checkpoint's own copies of the embedding and output head.
    let extra = 2 * hidden * hidden + 5 * hidden + 2 * vocab_size * hidden;
    Ok(n * (layer + extra))
}

/// Decoder layers beyond which a config cannot be a real model.
const MAX_LAYERS: u64 = 100_000;
/// Upper bound on any product the parameter count forms; real models stay below 1e15.
const MAX_PARAM_BOUND: f64 = 1e17;

/// Widest projection of one attention layer.
fn attention_width(attention: &Attention) -> u64 {
    match attention {
        Attention::Gqa {
            num_heads,
            num_kv_heads,
            head_dim,
        } => num_heads
            .max(num_kv_heads)
            .saturating_mul(*head_dim)
            .saturating_mul(2),
        Attention::Mla {
            num_heads,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
            kv_lora_rank,
            q_lora_rank,
        } => num_heads
            .saturating_mul(
                qk_nope_head_dim
                    .saturating_add(*qk_rope_head_dim)
                    .saturating_add(*v_head_dim),
            )
            .max(kv_lora_rank.saturating_add(*qk_rope_head_dim))
            .max(q_lora_rank.unwrap_or(0)),
    }
}

/// Refuses sizes no real model has before any exact (u64) product could overflow:
/// every term of the count is at most layers × (experts + 3) × 8 × width², plus the
/// embedding and head.
fn check_scale(
    f: &Fields<'_>,
    layers: u64,
    widths: &[u64],
    experts: u64,
    vocab: u64,
) -> Result<(), CapacityError> {
    let width = widths.iter().copied().max().unwrap_or(0) as f64;
    let bound =
        layers as f64 * (experts as f64 + 3.0) * 8.0 * width * width + 4.0 * vocab as f64 * width;
    if bound.is_nan() || bound >= MAX_PARAM_BOUND {
        return Err(f.invalid(
            "hidden_size",
            format!("the sizes describe ~{bound:.1e} parameters, beyond any real model"),
        ));
    }
    Ok(())
}

/// Bytes per element of a dtype name in a config (`mamba_ssm_cache_dtype`).
fn dtype_bytes(f: &Fields<'_>, key: &str) -> Result<Option<f64>, CapacityError> {
    match f.opt_str(key) {
        None | Some("auto") => Ok(None),
        Some("float32" | "fp32") => Ok(Some(4.0)),
        Some("bfloat16" | "float16" | "bf16" | "fp16") => Ok(Some(2.0)),
        Some(other) => Err(f.invalid(key, format!("unknown dtype {other:?}"))),
    }
}

/// The Mamba mixer of a hybrid's `Linear` layers: Mamba-1 from Jamba's `mamba_*` fields,
/// Mamba-2 from Nemotron-H's `mamba_num_heads`/`mamba_head_dim`/`ssm_state_size`.
/// `None` when the linear layers are something else (Gated DeltaNet).
fn mamba_mixer(f: &Fields<'_>, name: &str, hidden: u64) -> Result<Option<Mamba>, CapacityError> {
    if f.obj.contains_key("mamba_d_state") {
        let expand = f.positive(&["mamba_expand"])?;
        let d_inner = expand
            .checked_mul(hidden)
            .ok_or_else(|| f.invalid("mamba_expand", "mamba_expand × hidden_size overflows"))?;
        // "auto" (the Jamba config default) is ceil(hidden / 16), as in Mamba-1.
        let dt_rank = match f.obj.get("mamba_dt_rank") {
            None | Some(Value::Null) => hidden.div_ceil(16),
            Some(Value::String(s)) if s == "auto" => hidden.div_ceil(16),
            Some(_) => f.positive(&["mamba_dt_rank"])?,
        };
        return Ok(Some(Mamba::Mamba1 {
            d_inner,
            d_state: f.positive(&["mamba_d_state"])?,
            d_conv: f.opt_u64(&["mamba_d_conv"])?.unwrap_or(4).max(1),
            dt_rank,
            conv_bias: f.opt_bool("mamba_conv_bias")?.unwrap_or(true),
            proj_bias: f.opt_bool("mamba_proj_bias")?.unwrap_or(false),
        }));
    }
    if f.obj.contains_key("mamba_num_heads") || f.obj.contains_key("ssm_state_size") {
        return Ok(Some(Mamba::Mamba2 {
            num_heads: f.positive(&["mamba_num_heads"])?,
            head_dim: f.positive(&["mamba_head_dim"])?,
            n_groups: f.positive(&["n_groups"])?,
            d_state: f.positive(&["ssm_state_size"])?,
            conv_kernel: f.opt_u64(&["conv_kernel"])?.unwrap_or(4).max(1),
            conv_bias: f.opt_bool("use_conv_bias")?.unwrap_or(true),
            proj_bias: f.opt_bool("use_bias")?.unwrap_or(false),
            // vLLM's NemotronHForCausalLMConfig copies this config field into
            // --mamba-ssm-cache-dtype (Nemotron Nano v2 pins float32).
            ssm_cache_bytes: dtype_bytes(f, "mamba_ssm_cache_dtype")?,
        }));
    }
    if f.obj.contains_key("hybrid_override_pattern") || f.obj.contains_key("attn_layer_period") {
        return Err(CapacityError::MissingField {
            source_name: name.to_string(),
            field: "mamba_d_state".to_string(),
        });
    }
    Ok(None)
}

/// Per-layer kind from, in order: `hybrid_override_pattern` (Nemotron-H),
/// `attn_layer_period`/`attn_layer_offset` (Jamba), `layer_types`, `full_attention_interval` (Qwen3-Next),
/// `sliding_window_pattern` (Gemma 2/3), a plain `sliding_window` (Mistral 7B v0.1).
fn layer_kinds(
    f: &Fields<'_>,
    model_type: &str,
    num_layers: u64,
    sliding_window: Option<u64>,
    with_default: impl Fn(&[&str]) -> Result<Option<u64>, CapacityError>,
) -> Result<Vec<LayerKind>, CapacityError> {
    if let Some(v) = f.obj.get("hybrid_override_pattern")
        && !v.is_null()
    {
        return hybrid_pattern_kinds(f, v, num_layers);
    }
    if let Some(period) = f.opt_u64(&["attn_layer_period"])? {
        return jamba_kinds(f, period, num_layers);
    }
    if let Some(v) = f.obj.get("layer_types")
        && !v.is_null()
    {
        return listed_kinds(f, v, num_layers);
    }
    if let Some(k) = f.opt_u64(&["full_attention_interval"])? {
        if k == 0 {
            return Err(f.invalid("full_attention_interval", "must be greater than 0"));
        }
        // Qwen3-Next: every k-th layer is full attention, the rest Gated DeltaNet.
        return Ok((0..num_layers)
            .map(|i| {
                if (i + 1) % k == 0 {
                    LayerKind::Full
                } else {
                    LayerKind::Linear
                }
            })
            .collect());
    }
    if sliding_window.is_some() {
        if let Some(p) = with_default(&["sliding_window_pattern"])? {
            if p == 0 {
                return Err(f.invalid("sliding_window_pattern", "must be greater than 0"));
            }
            // Gemma: every p-th layer is global, the others local.
            return Ok((0..num_layers)
                .map(|i| {
                    if (i + 1) % p == 0 {
                        LayerKind::Full
                    } else {
                        LayerKind::Sliding
                    }
                })
                .collect());
        }
        // Qwen2/3 carry a sliding_window value but switch it off with use_sliding_window.
        let enabled = f.opt_bool("use_sliding_window")?.unwrap_or(true);
        if enabled && !model_type.starts_with("qwen") {
            return Ok(vec![LayerKind::Sliding; num_layers as usize]);
        }
    }
    Ok(vec![LayerKind::Full; num_layers as usize])
}

/// Nemotron-H's `hybrid_override_pattern`: one character per block.
fn hybrid_pattern_kinds(
    f: &Fields<'_>,
    v: &Value,
    num_layers: u64,
) -> Result<Vec<LayerKind>, CapacityError> {
    // Nemotron-H: one character per block, M = Mamba-2, * = attention, - = MLP.
    let Some(pattern) = v.as_str() else {
        return Err(f.invalid(
            "hybrid_override_pattern",
            "expected a string such as \"M-M*-\"",
        ));
    };
    if pattern.chars().count() as u64 != num_layers {
        return Err(f.invalid(
            "hybrid_override_pattern",
            format!(
                "has {} blocks but num_hidden_layers is {num_layers}",
                pattern.chars().count()
            ),
        ));
    }
    pattern
        .chars()
        .map(|c| match c {
            'M' => Ok(LayerKind::Linear),
            '*' => Ok(LayerKind::Full),
            '-' => Ok(LayerKind::Mlp),
            'E' => Err(CapacityError::Unsupported {
                source_name: f.source.to_string(),
                what: "MoE blocks ('E' in hybrid_override_pattern, Nemotron-3/Nano MoE)"
                    .to_string(),
            }),
            other => Err(f.invalid(
                "hybrid_override_pattern",
                format!("unknown block {other:?} (expected M, * or -)"),
            )),
        })
        .collect()
}

/// Jamba's `attn_layer_period`/`attn_layer_offset`.
fn jamba_kinds(
    f: &Fields<'_>,
    period: u64,
    num_layers: u64,
) -> Result<Vec<LayerKind>, CapacityError> {
    // Jamba: layer i is attention when i % period == offset, Mamba otherwise.
    if period == 0 {
        return Err(f.invalid("attn_layer_period", "must be greater than 0"));
    }
    let offset = f.opt_u64(&["attn_layer_offset"])?.unwrap_or(0);
    if offset >= period {
        return Err(f.invalid(
            "attn_layer_offset",
            format!("{offset} is not below attn_layer_period {period}"),
        ));
    }
    Ok((0..num_layers)
        .map(|i| {
            if i % period == offset {
                LayerKind::Full
            } else {
                LayerKind::Linear
            }
        })
        .collect())
}

/// An explicit `layer_types` list, one entry per layer.
fn listed_kinds(
    f: &Fields<'_>,
    v: &Value,
    num_layers: u64,
) -> Result<Vec<LayerKind>, CapacityError> {
    let Value::Array(items) = v else {
        return Err(f.invalid("layer_types", "expected a list of strings"));
    };
    if items.len() as u64 != num_layers {
        return Err(f.invalid(
            "layer_types",
            format!(
                "has {} entries but num_hidden_layers is {num_layers}",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .map(|item| {
            let s = item.as_str().unwrap_or_default();
            if s.contains("sliding") || s == "local" {
                Ok(LayerKind::Sliding)
            } else if s.contains("linear") || s.contains("mamba") {
                Ok(LayerKind::Linear)
            } else if s.contains("full") || s.contains("global") || s == "attention" {
                Ok(LayerKind::Full)
            } else {
                Err(f.invalid("layer_types", format!("unknown layer type {item}")))
            }
        })
        .collect()
}

fn shared_expert_size(f: &Fields<'_>) -> Result<u64, CapacityError> {
    // Qwen2-MoE / Qwen3-Next: one shared expert of its own size (plus a sigmoid gate).
    if let Some(s) = f.opt_u64(&["shared_expert_intermediate_size"])? {
        return Ok(s);
    }
    // DeepSeek: n_shared_experts experts of moe_intermediate_size.
    let n = f.opt_u64(&["n_shared_experts"])?.unwrap_or(0);
    Ok(n * f.opt_u64(&["moe_intermediate_size"])?.unwrap_or(0))
}

fn weight_format(
    root: &Map<String, Value>,
    text: &Map<String, Value>,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<WeightFormat, CapacityError> {
    let q = text
        .get("quantization_config")
        .or_else(|| root.get("quantization_config"));
    let Some(q) = q else {
        return Ok(WeightFormat::Bf16);
    };
    let Some(method) = q.get("quant_method").and_then(Value::as_str) else {
        return Err(CapacityError::InvalidField {
            source_name: name.to_string(),
            field: "quantization_config.quant_method".to_string(),
            reason: "missing or not a string".to_string(),
        });
    };
    Ok(match method {
        "fp8" | "fbgemm_fp8" => WeightFormat::Fp8,
        "mxfp4" => WeightFormat::Mxfp4,
        "compressed-tensors" => {
            // Compressed-tensors names its scheme per group; FP8 is the common one.
            let text = q.to_string();
            if text.contains("\"float\"") && text.contains("\"num_bits\":8") {
                WeightFormat::Fp8
            } else {
                notes.push(format!(
                    "quantization {method} not modelled; assuming BF16 weights (use --weight-bytes)"
                ));
                WeightFormat::Bf16
            }
        }
        other => {
            notes.push(format!(
                "quantization {other} not modelled; assuming BF16 weights (use --weight-bytes)"
            ));
            WeightFormat::Bf16
        }
    })
}

fn uses_qk_norm(model_type: &str) -> bool {
    matches!(
        model_type,
        "qwen3" | "qwen3_moe" | "qwen3_next" | "gemma3" | "gemma3_text"
    )
}

/// Parameters of one attention block (projections, biases, q/k norms, sinks).
fn attention_params(spec: &ModelSpec, f: &Fields<'_>) -> Result<u64, CapacityError> {
    let h = spec.hidden_size;
    Ok(match &spec.attention {
        Attention::Gqa {
            num_heads,
            num_kv_heads,
            head_dim,
        } => {
            let q_out = num_heads * head_dim;
            let kv_out = num_kv_heads * head_dim;
            // Qwen3-Next gates the attention output with a second half of q_proj.
            let q_factor = if spec.model_type == "qwen3_next" {
                2
            } else {
                1
            };
            let mut p = h * q_out * q_factor + 2 * h * kv_out + q_out * h;
            if f.opt_bool("attention_bias")?.unwrap_or(false) {
                p += q_out + 2 * kv_out + h;
            } else if spec.model_type.starts_with("qwen2") {
                // Qwen2 has q/k/v biases without a flag.
                p += q_out + 2 * kv_out;
            }
            if uses_qk_norm(&spec.model_type) {
                p += 2 * head_dim;
            }
            if spec.model_type == "gpt_oss" {
                // One learned attention-sink logit per head.
                p += num_heads;
            }
            p
        }
        Attention::Mla {
            num_heads,
            q_lora_rank,
            kv_lora_rank,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
        } => {
            let qk_head = qk_nope_head_dim + qk_rope_head_dim;
            // The `+ r` and `+ kv_lora_rank` terms are q_a_layernorm and kv_a_layernorm.
            let q = match q_lora_rank {
                Some(r) => h * r + r + r * num_heads * qk_head,
                None => h * num_heads * qk_head,
            };
            let kv_a = h * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank;
            let kv_b = kv_lora_rank * num_heads * (qk_nope_head_dim + v_head_dim);
            let o = num_heads * v_head_dim * h;
            q + kv_a + kv_b + o
        }
    })
}

/// Parameters of one Gated DeltaNet layer (Qwen3-Next), following the projections in
/// vLLM's `model_executor/models/qwen3_next.py`.
fn linear_attention_params(spec: &ModelSpec) -> u64 {
    let Some(la) = &spec.linear_attention else {
        return 0;
    };
    let h = spec.hidden_size;
    let key_dim = la.num_key_heads * la.key_head_dim;
    let value_dim = la.num_value_heads * la.value_head_dim;
    let in_qkvz = h * (2 * key_dim + 2 * value_dim);
    let in_ba = h * 2 * la.num_value_heads;
    let conv = (2 * key_dim + value_dim) * la.conv_kernel;
    let dt_and_a = 2 * la.num_value_heads;
    let norm = la.value_head_dim;
    let out = value_dim * h;
    in_qkvz + in_ba + conv + dt_and_a + norm + out
}

fn moe_layer_params(
    spec: &ModelSpec,
    f: &Fields<'_>,
    shared_inter: u64,
) -> Result<u64, CapacityError> {
    let Some(m) = &spec.moe else {
        return Ok(0);
    };
    let (routed, shared, router) = moe_parts(spec, f, m, shared_inter)?;
    Ok(routed + shared + router)
}

/// (routed experts, shared experts, router) parameters of one MoE layer.
fn moe_parts(
    spec: &ModelSpec,
    f: &Fields<'_>,
    m: &Moe,
    shared_inter: u64,
) -> Result<(u64, u64, u64), CapacityError> {
    let h = spec.hidden_size;
    let i = m.expert_intermediate_size;
    let gpt_oss = spec.model_type == "gpt_oss";
    // Gated MLP: gate, up and down projections.
    let mut expert = 3 * h * i;
    if gpt_oss {
        // gpt-oss experts carry biases on gate_up (2i) and down (h).
        expert += 2 * i + h;
    }
    let routed = m.num_experts * expert;
    let mut shared = 3 * h * shared_inter;
    if f.opt_u64(&["shared_expert_intermediate_size"])?.is_some() {
        // Sigmoid gate of the shared expert (Qwen2-MoE, Qwen3-Next).
        shared += h;
    }
    let mut router = h * m.num_experts;
    if gpt_oss {
        router += m.num_experts;
    }
    if f.opt_str("topk_method") == Some("noaux_tc") {
        // DeepSeek-V3's e_score_correction_bias.
        router += m.num_experts;
    }
    Ok((routed, shared, router))
}

fn count_params(
    spec: &ModelSpec,
    f: &Fields<'_>,
    intermediate: u64,
    shared_inter: u64,
    moe_mask: &[bool],
) -> Result<ParamCounts, CapacityError> {
    let h = spec.hidden_size;
    let mut p = ParamCounts {
        embedding: spec.vocab_size * h,
        lm_head: if spec.tie_word_embeddings {
            0
        } else {
            spec.vocab_size * h
        },
        ..ParamCounts::default()
    };
    let attn = attention_params(spec, f)?;
    let linear = match &spec.mamba {
        Some(m) => m.params(h),
        None => linear_attention_params(spec),
    };
    // Nemotron-H blocks hold one mixer or one MLP each, behind a single norm; every
    // other family pairs a mixer with an MLP in each layer.
    let single_op_blocks = spec.layers.contains(&LayerKind::Mlp);
    // Gemma 2/3 wrap both attention and MLP in pre- and post-norms.
    let norms_per_layer = if spec.model_type.starts_with("gemma") {
        4 * h
    } else if single_op_blocks {
        h
    } else {
        2 * h
    };
    // Squared-ReLU MLPs (Nemotron-H `relu2`) have no gate: up and down only.
    let mlp_matrices = match f.opt_str("mlp_hidden_act") {
        Some("relu2") => 2,
        _ => 3,
    };
    for (idx, kind) in spec.layers.iter().enumerate() {
        p.attention += match kind {
            LayerKind::Linear => linear,
            LayerKind::Full | LayerKind::Sliding => attn,
            LayerKind::Mlp => 0,
        };
        p.norms += norms_per_layer;
        if single_op_blocks {
            if *kind == LayerKind::Mlp {
                p.dense_mlp += mlp_matrices * h * intermediate;
            }
        } else if moe_mask.get(idx).copied().unwrap_or(false)
            && let Some(m) = &spec.moe
        {
            let (routed, shared, router) = moe_parts(spec, f, m, shared_inter)?;
            p.routed_experts += routed;
            p.shared_experts += shared;
            p.router += router;
        } else {
            p.dense_mlp += mlp_matrices * h * intermediate;
        }
    }
    p.norms += h; // final norm
    Ok(p)
}

/// SigLIP vision tower plus Gemma 3's projector; other towers are noted, not counted.
fn vision_params(
    root: &Map<String, Value>,
    text_hidden: u64,
    notes: &mut Vec<String>,
) -> Result<u64, CapacityError> {
    let Some(Value::Object(v)) = root.get("vision_config") else {
        return Ok(0);
    };
    let f = Fields {
        obj: v,
        source: "vision_config",
    };
    let kind = f.opt_str("model_type").unwrap_or("unknown");
    if kind != "siglip_vision_model" {
        notes.push(format!("vision tower {kind} not counted in weight memory"));
        return Ok(0);
    }
    let h = f.positive(&["hidden_size"])?;
    let inter = f.positive(&["intermediate_size"])?;
    let layers = f.positive(&["num_hidden_layers"])?;
    let patch = f.positive(&["patch_size"])?;
    let image = f.positive(&["image_size"])?;
    let channels = f.opt_u64(&["num_channels"])?.unwrap_or(3);
    // Per encoder layer: q/k/v/o with biases, fc1/fc2 with biases, two LayerNorms.
    // Counted in f64 (exact below 2^53) so absurd sizes are caught, not overflowed.
    let (h, inter, layers, image, patch, channels) = (
        h as f64,
        inter as f64,
        layers as f64,
        image as f64,
        patch as f64,
        channels as f64,
    );
    let layer = 4.0 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 4.0 * h;
    let patches = ((image / patch).floor()).powi(2);
    let embed = channels * patch * patch * h + h + patches * h;
    let post_norm = 2.0 * h;
    // Gemma 3 projector: a soft-embedding RMSNorm and a vision→text matrix.
    let projector = h + h * text_hidden as f64;
    let total = layers * layer + embed + post_norm + projector;
    if total.is_nan() || total >= 1e15 {
        return Err(f.invalid(
            "hidden_size",
            format!("the vision sizes describe ~{total:.1e} parameters, beyond any real model"),
        ));
    }
    Ok(total as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ModelSpec, CapacityError> {
        parse_hf_config("test", json)
    }

    const SMALL: &str = r#"{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "intermediate_size": 128}"#;

    #[test]
    fn dense_parameter_count_by_hand() {
        let s = parse(SMALL).unwrap_or_else(|e| panic!("{e}"));
        // head_dim 16; q 64×64, k/v 64×32 each, o 64×64 → 12288 per layer.
        assert_eq!(s.params.attention, 2 * 12_288);
        assert_eq!(s.params.dense_mlp, 2 * 3 * 64 * 128);
        assert_eq!(s.params.norms, 2 * 2 * 64 + 64);
        assert_eq!(s.params.embedding, 6400);
        assert_eq!(s.params.lm_head, 6400);
    }

    #[test]
    fn explicit_head_dim_wins_and_tied_embeddings_drop_the_head() {
        let s = parse(&SMALL.replace(
            "\"vocab_size\"",
            "\"head_dim\": 32, \"tie_word_embeddings\": true, \"vocab_size\"",
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            s.attention,
            Attention::Gqa {
                num_heads: 4,
                num_kv_heads: 2,
                head_dim: 32
            }
        );
        assert_eq!(s.params.lm_head, 0);
    }

    #[test]
    fn text_config_is_read_first() {
        let wrapped = format!(r#"{{"model_type": "wrapper", "text_config": {SMALL}}}"#);
        let s = parse(&wrapped).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.model_type, "llama");
        assert_eq!(s.hidden_size, 64);
    }

    #[test]
    fn missing_and_invalid_fields_are_named() {
        let e = parse(&SMALL.replace("\"hidden_size\": 64,", ""))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("test: config.json has no field \"hidden_size\" (needed by the capacity model)")
        );
        let e = parse(&SMALL.replace("\"num_hidden_layers\": 2", "\"num_hidden_layers\": \"two\""))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("\"num_hidden_layers\" is invalid"), "{e}");
        let e = parse("[1, 2]")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("not a valid config.json"), "{e}");
        let e = parse(&SMALL.replace("\"num_attention_heads\": 4", "\"num_attention_heads\": 3"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("head_dim"), "{e}");
    }

    #[test]
    fn mistral_style_sliding_window_applies_to_every_layer() {
        let s = parse(&SMALL.replace("\"vocab_size\"", "\"sliding_window\": 4096, \"vocab_size\""))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.count_layers(LayerKind::Sliding), 2);
        // Qwen keeps the field but switches it off.
        let q = parse(&SMALL.replace("\"llama\"", "\"qwen3\"").replace(
            "\"vocab_size\"",
            "\"sliding_window\": 4096, \"use_sliding_window\": false, \"vocab_size\"",
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(q.count_layers(LayerKind::Sliding), 0);
    }

    #[test]
    fn absurd_sizes_are_refused_not_overflowed() {
        for (from, to) in [
            (
                "\"hidden_size\": 64",
                "\"hidden_size\": 4000000000, \"head_dim\": 16",
            ),
            (
                "\"num_hidden_layers\": 2",
                "\"num_hidden_layers\": 1000000000000",
            ),
            (
                "\"intermediate_size\": 128",
                "\"intermediate_size\": 18446744073709551615",
            ),
        ] {
            let e = parse(&SMALL.replace(from, to))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains("beyond any real model"), "{to}: {e}");
        }
    }

    /// A two-block Jamba: layer 0 Mamba-1 + dense MLP, layer 1 attention + MoE.
    const TINY_JAMBA: &str = r#"{"model_type": "jamba", "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 100, "intermediate_size": 128, "attn_layer_period": 2,
        "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1,
        "num_experts": 4, "num_experts_per_tok": 2, "mamba_d_state": 16,
        "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto"}"#;

    #[test]
    fn jamba_mamba1_layers_and_parameters_by_hand() {
        let s = parse(TINY_JAMBA).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.layers, vec![LayerKind::Linear, LayerKind::Full]);
        // d_inner 128, dt_rank ceil(64/16) = 4: in_proj 64×256, conv 128×4 + 128,
        // x_proj 128×(4+32), dt_proj 4×128 + 128, A_log 128×16, D 128, out_proj 128×64,
        // dt/B/C norms 4 + 16 + 16.
        let mamba = 16_384 + 640 + 4_608 + 640 + 2_048 + 128 + 8_192 + 36;
        assert_eq!(s.params.attention, mamba + 12_288);
        // Layer 0 dense, layer 1 MoE with 4 experts and a router.
        assert_eq!(s.params.dense_mlp, 3 * 64 * 128);
        assert_eq!(s.params.routed_experts, 4 * 3 * 64 * 128);
        assert_eq!(s.params.router, 64 * 4);
        let st = s
            .state_shape(2, 2.0)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no state"));
        // conv (4 − 1) × 128/2, ssm 128/2 × 16.
        assert_eq!((st.conv_elements, st.ssm_elements), (192, 1024));
        assert_eq!(st.bytes_per_layer(), (192.0 + 1024.0) * 2.0);
        let e = s.state_shape(3, 2.0).err().unwrap_or_default();
        assert!(e.contains("128 is not divisible by --tp 3"), "{e}");
    }

    const TINY_NEMOTRON_H: &str = r#"{"model_type": "nemotron_h", "hidden_size": 64,
        "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 100, "intermediate_size": 128, "mlp_hidden_act": "relu2",
        "hybrid_override_pattern": "M-*", "mamba_num_heads": 8, "mamba_head_dim": 16,
        "n_groups": 2, "ssm_state_size": 32, "conv_kernel": 4}"#;

    #[test]
    fn nemotron_h_pattern_mamba2_and_relu2_mlp_by_hand() {
        let s = parse(TINY_NEMOTRON_H).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            s.layers,
            vec![LayerKind::Linear, LayerKind::Mlp, LayerKind::Full]
        );
        // d_inner 128, conv_dim 128 + 2×2×32 = 256; in_proj 64 × (128 + 256 + 8),
        // conv 256×4 + 256, dt_bias/A_log/D 3×8, gated norm 128, out_proj 128×64.
        let mamba = 64 * 392 + 1_280 + 24 + 128 + 8_192;
        assert_eq!(s.params.attention, mamba + 12_288);
        // One relu2 MLP block: up and down only.
        assert_eq!(s.params.dense_mlp, 2 * 64 * 128);
        // One norm per block plus the final norm.
        assert_eq!(s.params.norms, 3 * 64 + 64);
        let st = s
            .state_shape(1, 2.0)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no state"));
        assert_eq!((st.conv_elements, st.ssm_elements), (3 * 256, 8 * 16 * 32));
        // tp 4 > n_groups 2: groups are replicated to 4 (vLLM extra_groups_for_head_shards).
        let st = s
            .state_shape(4, 2.0)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no state"));
        assert_eq!(st.conv_elements, 3 * (128 + 2 * 4 * 32) / 4);
        assert_eq!(st.ssm_elements, 2 * 16 * 32);
        // A pinned SSM cache dtype changes only the SSM part.
        let f32_ssm = parse(&TINY_NEMOTRON_H.replace(
            "\"conv_kernel\": 4",
            "\"conv_kernel\": 4, \"mamba_ssm_cache_dtype\": \"float32\"",
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let st = f32_ssm
            .state_shape(1, 2.0)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no state"));
        assert_eq!(st.bytes_per_layer(), 768.0 * 2.0 + 4096.0 * 4.0);
    }

    #[test]
    fn bad_hybrid_layouts_are_named_errors() {
        let err = |json: &str| parse(json).err().map(|e| e.to_string()).unwrap_or_default();
        let e = err(&TINY_NEMOTRON_H.replace("\"M-*\"", "\"M-*M\""));
        assert!(e.contains("has 4 blocks but num_hidden_layers is 3"), "{e}");
        let e = err(&TINY_NEMOTRON_H.replace("\"M-*\"", "\"ME*\""));
        assert!(e.contains("not modelled") && e.contains("'E'"), "{e}");
        let e = err(&TINY_NEMOTRON_H.replace("\"M-*\"", "\"M?*\""));
        assert!(e.contains("unknown block '?'"), "{e}");
        let e = err(&TINY_NEMOTRON_H.replace("\"n_groups\": 2,", ""));
        assert!(e.contains("no field \"n_groups\""), "{e}");
        let e = err(&TINY_NEMOTRON_H.replace(
            "\"mamba_num_heads\": 8",
            "\"mamba_num_heads\": 800000000000",
        ));
        assert!(e.contains("beyond any real model"), "{e}");
        let e = err(&TINY_JAMBA.replace("\"attn_layer_offset\": 1", "\"attn_layer_offset\": 2"));
        assert!(e.contains("attn_layer_offset"), "{e}");
        // SSM fields without a hybrid layout we know are refused, not miscounted.
        let e = err(&SMALL.replace("\"vocab_size\"", "\"ssm_state_size\": 16, \"vocab_size\""));
        assert!(
            e.contains("not modelled") && e.contains("ssm_state_size"),
            "{e}"
        );
    }

    #[test]
    fn unknown_quantization_is_noted_not_guessed() {
        let s = parse(&SMALL.replace(
            "\"vocab_size\"",
            "\"quantization_config\": {\"quant_method\": \"awq\"}, \"vocab_size\"",
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.weight_format, WeightFormat::Bf16);
        assert!(s.notes[0].contains("awq"));
    }
}
