//! The mock's `/metrics` page in vLLM's Prometheus format, so the daemon's engine
//! scrape can be tested against known truth. Names, labels and buckets follow vLLM v1
//! (`vllm/v1/metrics/loggers.py`): every series carries `model_name` and `engine`.

use std::fmt::Write;

// vLLM's bucket bounds, defined once in `exposition::buckets`.
pub use crate::exposition::buckets::{
    VLLM_E2E as E2E_BUCKETS, VLLM_ITL as ITL_BUCKETS, VLLM_TTFT as TTFT_BUCKETS,
};

/// A fixed-bucket histogram (non-cumulative counts; rendered cumulatively).
#[derive(Debug, Clone)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            self.counts[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }
}

/// A point-in-time copy of the engine's numbers.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub model: String,
    pub running: u64,
    pub waiting: u64,
    pub kv_blocks_used: u64,
    pub num_gpu_blocks: u32,
    pub block_size: u32,
    pub prompt_tokens_total: u64,
    pub generation_tokens_total: u64,
    pub request_success_total: u64,
    /// Prompt tokens looked up in the prefix cache, and those found (vLLM's counters).
    pub prefix_cache_queries_total: u64,
    pub prefix_cache_hits_total: u64,
    pub ttft: Histogram,
    pub itl: Histogram,
    pub e2e: Histogram,
}

/// Python's float formatting, as prometheus_client writes it (`1.0`, `0.25`).
fn num(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub fn render(s: &Snapshot) -> String {
    let labels = format!("engine=\"0\",model_name=\"{}\"", escape(&s.model));
    let mut out = String::with_capacity(8192);
    let mut scalar = |name: &str, kind: &str, help: &str, value: String| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    };
    for (name, kind, help, value) in scalar_rows(s) {
        scalar(name, kind, help, num(value));
    }
    let _ = writeln!(
        out,
        "# HELP vllm:request_success_total Count of successfully processed requests."
    );
    let _ = writeln!(out, "# TYPE vllm:request_success_total counter");
    let _ = writeln!(
        out,
        "vllm:request_success_total{{{labels},finished_reason=\"length\"}} {}",
        num(s.request_success_total as f64)
    );
    let _ = writeln!(
        out,
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig"
    );
    let _ = writeln!(out, "# TYPE vllm:cache_config_info gauge");
    let _ = writeln!(
        out,
        "vllm:cache_config_info{{block_size=\"{}\",{labels},num_gpu_blocks=\"{}\"}} 1.0",
        s.block_size, s.num_gpu_blocks
    );
    for (name, help, h) in [
        (
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            &s.ttft,
        ),
        (
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            &s.itl,
        ),
        (
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            &s.e2e,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut cum = 0;
        for (b, c) in h.bounds.iter().zip(&h.counts) {
            cum += c;
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{}\"}} {}",
                num(*b),
                num(cum as f64)
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels},le=\"+Inf\"}} {}",
            num(h.count as f64)
        );
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", num(h.count as f64));
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", num(h.sum));
    }
    out
}

/// The gauges and counters of one sample each: name, type, help, value.
fn scalar_rows(s: &Snapshot) -> [(&'static str, &'static str, &'static str, f64); 7] {
    let usage = if s.num_gpu_blocks == 0 {
        0.0
    } else {
        (s.kv_blocks_used as f64 / f64::from(s.num_gpu_blocks)).min(1.0)
    };
    [
        (
            "vllm:num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            s.running as f64,
        ),
        (
            "vllm:num_requests_waiting",
            "gauge",
            "Number of requests waiting to be processed.",
            s.waiting as f64,
        ),
        (
            "vllm:kv_cache_usage_perc",
            "gauge",
            "KV-cache usage. 1 means 100 percent usage.",
            usage,
        ),
        (
            "vllm:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            s.prompt_tokens_total as f64,
        ),
        (
            "vllm:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            s.generation_tokens_total as f64,
        ),
        (
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in terms of number of queried tokens.",
            s.prefix_cache_queries_total as f64,
        ),
        (
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in terms of number of cached tokens.",
            s.prefix_cache_hits_total as f64,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_renders_cumulative_buckets() {
        let mut ttft = Histogram::new(TTFT_BUCKETS);
        ttft.observe(0.05);
        ttft.observe(0.05);
        ttft.observe(3000.0);
        let s = Snapshot {
            model: "m\"x".into(),
            running: 2,
            waiting: 1,
            kv_blocks_used: 3,
            num_gpu_blocks: 12,
            block_size: 16,
            prompt_tokens_total: 10,
            generation_tokens_total: 20,
            request_success_total: 1,
            prefix_cache_queries_total: 0,
            prefix_cache_hits_total: 0,
            ttft,
            itl: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(E2E_BUCKETS),
        };
        let text = render(&s);
        let l = "engine=\"0\",model_name=\"m\\\"x\"";
        for want in [
            format!("vllm:num_requests_running{{{l}}} 2.0"),
            format!("vllm:kv_cache_usage_perc{{{l}}} 0.25"),
            format!("vllm:cache_config_info{{block_size=\"16\",{l},num_gpu_blocks=\"12\"}} 1.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"0.04\"}} 0.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"0.06\"}} 2.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"2560.0\"}} 2.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"+Inf\"}} 3.0"),
            format!("vllm:time_to_first_token_seconds_count{{{l}}} 3.0"),
        ] {
            assert!(text.contains(&want), "missing {want}\n{text}");
        }
    }
}
