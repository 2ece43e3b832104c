//! The client: turns a [`RequestSpec`] into a [`RequestRecord`] with exact timestamps,
//! for every API in [`protocol`] (streamed or not). This is the measurement path.
//!
//! Timing rules (docs/measurement.md): every instant is a
//! `tokio::time::Instant` offset from the run start, so paused-clock tests see exact
//! values. `t_send` is taken right before the request is handed to reqwest. A chunk's
//! arrival time is taken when the bytes leave the socket (when reqwest yields the body
//! piece), before any parsing; every event parsed out of that piece gets that time.
//!
//! [`Client::send`] never fails: every failure becomes an [`Outcome`] with an error
//! text, and the partial record (t_first, chunks so far) is kept.
//!
//! Owns: HTTP, SSE and chunk decoding, timeouts, TLS, hard limits. Does not schedule,
//! aggregate or export.
//!
//! Testing note: under a paused tokio clock (`start_paused = true`) timings are exact
//! for the first request on each connection, but body data of a *later* request on a
//! reused pooled connection is not delivered until unrelated timers fire. This is a
//! reqwest/hyper + tokio test-util interaction (reproduced with a bare
//! `reqwest::Client` against an axum server; real time is unaffected). Paused-clock
//! tests that send several requests should set `reuse_connections: false`.

pub mod auth;
pub mod chunk;
pub mod config;
mod frames;
mod json_call;
pub mod llm_d;
pub mod protocol;
pub mod provider;
pub mod request;
pub mod retry_after;
pub mod sse;
mod stale;
pub mod tls;
mod tool_calls;
pub mod trace;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use tokio::time::{Instant, Sleep, timeout_at};
use tokio_util::sync::CancellationToken;

pub use config::{
    AwsConfig, ClientConfig, Documents, Endpoint, GoogleConfig, Limits, Provider, Timeouts,
    TlsConfig, valid_header_name,
};

use crate::check::{Answer, Checks, MAX_ANSWER_BYTES};
use crate::record::{Outcome, RequestRecord, TokenSource};
use crate::secret::Secret;
use crate::workload::{RequestSpec, TokenCounter};
use chunk::ChunkError;
use frames::Frames;
use protocol::{FullAnswer, Protocol};

/// Largest `usage.prompt_tokens` believed from a server: far above any context window
/// served today (10M tokens); larger is a broken or hostile count.
const MAX_USAGE_PROMPT_TOKENS: u32 = 16 << 20;

/// Longest `model` field kept for the checks: a name, not a payload.
const MAX_MODEL_BYTES: usize = 256;

/// How much of an error response body is kept in `record.error`.
const ERROR_BODY_BYTES: usize = 4 * 1024;
/// After `[DONE]`, how long to wait for the end of the body so the connection can go
/// back to the pool (a dropped, half-read body forces a new connection next time).
const DRAIN_AFTER_DONE: Duration = Duration::from_secs(1);

/// One target's client: one `reqwest::Client`, so one connection pool, reused by every
/// request.
pub struct Client {
    http: reqwest::Client,
    url: reqwest::Url,
    cfg: ClientConfig,
    protocol: &'static dyn Protocol,
    token_counter: Option<TokenCounter>,
    non_standard_hint: Option<String>,
    connects: stale::ConnectCounter,
    /// The answer checks every successful request is judged by.
    checks: Option<Arc<Checks>>,
    /// What each request carries beyond the default headers (a provider's signature).
    signer: provider::Signer,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.url.as_str())
            .field("cfg", &self.cfg)
            .field("token_counter", &self.token_counter.is_some())
            .finish()
    }
}

/// A failure: the outcome and the text for `record.error`.
#[derive(Debug)]
struct Failure {
    outcome: Outcome,
    message: String,
    /// The delay a rate-limit refusal named ([`ChunkError::RateLimited`]).
    retry_after: Option<Duration>,
}

impl Failure {
    fn new(outcome: Outcome, message: impl Into<String>) -> Self {
        Failure {
            outcome,
            message: message.into(),
            retry_after: None,
        }
    }

    fn stream(message: impl Into<String>) -> Self {
        Failure::new(Outcome::StreamError, message)
    }
}

/// Which deadline bounds the current wait, so a timeout can say which one fired.
#[derive(Clone, Copy)]
enum Phase {
    FirstToken,
    Idle,
}

/// Per-request streaming state besides the record.
struct StreamState {
    /// Cumulative `usage.completion_tokens` already attributed to pushed chunks.
    cum_assigned: u32,
    /// Every content chunk so far carried a cumulative usage count
    /// (`None` before the first content chunk).
    continuous: Option<bool>,
    /// Tokens counted while streaming, for the output-token limit.
    tokens_seen: u64,
    response_bytes: u64,
    done: bool,
    /// With a tokenizer: the whole generated text, so N_out is counted on it at the end
    /// (per-chunk counts over-count where tokens merge across chunk boundaries).
    text: String,
    /// Embeddings, rerank, score: vectors or ranked documents in the answer.
    items: usize,
    /// Rerank, score: the index of the document ranked first.
    top_document: Option<u32>,
    /// The answer the checks read: kept only when one reads text, and only its first
    /// [`MAX_ANSWER_BYTES`].
    answer: AnswerText,
    /// The response's `model` field (first seen), for the checks.
    model: Option<String>,
    /// The answer's function calls, kept only when a check reads them.
    tools: tool_calls::KeptToolCalls,
}

/// Answer text kept for the checks, bounded.
#[derive(Default)]
struct AnswerText {
    keep: bool,
    text: String,
    truncated: bool,
}

impl AnswerText {
    fn push(&mut self, piece: &str) {
        if !self.keep || self.truncated {
            return;
        }
        let room = MAX_ANSWER_BYTES - self.text.len();
        if piece.len() <= room {
            self.text.push_str(piece);
        } else {
            let mut cut = room;
            while !piece.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.push_str(&piece[..cut]);
            self.truncated = true;
        }
    }
}

impl StreamState {
    /// Keeps the first `model` the response named (bounded).
    fn keep_model(&mut self, model: &str) {
        if self.model.is_none() {
            self.model = Some(truncate_text(model, MAX_MODEL_BYTES));
        }
    }
}

impl Client {
    /// Builds the client (and its connection pool). Config errors are usage errors.
    pub fn new(cfg: ClientConfig, token_counter: Option<TokenCounter>) -> anyhow::Result<Client> {
        cfg.validate()?;
        let cfg = provider::without_engine_extensions(cfg);
        if let Err(e) = provider::check(&cfg) {
            crate::usage_bail!("{e}");
        }
        let url = match reqwest::Url::parse(&provider::url(&cfg)) {
            Ok(u) => u,
            Err(e) => crate::usage_bail!("base_url {:?}: {e}", cfg.base_url),
        };
        let protocol = provider::protocol(&cfg);
        let streamed = provider::streamed(&cfg);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static(if streamed {
                provider::framing(&cfg).content_type()
            } else {
                "application/json"
            }),
        );
        for (name, value) in protocol.fixed_headers(&cfg) {
            let Ok(v) = HeaderValue::from_str(&value) else {
                crate::usage_bail!("the value of header {name} is not a valid header value");
            };
            headers.insert(name, v);
        }
        if let Some(key) = &cfg.api_key {
            let (name, value) = provider::key_header(&cfg, key.expose());
            let mut v = match HeaderValue::from_str(&value) {
                Ok(v) => v,
                Err(_) => crate::usage_bail!("api_key contains characters not allowed in a header"),
            };
            v.set_sensitive(true);
            headers.insert(name, v);
        }
        for (name, value) in cfg.llm_d.pairs() {
            let Ok(v) = HeaderValue::from_str(&value) else {
                crate::usage_bail!("the value of header {name} is not a valid header value");
            };
            headers.insert(name, v);
        }
        for (name, value) in &cfg.headers {
            let Ok(n) = HeaderName::from_bytes(name.as_bytes()) else {
                crate::usage_bail!("header name {name:?} is not a valid HTTP header name");
            };
            let Ok(mut v) = HeaderValue::from_str(value.expose()) else {
                crate::usage_bail!("the value of header {name:?} is not a valid header value");
            };
            v.set_sensitive(true);
            headers.insert(n, v);
        }
        let connects = stale::ConnectCounter::default();
        let mut builder = reqwest::Client::builder().connector_layer(connects.layer());
        if !cfg.reuse_connections {
            builder = builder.pool_max_idle_per_host(0);
        }
        let http = builder
            .tls_backend_preconfigured(tls::client_config(&cfg.tls)?)
            .default_headers(headers)
            .user_agent(concat!("llmprobe/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(cfg.timeouts.connect)
            .http1_only()
            .tcp_nodelay(true)
            // A prober measures the endpoint itself, not a proxy picked up from the
            // environment.
            .no_proxy()
            // Following a redirect would turn the POST into a GET against another URL
            // and time that instead: a 3xx is reported as what it is.
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(90))
            .build()
            .context("building the HTTP client")?;
        let non_standard_hint = request::non_standard_hint(&cfg);
        let signer = provider::Signer::new(&cfg)?;
        Ok(Client {
            signer,
            http,
            url,
            cfg,
            protocol,
            token_counter,
            non_standard_hint,
            connects,
            checks: None,
        })
    }

    /// Judges every successful answer by `checks` (none: no checks, no text kept).
    pub fn with_checks(mut self, checks: Arc<Checks>) -> Client {
        self.checks = (!checks.is_empty()).then_some(checks);
        self
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// The values this client sends that must never be shown: the API key and every
    /// header value.
    pub fn secrets(&self) -> impl Iterator<Item = &str> + Clone {
        self.cfg
            .api_key
            .iter()
            .chain(self.cfg.headers.iter().map(|(_, v)| v))
            .map(|s| s.expose())
            .chain(self.signer.secrets())
            .filter(|s| !s.is_empty())
    }

    /// Sends one request and streams the answer into a record. Never fails: every
    /// failure is a record with an [`Outcome`] and an error text.
    pub async fn send(
        &self,
        spec: &RequestSpec,
        id: u64,
        t_sched: Duration,
        run_start: Instant,
    ) -> RequestRecord {
        self.send_inner(spec, id, t_sched, run_start, None, false, &[])
            .await
            .0
    }

    /// Like [`send`](Self::send), and also returns the answer text (without any
    /// reasoning; its first [`MAX_ANSWER_BYTES`]): a conversation sends it back as the
    /// assistant's message of the next turn.
    pub async fn send_keeping_answer(
        &self,
        spec: &RequestSpec,
        id: u64,
        t_sched: Duration,
        run_start: Instant,
    ) -> (RequestRecord, String) {
        self.send_inner(spec, id, t_sched, run_start, None, true, &[])
            .await
    }

    /// Like [`send`](Self::send), but when `cancel` fires first the request is
    /// abandoned and the record, with whatever arrived so far, ends as
    /// [`Outcome::Cancelled`] (a stopped run still accounts for its in-flight requests).
    pub async fn send_cancellable(
        &self,
        spec: &RequestSpec,
        id: u64,
        t_sched: Duration,
        run_start: Instant,
        cancel: &CancellationToken,
    ) -> RequestRecord {
        self.send_inner(spec, id, t_sched, run_start, Some(cancel), false, &[])
            .await
            .0
    }

    /// Like [`send`](Self::send), with `headers` on this request only (a session's
    /// affinity header or cookie, which changes from session to session).
    pub async fn send_with_headers(
        &self,
        spec: &RequestSpec,
        id: u64,
        run_start: Instant,
        headers: &[(header::HeaderName, header::HeaderValue)],
    ) -> RequestRecord {
        self.send_inner(spec, id, Duration::ZERO, run_start, None, false, headers)
            .await
            .0
    }

    /// A fresh answer's state: its text kept when the caller or a check needs it.
    fn stream_state(&self, keep_answer: bool) -> StreamState {
        StreamState {
            cum_assigned: 0,
            continuous: None,
            tokens_seen: 0,
            response_bytes: 0,
            done: false,
            text: String::new(),
            items: 0,
            top_document: None,
            answer: AnswerText {
                keep: keep_answer || self.checks.as_ref().is_some_and(|c| c.needs_text()),
                ..AnswerText::default()
            },
            model: None,
            tools: tool_calls::KeptToolCalls::new(
                self.checks.as_ref().is_some_and(|c| c.needs_tool_calls()),
            ),
        }
    }

    /// Why a non-generating answer (embeddings, rerank, score) is empty.
    fn no_items_error(&self) -> &'static str {
        if self.cfg.endpoint.api().documents {
            "the answer ranked no document"
        } else {
            "the answer carried no embedding vector"
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn send_inner(
        &self,
        spec: &RequestSpec,
        id: u64,
        t_sched: Duration,
        run_start: Instant,
        cancel: Option<&CancellationToken>,
        keep_answer: bool,
        headers: &[(header::HeaderName, header::HeaderValue)],
    ) -> (RequestRecord, String) {
        let body = request::body(&self.cfg, spec).map(bytes::Bytes::from);
        // A provider's token is fetched (or refreshed) before the request is timed.
        let bearer = self.signer.bearer().await;
        let bearer_value = bearer
            .as_ref()
            .ok()
            .and_then(Option::as_ref)
            .and_then(provider::Signer::bearer_header);
        let trace = self.cfg.traceparent.then(trace::TraceContext::random);
        // The stale-connection retry builds its request again (same body, same trace
        // context) rather than every request cloning its builder for a rare retry.
        let build = |body: &bytes::Bytes| {
            let mut request = self.http.post(self.url.clone());
            if let Some(t) = &trace {
                request = request.header(trace::HEADER_NAME, t.header_value());
            }
            for (name, value) in headers {
                request = request.header(name.clone(), value.clone());
            }
            for (name, value) in self.signer.headers(&self.url, body) {
                request = request.header(name, value);
            }
            if let Some(v) = &bearer_value {
                request = request.header(header::AUTHORIZATION, v.clone());
            }
            request.body(body.clone())
        };
        let request = body.map(|body| (build(&body), body));
        let start = Instant::now();
        let mut rec = RequestRecord::new(id, t_sched, start.duration_since(run_start));
        rec.trace_id = trace.map(|t| t.trace_id_hex());
        rec.span_id = trace.map(|t| t.span_id_hex());
        rec.prompt_tokens_sent = spec.prompt_tokens;
        rec.max_tokens = spec.max_tokens;
        rec.model = spec.model.as_deref().map(str::to_string);
        let mut st = self.stream_state(keep_answer);
        let result = match request {
            _ if bearer.is_err() => Err(Failure::new(
                Outcome::Http4xx,
                bearer.as_ref().err().cloned().unwrap_or_default(),
            )),
            Ok((request, body)) => {
                let retry = || build(&body);
                let exchange = self.exchange(request, retry, start, run_start, &mut rec, &mut st);
                match cancel {
                    Some(cancel) => tokio::select! {
                        biased;
                        r = exchange => r,
                        () = cancel.cancelled() => Err(Failure::new(
                            Outcome::Cancelled,
                            "the run stopped while the request was in flight",
                        )),
                    },
                    None => exchange.await,
                }
            }
            Err(e) => Err(Failure::stream(format!("building the request body: {e}"))),
        };
        if rec.t_end.is_none() {
            rec.t_end = Some(Instant::now().duration_since(run_start));
        }
        self.resolve_tokens(&mut rec, &st);
        match result {
            Err(f) => {
                rec.outcome = f.outcome;
                rec.retry_after = f.retry_after.or(rec.retry_after);
                let token = bearer.as_ref().ok().and_then(Option::as_ref);
                let secrets = self.secrets().chain(token.map(Secret::expose));
                rec.error = Some(crate::secret::scrub(&f.message, secrets));
            }
            Ok(()) if !self.cfg.endpoint.generates() && st.items == 0 => {
                rec.outcome = Outcome::EmptyOutput;
                rec.error = Some(self.no_items_error().into());
            }
            Ok(()) if self.cfg.endpoint.generates() && rec.chunks.is_empty() => {
                rec.outcome = Outcome::EmptyOutput;
                rec.error = Some(if rec.streamed {
                    "the stream completed without any generated text".into()
                } else {
                    "the answer carried no generated text".into()
                });
            }
            Ok(()) => rec.outcome = Outcome::Ok,
        }
        if let Some(checks) = self.checks.as_ref().filter(|_| rec.is_success()) {
            let calls = st.tools.calls();
            let answer = Answer {
                tool_calls: &calls,
                text: &st.answer.text,
                truncated: st.answer.truncated,
                model: st.model.as_deref(),
                finish_reason: rec.finish_reason.as_deref(),
                output_tokens: rec.output_tokens(),
                top_document: st.top_document,
            };
            let token = bearer.as_ref().ok().and_then(Option::as_ref);
            rec.checks = checks.judge(&answer, self.secrets().chain(token.map(Secret::expose)));
        }
        (rec, st.answer.text)
    }

    /// Settles the record's token counts and where they came from.
    fn resolve_tokens(&self, rec: &mut RequestRecord, st: &StreamState) {
        let known = match st.continuous {
            Some(true) => Some(TokenSource::ContinuousUsage),
            _ if self.token_counter.is_some() => Some(TokenSource::Tokenizer),
            _ => None,
        };
        if let (Some(TokenSource::Tokenizer), None, Some(counter)) =
            (known, rec.usage_completion_tokens, &self.token_counter)
        {
            // N_out from the whole text, as vLLM's benchmark counts it; the per-chunk
            // counts only weight how it is spread over the chunks.
            rec.rescale_chunk_tokens(counter(&st.text));
        }
        rec.resolve_tokens(known);
    }

    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        retry: impl FnOnce() -> reqwest::RequestBuilder,
        start: Instant,
        run_start: Instant,
        rec: &mut RequestRecord,
        st: &mut StreamState,
    ) -> Result<(), Failure> {
        let t = &self.cfg.timeouts;
        let total_deadline = start + t.total;
        let first_deadline = start + t.first_token;
        let offset = |i: Instant| i.duration_since(run_start);

        // A non-streamed answer's headers usually come with the whole answer, after the
        // whole generation: only the total timeout bounds that wait.
        let (deadline, phase) = if self.streamed() {
            self.deadline(total_deadline, first_deadline, Phase::FirstToken)
        } else {
            (total_deadline, Phase::FirstToken)
        };
        // One timer for every wait of this exchange, moved to each wait's deadline (see
        // `within`).
        let timer = tokio::time::sleep_until(deadline);
        tokio::pin!(timer);
        let again = || Some(retry());
        let send = stale::send(request, again, &self.connects, self.cfg.reuse_connections);
        let sent = within(&mut timer, deadline, send).await;
        let mut resp = match sent {
            Err(_) => {
                return Err(self.timeout(phase, deadline == total_deadline, "response headers"));
            }
            Ok(Err(e)) => return Err(self.send_error(e)),
            Ok(Ok(r)) => r,
        };
        rec.t_headers = Some(offset(Instant::now()));
        self.check_response(&mut resp, total_deadline, rec).await?;
        if !self.streamed() {
            return self
                .read_full(&mut resp, total_deadline, run_start, rec, st)
                .await;
        }

        let limits = self.cfg.limits;
        let mut parser = Frames::new(provider::framing(&self.cfg), limits.max_line_bytes);
        let mut last_bytes = Instant::now();
        loop {
            let (deadline, phase) = if rec.t_first.is_none() {
                self.deadline(total_deadline, first_deadline, Phase::FirstToken)
            } else {
                self.deadline(total_deadline, last_bytes + t.idle, Phase::Idle)
            };
            let piece = match within(&mut timer, deadline, resp.chunk()).await {
                Err(_) => return Err(self.timeout(phase, deadline == total_deadline, "stream")),
                Ok(Err(e)) => return Err(body_error(e)),
                Ok(Ok(p)) => p,
            };
            // The arrival time of everything in this piece: taken before parsing.
            let now = Instant::now();
            let at = offset(now);
            last_bytes = now;
            let Some(bytes) = piece else {
                parser.end();
                self.drain_events(&mut parser, at, rec, st)?;
                if st.done {
                    return Ok(());
                }
                rec.t_end = Some(at);
                return Err(Failure::stream(format!(
                    "the stream ended without {} (truncated response)",
                    self.protocol.final_event()
                )));
            };
            st.response_bytes += bytes.len() as u64;
            if st.response_bytes > limits.max_response_bytes {
                return Err(Failure::stream(format!(
                    "response larger than limits.max_response_bytes ({} bytes)",
                    limits.max_response_bytes
                )));
            }
            parser.feed(&bytes);
            self.drain_events(&mut parser, at, rec, st)?;
            if st.done {
                rec.t_end = Some(at);
                self.drain_body(
                    &mut resp,
                    &mut timer,
                    total_deadline.min(now + t.idle.min(DRAIN_AFTER_DONE)),
                )
                .await;
                return Ok(());
            }
        }
    }

    /// Checks the response head: a success status (else the body's start in the
    /// error) and an event stream. Notes the status and any Retry-After in `rec`.
    async fn check_response(
        &self,
        resp: &mut reqwest::Response,
        total_deadline: Instant,
        rec: &mut RequestRecord,
    ) -> Result<(), Failure> {
        let status = resp.status();
        rec.http_status = Some(status.as_u16());
        rec.served_endpoint = served_endpoint(resp.headers());
        if matches!(status.as_u16(), 429 | 503) {
            rec.retry_after =
                retry_after::from_headers(resp.headers(), std::time::SystemTime::now());
        }
        if !status.is_success() {
            // A gateway that dropped the request says why: that decides the failure
            // reason, and its exact value goes into the error text.
            let dropped = resp
                .headers()
                .get(llm_d::DROPPED_REASON_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty() && v.len() <= 128);
            let snippet = read_snippet(
                resp,
                total_deadline.min(Instant::now() + self.cfg.timeouts.idle),
            )
            .await;
            // A 429 whose headers name no delay may name one in its body (the
            // protocol's own error shape).
            if status.as_u16() == 429 && rec.retry_after.is_none() {
                rec.retry_after = self.protocol.retry_delay(snippet.as_bytes());
            }
            let mut msg = format!("HTTP {status}");
            if let Some(value) = &dropped {
                msg.push_str(&format!(" ({}: {value})", llm_d::DROPPED_REASON_HEADER));
            }
            if !snippet.is_empty() {
                msg.push_str(": ");
                msg.push_str(&snippet);
            }
            if let Some(hint) = self.route_hint(status.as_u16()) {
                msg.push_str(&format!(" ({hint})"));
            } else if status.is_client_error()
                && !matches!(status.as_u16(), 401 | 403 | 408 | 429)
                && let Some(hint) = &self.non_standard_hint
            {
                msg.push_str(&format!(" ({hint})"));
            }
            let outcome = dropped
                .as_deref()
                .and_then(llm_d::dropped_outcome)
                .unwrap_or_else(|| Outcome::from_http_status(status.as_u16()));
            return Err(Failure::new(outcome, msg));
        }
        if let Some(ct) = resp.headers().get(header::CONTENT_TYPE) {
            let ct_text = String::from_utf8_lossy(ct.as_bytes()).into_owned();
            let essence = ct_text.split(';').next().unwrap_or("").trim();
            let framing = provider::framing(&self.cfg);
            let expected = if self.streamed() {
                essence.eq_ignore_ascii_case(framing.content_type())
            } else {
                essence.eq_ignore_ascii_case("application/json")
                    || essence.to_ascii_lowercase().ends_with("+json")
            };
            if !expected {
                let snippet = read_snippet(
                    resp,
                    total_deadline.min(Instant::now() + self.cfg.timeouts.idle),
                )
                .await;
                let (want, hint) = if self.streamed() {
                    (
                        format!("a {}", framing.content_type()),
                        "is `stream: true` honoured?",
                    )
                } else {
                    (
                        "an application/json".to_string(),
                        "`stream: false` was sent",
                    )
                };
                return Err(Failure::stream(format!(
                    "expected {want} response, got Content-Type {ct_text:?} ({hint}): {snippet}"
                )));
            }
        }
        Ok(())
    }

    /// Whether this client asks for a streamed answer.
    fn streamed(&self) -> bool {
        provider::streamed(&self.cfg)
    }

    /// The hint for a 404 or 405: the route is missing, so the server probably does
    /// not speak this API.
    fn route_hint(&self, status: u16) -> Option<String> {
        matches!(status, 404 | 405).then(|| {
            format!(
                "the server has no POST {} route: it may not speak the {} API \
                 (endpoint: {}), or base_url points at the wrong place",
                self.url.path(),
                self.cfg.endpoint.as_str(),
                self.cfg.endpoint.as_str()
            )
        })
    }

    /// The earlier of the total deadline and the phase deadline.
    fn deadline(&self, total: Instant, phase_deadline: Instant, phase: Phase) -> (Instant, Phase) {
        (total.min(phase_deadline), phase)
    }

    fn timeout(&self, phase: Phase, total: bool, waiting_for: &str) -> Failure {
        let t = &self.cfg.timeouts;
        let msg = if total {
            format!(
                "total timeout ({}) exceeded waiting for the {waiting_for}",
                fmt_dur(t.total)
            )
        } else {
            match phase {
                Phase::FirstToken => format!(
                    "first token timeout ({}) exceeded waiting for the {waiting_for}",
                    fmt_dur(t.first_token)
                ),
                Phase::Idle => format!(
                    "idle timeout ({}) exceeded: no bytes between chunks",
                    fmt_dur(t.idle)
                ),
            }
        };
        Failure::new(Outcome::Timeout, msg)
    }

    fn send_error(&self, e: reqwest::Error) -> Failure {
        let is_tls = tls::is_tls_error(&e);
        let (is_timeout, is_connect) = (e.is_timeout(), e.is_connect());
        let text = error_chain(e);
        if is_tls {
            Failure::new(Outcome::Tls, format!("TLS failure: {text}"))
        } else if is_timeout {
            Failure::new(
                Outcome::Timeout,
                format!(
                    "connect timeout ({}) exceeded: {text}",
                    fmt_dur(self.cfg.timeouts.connect)
                ),
            )
        } else if is_connect {
            Failure::new(Outcome::Connect, format!("cannot connect: {text}"))
        } else {
            Failure::new(
                Outcome::Connect,
                format!("connection failed before a response: {text}"),
            )
        }
    }

    /// Handles every complete event the parser holds.
    fn drain_events(
        &self,
        parser: &mut Frames,
        at: Duration,
        rec: &mut RequestRecord,
        st: &mut StreamState,
    ) -> Result<(), Failure> {
        loop {
            let ev = match parser.next_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => return Ok(()),
                Err(e) => return Err(Failure::stream(e)),
            };
            if st.done {
                // Anything after [DONE] is ignored.
                continue;
            }
            if ev.is_done() {
                st.done = true;
                continue;
            }
            if self.protocol.ends_with_done_sentinel() && ev.event == b"error" {
                return Err(Failure::stream(format!(
                    "server error event in stream: {}",
                    truncate_text(&String::from_utf8_lossy(ev.data), ERROR_BODY_BYTES)
                )));
            }
            self.handle_chunk(&ev, at, rec, st)?;
        }
    }

    fn handle_chunk(
        &self,
        ev: &sse::Event<'_>,
        at: Duration,
        rec: &mut RequestRecord,
        st: &mut StreamState,
    ) -> Result<(), Failure> {
        let chunk = self
            .protocol
            .decode_event(ev)
            .map_err(|e| decode_failure(e, ev.data, true))?;
        if chunk.unknown {
            rec.unknown_events = rec.unknown_events.saturating_add(1);
            return Ok(());
        }
        st.done |= chunk.done;
        if let Some(ms) = chunk.server_latency_ms {
            rec.server_latency = Some(Duration::from_millis(ms));
        }
        let cum = chunk.usage.and_then(|u| u.completion_tokens);
        if let Some(u) = chunk.usage {
            self.take_usage(u, rec)?;
        }
        if let Some(reason) = &chunk.finish_reason
            && rec.finish_reason.as_deref() != Some(reason)
        {
            rec.finish_reason = Some(reason.to_string());
        }
        if let Some(model) = &chunk.model {
            st.keep_model(model);
        }
        st.answer.push(chunk.content.as_deref().unwrap_or(""));
        for t in &chunk.tool_calls {
            st.tools.apply(t);
        }
        if !chunk.has_choice {
            // Usage-only chunk (`choices: []`): no text, no per-chunk tokens.
            return Ok(());
        }
        let text_len = chunk.text_len();
        let tokens = if text_len > 0 {
            let continuous = cum.is_some() && st.continuous != Some(false);
            st.continuous = Some(continuous);
            if let Some(c) = cum.filter(|_| continuous) {
                // Tokens generated since the last content chunk, including any that
                // arrived in chunks with no text (e.g. held-back partial characters).
                let n = c.saturating_sub(st.cum_assigned);
                st.cum_assigned = st.cum_assigned.max(c);
                st.tokens_seen = u64::from(c);
                Some(n)
            } else if let Some(counter) = &self.token_counter {
                let n = chunk.content.as_deref().map_or(0, |s| counter(s))
                    + chunk.reasoning.as_deref().map_or(0, |s| counter(s))
                    + chunk.tool_text().map(|s| counter(s)).sum::<u32>();
                st.text.push_str(chunk.reasoning.as_deref().unwrap_or(""));
                st.text.push_str(chunk.content.as_deref().unwrap_or(""));
                chunk.tool_text().for_each(|s| st.text.push_str(s));
                st.tokens_seen += u64::from(n);
                Some(n)
            } else {
                st.tokens_seen += 1;
                None
            }
        } else {
            match cum {
                // A text-less chunk whose cumulative count moved after text started
                // (e.g. the EOS token on the finish chunk): its tokens arrived now.
                Some(c) if st.continuous == Some(true) && c > st.cum_assigned => {
                    let n = c - st.cum_assigned;
                    st.cum_assigned = c;
                    st.tokens_seen = u64::from(c);
                    Some(n)
                }
                _ => return Ok(()),
            }
        };
        let reasoning_len = chunk.reasoning.as_deref().map_or(0, str::len);
        rec.push_delta(at, text_len - reasoning_len, reasoning_len, tokens);
        if st.tokens_seen > u64::from(self.cfg.limits.max_output_tokens) {
            return Err(Failure::stream(format!(
                "more than limits.max_output_tokens ({}) output tokens",
                self.cfg.limits.max_output_tokens
            )));
        }
        Ok(())
    }

    /// Takes a server's token counts into the record. They are input too: an absurd
    /// usage (a buggy or hostile endpoint) would otherwise become N_out, TPOT ≈ 0 and
    /// billions of per-token ITL observations downstream.
    fn take_usage(&self, u: chunk::Usage, rec: &mut RequestRecord) -> Result<(), Failure> {
        let max_out = self.cfg.limits.max_output_tokens;
        if let Some(c) = u.completion_tokens.filter(|&c| c > max_out) {
            return Err(Failure::stream(format!(
                "usage.completion_tokens {c} exceeds limits.max_output_tokens ({max_out})"
            )));
        }
        if let Some(p) = u.prompt_tokens.filter(|&p| p > MAX_USAGE_PROMPT_TOKENS) {
            return Err(Failure::stream(format!(
                "usage.prompt_tokens {p} exceeds {MAX_USAGE_PROMPT_TOKENS}"
            )));
        }
        rec.usage_prompt_tokens = u.prompt_tokens.or(rec.usage_prompt_tokens);
        rec.usage_completion_tokens = u.completion_tokens.or(rec.usage_completion_tokens);
        rec.usage_reasoning_tokens = u
            .reasoning_tokens
            .map(|r| r.min(max_out))
            .or(rec.usage_reasoning_tokens);
        // Cached tokens are part of the prompt: never more than it.
        rec.usage_cached_tokens = u
            .cached_tokens
            .map(|c| c.min(u.prompt_tokens.unwrap_or(MAX_USAGE_PROMPT_TOKENS)))
            .or(rec.usage_cached_tokens);
        Ok(())
    }

    /// Reads a whole non-streamed answer (bounded by the total and idle timeouts and
    /// `limits.max_response_bytes`) and records it as arriving when its last byte did.
    async fn read_full(
        &self,
        resp: &mut reqwest::Response,
        total_deadline: Instant,
        run_start: Instant,
        rec: &mut RequestRecord,
        st: &mut StreamState,
    ) -> Result<(), Failure> {
        let limits = self.cfg.limits;
        let mut body = Vec::new();
        let mut at = Instant::now();
        loop {
            let deadline = total_deadline.min(at + self.cfg.timeouts.idle);
            let piece = match timeout_at(deadline, resp.chunk()).await {
                Err(_) => {
                    let phase = Phase::Idle;
                    return Err(self.timeout(phase, deadline == total_deadline, "answer body"));
                }
                Ok(Err(e)) => return Err(body_error(e)),
                Ok(Ok(p)) => p,
            };
            at = Instant::now();
            let Some(bytes) = piece else { break };
            if (body.len() + bytes.len()) as u64 > limits.max_response_bytes {
                return Err(Failure::stream(format!(
                    "response larger than limits.max_response_bytes ({} bytes)",
                    limits.max_response_bytes
                )));
            }
            body.extend_from_slice(&bytes);
        }
        let at = at.duration_since(run_start);
        rec.t_end = Some(at);
        st.response_bytes = body.len() as u64;
        let answer = self
            .protocol
            .decode_full(&body)
            .map_err(|e| decode_failure(e, &body, false))?;
        self.record_full(answer, at, rec, st)
    }

    fn record_full(
        &self,
        answer: FullAnswer,
        at: Duration,
        rec: &mut RequestRecord,
        st: &mut StreamState,
    ) -> Result<(), Failure> {
        self.take_usage(answer.usage, rec)?;
        rec.finish_reason = answer.finish_reason;
        rec.server_latency = answer.server_latency_ms.map(Duration::from_millis);
        if let Some(model) = &answer.model {
            st.keep_model(model);
        }
        st.answer.push(&answer.answer);
        st.items = answer.items;
        st.top_document = answer.top_document;
        // A call's arguments are generated text like the answer's.
        let tool_bytes: usize = answer.tool_calls.iter().map(|c| c.arguments.len()).sum();
        let tokens = match &self.token_counter {
            Some(counter) if rec.usage_completion_tokens.is_none() => {
                st.text = answer.reasoning.clone() + &answer.answer;
                answer
                    .tool_calls
                    .iter()
                    .for_each(|c| st.text.push_str(&c.arguments));
                Some(counter(&st.text))
            }
            _ => None,
        };
        st.tools.take_whole(answer.tool_calls);
        if !self.cfg.endpoint.generates() {
            // An embedding generates nothing: zero output tokens is the count, not an
            // unknown.
            rec.streamed = false;
            rec.usage_completion_tokens = Some(0);
            return Ok(());
        }
        rec.push_body(
            at,
            answer.answer.len() + tool_bytes,
            answer.reasoning.len(),
            tokens,
        );
        if u64::from(rec.output_tokens()) > u64::from(self.cfg.limits.max_output_tokens) {
            return Err(Failure::stream(format!(
                "more than limits.max_output_tokens ({}) output tokens",
                self.cfg.limits.max_output_tokens
            )));
        }
        Ok(())
    }

    /// Reads what is left of the body after `[DONE]` (normally just the end of the
    /// chunked encoding), so the connection is reusable. Bounded in time and size.
    async fn drain_body(
        &self,
        resp: &mut reqwest::Response,
        timer: &mut Pin<&mut Sleep>,
        deadline: Instant,
    ) {
        let mut budget = self.cfg.limits.max_line_bytes as u64;
        while let Ok(Ok(Some(piece))) = within(timer, deadline, resp.chunk()).await {
            budget = budget.saturating_sub(piece.len() as u64);
            if budget == 0 {
                return;
            }
        }
    }
}

/// `fut`'s output, or `Err` when `deadline` passes first, as `timeout_at`. The one
/// `timer` of a request is moved to each deadline: a later deadline only extends the
/// registered timer, where each `timeout_at` inserts a timer into tokio's wheel and
/// removes it (per chunk), and an insert may wake the driver through its eventfd.
async fn within<F: std::future::Future>(
    timer: &mut Pin<&mut Sleep>,
    deadline: Instant,
    fut: F,
) -> Result<F::Output, ()> {
    timer.as_mut().reset(deadline);
    tokio::select! {
        biased;
        out = fut => Ok(out),
        () = timer.as_mut() => Err(()),
    }
}

/// A stream event or body the protocol could not use, as a failure that quotes it.
fn decode_failure(e: ChunkError, data: &[u8], streamed: bool) -> Failure {
    let (place, what) = if streamed {
        ("in stream", "JSON chunk")
    } else {
        ("in the answer", "JSON answer")
    };
    match e {
        ChunkError::Server(msg) => Failure::stream(format!(
            "server error {place}: {}",
            truncate_text(&msg, ERROR_BODY_BYTES)
        )),
        ChunkError::Malformed(msg) => Failure::stream(format!(
            "malformed {what} ({msg}): {}",
            truncate_text(&String::from_utf8_lossy(data), 256)
        )),
        ChunkError::RateLimited {
            message,
            retry_after,
        } => Failure {
            retry_after,
            ..Failure::new(
                Outcome::Http429,
                format!(
                    "rate limited {place}: {}",
                    truncate_text(&message, ERROR_BODY_BYTES)
                ),
            )
        },
    }
}

/// Up to [`ERROR_BODY_BYTES`] of a response body as text, for error messages.
async fn read_snippet(resp: &mut reqwest::Response, deadline: Instant) -> String {
    let mut buf = Vec::new();
    while buf.len() < ERROR_BODY_BYTES {
        match timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(piece))) => buf.extend_from_slice(&piece),
            _ => break,
        }
    }
    let truncated = buf.len() > ERROR_BODY_BYTES;
    let text = String::from_utf8_lossy(&buf[..buf.len().min(ERROR_BODY_BYTES)]);
    let mut out = text.trim().to_string();
    if truncated {
        out.push('…');
    }
    out
}

/// A body read error after the headers: a reset mid-stream is a stream error, a TLS
/// alert is a TLS error.
fn body_error(e: reqwest::Error) -> Failure {
    let is_tls = tls::is_tls_error(&e);
    let text = error_chain(e);
    if is_tls {
        Failure::new(Outcome::Tls, format!("TLS failure mid-stream: {text}"))
    } else {
        Failure::stream(format!("connection broken mid-stream: {text}"))
    }
}

/// The error and its sources joined with `: `, without the URL (which may carry a
/// token in its query) and without repeating a message that a source repeats.
fn error_chain(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = next {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}

fn truncate_text(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn fmt_dur(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The Gateway API Inference Extension's response header naming the endpoint that
/// served a request (`pkg/epp/metadata/consts.go` of its repository).
pub const SERVED_ENDPOINT_HEADER: &str = "x-gateway-destination-endpoint-served";

/// The served endpoint a gateway names, if it names one that looks like an address
/// (printable ASCII, at most 256 bytes): it becomes part of a page, never a label.
fn served_endpoint(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let v = headers.get(SERVED_ENDPOINT_HEADER)?.to_str().ok()?.trim();
    (!v.is_empty() && v.len() <= 256 && v.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_inside_the_answer_is_a_429_with_its_delay() {
        let e = ChunkError::RateLimited {
            message: "Too many tokens, please wait (ThrottlingException)".into(),
            retry_after: Some(Duration::from_secs(7)),
        };
        let f = decode_failure(e, b"", true);
        assert_eq!(f.outcome, Outcome::Http429);
        assert_eq!(f.retry_after, Some(Duration::from_secs(7)));
        assert_eq!(
            f.message,
            "rate limited in stream: Too many tokens, please wait (ThrottlingException)"
        );
        // The APIs that exist today say it in headers only.
        assert_eq!(protocol::of(Endpoint::Chat).retry_delay(b"{}"), None);
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_text("abc", 5), "abc");
        assert_eq!(truncate_text("ééé", 3), "é…");
    }

    #[test]
    fn kept_answer_text_is_bounded_and_cut_at_a_char() {
        let mut kept = AnswerText {
            keep: true,
            ..AnswerText::default()
        };
        kept.push(&"a".repeat(MAX_ANSWER_BYTES - 1));
        kept.push("é and more");
        kept.push("ignored");
        assert!(kept.truncated);
        assert_eq!(kept.text.len(), MAX_ANSWER_BYTES - 1);
        let mut off = AnswerText::default();
        off.push("not kept: no check reads text");
        assert!(off.text.is_empty() && !off.truncated);
    }

    #[test]
    fn new_rejects_bad_config_as_usage_error() {
        let cfg = ClientConfig {
            base_url: "localhost:8000".into(),
            ..ClientConfig::default()
        };
        let err = Client::new(cfg, None).unwrap_err();
        assert_eq!(crate::exit::code_for(&err), crate::exit::USAGE);
        let cfg = ClientConfig {
            api_key: Some("bad\nkey".into()),
            ..ClientConfig::default()
        };
        let err = Client::new(cfg, None).unwrap_err();
        assert!(!format!("{err:#}").contains("bad\nkey"));
    }
}
