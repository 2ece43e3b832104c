//! KV cache arithmetic: bytes per token per GPU, bytes one sequence holds, the pool
//! left after weights and the activation reserve, and vLLM's concurrency figure.

use super::model::{Attention, LayerKind, ModelSpec, StateShape};

/// Bytes per element of linear-attention / SSM state. vLLM keeps that state in the
/// model dtype (`--mamba-cache-dtype auto`, `--mamba-ssm-cache-dtype auto`) even when
/// the KV cache is FP8 (`MambaStateDtypeCalculator`, mamba_utils.py); every preset's
/// model dtype is BF16.
pub const STATE_BYTES: f64 = 2.0;

/// KV heads each GPU stores: heads are split across TP ranks, and replicated (not
/// split further) once tp exceeds the head count (vLLM `get_num_kv_heads`).
pub fn kv_heads_per_gpu(num_kv_heads: u64, tp: u64) -> u64 {
    (num_kv_heads / tp.max(1)).max(1)
}

/// Elements one attention layer caches per token on one GPU.
pub fn elements_per_token_per_layer(attention: &Attention, tp: u64) -> u64 {
    match attention {
        Attention::Gqa {
            num_kv_heads,
            head_dim,
            ..
        } => 2 * kv_heads_per_gpu(*num_kv_heads, tp) * head_dim,
        // MLA caches one latent vector plus the shared RoPE key: no K/V pair, and every
        // TP rank holds the whole latent (vLLM `MLAAttentionSpec`).
        Attention::Mla {
            kv_lora_rank,
            qk_rope_head_dim,
            ..
        } => kv_lora_rank + qk_rope_head_dim,
    }
}

/// Per-GPU KV layout of a model at a given TP and KV precision.
#[derive(Debug, Clone, PartialEq)]
pub struct KvLayout {
    /// Bytes per token summed over full-attention layers.
    pub full_bytes_per_token: f64,
    /// Bytes per token summed over sliding-window layers.
    pub sliding_bytes_per_token: f64,
    /// Window of the sliding layers, in tokens.
    pub window: u64,
    /// Fixed bytes per sequence of linear-attention / SSM layers.
    pub state_bytes_per_sequence: f64,
}

impl KvLayout {
    /// `state` is the per-layer, per-GPU state of the model's linear/SSM layers
    /// ([`ModelSpec::state_shape`]).
    pub fn new(spec: &ModelSpec, tp: u64, kv_bytes: f64, state: Option<&StateShape>) -> Self {
        let per_layer = elements_per_token_per_layer(&spec.attention, tp) as f64 * kv_bytes;
        let state = state.map_or(0.0, StateShape::bytes_per_layer);
        Self {
            full_bytes_per_token: spec.count_layers(LayerKind::Full) as f64 * per_layer,
            sliding_bytes_per_token: spec.count_layers(LayerKind::Sliding) as f64 * per_layer,
            window: spec.sliding_window.unwrap_or(0),
            state_bytes_per_sequence: spec.count_layers(LayerKind::Linear) as f64 * state,
        }
    }

    /// What one token costs while it is inside every window: the figure behind vLLM's
    /// "GPU KV cache size: N tokens".
    pub fn bytes_per_token(&self) -> f64 {
        self.full_bytes_per_token + self.sliding_bytes_per_token
    }

    /// Bytes one sequence of `context` tokens occupies, allocated in blocks of
    /// `block_size` tokens. A sliding layer keeps the blocks covering its window plus
    /// the one the window straddles.
    pub fn sequence_bytes_allocated(&self, context: u64, block_size: u64) -> f64 {
        let bs = block_size.max(1);
        let full_blocks = context.div_ceil(bs);
        let sliding_blocks = if context > self.window {
            self.window.div_ceil(bs).saturating_add(1)
        } else {
            full_blocks
        }
        .min(full_blocks);
        (full_blocks * bs) as f64 * self.full_bytes_per_token
            + (sliding_blocks * bs) as f64 * self.sliding_bytes_per_token
            + self.state_bytes_per_sequence
    }

    /// Bytes one decode step reads for one sequence at `context` tokens.
    pub fn sequence_bytes_read(&self, context: u64) -> f64 {
        context as f64 * self.full_bytes_per_token
            + context.min(self.window) as f64 * self.sliding_bytes_per_token
            + self.state_bytes_per_sequence
    }
}

/// KV pool per GPU: util × memory − weights − reserve (vLLM's
/// `requested_memory - non_kv_cache_memory`, with activations, CUDA graphs and
/// non-torch allocations folded into the reserve).
pub fn pool_bytes(memory_bytes: f64, util: f64, weight_bytes: f64, reserve_bytes: f64) -> f64 {
    util * memory_bytes - weight_bytes - reserve_bytes
}

/// vLLM's "Maximum concurrency for N tokens per request: X x": whole KV blocks in the
/// pool divided by the blocks one request needs (`get_max_concurrency_for_kv_cache_config`).
/// Without per-token KV (a pure SSM model) the pool is divided by the fixed state.
pub fn max_concurrency(pool: f64, layout: &KvLayout, context: u64, block_size: u64) -> f64 {
    let per_seq = layout.sequence_bytes_allocated(context, block_size);
    if per_seq <= 0.0 || pool <= 0.0 {
        return 0.0;
    }
    let page = block_size as f64 * layout.bytes_per_token();
    let usable = if page > 0.0 {
        (pool / page).floor() * page
    } else {
        pool
    };
    usable / per_seq
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_heads_are_replicated_beyond_their_count() {
        assert_eq!(kv_heads_per_gpu(8, 1), 8);
        assert_eq!(kv_heads_per_gpu(8, 2), 4);
        assert_eq!(kv_heads_per_gpu(8, 8), 1);
        assert_eq!(kv_heads_per_gpu(8, 16), 1);
        assert_eq!(kv_heads_per_gpu(4, 8), 1);
    }

    #[test]
    fn mla_is_not_divided_by_tp() {
        let mla = Attention::Mla {
            num_heads: 128,
            q_lora_rank: Some(1536),
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        };
        assert_eq!(elements_per_token_per_layer(&mla, 1), 576);
        assert_eq!(elements_per_token_per_layer(&mla, 8), 576);
    }

    fn layout(full: f64, sliding: f64, window: u64, state: f64) -> KvLayout {
        KvLayout {
            full_bytes_per_token: full,
            sliding_bytes_per_token: sliding,
            window,
            state_bytes_per_sequence: state,
        }
    }

    #[test]
    fn sequences_are_allocated_in_whole_blocks() {
        let l = layout(100.0, 0.0, 0, 0.0);
        assert_eq!(l.sequence_bytes_allocated(16, 16), 1600.0);
        assert_eq!(l.sequence_bytes_allocated(17, 16), 3200.0);
        assert_eq!(l.sequence_bytes_read(17), 1700.0);
    }

    #[test]
    fn sliding_layers_hold_at_most_the_window() {
        let l = layout(0.0, 10.0, 128, 0.0);
        // 8192 tokens: 128/16 = 8 blocks + 1 straddled block, not 512 blocks.
        assert_eq!(l.sequence_bytes_allocated(8192, 16), 9.0 * 16.0 * 10.0);
        // Shorter than the window: just the context.
        assert_eq!(l.sequence_bytes_allocated(40, 16), 48.0 * 10.0);
        assert_eq!(l.sequence_bytes_read(8192), 1280.0);
    }

    #[test]
    fn linear_state_is_fixed_per_sequence() {
        let l = layout(0.0, 0.0, 0, 5000.0);
        assert_eq!(l.sequence_bytes_allocated(10, 16), 5000.0);
        assert_eq!(l.sequence_bytes_allocated(100_000, 16), 5000.0);
        assert_eq!(max_concurrency(50_000.0, &l, 1_000, 16), 10.0);
    }

    #[test]
    fn concurrency_counts_whole_blocks_like_vllm() {
        let l = layout(1.0, 0.0, 0, 0.0);
        // 1000 bytes = 62 whole blocks of 16 tokens; 100 tokens need 7 blocks.
        let c = max_concurrency(1000.0, &l, 100, 16);
        assert!((c - 62.0 / 7.0).abs() < 1e-12, "{c}");
        assert_eq!(max_concurrency(-5.0, &l, 100, 16), 0.0);
    }

    #[test]
    fn pool_is_util_times_memory_minus_weights_and_reserve() {
        assert_eq!(pool_bytes(100.0, 0.9, 30.0, 10.0), 50.0);
    }
}
