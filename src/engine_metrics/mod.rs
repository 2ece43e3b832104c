//! The inference engine's own view: scrape its Prometheus `/metrics` (vLLM, SGLang,
//! llama.cpp's `llama-server` or Hugging Face TGI) into an [`EngineSnapshot`], and turn
//! two snapshots into rates. The daemon publishes these next to its client-side
//! measurements (live headroom, live cost, and the gap between the client's TTFT and the
//! server's).
//!
//! Metric sources:
//! - vLLM `vllm/v1/metrics/loggers.py`: `vllm:num_requests_running`,
//!   `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`, `vllm:cache_config_info`
//!   (its labels: KV blocks, block size, `kv_cache_max_concurrency`),
//!   `vllm:generation_tokens_total`, `vllm:time_to_first_token_seconds`.
//! - SGLang `python/sglang/srt/metrics/collector.py`: `sglang:num_running_reqs`,
//!   `sglang:num_queue_reqs`, `sglang:token_usage`, `sglang:max_total_num_tokens`,
//!   `sglang:gen_throughput`, `sglang:generation_tokens_total`,
//!   `sglang:time_to_first_token_seconds`, `sglang:cache_hit_rate`.
//! - vLLM's prefix cache: `vllm:prefix_cache_queries_total` and
//!   `vllm:prefix_cache_hits_total` (prompt tokens looked up and found). llama.cpp's
//!   server exports no prefix-cache counter.
//! - llama.cpp `llama-server --metrics` (`tools/server/`): `llamacpp:requests_processing`
//!   (busy slots), `llamacpp:requests_deferred` (requests waiting for a slot),
//!   `llamacpp:tokens_predicted_total` (added when a request finishes), and
//!   `llamacpp:kv_cache_usage_ratio` where a build still exports it. The number of slots
//!   is not in `/metrics`: it is `total_slots` of `GET /props` on the same server.
//!   `llamacpp:kv_cache_tokens` (older builds) counts tokens in use, not capacity, and
//!   `llamacpp:n_busy_slots_per_decode` is a mean since start: neither is used.
//! - TGI router (`router/src/server.rs`, `backends/v3/src/`): `tgi_batch_current_size`,
//!   `tgi_queue_size`, `tgi_batch_max_total_tokens` (the scheduler's token budget, v3
//!   backend), `tgi_batch_current_max_tokens` (the share of it the running batch holds),
//!   `tgi_request_generated_tokens` (a histogram of tokens per finished request: its
//!   `_sum` is a generated-tokens counter). TGI exports no TTFT histogram.
//!
//! - vLLM's LoRA adapters: `vllm:lora_requests_info`, a gauge whose labels carry the
//!   state (`max_lora`, `running_lora_adapters`, `waiting_lora_adapters`: comma-separated
//!   names) and whose value is the Unix time it was set; an old label set stays exported
//!   beside the new one, so the sample with the newest value is the current state.
//!
//! `router` reads the endpoint picker in front of the engines (llm-d, the Gateway API
//! Inference Extension) the same way.

pub mod gpu;
pub mod router;
mod scrape_error;
pub mod text;

use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;

pub use scrape_error::{ScrapeError, ScrapeFailure};

/// Which engine a scrape came from, recognised by its metric namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Vllm,
    Sglang,
    LlamaCpp,
    Tgi,
}

/// One scrape, with values summed over the engine's series (data-parallel ranks,
/// served model names). `None` = the engine did not export it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineSnapshot {
    pub kind: Option<EngineKind>,
    /// Requests in the running batch (llama.cpp: busy slots).
    pub running: Option<f64>,
    /// Requests queued, waiting for a batch slot.
    pub waiting: Option<f64>,
    /// KV cache usage, 0..1 (mean over ranks). TGI: the running batch's share of the
    /// scheduler's token budget.
    pub kv_usage_ratio: Option<f64>,
    /// KV cache capacity in tokens: vLLM `num_gpu_blocks × block_size` (from
    /// `vllm:cache_config_info` labels), SGLang `max_total_num_tokens`, TGI
    /// `tgi_batch_max_total_tokens`.
    pub kv_cache_tokens: Option<f64>,
    /// llama.cpp's parallel slots (`total_slots` of `GET /props`): the most requests
    /// it runs at once.
    pub total_slots: Option<f64>,
    /// The engine's own count of full-length sequences its KV cache holds at once
    /// (vLLM: `kv_cache_max_concurrency` of `vllm:cache_config_info`, KV tokens over its
    /// `max_model_len`; summed over ranks like the KV tokens).
    pub kv_max_concurrency: Option<f64>,
    /// Output tokens generated since the engine started (a counter).
    pub generation_tokens_total: Option<f64>,
    /// SGLang's own generation throughput gauge, tokens/s.
    pub gen_throughput: Option<f64>,
    /// Server-side TTFT histogram sum (seconds) and count.
    pub ttft_sum: Option<f64>,
    pub ttft_count: Option<f64>,
    /// vLLM's prefix-cache counters: prompt tokens looked up, and those found.
    pub prefix_cache_queries: Option<f64>,
    pub prefix_cache_hits: Option<f64>,
    /// SGLang's own prefix-cache hit rate gauge (its radix cache), 0..1.
    pub prefix_cache_hit_rate: Option<f64>,
    /// vLLM's LoRA adapters now (the newest `vllm:lora_requests_info` sample).
    pub lora: Option<LoraState>,
}

/// The LoRA adapters an engine has in its batch and queue, and how many it holds at once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoraState {
    /// Adapters with a request in the running batch, each named once.
    pub running: Vec<String>,
    /// Adapters with a request waiting, each named once.
    pub waiting: Vec<String>,
    /// The most adapters the engine holds in one batch (`--max-loras`).
    pub max: Option<f64>,
}

impl LoraState {
    /// The state one `vllm:lora_requests_info` sample's labels describe.
    fn of(s: &text::Sample<'_>) -> Self {
        let names = |k: &str| {
            let mut v: Vec<String> = s
                .label(k)
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect();
            v.sort();
            v.dedup();
            v
        };
        LoraState {
            running: names("running_lora_adapters"),
            waiting: names("waiting_lora_adapters"),
            max: s
                .label("max_lora")
                .and_then(|m| m.trim().parse::<f64>().ok())
                .filter(|m| m.is_finite() && *m >= 0.0),
        }
    }
}

/// A scrape body that is not valid exposition format.
#[derive(Debug, thiserror::Error)]
#[error("engine metrics are not valid Prometheus text format: {0}")]
pub struct EngineParseError(#[from] pub text::ParseError);

/// Largest `/metrics` body we read; a real engine's is well under 1 MiB.
const MAX_BODY_BYTES: usize = 16 << 20;
/// Largest llama.cpp `/props` body we read; it carries the chat template, tens of KiB.
const MAX_PROPS_BYTES: usize = 4 << 20;
/// More slots than any llama-server runs: a larger `total_slots` is not believed.
const MAX_SLOTS: u32 = 1 << 20;

/// The engine a metric name belongs to, and its name within that namespace.
fn namespace(name: &str) -> Option<(EngineKind, &str)> {
    match name.split_once(':') {
        Some(("vllm", rest)) => Some((EngineKind::Vllm, rest)),
        Some(("sglang", rest)) => Some((EngineKind::Sglang, rest)),
        Some(("llamacpp", rest)) => Some((EngineKind::LlamaCpp, rest)),
        Some(_) => None,
        // TGI's names have no colon namespace, only a prefix.
        None => name
            .strip_prefix("tgi_")
            .map(|rest| (EngineKind::Tgi, rest)),
    }
}

/// Figures gathered over the samples and combined after the last one.
#[derive(Default)]
struct Partial {
    kv_usage: Mean,
    hit_rate: Mean,
    tgi_batch_tokens: Option<f64>,
    /// The newest `vllm:lora_requests_info` sample so far: its value (a timestamp) and state.
    lora: Option<(f64, LoraState)>,
}

/// Parses an engine's `/metrics` text.
pub fn parse(body: &str) -> Result<EngineSnapshot, EngineParseError> {
    let samples = text::parse(body)?;
    let mut snap = EngineSnapshot::default();
    let mut partial = Partial::default();
    for s in &samples {
        let Some((kind, name)) = namespace(s.name) else {
            continue;
        };
        snap.kind.get_or_insert(kind);
        if !s.value.is_finite() {
            continue;
        }
        match kind {
            EngineKind::Vllm | EngineKind::Sglang => {
                read_vllm_sglang(&mut snap, &mut partial, kind, name, s)
            }
            EngineKind::LlamaCpp => read_llamacpp(&mut snap, &mut partial, name, s.value),
            EngineKind::Tgi => read_tgi(&mut snap, &mut partial, name, s.value),
        }
    }
    snap.kv_usage_ratio = partial.kv_usage.get();
    snap.prefix_cache_hit_rate = partial.hit_rate.get();
    snap.lora = partial.lora.map(|(_, state)| state);
    // TGI reports the token budget and the running batch's share of it, not a ratio.
    if snap.kv_usage_ratio.is_none()
        && let (Some(used), Some(budget)) = (partial.tgi_batch_tokens, snap.kv_cache_tokens)
        && budget > 0.0
    {
        snap.kv_usage_ratio = Some(used / budget);
    }
    Ok(snap)
}

fn read_vllm_sglang(
    snap: &mut EngineSnapshot,
    partial: &mut Partial,
    kind: EngineKind,
    name: &str,
    s: &text::Sample<'_>,
) {
    let v = s.value;
    match (kind, name) {
        (EngineKind::Vllm, "num_requests_running") | (EngineKind::Sglang, "num_running_reqs") => {
            add(&mut snap.running, v)
        }
        (EngineKind::Vllm, "num_requests_waiting") | (EngineKind::Sglang, "num_queue_reqs") => {
            add(&mut snap.waiting, v)
        }
        // vLLM V1 renamed gpu_cache_usage_perc to kv_cache_usage_perc; both are 0..1.
        (EngineKind::Vllm, "kv_cache_usage_perc" | "gpu_cache_usage_perc")
        | (EngineKind::Sglang, "token_usage") => partial.kv_usage.push(v),
        (EngineKind::Vllm, "cache_config_info") => {
            let num = |k: &str| s.label(k).and_then(|x| x.parse::<f64>().ok());
            if let Some(tokens) = num("kv_cache_size_tokens") {
                add(&mut snap.kv_cache_tokens, tokens);
            } else if let (Some(blocks), Some(size)) = (num("num_gpu_blocks"), num("block_size")) {
                add(&mut snap.kv_cache_tokens, blocks * size);
            }
            if let Some(seqs) = num("kv_cache_max_concurrency").filter(|v| v.is_finite()) {
                add(&mut snap.kv_max_concurrency, seqs);
            }
        }
        (EngineKind::Sglang, "max_total_num_tokens") => add(&mut snap.kv_cache_tokens, v),
        (_, "generation_tokens_total") => add(&mut snap.generation_tokens_total, v),
        (EngineKind::Sglang, "gen_throughput") => add(&mut snap.gen_throughput, v),
        (_, "time_to_first_token_seconds_sum") => add(&mut snap.ttft_sum, v),
        (EngineKind::Vllm, "prefix_cache_queries_total") => add(&mut snap.prefix_cache_queries, v),
        (EngineKind::Vllm, "prefix_cache_hits_total") => add(&mut snap.prefix_cache_hits, v),
        (EngineKind::Sglang, "cache_hit_rate") => partial.hit_rate.push(v),
        // Several label sets can be exported at once: the newest (largest time) wins.
        (EngineKind::Vllm, "lora_requests_info")
            if partial.lora.as_ref().is_none_or(|(t, _)| v >= *t) =>
        {
            partial.lora = Some((v, LoraState::of(s)));
        }
        (_, "time_to_first_token_seconds_count") => add(&mut snap.ttft_count, v),
        _ => {}
    }
}

fn read_llamacpp(snap: &mut EngineSnapshot, partial: &mut Partial, name: &str, v: f64) {
    match name {
        "requests_processing" => add(&mut snap.running, v),
        // Tasks no slot could take yet, held until one frees up.
        "requests_deferred" => add(&mut snap.waiting, v),
        "kv_cache_usage_ratio" => partial.kv_usage.push(v),
        // `predicted_tokens_seconds` is not a fallback rate: it is one slot's decode
        // speed since the previous /metrics read, not the server's throughput.
        "tokens_predicted_total" => add(&mut snap.generation_tokens_total, v),
        _ => {}
    }
}

fn read_tgi(snap: &mut EngineSnapshot, partial: &mut Partial, name: &str, v: f64) {
    match name {
        "batch_current_size" => add(&mut snap.running, v),
        "queue_size" => add(&mut snap.waiting, v),
        "batch_max_total_tokens" => add(&mut snap.kv_cache_tokens, v),
        "batch_current_max_tokens" => add(&mut partial.tgi_batch_tokens, v),
        // Recorded once per finished request, so the sum only grows: a counter.
        "request_generated_tokens_sum" => add(&mut snap.generation_tokens_total, v),
        _ => {}
    }
}

/// One scrape: the snapshot, and why a figure beside `/metrics` could not be read
/// (llama.cpp's `/props`). That never fails the scrape: the daemon falls back to the
/// config's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    pub snapshot: EngineSnapshot,
    pub slots_error: Option<String>,
}

/// Fetches and parses `url` (an engine's `/metrics`), and for llama.cpp its slot count
/// from `/props` in whatever time is left. Errors say what failed (the connection, the
/// HTTP status, the size limit or the format) and carry that as their reason.
pub async fn scrape(
    http: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<Scrape, ScrapeError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let fetch = async {
        let body = get_bounded(
            http,
            url,
            "text/plain;version=0.0.4",
            MAX_BODY_BYTES,
            "engine metrics",
        )
        .await?;
        let format = |e: anyhow::Error| ScrapeError::new(ScrapeFailure::Format, e);
        let text = String::from_utf8(body)
            .context("engine metrics body is not UTF-8")
            .map_err(format)?;
        let snap = parse(&text).map_err(|e| format(e.into()))?;
        if snap.kind.is_none() {
            // A wrong URL (node-exporter, the gateway's own metrics) must not pass as a
            // successful engine scrape with no data.
            return Err(format(anyhow::anyhow!(
                "no vllm:, sglang:, llamacpp: or tgi_ metrics found at the engine metrics URL"
            )));
        }
        Ok(snap)
    };
    let mut snapshot = tokio::time::timeout_at(deadline, fetch)
        .await
        .map_err(|_| {
            ScrapeError::new(
                ScrapeFailure::Timeout,
                anyhow::anyhow!("engine metrics scrape timed out after {timeout:?}"),
            )
        })??;
    let mut slots_error = None;
    if snapshot.kind == Some(EngineKind::LlamaCpp) {
        match tokio::time::timeout_at(deadline, llamacpp_total_slots(http, url)).await {
            Ok(Ok(slots)) => snapshot.total_slots = Some(slots),
            Ok(Err(e)) => slots_error = Some(format!("{e:#}")),
            Err(_) => {
                slots_error = Some(format!(
                    "llama.cpp /props did not answer within the scrape timeout of {timeout:?}"
                ));
            }
        }
    }
    Ok(Scrape {
        snapshot,
        slots_error,
    })
}

/// The `/props` URL of the llama-server whose `/metrics` is `metrics_url`: the last
/// path segment `metrics` becomes `props` (a reverse proxy's prefix is kept), any other
/// path becomes `/props`. Credentials and query stay, as for `/metrics`.
pub fn props_url(metrics_url: &str) -> Option<reqwest::Url> {
    let mut url = reqwest::Url::parse(metrics_url).ok()?;
    let path = match url.path().strip_suffix("metrics") {
        Some(prefix) if prefix.ends_with('/') => format!("{prefix}props"),
        _ => "/props".to_string(),
    };
    url.set_path(&path);
    Some(url)
}

async fn llamacpp_total_slots(http: &reqwest::Client, metrics_url: &str) -> anyhow::Result<f64> {
    let url = props_url(metrics_url)
        .context("the engine metrics URL does not parse, so /props cannot be derived from it")?;
    let body = get_bounded(
        http,
        url.as_str(),
        "application/json",
        MAX_PROPS_BYTES,
        "llama.cpp /props",
    )
    .await?;
    total_slots(&body)
}

/// `total_slots` of a llama.cpp `/props` body.
pub fn total_slots(body: &[u8]) -> anyhow::Result<f64> {
    #[derive(serde::Deserialize)]
    struct Props {
        total_slots: Option<u32>,
    }
    let props: Props =
        serde_json::from_slice(body).context("llama.cpp /props is not the expected JSON")?;
    match props.total_slots {
        Some(n) if (1..=MAX_SLOTS).contains(&n) => Ok(f64::from(n)),
        Some(n) => anyhow::bail!("llama.cpp /props total_slots {n} is outside 1..={MAX_SLOTS}"),
        None => anyhow::bail!("llama.cpp /props has no total_slots"),
    }
}

/// GET `url` and read at most `limit` bytes of a 2xx answer. The URL may carry
/// credentials (user:pass@, a token in the query): errors never include it, they are
/// logged.
async fn get_bounded(
    http: &reqwest::Client,
    url: &str,
    accept: &str,
    limit: usize,
    what: &str,
) -> Result<Vec<u8>, ScrapeError> {
    let resp = match http
        .get(url)
        .header(reqwest::header::ACCEPT, accept)
        .send()
        .await
    {
        Ok(resp) => resp,
        Err(e) => {
            let reason = if e.is_timeout() {
                ScrapeFailure::Timeout
            } else {
                ScrapeFailure::Connect
            };
            let e = anyhow::Error::new(e.without_url()).context(format!("{what} request failed"));
            return Err(ScrapeError::new(reason, e));
        }
    };
    let status = resp.status();
    if !status.is_success() {
        return Err(ScrapeError::new(
            ScrapeFailure::of_status(status),
            anyhow::anyhow!("{what} answered HTTP {status}"),
        ));
    }
    let body_error = |e| ScrapeError::new(ScrapeFailure::Body, e);
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece
            .map_err(reqwest::Error::without_url)
            .with_context(|| format!("reading {what} body"))
            .map_err(body_error)?;
        if body.len() + piece.len() > limit {
            return Err(body_error(anyhow::anyhow!(
                "{what} body exceeds {limit} bytes"
            )));
        }
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

/// Rates between two scrapes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EngineRates {
    /// Output tokens per second over the interval (counter delta; SGLang's own gauge
    /// when the counter is missing).
    pub generation_tokens_per_second: Option<f64>,
    /// The server's mean TTFT over the interval (histogram sum and count deltas).
    pub ttft_mean_seconds: Option<f64>,
    /// The engine's prefix-cache hit ratio over the interval (vLLM: hits / queries
    /// deltas; SGLang: its own gauge).
    pub prefix_cache_hit_ratio: Option<f64>,
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
    let hit_ratio = match (
        delta(prev.prefix_cache_hits, cur.prefix_cache_hits),
        delta(prev.prefix_cache_queries, cur.prefix_cache_queries),
    ) {
        (Some(hits), Some(queries)) if queries > 0.0 => Some((hits / queries).min(1.0)),
        _ => cur.prefix_cache_hit_rate,
    };
    EngineRates {
        generation_tokens_per_second: generation,
        ttft_mean_seconds: ttft_mean,
        prefix_cache_hit_ratio: hit_ratio,
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
    const LLAMACPP: &str = include_str!("../../tests/fixtures/engine/llamacpp.txt");
    const LLAMACPP_PROPS: &str = include_str!("../../tests/fixtures/engine/llamacpp-props.json");
    const TGI: &str = include_str!("../../tests/fixtures/engine/tgi.txt");

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
        assert_eq!(s.kv_max_concurrency, None);
    }

    #[test]
    fn reads_vllms_own_max_concurrency() {
        // As vLLM 0.32 (CPU) writes it: a float label beside the block counts.
        let text = "vllm:cache_config_info{block_size=\"16\",kv_cache_max_concurrency=\"512.0\",\
                    num_gpu_blocks=\"65536\"} 1.0\n";
        let s = parse(text).unwrap();
        assert_eq!(s.kv_cache_tokens, Some(1_048_576.0));
        assert_eq!(s.kv_max_concurrency, Some(512.0));
    }

    #[test]
    fn the_newest_lora_sample_is_the_state() {
        let s = parse(include_str!("../../tests/fixtures/engine/vllm_lora.txt")).unwrap();
        let lora = s.lora.unwrap();
        assert_eq!(lora.running, ["ad1", "ad2"]);
        assert_eq!(lora.waiting, ["ad3"]);
        assert_eq!(lora.max, Some(2.0));
        // Idle now: the newest sample names no adapter, whatever older ones said.
        let idle = "vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"ad1\",\
                    waiting_lora_adapters=\"\"} 10\n\
                    vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"\",\
                    waiting_lora_adapters=\"\"} 11\n";
        let lora = parse(idle).unwrap().lora.unwrap();
        assert!(lora.running.is_empty() && lora.waiting.is_empty());
        assert_eq!(parse("vllm:num_requests_running 1\n").unwrap().lora, None);
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
        crate::client::tls::install_crypto_provider();
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
        assert_eq!(ok.snapshot.running, Some(5.0));
        // Not llama.cpp: no /props request, no slot problem.
        assert_eq!((ok.snapshot.total_slots, ok.slots_error), (None, None));
        let err = scrape(&http, &format!("http://{addr}/broken"), t)
            .await
            .unwrap_err();
        assert!(format!("{err:#}").contains("HTTP 502"), "{err:#}");
        assert_eq!(err.reason, ScrapeFailure::Http5xx);
        let err = scrape(&http, &format!("http://{addr}/not-an-engine"), t)
            .await
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("no vllm:, sglang:, llamacpp: or tgi_ metrics found"),
            "{err:#}"
        );
        assert_eq!(err.reason, ScrapeFailure::Format);
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
        assert_eq!(err.reason, ScrapeFailure::Connect);
    }

    #[test]
    fn reads_llamacpp() {
        // Captured from a real llama-server: 2 slots busy, 1 request deferred, 3 finished
        // requests of 300 tokens.
        let s = parse(LLAMACPP).unwrap();
        assert_eq!(
            s,
            EngineSnapshot {
                kind: Some(EngineKind::LlamaCpp),
                running: Some(2.0),
                waiting: Some(1.0),
                generation_tokens_total: Some(900.0),
                ..EngineSnapshot::default()
            }
        );
    }

    #[test]
    fn reads_older_llamacpp_kv_figures() {
        // Older builds: a usage ratio, and the tokens *in* the cache (not its size).
        let s = parse(
            "llamacpp:kv_cache_usage_ratio 0.125\n\
             llamacpp:kv_cache_tokens 512\n\
             llamacpp:requests_processing 1\n",
        )
        .unwrap();
        assert_eq!(s.kind, Some(EngineKind::LlamaCpp));
        assert_eq!(s.kv_usage_ratio, Some(0.125));
        assert_eq!(s.kv_cache_tokens, None);
        assert_eq!(s.running, Some(1.0));
    }

    #[test]
    fn reads_tgi() {
        let s = parse(TGI).unwrap();
        assert_eq!(
            s,
            EngineSnapshot {
                kind: Some(EngineKind::Tgi),
                running: Some(6.0),
                waiting: Some(2.0),
                // 38,912 of the 155,648-token budget
                kv_usage_ratio: Some(0.25),
                kv_cache_tokens: Some(155_648.0),
                generation_tokens_total: Some(44_800.0),
                ..EngineSnapshot::default()
            }
        );
        // The v2 backend exports no budget: no usage ratio rather than a made-up one.
        let v2 = parse("tgi_batch_current_max_tokens 100\ntgi_queue_size 0\n").unwrap();
        assert_eq!(v2.kind, Some(EngineKind::Tgi));
        assert_eq!((v2.kv_usage_ratio, v2.kv_cache_tokens), (None, None));
        let zero = parse("tgi_batch_current_max_tokens 0\ntgi_batch_max_total_tokens 0\n").unwrap();
        assert_eq!(zero.kv_usage_ratio, None);
    }

    #[test]
    fn namespaces() {
        assert_eq!(
            namespace("tgi_queue_size"),
            Some((EngineKind::Tgi, "queue_size"))
        );
        assert_eq!(
            namespace("llamacpp:requests_deferred"),
            Some((EngineKind::LlamaCpp, "requests_deferred"))
        );
        assert_eq!(namespace("tgi:queue_size"), None);
        assert_eq!(namespace("tgiqueue_size"), None);
        assert_eq!(namespace("llamacpp_requests_deferred"), None);
    }

    #[test]
    fn rates_of_llamacpp_and_tgi() {
        let ten = Duration::from_secs(10);
        // llama.cpp adds a request's tokens when it finishes: 600 more over 20 s.
        let prev = parse(LLAMACPP).unwrap();
        let cur = parse(&LLAMACPP.replace(
            "llamacpp:tokens_predicted_total 900",
            "llamacpp:tokens_predicted_total 1500",
        ))
        .unwrap();
        let r = rates(&prev, &cur, Duration::from_secs(20));
        assert_eq!(r.generation_tokens_per_second, Some(30.0));
        // No TTFT histogram in llama.cpp.
        assert_eq!(r.ttft_mean_seconds, None);
        // TGI: the generated-tokens histogram's sum, 2000 more over 10 s.
        let prev = parse(TGI).unwrap();
        let cur = parse(&TGI.replace(
            "tgi_request_generated_tokens_sum 44800",
            "tgi_request_generated_tokens_sum 46800",
        ))
        .unwrap();
        let r = rates(&prev, &cur, ten);
        assert_eq!(r.generation_tokens_per_second, Some(200.0));
        assert_eq!(r.ttft_mean_seconds, None);
        // A restarted TGI (sum went down): no rate.
        assert_eq!(rates(&cur, &prev, ten).generation_tokens_per_second, None);
    }

    #[test]
    fn props_url_replaces_the_metrics_path() {
        let u = |s: &str| props_url(s).map(String::from);
        assert_eq!(
            u("http://127.0.0.1:8080/metrics").as_deref(),
            Some("http://127.0.0.1:8080/props")
        );
        // Behind a reverse proxy: the prefix stays; credentials and query too.
        assert_eq!(
            u("https://user:pw@gw.local/llama/metrics?token=t").as_deref(),
            Some("https://user:pw@gw.local/llama/props?token=t")
        );
        assert_eq!(
            u("http://127.0.0.1:8080/stats").as_deref(),
            Some("http://127.0.0.1:8080/props")
        );
        assert_eq!(
            u("http://127.0.0.1:8080/mymetrics").as_deref(),
            Some("http://127.0.0.1:8080/props")
        );
        assert_eq!(u("not a url"), None);
    }

    #[test]
    fn total_slots_from_props() {
        // The real llama-server's /props (--parallel 2).
        assert_eq!(total_slots(LLAMACPP_PROPS.as_bytes()).unwrap(), 2.0);
        for (body, want) in [
            (r#"{"total_slots":0}"#, "outside"),
            (r#"{"total_slots":4294967295}"#, "outside"),
            (r#"{"total_slots":-1}"#, "expected JSON"),
            (r#"{"total_slots":"2"}"#, "expected JSON"),
            (r#"{"total_slots":2.5}"#, "expected JSON"),
            (r#"{"total_slots":null}"#, "no total_slots"),
            ("{}", "no total_slots"),
            ("[]", "expected JSON"),
            ("<html>", "expected JSON"),
            ("", "expected JSON"),
        ] {
            let err = total_slots(body.as_bytes()).unwrap_err();
            assert!(format!("{err:#}").contains(want), "{body}: {err:#}");
        }
        // Deep nesting is an error, not a stack overflow.
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(total_slots(deep.as_bytes()).is_err());
    }

    /// A llama-server stand-in: its /metrics fixture, and `props` at /props.
    async fn llamacpp_server(props: axum::routing::MethodRouter) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .route("/metrics", axum::routing::get(|| async { LLAMACPP }))
            .route("/proxy/metrics", axum::routing::get(|| async { LLAMACPP }))
            .route(
                "/proxy/props",
                axum::routing::get(|| async { r#"{"total_slots":8}"# }),
            )
            .route("/props", props);
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    }

    #[tokio::test]
    async fn scrape_reads_llamacpp_slots_from_props() {
        crate::client::tls::install_crypto_provider();
        let http = reqwest::Client::new();
        let t = Duration::from_secs(5);
        let addr = llamacpp_server(axum::routing::get(|| async { LLAMACPP_PROPS })).await;
        let ok = scrape(&http, &format!("http://{addr}/metrics"), t)
            .await
            .unwrap();
        assert_eq!(ok.snapshot.total_slots, Some(2.0));
        assert_eq!(ok.snapshot.running, Some(2.0));
        assert_eq!(ok.slots_error, None);
        let proxied = scrape(&http, &format!("http://{addr}/proxy/metrics"), t)
            .await
            .unwrap();
        assert_eq!(proxied.snapshot.total_slots, Some(8.0));
    }

    #[tokio::test]
    async fn a_failing_props_never_fails_the_scrape() {
        crate::client::tls::install_crypto_provider();
        let http = reqwest::Client::new();
        let t = Duration::from_secs(2);
        let cases: [(axum::routing::MethodRouter, &str); 4] = [
            (
                axum::routing::get(|| async { axum::http::StatusCode::NOT_FOUND }),
                "HTTP 404",
            ),
            (
                axum::routing::get(|| async { "x".repeat(MAX_PROPS_BYTES + 1) }),
                "exceeds",
            ),
            (
                axum::routing::get(|| async { r#"{"total_slots":"many"}"# }),
                "expected JSON",
            ),
            (
                axum::routing::get(|| async {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    "{}"
                }),
                "did not answer",
            ),
        ];
        for (props, want) in cases {
            let addr = llamacpp_server(props).await;
            let started = std::time::Instant::now();
            let got = scrape(&http, &format!("http://{addr}/metrics"), t)
                .await
                .unwrap();
            // The timeout ends the 30 s /props wait: a busy machine makes it late by
            // milliseconds, never by the 28 s that would mean it did not fire.
            assert!(started.elapsed() < t + Duration::from_secs(10));
            assert_eq!(got.snapshot, parse(LLAMACPP).unwrap());
            let err = got.slots_error.unwrap();
            assert!(err.contains(want), "{want}: {err}");
        }
    }
}
