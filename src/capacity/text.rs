//! Human renderings of a [`CapacityReport`]: the aligned summary, `--explain` (every
//! equation with its numbers) and the preset/GPU lists. Pure: returns strings.

use std::fmt::Write as _;

use super::gpu::GpuSpec;
use super::inputs::GIB;
use super::model::{Attention, LayerKind, Mamba, ModelSpec, WeightFormat};
use super::report::CapacityReport;
use super::roofline::cost_per_million;

/// 1234567 → "1,234,567".
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn gib(bytes: f64) -> String {
    format!("{:.2} GiB", bytes / GIB)
}

/// GiB, or MiB below 1 GiB (recurrent state is megabytes per sequence).
fn gib_or_mib(bytes: f64) -> String {
    if bytes < GIB {
        format!("{:.2} MiB", bytes / (1024.0 * 1024.0))
    } else {
        gib(bytes)
    }
}

fn gb(bytes: f64) -> String {
    format!("{:.2} GB", bytes / 1e9)
}

fn billions(n: f64) -> String {
    format!("{:.2} B", n / 1e9)
}

/// Bytes with an exact count when small (KV per token), GiB otherwise.
fn bytes_exact(bytes: f64) -> String {
    if bytes.fract() == 0.0 && bytes < 1e15 {
        format!("{} B", group(bytes as u64))
    } else {
        format!("{bytes:.1} B")
    }
}

fn row(out: &mut String, label: &str, value: impl AsRef<str>) {
    let _ = writeln!(out, "  {label:<40} {}", value.as_ref());
}

/// The summary printed by `llmprobe capacity`.
pub fn render(r: &CapacityReport) -> String {
    let i = &r.inputs;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}) on {} × {}, context {} tokens",
        i.model,
        i.model_type,
        i.tp,
        i.gpu.description,
        group(i.context)
    );
    let _ = writeln!(out, "units: 1 GiB = 2^30 bytes, 1 GB = 10^9 bytes");
    out.push('\n');
    render_model(&mut out, r);
    out.push('\n');
    render_memory(&mut out, r);
    out.push('\n');
    render_kv_cache(&mut out, r);
    out.push('\n');
    render_roofline(&mut out, r);
    out.push('\n');
    render_headline(&mut out, r);
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The "Model" section: parameters, weights, attention layout.
fn render_model(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    out.push_str("Model\n");
    row(
        out,
        "parameters (total / active)",
        format!(
            "{} / {}",
            billions(r.params_total as f64),
            billions(r.params_active)
        ),
    );
    if r.params_mtp_not_loaded > 0 {
        row(
            out,
            "MTP weights in checkpoint, not loaded",
            billions(r.params_mtp_not_loaded as f64),
        );
    }
    let precision = match i.weight_bytes {
        Some(b) => format!("{b} B/param (--weight-bytes)"),
        None => format!("{:?} from the checkpoint", i.weight_format).to_lowercase(),
    };
    row(
        out,
        "weights (whole model)",
        format!(
            "{} = {}  [{precision}]",
            gb(r.weight_bytes_total),
            gib(r.weight_bytes_total)
        ),
    );
    let g = &r.kv_geometry;
    let state_label = g.state_shape.as_ref().map_or("linear", |s| s.label());
    let mut layers = match (g.sliding_layers, g.linear_layers) {
        (0, 0) => format!("{} full-attention layers", g.full_layers),
        (s, 0) => format!(
            "{} full + {s} sliding-window ({} tokens) layers",
            g.full_layers,
            g.sliding_window.unwrap_or(0)
        ),
        (0, l) => format!(
            "{} full-attention + {l} {state_label} layers",
            g.full_layers
        ),
        (s, l) => format!(
            "{} full + {s} sliding + {l} {state_label} layers",
            g.full_layers
        ),
    };
    if g.mlp_only_layers > 0 {
        layers.push_str(&format!(" + {} MLP-only blocks", g.mlp_only_layers));
    }
    row(
        out,
        "attention",
        format!("{} ({layers})", g.attention.to_uppercase()),
    );
}

/// The "Memory per GPU" section: usable memory, weights, reserve, KV pool.
fn render_memory(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    let _ = writeln!(out, "Memory per GPU");
    row(
        out,
        "GPU memory (engine-visible)",
        format!("{:.2} GiB", i.gpu.memory_gib),
    );
    row(
        out,
        &format!("usable (util {})", i.util),
        gib(r.usable_bytes_per_gpu),
    );
    row(
        out,
        &format!("weights (÷ tp {})", i.tp),
        gib(r.weight_bytes_per_gpu),
    );
    row(
        out,
        "activation reserve",
        gib(r.activation_reserve_bytes_per_gpu),
    );
    row(
        out,
        "KV pool",
        format!(
            "{}  = {} tokens, {} blocks of {}",
            gib(r.kv_pool_bytes_per_gpu),
            group(r.kv_pool_tokens),
            group(r.kv_pool_blocks),
            i.block_size
        ),
    );
}

/// The "KV cache" section: bytes per token and sequence, concurrency.
fn render_kv_cache(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    let g = &r.kv_geometry;
    let state_label = g.state_shape.as_ref().map_or("linear", |s| s.label());
    let _ = writeln!(out, "KV cache");
    row(
        out,
        &format!("KV bytes per token per GPU ({} B/elem)", i.kv_bytes),
        bytes_exact(r.kv_bytes_per_token_per_gpu),
    );
    if r.state_bytes_per_sequence_per_gpu > 0.0 {
        row(
            out,
            "recurrent state per sequence per GPU",
            format!(
                "{}  (fixed, {} {} layers)",
                gib_or_mib(r.state_bytes_per_sequence_per_gpu),
                g.linear_layers,
                state_label
            ),
        );
    }
    row(
        out,
        &format!("one sequence at {} tokens", group(i.context)),
        gib(r.kv_bytes_per_sequence_per_gpu),
    );
    row(
        out,
        "max concurrent sequences",
        format!(
            "{:.2} x  (vLLM \"Maximum concurrency\")",
            r.max_concurrent_sequences
        ),
    );
    row(
        out,
        "max running sequences",
        format!(
            "{}  (whole sequences, capped by --max-num-seqs {})",
            group(r.max_running_sequences),
            i.max_num_seqs
        ),
    );
}

/// The decode roofline table and its compute/memory crossover.
fn render_roofline(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    let _ = writeln!(
        out,
        "Decode roofline per replica ({} TB/s × MBU {}, {} TFLOP/s {} × MFU {})",
        i.gpu.bandwidth_tbs, i.mbu, r.peak_tflops, r.compute_precision, i.mfu
    );
    let _ = writeln!(
        out,
        "  {:>7}  {:>9}  {:>7}  {:>10}  {:>12}  {:>9}",
        "batch", "step ms", "bound", "tok/s/seq", "tok/s total", "$/1M tok"
    );
    for p in &r.roofline {
        let _ = writeln!(
            out,
            "  {:>7}  {:>9.2}  {:>7}  {:>10.1}  {:>12.1}  {:>9.3}",
            group(p.batch),
            p.step_ms,
            p.bound,
            p.tokens_per_second_per_sequence,
            p.tokens_per_second_aggregate,
            p.cost_per_million_output_tokens
        );
    }
    match r.crossover_batch {
        Some(b) if b <= r.max_running_sequences => {
            let _ = writeln!(
                out,
                "  compute/memory crossover at batch {} (compute-bound from there)",
                group(b)
            );
        }
        Some(b) => {
            let _ = writeln!(
                out,
                "  compute/memory crossover at batch {} (beyond the {} that fit: memory-bound throughout)",
                group(b),
                group(r.max_running_sequences)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  no compute/memory crossover: reading one sequence's KV takes longer than its FLOPs, so every batch is memory-bound"
            );
        }
    }
}

/// The "Headline" section: decode speed and cost.
fn render_headline(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    let _ = writeln!(out, "Headline");
    row(
        out,
        "decode tok/s per sequence (batch 1)",
        format!("{:.1}", r.decode_tokens_per_second_per_sequence),
    );
    row(
        out,
        &format!(
            "decode tok/s aggregate (batch {})",
            group(r.max_running_sequences)
        ),
        format!("{:.1}", r.decode_tokens_per_second_aggregate),
    );
    let price = match i.gpu_hourly_source {
        "flag" => format!("${:.2}/GPU-h", i.gpu_hourly),
        _ => format!("${:.2}/GPU-h assumed; set --gpu-hourly", i.gpu_hourly),
    };
    row(
        out,
        "$ per 1M output tokens",
        format!(
            "${:.3}  ({price}, {} GPU{})",
            r.cost_per_million_output_tokens,
            i.tp,
            if i.tp == 1 { "" } else { "s" }
        ),
    );
}

/// Every equation with the numbers substituted (`--explain`).
pub fn explain(r: &CapacityReport) -> String {
    let mut out = String::from("Equations (B = bytes, GiB = 2^30 B)\n");
    explain_weights(&mut out, r);
    explain_pool(&mut out, r);
    explain_sequence(&mut out, r);
    explain_decode(&mut out, r);
    out
}

/// One `--explain` line.
fn line(out: &mut String, s: String) {
    out.push_str("  ");
    out.push_str(&s);
    out.push('\n');
}

/// Parameters, weights and KV bytes per token.
fn explain_weights(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    let g = &r.kv_geometry;
    let parts: Vec<String> = r
        .weights
        .iter()
        .map(|w| format!("{} {} × {}", w.part, group(w.params), w.bytes_per_param))
        .collect();
    line(
        out,
        format!(
            "params         = {} = {}",
            r.weights
                .iter()
                .map(|w| group(w.params))
                .collect::<Vec<_>>()
                .join(" + "),
            group(r.params_total)
        ),
    );
    line(
        out,
        format!(
            "weights        = Σ params × B/param = {} = {} B = {}",
            parts.join(" + "),
            group(r.weight_bytes_total.round() as u64),
            gib(r.weight_bytes_total)
        ),
    );
    line(
        out,
        format!(
            "weights/GPU    = {} / tp {} = {}",
            gib(r.weight_bytes_total),
            i.tp,
            gib(r.weight_bytes_per_gpu)
        ),
    );
    let attn_layers = g.full_layers + g.sliding_layers;
    match (g.kv_heads, g.kv_heads_per_gpu, g.head_dim, g.mla_latent_dim) {
        (Some(h), Some(hg), Some(dim), _) => line(
            out,
            format!(
                "kv/token/GPU   = attention layers {attn_layers} × 2 (K,V) × max(1, kv_heads {h} / tp {}) = {hg} × head_dim {dim} × {} B = {}",
                i.tp,
                i.kv_bytes,
                bytes_exact(r.kv_bytes_per_token_per_gpu)
            ),
        ),
        (_, _, _, Some(latent)) => line(
            out,
            format!(
                "kv/token/GPU   = MLA layers {attn_layers} × (kv_lora_rank + qk_rope_head_dim) {latent} × {} B = {} (no K/V pair, not divided by tp)",
                i.kv_bytes,
                bytes_exact(r.kv_bytes_per_token_per_gpu)
            ),
        ),
        _ => {}
    }
}

/// Usable memory and the KV pool.
fn explain_pool(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    line(
        out,
        format!(
            "usable         = util {} × {:.2} GiB = {}",
            i.util,
            i.gpu.memory_gib,
            gib(r.usable_bytes_per_gpu)
        ),
    );
    line(
        out,
        format!(
            "pool           = usable {} − weights {} − reserve {} = {} ({} B)",
            gib(r.usable_bytes_per_gpu),
            gib(r.weight_bytes_per_gpu),
            gib(r.activation_reserve_bytes_per_gpu),
            gib(r.kv_pool_bytes_per_gpu),
            group(r.kv_pool_bytes_per_gpu.max(0.0) as u64)
        ),
    );
    if r.kv_bytes_per_token_per_gpu > 0.0 {
        line(
            out,
            format!(
                "pool tokens    = floor({} B / {}) = {}",
                group(r.kv_pool_bytes_per_gpu as u64),
                bytes_exact(r.kv_bytes_per_token_per_gpu),
                group(r.kv_pool_tokens)
            ),
        );
        line(
            out,
            format!(
                "pool blocks    = floor(pool / (block {} × {})) = {}",
                i.block_size,
                bytes_exact(r.kv_bytes_per_token_per_gpu),
                group(r.kv_pool_blocks)
            ),
        );
    }
}

/// Bytes of one sequence and how many fit.
fn explain_sequence(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    let g = &r.kv_geometry;
    let blocks = i.context.div_ceil(u64::from(i.block_size));
    let mut seq = format!(
        "ceil({} / {}) = {} blocks × {} × full-layer bytes/token",
        group(i.context),
        i.block_size,
        group(blocks),
        i.block_size
    );
    if g.sliding_layers > 0 {
        seq.push_str(&format!(
            " + sliding layers × min(context, window {} + 1 block)",
            g.sliding_window.unwrap_or(0)
        ));
    }
    if let Some(st) = &g.state_shape {
        line(
            out,
            format!(
                "state/layer    = {} = {} + {} elem → {} × {} B + {} × {} B = {} B",
                st.formula,
                group(st.conv_elements),
                group(st.ssm_elements),
                group(st.conv_elements),
                st.conv_bytes_per_element,
                group(st.ssm_elements),
                st.ssm_bytes_per_element,
                group(st.bytes_per_layer().round() as u64)
            ),
        );
        line(
            out,
            format!(
                "state/seq/GPU  = {} {} layers × {} B = {} B = {} (fixed at any context)",
                g.linear_layers,
                st.label(),
                group(st.bytes_per_layer().round() as u64),
                group(r.state_bytes_per_sequence_per_gpu.round() as u64),
                gib_or_mib(r.state_bytes_per_sequence_per_gpu)
            ),
        );
        seq.push_str(&format!(
            " + state {}",
            gib_or_mib(r.state_bytes_per_sequence_per_gpu)
        ));
    }
    line(
        out,
        format!(
            "seq bytes      = {seq} = {}",
            gib(r.kv_bytes_per_sequence_per_gpu)
        ),
    );
    line(
        out,
        format!(
            "max concurrent = whole blocks × block bytes / seq bytes = {:.3}",
            r.max_concurrent_sequences
        ),
    );
    line(
        out,
        format!(
            "max running    = min(floor({:.3}), max_num_seqs {}) = {}",
            r.max_concurrent_sequences, i.max_num_seqs, r.max_running_sequences
        ),
    );
}

/// The decode step model and the cost.
fn explain_decode(out: &mut String, r: &CapacityReport) {
    let i = &r.inputs;
    let d = &r.decode_terms;
    if d.num_experts > 0 {
        line(
            out,
            format!(
                "touched(B)     = E × (1 − (1 − k/E)^B), E = {}, k = {}",
                d.num_experts, d.top_k
            ),
        );
        line(
            out,
            format!(
                "bytes(B)       = streamed {} + experts {} × touched(B)/{} + B × kv read {}",
                gib(d.weight_bytes_streamed_per_gpu),
                gib(d.expert_bytes_per_gpu),
                d.num_experts,
                bytes_exact(d.kv_bytes_read_per_sequence_per_gpu)
            ),
        );
    } else {
        line(
            out,
            format!(
                "bytes(B)       = streamed weights {} + B × kv read/seq {}",
                gib(d.weight_bytes_streamed_per_gpu),
                bytes_exact(d.kv_bytes_read_per_sequence_per_gpu)
            ),
        );
    }
    line(
        out,
        format!(
            "flops/token    = (2 × matmul params {} + attention {:.4e}) / tp {} = {:.4e}",
            group(d.matmul_params_per_token.round() as u64),
            d.attention_flops_per_token,
            i.tp,
            r.flops_per_token_per_gpu
        ),
    );
    line(
        out,
        format!(
            "step(B)        = max(bytes(B) / ({} TB/s × MBU {}), B × flops/token / ({} TFLOP/s × MFU {}))",
            i.gpu.bandwidth_tbs, i.mbu, r.peak_tflops, i.mfu
        ),
    );
    for p in [r.roofline.first(), r.roofline.last()]
        .into_iter()
        .flatten()
    {
        line(
            out,
            format!(
                "{:<14} = max({} B / {:.4e} B/s, {} × {:.4e} / {:.4e} FLOP/s) = max({:.3} ms, {:.3} ms) = {:.3} ms → {:.1} tok/s/seq, {:.1} tok/s total",
                format!("step({})", p.batch),
                group(p.bytes_read_per_gpu.round() as u64),
                d.effective_bandwidth_bytes_per_second,
                p.batch,
                r.flops_per_token_per_gpu,
                d.effective_flops_per_second,
                p.memory_ms,
                p.compute_ms,
                p.step_ms,
                p.tokens_per_second_per_sequence,
                p.tokens_per_second_aggregate
            ),
        );
        if r.roofline.len() == 1 {
            break;
        }
    }
    line(
        out,
        format!(
            "$/1M tokens    = ${:.2} × {} GPU / (3600 × {:.1} tok/s) × 1e6 = ${:.3}",
            i.gpu_hourly,
            i.tp,
            r.decode_tokens_per_second_aggregate,
            cost_per_million(
                i.gpu_hourly,
                u64::from(i.tp),
                r.decode_tokens_per_second_aggregate
            )
        ),
    );
}

/// One `--list-presets` row: name, Hugging Face repository, parsed model.
pub struct PresetRow<'a> {
    pub name: &'a str,
    pub repo: &'a str,
    pub spec: &'a ModelSpec,
}

/// `--list-presets`: name, repository, size and the architecture traits that matter
/// for capacity.
pub fn presets_list(rows: &[PresetRow<'_>]) -> String {
    let mut out = format!(
        "{:<20} {:<37} {:>9} {:>9}  {}\n",
        "preset", "hugging face repo", "params", "active", "architecture"
    );
    for r in rows {
        let s = r.spec;
        let mut traits = vec![
            match s.attention {
                Attention::Gqa { .. } => "GQA",
                Attention::Mla { .. } => "MLA",
            }
            .to_string(),
        ];
        if let Some(m) = &s.moe {
            traits.push(format!("MoE {}x top-{}", m.num_experts, m.top_k));
        }
        if s.count_layers(LayerKind::Sliding) > 0 {
            traits.push(format!("sliding window {}", s.sliding_window.unwrap_or(0)));
        }
        if s.count_layers(LayerKind::Linear) > 0 {
            let kind = match &s.mamba {
                Some(Mamba::Mamba1 { .. }) => "Mamba-1 hybrid",
                Some(Mamba::Mamba2 { .. }) => "Mamba-2 hybrid",
                None => "linear attention",
            };
            traits.push(kind.to_string());
        }
        if s.weight_format != WeightFormat::Bf16 {
            traits.push(format!("{:?}", s.weight_format).to_lowercase());
        }
        let _ = writeln!(
            out,
            "{:<20} {:<37} {:>9} {:>9}  {}",
            r.name,
            r.repo,
            billions(s.params.total() as f64),
            billions(s.active_params()),
            traits.join(", ")
        );
    }
    out
}

/// `--list-gpus`.
pub fn gpus_list(gpus: &[GpuSpec]) -> String {
    let mut out = format!(
        "{:<11} {:>10} {:>8} {:>11} {:>10} {:>8}  {}\n",
        "name", "mem GiB", "TB/s", "BF16 TF/s", "FP8 TF/s", "$/h", "description"
    );
    for g in gpus {
        let fp8 = g
            .fp8_tflops
            .map_or_else(|| "-".to_string(), |t| format!("{t:.0}"));
        let _ = writeln!(
            out,
            "{:<11} {:>10.2} {:>8.3} {:>11.0} {:>10} {:>8.2}  {}",
            g.name,
            g.memory_gib,
            g.bandwidth_tbs,
            g.bf16_tflops,
            fp8,
            g.default_hourly_usd,
            g.description
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(8_030_261_248), "8,030,261,248");
    }
}
