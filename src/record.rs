//! `RequestRecord`: what one request did, as timestamps and counts only, and every
//! number derived from them (TTFT, TPOT, per-token ITL, E2E, dispatch lag, goodput).
//!
//! This is the one place where the measurement contract (docs/measurement.md) lives.
//! Nothing here does IO or knows about Prometheus; the client fills records, aggregation
//! and export read them through the methods below.
//!
//! All instants are offsets from the run's start instant on a monotonic clock.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::latency::{Latency, Slo};

/// How a request ended. `Ok` is the only success; every other variant is a failure
/// reason with a stable snake_case name used as the Prometheus `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The stream completed with at least one output token.
    Ok,
    /// HTTP 3xx: a redirect, reported rather than followed (following would turn the
    /// POST into a GET against another URL). Usually a wrong `base_url`.
    // snake_case alone would give "http3xx"; records must use the label's name.
    #[serde(rename = "http_3xx")]
    Http3xx,
    /// HTTP 4xx other than 429 (and any other unexpected status).
    #[serde(rename = "http_4xx")]
    Http4xx,
    /// HTTP 429 Too Many Requests.
    #[serde(rename = "http_429")]
    Http429,
    /// HTTP 5xx.
    #[serde(rename = "http_5xx")]
    Http5xx,
    /// An llm-d / Gateway API Inference Extension gateway refused the request before
    /// any engine saw it (`x-llm-d-request-dropped-reason: rejected-…`: saturated, no
    /// endpoints, TTL expired in its queue, shutting down; `client::llm_d`).
    GatewayRejected,
    /// Such a gateway dispatched the request and then took it back
    /// (`x-llm-d-request-dropped-reason: evicted…`).
    GatewayEvicted,
    /// The TCP connection could not be made, or was closed/reset before a response.
    Connect,
    /// TLS handshake or certificate failure.
    Tls,
    /// A timeout: connect, first token, idle gap between chunks, or total.
    Timeout,
    /// The stream broke: malformed SSE or JSON, reset mid-stream, an `{"error": …}`
    /// event, a wrong content type, limits exceeded, missing `[DONE]`.
    StreamError,
    /// The stream completed but carried no output text.
    EmptyOutput,
    /// The run was stopped while the request was in flight.
    Cancelled,
}

impl Outcome {
    /// Every variant, in a stable order (for pre-registering metric label values).
    pub const ALL: [Outcome; 13] = [
        Outcome::Ok,
        Outcome::Http3xx,
        Outcome::Http4xx,
        Outcome::Http429,
        Outcome::Http5xx,
        Outcome::GatewayRejected,
        Outcome::GatewayEvicted,
        Outcome::Connect,
        Outcome::Tls,
        Outcome::Timeout,
        Outcome::StreamError,
        Outcome::EmptyOutput,
        Outcome::Cancelled,
    ];

    /// The stable name, also used as the `reason` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Http3xx => "http_3xx",
            Outcome::Http4xx => "http_4xx",
            Outcome::Http429 => "http_429",
            Outcome::Http5xx => "http_5xx",
            Outcome::GatewayRejected => "gateway_rejected",
            Outcome::GatewayEvicted => "gateway_evicted",
            Outcome::Connect => "connect",
            Outcome::Tls => "tls",
            Outcome::Timeout => "timeout",
            Outcome::StreamError => "stream_error",
            Outcome::EmptyOutput => "empty_output",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// The failure outcome for an HTTP status that is not a success.
    pub fn from_http_status(status: u16) -> Outcome {
        match status {
            429 => Outcome::Http429,
            300..=399 => Outcome::Http3xx,
            500..=599 => Outcome::Http5xx,
            _ => Outcome::Http4xx,
        }
    }

    pub fn is_ok(self) -> bool {
        self == Outcome::Ok
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the per-chunk token counts (and so N_out, TPOT, ITL) came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// Cumulative `usage.completion_tokens` on every chunk (vLLM
    /// `continuous_usage_stats`): exact per chunk.
    ContinuousUsage,
    /// Only the final `usage.completion_tokens`: exact total, spread over the chunks in
    /// proportion to the text bytes each carried.
    Usage,
    /// A tokenizer counted the text of each chunk (the server sent no usage).
    Tokenizer,
    /// No usage and no tokenizer: each content chunk counts as one token.
    Chunks,
    /// A non-streamed answer without usage and without a tokenizer: its output tokens
    /// are not known (counted as 0).
    Unknown,
}

impl TokenSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::ContinuousUsage => "continuous_usage",
            TokenSource::Usage => "usage",
            TokenSource::Tokenizer => "tokenizer",
            TokenSource::Chunks => "chunks",
            TokenSource::Unknown => "unknown",
        }
    }
}

/// One content chunk: when it arrived and how many output tokens it carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Arrival time (offset from the run start), taken when the bytes were read.
    #[serde(with = "secs")]
    pub at: Duration,
    /// Output tokens in this chunk (after [`RequestRecord::resolve_tokens`]).
    pub tokens: u32,
    /// Bytes of generated text in this chunk (used to spread a final usage count).
    pub text_bytes: u32,
    /// How many of `text_bytes` were reasoning rather than answer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_bytes: u32,
}

impl Chunk {
    /// The share of `tokens` that was reasoning: all of them for a reasoning chunk,
    /// none for an answer chunk, and in proportion to the bytes for a chunk with both.
    pub fn reasoning_tokens(&self) -> u32 {
        if self.reasoning_bytes == 0 {
            0
        } else if self.reasoning_bytes >= self.text_bytes {
            self.tokens
        } else {
            let share = u64::from(self.tokens) * u64::from(self.reasoning_bytes)
                / u64::from(self.text_bytes);
            u32::try_from(share).unwrap_or(self.tokens)
        }
    }
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_true(v: &bool) -> bool {
    *v
}

fn yes() -> bool {
    true
}

/// An answer check: what a correct answer must look like (docs/measurement.md). The
/// stable snake_case name is the `check` metric label and the key in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    ExpectRegex,
    ExpectNotRegex,
    ExpectJsonSchema,
    ExpectModel,
    ExpectFinishReason,
    MinOutputTokens,
    MaxRepetition,
    ExpectToolCall,
    ExpectTopDocument,
}

impl CheckKind {
    /// Every kind, in a stable order (the order checks run and are reported in).
    pub const ALL: [CheckKind; 9] = [
        CheckKind::ExpectRegex,
        CheckKind::ExpectNotRegex,
        CheckKind::ExpectJsonSchema,
        CheckKind::ExpectModel,
        CheckKind::ExpectFinishReason,
        CheckKind::MinOutputTokens,
        CheckKind::MaxRepetition,
        CheckKind::ExpectToolCall,
        CheckKind::ExpectTopDocument,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::ExpectRegex => "expect_regex",
            CheckKind::ExpectNotRegex => "expect_not_regex",
            CheckKind::ExpectJsonSchema => "expect_json_schema",
            CheckKind::ExpectModel => "expect_model",
            CheckKind::ExpectFinishReason => "expect_finish_reason",
            CheckKind::MinOutputTokens => "min_output_tokens",
            CheckKind::MaxRepetition => "max_repetition",
            CheckKind::ExpectToolCall => "expect_tool_call",
            CheckKind::ExpectTopDocument => "expect_top_document",
        }
    }

    /// Whether the check reads the answer text (so the client must keep it). The
    /// tool-call check quotes it when no call came.
    pub fn reads_text(self) -> bool {
        matches!(
            self,
            CheckKind::ExpectRegex
                | CheckKind::ExpectNotRegex
                | CheckKind::ExpectJsonSchema
                | CheckKind::MaxRepetition
                | CheckKind::ExpectToolCall
        )
    }

    /// Whether the check reads the answer's tool calls (so the client must keep them).
    pub fn reads_tool_calls(self) -> bool {
        self == CheckKind::ExpectToolCall
    }
}

impl std::fmt::Display for CheckKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One check's verdict on one answer. A failure carries why, and a short excerpt of
/// the answer (bounded, secrets scrubbed, control characters escaped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    pub check: CheckKind,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

/// A golden-set question's verdict on one answer: apart from the checks and goodput
/// (a model may miss a hard question and still be the model validated); its rolling
/// accuracy is the signal (docs/measurement.md, "Golden-set accuracy").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoldenVerdict {
    /// The question's line in its file.
    pub line: u32,
    pub correct: bool,
    /// A wrong answer's reason: the file, line, rule and an excerpt of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl GoldenVerdict {
    /// The `verdict` label values, in order.
    pub const LABELS: [&'static str; 2] = ["correct", "wrong"];

    /// Its `verdict` label.
    pub fn label(&self) -> &'static str {
        Self::LABELS[usize::from(!self.correct)]
    }
}

/// Everything measured about one request. Timestamps and counts only: derived figures
/// are methods, so each definition exists once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Sequence number within the run (arrival order).
    pub id: u64,
    /// Intended send time: an absolute offset from the run start (t_sched).
    #[serde(with = "secs")]
    pub t_sched: Duration,
    /// When the request was actually handed to the connection (t_send).
    #[serde(with = "secs")]
    pub t_send: Duration,
    /// When the response headers arrived.
    #[serde(with = "opt_secs", default)]
    pub t_headers: Option<Duration>,
    /// Arrival of the first chunk with non-empty generated text, reasoning or answer
    /// (t_first). None when the answer was not streamed.
    #[serde(with = "opt_secs", default)]
    pub t_first: Option<Duration>,
    /// Arrival of the first chunk with answer (non-reasoning) text (t_first_answer).
    #[serde(with = "opt_secs", default, skip_serializing_if = "Option::is_none")]
    pub t_first_answer: Option<Duration>,
    /// When the stream ended (`[DONE]`, end of body, or the failure).
    #[serde(with = "opt_secs", default)]
    pub t_end: Option<Duration>,
    /// Content chunks in arrival order.
    pub chunks: Vec<Chunk>,
    /// Prompt tokens as the workload built them (exact with a tokenizer, else approximate).
    pub prompt_tokens_sent: u32,
    /// `usage.prompt_tokens` as reported by the server.
    pub usage_prompt_tokens: Option<u32>,
    /// `usage.completion_tokens` as reported by the server (final value).
    pub usage_completion_tokens: Option<u32>,
    /// Reasoning tokens as reported by the server (`completion_tokens_details` or
    /// `output_tokens_details.reasoning_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_reasoning_tokens: Option<u32>,
    /// Of the prompt tokens, those the server reported reading from its prefix cache
    /// (`prompt_tokens_details.cached_tokens`, Responses
    /// `input_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cached_tokens: Option<u32>,
    /// In a multi-turn run, the turn of the conversation (1-based); the conversation is
    /// `id`, which its turns share. None for a single request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Whether the answer was streamed. A non-streamed answer has no TTFT, TPOT or ITL.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub streamed: bool,
    /// Stream events of a type the protocol does not know (ignored).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown_events: u32,
    /// The `max_tokens` requested.
    pub max_tokens: u32,
    /// `finish_reason` of the last choice that had one.
    pub finish_reason: Option<String>,
    /// HTTP status of the response, when one arrived.
    pub http_status: Option<u16>,
    /// How the request ended.
    pub outcome: Outcome,
    /// Where per-chunk token counts came from.
    pub token_source: TokenSource,
    /// Error detail for failures: the server's message or the client's error. Never used
    /// as a metric label.
    pub error: Option<String>,
    /// The endpoint a gateway says served the request (the Gateway API Inference
    /// Extension's `x-gateway-destination-endpoint-served` response header, `IP:PORT`),
    /// when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_endpoint: Option<String>,
    /// How long the server asked the client to wait, on a 429 or 503 response: the
    /// client reads `retry-after-ms` or `Retry-After` (`client/retry_after.rs`); a
    /// protocol whose server says it in its body sets it from there. With outcome
    /// `Http429` it pauses the daemon's target (`daemon/limits.rs`); bench's
    /// `--respect-retry-after` waits it out.
    #[serde(with = "opt_secs", default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Duration>,
    /// The provider's own latency of the request, when its answer reports one
    /// (Bedrock's `metrics.latencyMs`): its side of the E2E, for comparison only.
    #[serde(with = "opt_secs", default, skip_serializing_if = "Option::is_none")]
    pub server_latency: Option<Duration>,
    /// The W3C trace ID the request carried in its `traceparent` header (32 hex digits),
    /// when the client sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The span ID of that `traceparent` (16 hex digits): the parent of the engine's
    /// span, and the ID of the probe's own span when the daemon exports OTLP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The answer checks' verdicts, when checks are configured and the transport
    /// succeeded (a failed request has no answer to judge).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
    /// The golden-set verdict, when the request asked a golden question and the
    /// transport succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden: Option<GoldenVerdict>,
    /// The model the request named when not the run's own (a LoRA adapter of a split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl RequestRecord {
    /// A record for a request about to be sent; the client fills in the rest.
    pub fn new(id: u64, t_sched: Duration, t_send: Duration) -> Self {
        RequestRecord {
            id,
            t_sched,
            t_send,
            t_headers: None,
            t_first: None,
            t_first_answer: None,
            t_end: None,
            chunks: Vec::new(),
            prompt_tokens_sent: 0,
            usage_prompt_tokens: None,
            usage_completion_tokens: None,
            usage_reasoning_tokens: None,
            usage_cached_tokens: None,
            turn: None,
            streamed: true,
            unknown_events: 0,
            max_tokens: 0,
            finish_reason: None,
            http_status: None,
            outcome: Outcome::Ok,
            token_source: TokenSource::Chunks,
            error: None,
            served_endpoint: None,
            retry_after: None,
            server_latency: None,
            trace_id: None,
            span_id: None,
            checks: Vec::new(),
            golden: None,
            model: None,
        }
    }

    /// Appends a content chunk. `tokens` is `Some` when the count is known at arrival
    /// (continuous usage or a tokenizer), else `None` (resolved at the end).
    /// Chunks with no text are ignored: they do not start TTFT and carry no token.
    pub fn push_chunk(&mut self, at: Duration, text_bytes: usize, tokens: Option<u32>) {
        self.push_delta(at, text_bytes, 0, tokens);
    }

    /// Appends a streamed chunk of `answer_bytes` of answer and `reasoning_bytes` of
    /// reasoning text. The first chunk with any text sets t_first, the first with
    /// answer text sets t_first_answer.
    pub fn push_delta(
        &mut self,
        at: Duration,
        answer_bytes: usize,
        reasoning_bytes: usize,
        tokens: Option<u32>,
    ) {
        let text_bytes = answer_bytes + reasoning_bytes;
        if text_bytes == 0 && tokens.unwrap_or(0) == 0 {
            return;
        }
        if self.t_first.is_none() {
            self.t_first = Some(at);
        }
        if answer_bytes > 0 && self.t_first_answer.is_none() {
            self.t_first_answer = Some(at);
        }
        self.push_raw(at, text_bytes, reasoning_bytes, tokens);
    }

    /// Records a whole non-streamed answer that arrived at `at`: its text and tokens
    /// count like a chunk's, but nothing about it is a first token.
    pub fn push_body(
        &mut self,
        at: Duration,
        answer_bytes: usize,
        reasoning_bytes: usize,
        tokens: Option<u32>,
    ) {
        self.streamed = false;
        if answer_bytes + reasoning_bytes > 0 {
            self.push_raw(at, answer_bytes + reasoning_bytes, reasoning_bytes, tokens);
        }
    }

    fn push_raw(&mut self, at: Duration, text_bytes: usize, reasoning: usize, tokens: Option<u32>) {
        self.chunks.push(Chunk {
            at,
            tokens: tokens.unwrap_or(0),
            text_bytes: u32::try_from(text_bytes).unwrap_or(u32::MAX),
            reasoning_bytes: u32::try_from(reasoning).unwrap_or(u32::MAX),
        });
    }

    /// Fixes the per-chunk token counts once the stream is over, and records where they
    /// came from. `per_chunk_known` says how the counts passed to [`push_chunk`] were
    /// obtained (`ContinuousUsage` or `Tokenizer`), or `None` when they were not known.
    ///
    /// - Continuous usage whose per-chunk counts sum to the final usage is kept.
    /// - Otherwise a final `usage.completion_tokens` is spread over the chunks in
    ///   proportion to their text bytes (largest-remainder rounding, so the sum is exact).
    /// - Otherwise tokenizer counts are kept; with nothing at all, one token per chunk.
    ///
    /// [`push_chunk`]: RequestRecord::push_chunk
    pub fn resolve_tokens(&mut self, per_chunk_known: Option<TokenSource>) {
        let counted: u64 = self.chunks.iter().map(|c| u64::from(c.tokens)).sum();
        let all_counted = self.chunks.iter().all(|c| c.tokens > 0);
        match (per_chunk_known, self.usage_completion_tokens) {
            // A chunk may legitimately carry zero new tokens under continuous usage (text
            // the server held back and released later), so only the sum is checked here.
            (Some(TokenSource::ContinuousUsage), Some(total)) if counted == u64::from(total) => {
                self.token_source = TokenSource::ContinuousUsage;
            }
            (_, Some(total)) => {
                spread_tokens(&mut self.chunks, total);
                self.token_source = TokenSource::Usage;
            }
            (Some(TokenSource::Tokenizer), None) => {
                self.token_source = TokenSource::Tokenizer;
            }
            (Some(TokenSource::ContinuousUsage), None) if all_counted => {
                // Cumulative counts arrived on every chunk but the final usage chunk did
                // not: the per-chunk counts are still the server's own.
                self.token_source = TokenSource::ContinuousUsage;
            }
            _ if !self.streamed => {
                // One body is not a count of anything.
                for c in &mut self.chunks {
                    c.tokens = 0;
                }
                self.token_source = TokenSource::Unknown;
            }
            _ => {
                for c in &mut self.chunks {
                    c.tokens = 1;
                }
                self.token_source = TokenSource::Chunks;
            }
        }
    }

    /// Sets the per-chunk token counts to sum to `total`, in proportion to the counts
    /// they have (largest-remainder rounding). Used when a tokenizer counted each chunk
    /// but the whole text's count is the truth.
    pub fn rescale_chunk_tokens(&mut self, total: u32) {
        let weights: Vec<u64> = self.chunks.iter().map(|c| u64::from(c.tokens)).collect();
        let counts = apportion(&weights, total);
        for (c, n) in self.chunks.iter_mut().zip(counts) {
            c.tokens = n;
        }
    }

    /// Arrival of the last content chunk (t_last).
    pub fn t_last(&self) -> Option<Duration> {
        self.chunks.last().map(|c| c.at)
    }

    /// Output tokens (N_out): the server's final usage when sent, else the sum of the
    /// per-chunk counts.
    pub fn output_tokens(&self) -> u32 {
        match self.usage_completion_tokens {
            Some(n) => n,
            // Summed in u64: records read back from files can hold any counts.
            None => {
                let sum: u64 = self.chunks.iter().map(|c| u64::from(c.tokens)).sum();
                u32::try_from(sum).unwrap_or(u32::MAX)
            }
        }
    }

    /// Prompt tokens: the server's usage when sent, else what the workload built.
    pub fn prompt_tokens(&self) -> u32 {
        self.usage_prompt_tokens.unwrap_or(self.prompt_tokens_sent)
    }

    /// Whether the server answered (an HTTP response came back): only such a probe
    /// spent tokens. A connect or TLS failure sent no prompt, though the record's
    /// prompt count falls back to what it meant to send.
    pub fn answered(&self) -> bool {
        self.http_status.is_some()
    }

    /// Whether this is a later turn of a conversation (turn 2 or after): not an
    /// arrival of the schedule, sent at its own time after the previous answer.
    pub fn is_later_turn(&self) -> bool {
        self.turn.is_some_and(|t| t > 1)
    }

    /// Dispatch lag: t_send − t_sched. Large values mean the client, not the server,
    /// was the bottleneck (coordinated omission).
    pub fn dispatch_lag(&self) -> Duration {
        self.t_send.saturating_sub(self.t_sched)
    }

    /// Time to first token: t_first − t_send.
    pub fn ttft(&self) -> Option<Duration> {
        self.t_first.map(|t| t.saturating_sub(self.t_send))
    }

    /// Time to first answer token: t_first_answer − t_send. Equals TTFT when the model
    /// does not reason; None when no answer text arrived (or it was not streamed).
    pub fn ttfa(&self) -> Option<Duration> {
        self.t_first_answer.map(|t| t.saturating_sub(self.t_send))
    }

    /// Output tokens spent reasoning: the server's count when sent, else the reasoning
    /// chunks' tokens.
    pub fn reasoning_tokens(&self) -> u32 {
        match self.usage_reasoning_tokens {
            Some(n) => n,
            None => {
                let sum: u64 = self
                    .chunks
                    .iter()
                    .map(|c| u64::from(c.reasoning_tokens()))
                    .sum();
                u32::try_from(sum).unwrap_or(u32::MAX)
            }
        }
    }

    /// Whether any reasoning was seen (text or a server count).
    pub fn saw_reasoning(&self) -> bool {
        self.usage_reasoning_tokens.is_some_and(|n| n > 0)
            || self.chunks.iter().any(|c| c.reasoning_bytes > 0)
    }

    /// TTFT measured from the intended send time: t_first − t_sched (includes the
    /// client's own dispatch lag; what a user arriving on schedule would have seen).
    pub fn ttft_from_sched(&self) -> Option<Duration> {
        self.t_first.map(|t| t.saturating_sub(self.t_sched))
    }

    /// End-to-end latency: t_last − t_send, or end of stream when no content arrived.
    pub fn e2e(&self) -> Option<Duration> {
        self.t_last()
            .or(self.t_end)
            .map(|t| t.saturating_sub(self.t_send))
    }

    /// E2E measured from the intended send time.
    pub fn e2e_from_sched(&self) -> Option<Duration> {
        self.t_last()
            .or(self.t_end)
            .map(|t| t.saturating_sub(self.t_sched))
    }

    /// Time per output token after the first, vLLM's definition:
    /// (t_last − t_first) / (N_out − 1), for N_out > 1.
    /// (vllm/benchmarks/serve.py, `calculate_metrics`.)
    pub fn tpot(&self) -> Option<Duration> {
        let n = self.output_tokens();
        if n <= 1 {
            return None;
        }
        let (first, last) = (self.t_first?, self.t_last()?);
        Some(last.saturating_sub(first) / (n - 1))
    }

    /// Per-chunk gaps: the time between consecutive content chunks (what `vllm bench
    /// serve` reports as ITL). Kept for comparison; see [`itl`](Self::itl).
    pub fn chunk_gaps(&self) -> impl Iterator<Item = Duration> + '_ {
        self.chunks
            .windows(2)
            .map(|w| w[1].at.saturating_sub(w[0].at))
    }

    /// Per-token inter-token latency. The gap before a chunk is shared among the tokens
    /// that chunk carries, so a 4-token chunk after 10 ms gives four samples of 2.5 ms
    /// (speculative decoding must not look like fast tokens). Yields
    /// `(per_token_latency, tokens)`: the sample repeated `tokens` times. Chunks with
    /// zero tokens pass their gap on to the next chunk. Tokens of the first chunk are
    /// covered by TTFT and yield nothing, so the samples sum to t_last − t_first.
    pub fn itl(&self) -> impl Iterator<Item = (Duration, u32)> + '_ {
        let mut prev = self.chunks.first().map(|c| c.at);
        self.chunks.iter().skip(1).filter_map(move |c| {
            if c.tokens == 0 {
                return None;
            }
            let start = prev?;
            prev = Some(c.at);
            Some((c.at.saturating_sub(start) / c.tokens, c.tokens))
        })
    }

    /// Whether the request succeeded.
    pub fn is_success(&self) -> bool {
        self.outcome.is_ok()
    }

    /// Whether every answer check passed (true when none ran).
    pub fn checks_passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The checks that failed.
    pub fn failed_checks(&self) -> impl Iterator<Item = &CheckResult> {
        self.checks.iter().filter(|c| !c.passed)
    }

    /// Goodput: succeeded, passed every answer check and met every configured
    /// objective. A request with a single output token has no TPOT and so cannot miss
    /// a TPOT objective. A failed check is not a transport failure: the outcome stays
    /// `ok`, only goodput drops.
    pub fn is_good(&self, slo: &Slo) -> bool {
        self.is_success()
            && self.checks_passed()
            && slo.iter().all(|(l, limit)| self.meets(l, limit))
    }

    /// Whether this request met one objective: it succeeded and its latency `l` is at
    /// most `limit`. Without a value of `l` it meets the objective only where the
    /// catalogue says so (a one-token answer has no TPOT, so it meets any TPOT
    /// objective; a missing TTFT or E2E meets nothing).
    pub fn meets(&self, l: Latency, limit: Duration) -> bool {
        if !self.is_success() {
            return false;
        }
        // The worst value: every latency an objective bounds today has at most one, and
        // one with several would have to meet it with each.
        let mut worst = None;
        self.samples(l, |v, _| worst = worst.max(Some(v)));
        match worst {
            Some(v) => v <= limit,
            None => l.objective().is_some_and(|o| o.missing_meets),
        }
    }

    /// Calls `sample(value, weight)` for each value latency `l` takes in this record:
    /// none, one (weight 1), or, for ITL and chunk gaps, one per gap (ITL weighted by
    /// the tokens that share it).
    pub fn samples(&self, l: Latency, mut sample: impl FnMut(Duration, u32)) {
        let mut one = |v: Option<Duration>| {
            if let Some(v) = v {
                sample(v, 1);
            }
        };
        match l {
            Latency::Ttft => one(self.ttft()),
            Latency::Ttfa => one(self.ttfa()),
            Latency::Tpot => one(self.tpot()),
            Latency::E2e => one(self.e2e()),
            Latency::TtftFromSched => one(self.ttft_from_sched()),
            Latency::E2eFromSched => one(self.e2e_from_sched()),
            Latency::DispatchLag => one(Some(self.dispatch_lag())),
            Latency::Itl => self.itl().for_each(|(d, tokens)| sample(d, tokens)),
            Latency::ChunkGap => self.chunk_gaps().for_each(|d| sample(d, 1)),
        }
    }
}

/// Splits `total` in proportion to `weights` (a zero weight counts as 1, so every part
/// can get a share), with largest-remainder rounding so the parts sum to `total`.
fn apportion(weights: &[u64], total: u32) -> Vec<u32> {
    let weights: Vec<u64> = weights.iter().map(|&w| w.max(1)).collect();
    let sum: u64 = weights.iter().sum();
    let total64 = u64::from(total);
    if sum == 0 {
        return Vec::new();
    }
    let mut parts = Vec::with_capacity(weights.len());
    let mut remainders = Vec::with_capacity(weights.len());
    let mut assigned = 0u64;
    for (i, &w) in weights.iter().enumerate() {
        // u128: total (≤ 2^32) × weight (≤ 2^32 in practice, u64 in general).
        let share = u128::from(total64) * u128::from(w);
        let whole = (share / u128::from(sum)) as u64;
        parts.push(u32::try_from(whole).unwrap_or(u32::MAX));
        assigned += whole;
        remainders.push((share % u128::from(sum), i));
    }
    // Largest remainder first; ties go to the earlier part (stable order).
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in remainders.iter().take((total64 - assigned) as usize) {
        parts[i] += 1;
    }
    parts
}

/// Spreads `total` tokens over `chunks` in proportion to their text bytes, with
/// largest-remainder rounding so the counts sum to exactly `total`.
fn spread_tokens(chunks: &mut [Chunk], total: u32) {
    let weights: Vec<u64> = chunks.iter().map(|c| u64::from(c.text_bytes)).collect();
    for (c, n) in chunks.iter_mut().zip(apportion(&weights, total)) {
        c.tokens = n;
    }
}

/// Serde helpers: durations as floating-point seconds in JSON: the record format of
/// `--records` and reports (not the human rule of `crate::duration`).
pub mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

/// Serde helpers: optional durations as floating-point seconds (or null).
pub mod opt_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|v| Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_outcomes_are_the_reason_labels() {
        for o in Outcome::ALL {
            let json = serde_json::to_value(o).unwrap();
            assert_eq!(json, serde_json::json!(o.as_str()));
            assert_eq!(serde_json::from_value::<Outcome>(json).unwrap(), o);
        }
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A request scheduled at 100 ms, sent at 101 ms, first token at 151 ms, then
    /// chunks every 10 ms carrying 4 tokens each (speculative decoding style).
    fn spec_decode_record() -> RequestRecord {
        let mut r = RequestRecord::new(7, ms(100), ms(101));
        r.t_headers = Some(ms(120));
        r.push_chunk(ms(151), 4, Some(1));
        for i in 1..=4 {
            r.push_chunk(ms(151 + 10 * i), 16, Some(4));
        }
        r.usage_completion_tokens = Some(17);
        r.t_end = Some(ms(192));
        r.resolve_tokens(Some(TokenSource::ContinuousUsage));
        r
    }

    #[test]
    fn ttfa_is_the_first_answer_chunk_and_reasoning_is_counted() {
        // Sent at 0; reasoning chunks at 50, 55, 60 ms; the answer from 65 ms.
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        for i in 0..3 {
            r.push_delta(ms(50 + 5 * i), 0, 4, Some(1));
        }
        r.push_delta(ms(65), 4, 0, Some(1));
        // A chunk with both: 4 bytes of each, 2 tokens, half of them reasoning.
        r.push_delta(ms(70), 4, 4, Some(2));
        r.resolve_tokens(Some(TokenSource::Tokenizer));
        assert_eq!(r.ttft(), Some(ms(50)));
        assert_eq!(r.ttfa(), Some(ms(65)));
        assert_eq!((r.output_tokens(), r.reasoning_tokens()), (6, 4));
        assert!(r.saw_reasoning());
        // The server's count wins when it sends one.
        r.usage_reasoning_tokens = Some(3);
        assert_eq!(r.reasoning_tokens(), 3);
        // Reasoning only: no answer, no TTFA, and a TTFA objective is missed.
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_delta(ms(50), 0, 4, Some(1));
        r.resolve_tokens(Some(TokenSource::Tokenizer));
        assert_eq!((r.ttft(), r.ttfa()), (Some(ms(50)), None));
        assert!(!r.meets(Latency::Ttfa, ms(1000)));
        assert!(r.meets(Latency::Ttft, ms(1000)));
    }

    #[test]
    fn a_non_streamed_answer_has_e2e_only() {
        let mut r = RequestRecord::new(0, ms(10), ms(10));
        r.push_body(ms(90), 12, 0, None);
        r.usage_completion_tokens = Some(5);
        r.t_end = Some(ms(90));
        r.resolve_tokens(None);
        assert_eq!((r.ttft(), r.ttfa(), r.tpot()), (None, None, None));
        assert_eq!(r.itl().count(), 0);
        assert_eq!(r.e2e(), Some(ms(80)));
        assert_eq!((r.output_tokens(), r.token_source), (5, TokenSource::Usage));
        assert!(!r.streamed);
        // No usage and no tokenizer: the count is unknown, not one per body.
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_body(ms(90), 12, 0, None);
        r.resolve_tokens(None);
        assert_eq!(
            (r.output_tokens(), r.token_source),
            (0, TokenSource::Unknown)
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["streamed"], serde_json::json!(false));
        let back: RequestRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn ttft_is_first_content_minus_send() {
        let r = spec_decode_record();
        assert_eq!(r.ttft(), Some(ms(50)));
        assert_eq!(r.ttft_from_sched(), Some(ms(51)));
        assert_eq!(r.dispatch_lag(), ms(1));
    }

    #[test]
    fn empty_chunks_do_not_start_ttft() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(5), 0, None); // role-only chunk
        r.push_chunk(ms(6), 0, Some(0)); // usage-only chunk
        assert_eq!(r.ttft(), None);
        r.push_chunk(ms(9), 3, None);
        assert_eq!(r.ttft(), Some(ms(9)));
        assert_eq!(r.chunks.len(), 1);
    }

    #[test]
    fn tpot_follows_vllm() {
        let r = spec_decode_record();
        assert_eq!(r.token_source, TokenSource::ContinuousUsage);
        assert_eq!(r.output_tokens(), 17);
        // (191 - 151) ms / (17 - 1) = 2.5 ms
        assert_eq!(r.tpot(), Some(Duration::from_micros(2500)));
        assert_eq!(r.e2e(), Some(ms(90)));
        assert_eq!(r.e2e_from_sched(), Some(ms(91)));
    }

    #[test]
    fn tpot_needs_two_tokens() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(5), 3, None);
        r.usage_completion_tokens = Some(1);
        r.resolve_tokens(None);
        assert_eq!(r.tpot(), None);
    }

    #[test]
    fn itl_shares_a_gap_among_the_tokens_of_the_later_chunk() {
        let r = spec_decode_record();
        let itl: Vec<_> = r.itl().collect();
        assert_eq!(itl, vec![(Duration::from_micros(2500), 4); 4]);
        let gaps: Vec<_> = r.chunk_gaps().collect();
        assert_eq!(gaps, vec![ms(10); 4]);
        // Per-token samples sum to t_last - t_first and count N_out - tokens of chunk 1.
        let total: Duration = itl.iter().map(|(d, n)| *d * *n).sum();
        assert_eq!(total, ms(40));
        assert_eq!(itl.iter().map(|(_, n)| n).sum::<u32>(), 16);
    }

    #[test]
    fn zero_token_chunks_pass_their_gap_on() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(10), 2, Some(1));
        r.push_chunk(ms(20), 1, Some(0)); // half a multi-byte character: no token yet
        r.push_chunk(ms(30), 2, Some(2));
        r.usage_completion_tokens = Some(3);
        r.resolve_tokens(Some(TokenSource::Tokenizer));
        // final usage (3) wins over tokenizer counts and is spread by bytes (2, 1, 2):
        // shares 1.2, 0.6, 1.2 → 1, 0, 1 plus the largest remainder (0.6) → 1, 1, 1.
        assert_eq!(r.token_source, TokenSource::Usage);
        let tokens: Vec<_> = r.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(tokens, vec![1, 1, 1]);
        let itl: Vec<_> = r.itl().collect();
        assert_eq!(itl, vec![(ms(10), 1), (ms(10), 1)]);
    }

    #[test]
    fn itl_skips_zero_token_chunks() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(10), 2, Some(1));
        r.push_chunk(ms(20), 1, Some(0));
        r.push_chunk(ms(30), 2, Some(2));
        r.resolve_tokens(Some(TokenSource::Tokenizer));
        assert_eq!(r.token_source, TokenSource::Tokenizer);
        let itl: Vec<_> = r.itl().collect();
        assert_eq!(itl, vec![(ms(10), 2)]);
    }

    #[test]
    fn final_usage_is_spread_by_text_bytes() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(10), 4, None); // " tok" = 1 token
        r.push_chunk(ms(20), 16, None); // 4 tokens
        r.push_chunk(ms(30), 16, None);
        r.usage_completion_tokens = Some(9);
        r.resolve_tokens(None);
        assert_eq!(r.token_source, TokenSource::Usage);
        let tokens: Vec<_> = r.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(tokens, vec![1, 4, 4]);
    }

    #[test]
    fn spread_is_exact_for_any_total() {
        for total in 0..50u32 {
            let mut chunks: Vec<Chunk> = [3u32, 0, 7, 1, 5]
                .iter()
                .map(|&b| Chunk {
                    at: Duration::ZERO,
                    tokens: 0,
                    text_bytes: b,
                    reasoning_bytes: 0,
                })
                .collect();
            spread_tokens(&mut chunks, total);
            assert_eq!(chunks.iter().map(|c| c.tokens).sum::<u32>(), total);
        }
    }

    #[test]
    fn tokenizer_counts_are_rescaled_to_the_whole_text_count() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        // Per-chunk encodes over-count (a prefix token per encode call): 3, 3, 2 …
        r.push_chunk(ms(10), 8, Some(3));
        r.push_chunk(ms(20), 8, Some(3));
        r.push_chunk(ms(30), 4, Some(2));
        // … while the whole text is 6 tokens.
        r.rescale_chunk_tokens(6);
        r.resolve_tokens(Some(TokenSource::Tokenizer));
        assert_eq!(r.token_source, TokenSource::Tokenizer);
        let tokens: Vec<_> = r.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(tokens, vec![2, 2, 2]);
        assert_eq!(r.output_tokens(), 6);
    }

    #[test]
    fn output_tokens_do_not_overflow() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(10), 1, Some(u32::MAX));
        r.push_chunk(ms(20), 1, Some(u32::MAX));
        r.resolve_tokens(Some(TokenSource::Tokenizer));
        assert_eq!(r.output_tokens(), u32::MAX);
    }

    #[test]
    fn no_usage_counts_chunks() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(10), 5, None);
        r.push_chunk(ms(20), 5, None);
        r.resolve_tokens(None);
        assert_eq!(r.token_source, TokenSource::Chunks);
        assert_eq!(r.output_tokens(), 2);
        assert_eq!(r.tpot(), Some(ms(10)));
    }

    #[test]
    fn continuous_usage_keeps_zero_token_text_chunks() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(10), 4, Some(1));
        r.push_chunk(ms(20), 2, Some(0)); // held-back text released, no new token
        r.push_chunk(ms(30), 4, Some(2));
        r.usage_completion_tokens = Some(3);
        r.resolve_tokens(Some(TokenSource::ContinuousUsage));
        assert_eq!(r.token_source, TokenSource::ContinuousUsage);
        let tokens: Vec<_> = r.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(tokens, vec![1, 0, 2]);
    }

    #[test]
    fn continuous_usage_that_disagrees_with_final_usage_is_respread() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(10), 4, Some(1));
        r.push_chunk(ms(20), 4, Some(1));
        r.usage_completion_tokens = Some(4);
        r.resolve_tokens(Some(TokenSource::ContinuousUsage));
        assert_eq!(r.token_source, TokenSource::Usage);
        assert_eq!(r.chunks.iter().map(|c| c.tokens).sum::<u32>(), 4);
    }

    #[test]
    fn goodput_requires_success_and_every_slo() {
        let r = spec_decode_record(); // ttft 50 ms, tpot 2.5 ms, e2e 90 ms
        let slo = |ttft: Option<u64>, tpot: Option<u64>, e2e: Option<u64>| {
            let mut slo = Slo::default();
            slo.set(Latency::Ttft, ttft.map(ms)).unwrap();
            slo.set(Latency::Tpot, tpot.map(Duration::from_micros))
                .unwrap();
            slo.set(Latency::E2e, e2e.map(ms)).unwrap();
            slo
        };
        assert!(r.is_good(&Slo::default()));
        assert!(r.is_good(&slo(Some(50), Some(2500), Some(90))));
        assert!(!r.is_good(&slo(Some(49), None, None)));
        assert!(!r.is_good(&slo(None, Some(2499), None)));
        assert!(!r.is_good(&slo(None, None, Some(89))));
        let mut failed = r.clone();
        failed.outcome = Outcome::Http5xx;
        assert!(!failed.is_good(&Slo::default()));
    }

    #[test]
    fn a_failed_check_is_not_good_but_still_a_success() {
        let mut r = spec_decode_record();
        let verdict = |passed| CheckResult {
            check: CheckKind::ExpectRegex,
            passed,
            reason: None,
            excerpt: None,
        };
        r.checks = vec![verdict(true)];
        assert!(r.is_good(&Slo::default()));
        r.checks.push(verdict(false));
        assert!(r.is_success() && !r.is_good(&Slo::default()));
        assert_eq!(r.failed_checks().count(), 1);
        let back: RequestRecord =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn meets_checks_one_objective_of_a_successful_request() {
        let r = spec_decode_record(); // ttft 50 ms, tpot 2.5 ms, e2e 90 ms
        assert!(r.meets(Latency::Ttft, ms(50)) && !r.meets(Latency::Ttft, ms(49)));
        assert!(r.meets(Latency::Tpot, Duration::from_micros(2500)));
        assert!(!r.meets(Latency::Tpot, Duration::from_micros(2499)));
        assert!(r.meets(Latency::E2e, ms(90)) && !r.meets(Latency::E2e, ms(89)));
        let mut failed = r.clone();
        failed.outcome = Outcome::Http5xx;
        assert!(!failed.meets(Latency::Ttft, ms(1000)));
        // One output token: no TPOT, so any TPOT objective is met.
        let mut one = RequestRecord::new(1, ms(0), ms(0));
        one.push_chunk(ms(30), 4, Some(1));
        one.usage_completion_tokens = Some(1);
        one.t_end = Some(ms(31));
        one.resolve_tokens(Some(TokenSource::Usage));
        assert!(one.tpot().is_none() && one.meets(Latency::Tpot, Duration::ZERO));
    }

    #[test]
    fn outcome_names_are_stable() {
        let names: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(
            names,
            [
                "ok",
                "http_3xx",
                "http_4xx",
                "http_429",
                "http_5xx",
                "gateway_rejected",
                "gateway_evicted",
                "connect",
                "tls",
                "timeout",
                "stream_error",
                "empty_output",
                "cancelled"
            ]
        );
        assert_eq!(Outcome::from_http_status(429), Outcome::Http429);
        assert_eq!(Outcome::from_http_status(503), Outcome::Http5xx);
        assert_eq!(Outcome::from_http_status(401), Outcome::Http4xx);
        assert_eq!(Outcome::from_http_status(307), Outcome::Http3xx);
        assert_eq!(
            serde_json::to_string(&Outcome::StreamError).unwrap(),
            "\"stream_error\""
        );
    }

    #[test]
    fn record_round_trips_through_json() {
        let r = spec_decode_record();
        let json = serde_json::to_string(&r).unwrap();
        let back: RequestRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }
}
