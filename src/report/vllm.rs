//! `--save-result`: one JSON object with the key names of `vllm bench serve
//! --save-result` (vllm/benchmarks/serve.py: `benchmark()` result dict plus the
//! `date`/`backend`/`model_id`/… keys `main()` adds), so tooling written for vLLM reads
//! it unchanged. Latencies are in ms in the summary keys and in seconds in the
//! per-request lists, as vLLM writes them.

use serde_json::{Map, Value, json};

use crate::latency::Latency;
use crate::record::RequestRecord;
use crate::report::{RateReport, percentile_key};

/// What the vLLM file needs beyond the report.
pub struct VllmContext<'a> {
    /// `%Y%m%d-%H%M%S` local stamp, as vLLM's `date`.
    pub date: &'a str,
    /// vLLM backend name: `openai` or `openai-chat`.
    pub backend: &'a str,
    pub model_id: &'a str,
    pub tokenizer_id: Option<&'a str>,
    /// Metrics to emit mean/median/std/percentiles for (`--percentile-metrics`).
    pub metrics: &'a [Latency],
    /// Percentiles to emit (`--metric-percentiles`).
    pub percentiles: &'a [f64],
    /// Whether goodput objectives were set (vLLM writes `request_goodput: null` if not).
    pub goodput_configured: bool,
}

/// Builds the vLLM-compatible result object for one rate.
pub fn result(r: &RateReport, records: &[RequestRecord], ctx: &VllmContext<'_>) -> Value {
    let mut m = Map::new();
    let rate = if r.rate.per_second().is_infinite() {
        json!("inf")
    } else {
        json!(r.rate.per_second())
    };
    m.insert("date".into(), json!(ctx.date));
    m.insert("backend".into(), json!(ctx.backend));
    m.insert("endpoint_type".into(), json!(ctx.backend));
    m.insert("model_id".into(), json!(ctx.model_id));
    m.insert(
        "tokenizer_id".into(),
        json!(ctx.tokenizer_id.unwrap_or(ctx.model_id)),
    );
    m.insert("num_prompts".into(), json!(r.requests));
    m.insert("request_rate".into(), rate);
    m.insert(
        "burstiness".into(),
        json!(r.inputs.as_ref().map_or(1.0, |i| i.burstiness)),
    );
    m.insert(
        "max_concurrency".into(),
        json!(r.inputs.as_ref().and_then(|i| i.max_concurrency)),
    );
    m.insert("duration".into(), json!(r.duration_s));
    m.insert("completed".into(), json!(r.completed));
    m.insert("failed".into(), json!(r.failed));
    m.insert("total_input_tokens".into(), json!(r.total_input_tokens));
    m.insert("total_output_tokens".into(), json!(r.total_output_tokens));
    m.insert("request_throughput".into(), json!(r.achieved_rate));
    m.insert(
        "request_goodput".into(),
        if ctx.goodput_configured {
            json!(r.goodput)
        } else {
            Value::Null
        },
    );
    m.insert("output_throughput".into(), json!(r.output_throughput));
    m.insert(
        "total_token_throughput".into(),
        json!(r.total_token_throughput),
    );
    latency_keys(&mut m, r, ctx);
    per_request_lists(&mut m, records);
    Value::Object(m)
}

/// `mean_ttft_ms`, `median_ttft_ms`, `std_ttft_ms`, `p99_ttft_ms`, … for each metric.
fn latency_keys(m: &mut Map<String, Value>, r: &RateReport, ctx: &VllmContext<'_>) {
    for &metric in ctx.metrics {
        // Every latency users can name has stats (a test in `report` holds them to it).
        let Some(s) = r.latency_stats(metric) else {
            continue;
        };
        let name = metric.user_name();
        m.insert(format!("mean_{name}_ms"), json!(s.mean));
        m.insert(format!("median_{name}_ms"), json!(s.percentile(50.0)));
        m.insert(format!("std_{name}_ms"), json!(s.std));
        for &p in ctx.percentiles {
            m.insert(
                format!("{}_{name}_ms", percentile_key(p)),
                json!(s.percentile(p)),
            );
        }
    }
}

/// The per-request lists (`input_lens`, `ttfts`, `itls`, `errors`, …), in seconds.
fn per_request_lists(m: &mut Map<String, Value>, records: &[RequestRecord]) {
    let secs = |d: Option<std::time::Duration>| d.map_or(0.0, |d| d.as_secs_f64());
    m.insert(
        "input_lens".into(),
        json!(
            records
                .iter()
                .map(|r| r.prompt_tokens())
                .collect::<Vec<_>>()
        ),
    );
    m.insert(
        "output_lens".into(),
        json!(
            records
                .iter()
                .map(|r| r.output_tokens())
                .collect::<Vec<_>>()
        ),
    );
    m.insert(
        "ttfts".into(),
        json!(records.iter().map(|r| secs(r.ttft())).collect::<Vec<_>>()),
    );
    // vLLM's `itls` are per-chunk gaps, one list per request.
    m.insert(
        "itls".into(),
        json!(
            records
                .iter()
                .map(|r| r.chunk_gaps().map(|d| d.as_secs_f64()).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        ),
    );
    m.insert(
        "errors".into(),
        json!(
            records
                .iter()
                .map(|r| match (&r.error, r.is_success()) {
                    (_, true) => String::new(),
                    (Some(e), false) => format!("{}: {e}", r.outcome),
                    (None, false) => r.outcome.to_string(),
                })
                .collect::<Vec<_>>()
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::sample_report;

    fn ctx<'a>(metrics: &'a [Latency], percentiles: &'a [f64]) -> VllmContext<'a> {
        VllmContext {
            date: "20261129-183437",
            backend: "openai",
            model_id: "mock-llm",
            tokenizer_id: None,
            metrics,
            percentiles,
            goodput_configured: true,
        }
    }

    #[test]
    fn has_vllm_key_names() {
        let metrics: Vec<Latency> = Latency::vllm_metrics().collect();
        let v = result(&sample_report(8.0), &[], &ctx(&metrics, &[99.0]));
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        // vLLM's result keys, spelled as vllm/benchmarks/serve.py spells them.
        for k in [
            "date",
            "backend",
            "model_id",
            "num_prompts",
            "request_rate",
            "burstiness",
            "max_concurrency",
            "duration",
            "completed",
            "failed",
            "total_input_tokens",
            "total_output_tokens",
            "request_throughput",
            "request_goodput",
            "output_throughput",
            "total_token_throughput",
            "mean_ttft_ms",
            "median_ttft_ms",
            "std_ttft_ms",
            "p99_ttft_ms",
            "mean_tpot_ms",
            "median_tpot_ms",
            "std_tpot_ms",
            "p99_tpot_ms",
            "mean_itl_ms",
            "median_itl_ms",
            "std_itl_ms",
            "p99_itl_ms",
            "mean_e2el_ms",
            "median_e2el_ms",
            "std_e2el_ms",
            "p99_e2el_ms",
            "input_lens",
            "output_lens",
            "ttfts",
            "itls",
            "errors",
        ] {
            assert!(keys.contains(&k), "missing {k}");
        }
        assert_eq!(v["median_ttft_ms"], json!(90.0));
        assert_eq!(v["p99_ttft_ms"], json!(120.0));
    }

    #[test]
    fn schema_snapshot() {
        let metrics = [Latency::Ttft, Latency::Tpot];
        let mut r = sample_report(8.0);
        r.rate = crate::rate::Rate::INFINITE;
        let rec = crate::report::jsonl::tests_support_record();
        let mut failed = rec.clone();
        failed.outcome = crate::record::Outcome::Http5xx;
        failed.error = Some("overloaded".into());
        let v = result(&r, &[rec, failed], &ctx(&metrics, &[50.0, 99.9]));
        assert_eq!(v["request_rate"], json!("inf"));
        insta::assert_json_snapshot!(v);
    }
}
