use std::net::SocketAddr;

use clap::Args;

/// Flags of `llmprobe mock` (checked into a `MockConfig` by `MockConfig::from_args`).
#[derive(Debug, Clone, Args)]
pub struct MockArgs {
    /// Address to listen on (port 0 picks a free port; the real one is printed).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: SocketAddr,
    /// Time to first token in milliseconds, from when the request body is read.
    #[arg(long, default_value_t = 50.0)]
    pub ttft_ms: f64,
    /// Time per output token in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    pub itl_ms: f64,
    /// Random factor on TTFT and token times: none, uniform:F, lognormal:SIGMA.
    #[arg(long, default_value = "none")]
    pub jitter: String,
    /// Fixed output length (default: the request's max_completion_tokens/max_tokens, else 16).
    #[arg(long)]
    pub output_tokens: Option<u32>,
    /// Tokens per content chunk after the first (as with speculative decoding).
    #[arg(long, default_value_t = 1)]
    pub tokens_per_chunk: u32,
    /// Requests running at once; more wait in a FIFO queue (TTFT grows by the wait).
    #[arg(long)]
    pub max_running: Option<u32>,
    /// Token time = itl × (1 + F × other running requests).
    #[arg(long, default_value_t = 0.0)]
    pub batch_slowdown: f64,
    /// Never send usage in streams (like servers that ignore stream_options).
    #[arg(long)]
    pub no_usage: bool,
    /// Seed for fault draws and jitter.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Demand `Authorization: Bearer KEY` on /v1 routes.
    #[arg(long, env = "LLMPROBE_MOCK_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Inject a fault: KIND[=PARAM][:PROBABILITY] (repeatable; probability default 1).
    ///
    /// Kinds: http_500, http_503, http_429[=RETRY_AFTER_S], close_before_response,
    /// reset_mid_stream[=N], stall_before_headers, stall_after_tokens[=N], malformed_json,
    /// no_done, invalid_utf8, huge_line[=BYTES], trickle, wrong_content_type,
    /// json_instead_of_sse, error_event, empty_completion. A request header
    /// `x-mock-fault: KIND[=PARAM]` forces one. Wire behaviour: docs/mock.md.
    #[arg(long, value_name = "KIND[=PARAM][:P]")]
    pub fault: Vec<String>,
    /// KV cache size in blocks (reported in vllm:cache_config_info).
    #[arg(long, default_value_t = crate::mock::DEFAULT_NUM_GPU_BLOCKS)]
    pub num_gpu_blocks: u32,
    /// Tokens per KV block.
    #[arg(long, default_value_t = crate::mock::DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Model name in /v1/models and /metrics (requests may use any name).
    #[arg(long, default_value = crate::mock::DEFAULT_MODEL)]
    pub model: String,
    /// Duration of the stall faults in milliseconds.
    #[arg(long, default_value_t = 600_000.0)]
    pub stall_ms: f64,
}
