//! The inference engine's own view: scrape its Prometheus `/metrics` (vLLM or SGLang)
//! into an [`EngineSnapshot`], and turn two snapshots into rates. The daemon publishes
//! these next to its client-side measurements (live headroom, live cost, and the gap
//! between the client's TTFT and the server's).
//!
//! Metric names: vLLM `vllm/v1/metrics/loggers.py` (`vllm:num_requests_running`,
//! `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`, `vllm:cache_config_info`,
//! `vllm:generation_tokens_total`, `vllm:time_to_first_token_seconds`); SGLang
//! `python/sglang/srt/metrics/collector.py` (`sglang:num_running_reqs`,
//! `sglang:num_queue_reqs`, `sglang:token_usage`, `sglang:max_total_num_tokens`,
//! `sglang:gen_throughput`, `sglang:generation_tokens_total`,
//! `sglang:time_to_first_token_seconds`).

pub mod text;

use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;

/// Which engine a scrape came from, recognised by its metric namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Vllm,
    Sglang,
}

/// One scrape, with values summed over the engine's series (data-parallel ranks,
/// served model names). `None` = the engine did not export it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineSnapshot {
    pub kind: Option<EngineKind>,
    /// Requests in the running batch.
    pub running: Option<f64>,
    /// Requests queued, waiting for a batch slot.
    pub waiting: Option<f64>,
    /// KV cache usage, 0..1 (mean over ranks).
    pub kv_usage_ratio: Option<f64>,
    /// KV cache capacity in tokens: vLLM `num_gpu_blocks × block_size` (from
    /// `vllm:cache_config_info` labels), SGLang `max_total_num_tokens`.
    pub kv_cache_tokens: Option<f64>,
    /// Output tokens generated since the engine started (a counter).
    pub generation_tokens_total: Option<f64>,
    /// SGLang's own generation throughput gauge, tokens/s.
    pub gen_throughput: Option<f64>,
    /// Server-side TTFT histogram sum (seconds) and count.
    pub ttft_sum: Option<f64>,
    pub ttft_count: Option<f64>,
}

/// A scrape body that is not valid exposition format.
#[derive(Debug, thiserror::Error)]
#[error("engine metrics are not valid Prometheus text format: {0}")]
pub struct EngineParseError(#[from] pub text::ParseError);

/// Largest `/metrics` body we read; a real engine's is well under 1 MiB.
const MAX_BODY_BYTES: usize = 16 << 20;

/// Parses an engine's `/metrics` text.
pub fn parse(body: &str) -> Result<EngineSnapshot, EngineParseError> {
    let samples = text::parse(body)?;
    let mut snap = EngineSnapshot::default();
    let mut kv_usage = Mean::default();
    for s in &samples {
        let (kind, name) = match s.name.split_once(':') {
            Some(("vllm", rest)) => (EngineKind::Vllm, rest),
            Some(("sglang", rest)) => (EngineKind::Sglang, rest),
            _ => continue,
        };
        snap.kind.get_or_insert(kind);
        let v = s.value;
        if !v.is_finite() {
            continue;
        }
        match (kind, name) {
            (EngineKind::Vllm, "num_requests_running")
            | (EngineKind::Sglang, "num_running_reqs") => add(&mut snap.running, v),
            (EngineKind::Vllm, "num_requests_waiting") | (EngineKind::Sglang, "num_queue_reqs") => {
                add(&mut snap.waiting, v)
            }
            // vLLM V1 renamed gpu_cache_usage_perc to kv_cache_usage_perc; both are 0..1.
            (EngineKind::Vllm, "kv_cache_usage_perc" | "gpu_cache_usage_perc")
            | (EngineKind::Sglang, "token_usage") => kv_usage.push(v),
            (EngineKind::Vllm, "cache_config_info") => {
                let num = |k: &str| s.label(k).and_then(|x| x.parse::<f64>().ok());
                if let Some(tokens) = num("kv_cache_size_tokens") {
                    add(&mut snap.kv_cache_tokens, tokens);
                } else if let (Some(blocks), Some(size)) =
                    (num("num_gpu_blocks"), num("block_size"))
                {
                    add(&mut snap.kv_cache_tokens, blocks * size);
                }
            }
            (EngineKind::Sglang, "max_total_num_tokens") => add(&mut snap.kv_cache_tokens, v),
            (_, "generation_tokens_total") => add(&mut snap.generation_tokens_total, v),
            (EngineKind::Sglang, "gen_throughput") => add(&mut snap.gen_throughput, v),
            (_, "time_to_first_token_seconds_sum") => add(&mut snap.ttft_sum, v),
            (_, "time_to_first_token_seconds_count") => add(&mut snap.ttft_count, v),
            _ => {}
        }
    }
    snap.kv_usage_ratio = kv_usage.get();
    Ok(snap)
}

/// Fetches and parses `url` (an engine's `/metrics`). Errors say what failed: the
/// connection, the HTTP status, the size limit or the format.
pub async fn scrape(
    http: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> anyhow::Result<EngineSnapshot> {
    let fetch = async {
        let resp = http
            .get(url)
            .header(reqwest::header::ACCEPT, "text/plain;version=0.0.4")
            .send()
            .await
            // The URL may carry credentials (user:pass@, a token in the query): keep it
            // out of the error, which is logged.
            .map_err(reqwest::Error::without_url)
            .context("engine metrics request failed")?;
        let status = resp.status();
        if !status.is_success() {
            anyhow::bail!("engine metrics answered HTTP {status}");
        }
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(piece) = stream.next().await {
            let piece = piece
                .map_err(reqwest::Error::without_url)
                .context("reading engine metrics body")?;
            if body.len() + piece.len() > MAX_BODY_BYTES {
                anyhow::bail!("engine metrics body exceeds {MAX_BODY_BYTES} bytes");
            }
            body.extend_from_slice(&piece);
        }
        let text = String::from_utf8(body).context("engine metrics body is not UTF-8")?;
        let snap = parse(&text)?;
        if snap.kind.is_none() {
            // A wrong URL (node-exporter, the gateway's own metrics) must not pass as a
            // successful engine scrape with no data.
            anyhow::bail!("no vllm: or sglang: metrics found at the engine metrics URL");
        }
        Ok(snap)
    };
    tokio::time::timeout(timeout, fetch)
        .await
        .map_err(|_| anyhow::anyhow!("engine metrics scrape timed out after {timeout:?}"))?
}

/// Rates between two scrapes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EngineRates {
    /// Output tokens per second over the interval (counter delta; SGLang's own gauge
    /// when the counter is missing).
    pub generation_tokens_per_second: Option<f64>,
    /// The server's mean TTFT over the interval (histogram sum and count deltas).
    pub ttft_mean_seconds: Option<f64>,
}

/// Rates between `prev` and `cur`, scraped `elapsed` apart. A counter that went down
/// (engine restart) gives no rate for that interval rather than a negative one.
pub fn rates(prev: &EngineSnapshot, cur: &EngineSnapshot, elapsed: Duration) -> EngineRates {
    let secs = elapsed.as_secs_f64();
    let delta = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    let generation = match delta(prev.generation_tokens_total, cur.generation_tokens_total) {
        Some(d) if secs > 0.0 => Some(d / secs),
        _ => cur.gen_throughput,
    };
    let ttft_mean = match (
        delta(prev.ttft_sum, cur.ttft_sum),
        delta(prev.ttft_count, cur.ttft_count),
    ) {
        (Some(sum), Some(count)) if count > 0.0 => Some(sum / count),
        _ => None,
    };
    EngineRates {
        generation_tokens_per_second: generation,
        ttft_mean_seconds: ttft_mean,
    }
}

fn add(slot: &mut Option<f64>, v: f64) {
    *slot = Some(slot.unwrap_or(0.0) + v);
}

#[derive(Default)]
struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    fn push(&mut self, v: f64) {
        self.sum += v;
        self.n += 1;
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / f64::from(self.n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM: &str = include_str!("../../tests/fixtures/engine/vllm.txt");
    const SGLANG: &str = include_str!("../../tests/fixtures/engine/sglang.txt");

    #[test]
    fn reads_vllm() {
        let s = parse(VLLM).unwrap();
        assert_eq!(s.kind, Some(EngineKind::Vllm));
        assert_eq!(s.running, Some(5.0));
        assert_eq!(s.waiting, Some(2.0));
        assert_eq!(s.kv_usage_ratio, Some(0.25));
        // 27,000 blocks × 16 tokens
        assert_eq!(s.kv_cache_tokens, Some(432_000.0));
        assert_eq!(s.generation_tokens_total, Some(123_456.0));
        assert_eq!(s.ttft_sum, Some(12.5));
        assert_eq!(s.ttft_count, Some(100.0));
        assert_eq!(s.gen_throughput, None);
    }

    #[test]
    fn reads_sglang() {
        let s = parse(SGLANG).unwrap();
        assert_eq!(s.kind, Some(EngineKind::Sglang));
        assert_eq!(s.running, Some(7.0));
        assert_eq!(s.waiting, Some(1.0));
        assert_eq!(s.kv_usage_ratio, Some(0.28));
        assert_eq!(s.kv_cache_tokens, Some(161_721.0));
        assert_eq!(s.gen_throughput, Some(850.5));
        assert_eq!(s.generation_tokens_total, Some(7_557_572.0));
        assert_eq!(s.ttft_count, Some(40.0));
    }

    #[test]
    fn sums_data_parallel_ranks_and_averages_usage() {
        let text = "vllm:num_requests_running{engine=\"0\"} 2\n\
                    vllm:num_requests_running{engine=\"1\"} 3\n\
                    vllm:kv_cache_usage_perc{engine=\"0\"} 0.2\n\
                    vllm:kv_cache_usage_perc{engine=\"1\"} 0.4\n\
                    vllm:cache_config_info{engine=\"0\",block_size=\"16\",num_gpu_blocks=\"100\"} 1\n\
                    vllm:cache_config_info{engine=\"1\",block_size=\"16\",num_gpu_blocks=\"100\"} 1\n";
        let s = parse(text).unwrap();
        assert_eq!(s.running, Some(5.0));
        assert!((s.kv_usage_ratio.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(s.kv_cache_tokens, Some(3200.0));
    }

    #[test]
    fn unknown_engines_give_an_empty_snapshot() {
        let s = parse("process_cpu_seconds_total 3\n").unwrap();
        assert_eq!(s, EngineSnapshot::default());
        assert!(parse("garbage here now\n").is_err());
    }

    #[test]
    fn rates_from_counter_deltas() {
        let prev = EngineSnapshot {
            generation_tokens_total: Some(1000.0),
            ttft_sum: Some(10.0),
            ttft_count: Some(100.0),
            ..Default::default()
        };
        let cur = EngineSnapshot {
            generation_tokens_total: Some(3000.0),
            ttft_sum: Some(13.0),
            ttft_count: Some(120.0),
            ..Default::default()
        };
        let r = rates(&prev, &cur, Duration::from_secs(10));
        assert_eq!(r.generation_tokens_per_second, Some(200.0));
        assert!((r.ttft_mean_seconds.unwrap() - 0.15).abs() < 1e-12);
        // An engine restart resets counters: no rate rather than a negative one.
        let restarted = rates(&cur, &prev, Duration::from_secs(10));
        assert_eq!(restarted, EngineRates::default());
    }

    #[test]
    fn sglang_throughput_gauge_is_the_fallback() {
        let cur = EngineSnapshot {
            gen_throughput: Some(42.0),
            ..Default::default()
        };
        let r = rates(&EngineSnapshot::default(), &cur, Duration::from_secs(5));
        assert_eq!(r.generation_tokens_per_second, Some(42.0));
    }

    #[tokio::test]
    async fn scrape_reports_http_failures() {
        crate::install_crypto_provider();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .route("/metrics", axum::routing::get(|| async { VLLM }))
            .route(
                "/not-an-engine",
                axum::routing::get(|| async { "process_cpu_seconds_total 3\n" }),
            )
            .route(
                "/broken",
                axum::routing::get(|| async { (axum::http::StatusCode::BAD_GATEWAY, "no") }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        let http = reqwest::Client::new();
        let t = Duration::from_secs(5);
        let ok = scrape(&http, &format!("http://{addr}/metrics"), t)
            .await
            .unwrap();
        assert_eq!(ok.running, Some(5.0));
        let err = scrape(&http, &format!("http://{addr}/broken"), t)
            .await
            .unwrap_err();
        assert!(format!("{err:#}").contains("HTTP 502"), "{err:#}");
        let err = scrape(&http, &format!("http://{addr}/not-an-engine"), t)
            .await
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("no vllm: or sglang: metrics"),
            "{err:#}"
        );
        // A port that was just released: nothing listens there.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_addr = closed.local_addr().unwrap();
        drop(closed);
        let err = scrape(
            &http,
            &format!("http://user:CANARY-PASS@{closed_addr}/metrics?token=CANARY-TOKEN"),
            t,
        )
        .await
        .unwrap_err();
        assert!(!format!("{err:#} {err:?}").contains("CANARY"), "{err:#}");
        assert!(format!("{err:#}").contains("request failed"), "{err:#}");
    }
}
