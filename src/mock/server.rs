//! The HTTP side of the mock: a hand-rolled accept loop over hyper (so a fault can
//! close or reset the TCP connection itself), the axum routes, and the wire behaviour
//! of every response and fault, for every protocol. Timing comes from `engine.rs`;
//! the protocol's events and bodies from `wire.rs`.

use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;
use tower::Service;

use super::config::MockConfig;
use super::emissions::{EmissionLog, EmissionRecorder};
use super::engine::{Engine, Running, Schedule};
use super::fault::{FAULT_HEADER, FaultKind};
use super::metrics::render;
use super::prefix_cache::push_words;
use super::protocol::{self, MockProtocol, Whole, error_body, huge_event_parts, sse};
use super::request::{GenRequest, parse_request};
use super::voice::{Voice, WRONG_MODEL, split_answer};
use super::wire::{ChunkWriter, Usage};
use crate::client::Endpoint;
use crate::runner::{PreciseTimer, Spins, Timer};

/// A request header that sets this request's reasoning tokens (else `reasoning_tokens`).
pub const REASONING_HEADER: &str = "x-mock-reasoning-tokens";
/// Gap between bytes of the `trickle` fault.
pub const TRICKLE_BYTE_GAP: Duration = Duration::from_millis(1);
/// Request bodies larger than this are refused (413) before any timing starts.
const MAX_BODY_BYTES: usize = 64 << 20;
/// Piece size when streaming the `huge_line` fault, so it is never held in memory.
const HUGE_PIECE: usize = 64 << 10;
static FILL: [u8; HUGE_PIECE] = [b'x'; HUGE_PIECE];

/// A running mock server on the caller's tokio runtime.
pub struct MockServer {
    addr: SocketAddr,
    cancel: CancellationToken,
    join: Option<JoinHandle<()>>,
}

impl MockServer {
    /// The bound address (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`; an unspecified listen address (0.0.0.0, ::) becomes loopback
    /// so the URL is always connectable from this host.
    pub fn base_url(&self) -> String {
        let ip = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        format!("http://{}", SocketAddr::new(ip, self.addr.port()))
    }

    /// Stops accepting, lets in-flight responses finish (stalls end at once) for up
    /// to `shutdown_grace`, then drops whatever is left.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(join) = self.join.take() {
            let _ = join.await;
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Binds `listen` (port 0 allowed) and serves `config` on the current tokio runtime.
/// Returns once the socket is listening.
pub async fn start(config: MockConfig, listen: SocketAddr) -> anyhow::Result<MockServer> {
    serve(config, listen, None).await
}

/// Like [`start`], and notes in `log` when each token chunk of each streamed answer
/// leaves (for an in-process caller judging a client against the engine's actual
/// timing).
pub async fn start_with_emissions(
    config: MockConfig,
    listen: SocketAddr,
    log: Arc<EmissionLog>,
) -> anyhow::Result<MockServer> {
    serve(config, listen, Some(log)).await
}

async fn serve(
    config: MockConfig,
    listen: SocketAddr,
    emissions: Option<Arc<EmissionLog>>,
) -> anyhow::Result<MockServer> {
    config.validate()?;
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let cancel = CancellationToken::new();
    let grace = config.shutdown_grace;
    let timer = if config.precise_timer {
        // No busy-waiting: the mock's lateness is then the OS's sleep overshoot plus
        // one cross-thread wake-up (tens of µs, docs/measurement.md), while spinning
        // for every chunk of every stream would cost a core at a few thousand
        // chunks/s and take it from the client under test.
        Timer::Precise(
            PreciseTimer::with_spins(Spins::NONE).context("starting the mock's timer thread")?,
        )
    } else {
        Timer::Tokio
    };
    let mut engine = Engine::new(config, timer, cancel.clone());
    engine.emissions = emissions;
    let engine = Arc::new(engine);
    let app = routes(engine);
    let join = tokio::spawn(accept_loop(listener, app, cancel.clone(), grace));
    tracing::debug!(%addr, "mock listening");
    Ok(MockServer {
        addr,
        cancel,
        join: Some(join),
    })
}

async fn accept_loop(
    listener: TcpListener,
    app: Router,
    cancel: CancellationToken,
    grace: Duration,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    // Small SSE events must leave at once (and `trickle` byte by byte).
                    let _ = stream.set_nodelay(true);
                    conns.spawn(serve_connection(stream, app.clone(), cancel.clone()));
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "mock accept failed");
                    sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    drop(listener);
    let drained =
        tokio::time::timeout(grace, async { while conns.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::debug!(
            left = conns.len(),
            "mock shutdown grace over, dropping connections"
        );
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}

/// Lets a handler end its own TCP connection: `close` = FIN without a response,
/// `reset` = RST (SO_LINGER 0) after what was already written is flushed.
#[derive(Clone)]
struct ConnCtl {
    kill: Arc<Notify>,
    rst: Arc<AtomicBool>,
}

impl ConnCtl {
    fn close(&self) {
        self.kill.notify_one();
    }

    fn reset(&self) {
        self.rst.store(true, Ordering::SeqCst);
        self.kill.notify_one();
    }
}

/// The connection's socket; on drop it turns a requested reset into a real RST.
struct CtlIo {
    inner: TcpStream,
    rst: Arc<AtomicBool>,
}

impl Drop for CtlIo {
    fn drop(&mut self) {
        if self.rst.load(Ordering::SeqCst) {
            // Linger 0 makes close() send RST instead of FIN; the close happens when
            // `inner` drops right after this, without blocking.
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl AsyncRead for CtlIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CtlIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

async fn serve_connection(stream: TcpStream, app: Router, cancel: CancellationToken) {
    let ctl = ConnCtl {
        kill: Arc::new(Notify::new()),
        rst: Arc::new(AtomicBool::new(false)),
    };
    let io = CtlIo {
        inner: stream,
        rst: ctl.rst.clone(),
    };
    let kill = ctl.kill.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ctl.clone());
        let mut app = app.clone();
        async move { app.call(req).await }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .serve_connection(hyper_util::rt::TokioIo::new(io), svc);
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        tokio::select! {
            biased;
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(error = %e, "mock connection ended with an error");
                }
                return;
            }
            // A fault asked to end the connection: dropping `conn` closes the socket
            // (with RST when `reset` was used). hyper has flushed what it could.
            _ = kill.notified() => return,
            _ = cancel.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

type Shared = Arc<Engine>;

fn routes(engine: Shared) -> Router {
    let mut router = Router::new();
    for endpoint in Endpoint::ALL {
        router = router.route(
            endpoint.path(),
            post(move |state, ctl, headers, body| route_for(endpoint, state, ctl, headers, body)),
        );
    }
    router
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(engine)
}

fn error_response(status: StatusCode, message: &str, kind: &str) -> Response {
    let body = error_body(message, kind, json!(status.as_u16()));
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "no such route on the llmprobe mock",
        "NotFoundError",
    )
}

async fn health() -> StatusCode {
    StatusCode::OK
}

async fn metrics(State(engine): State<Shared>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        render(&engine.snapshot()),
    )
        .into_response()
}

/// With `--api-key`, every `/v1` route demands `Authorization: Bearer KEY` (or, as
/// Anthropic's API takes it, `x-api-key: KEY`).
fn unauthorized(engine: &Engine, headers: &HeaderMap) -> Option<Response> {
    let key = engine.cfg.api_key.as_deref()?;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let x_api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    if bearer == Some(key) || x_api_key == Some(key) {
        return None;
    }
    let body = error_body(
        "Incorrect API key provided.",
        "invalid_request_error",
        json!("invalid_api_key"),
    );
    Some(
        (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response(),
    )
}

async fn models(State(engine): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(r) = unauthorized(&engine, &headers) {
        return r;
    }
    let body = json!({"object": "list", "data": [{
        "id": engine.cfg.model, "object": "model", "created": 0, "owned_by": "llmprobe-mock",
    }]});
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The handler of one generating route: every protocol shares `generate`.
async fn route_for(
    endpoint: Endpoint,
    State(engine): State<Shared>,
    Extension(ctl): Extension<ConnCtl>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    generate(engine, ctl, headers, body, endpoint).await
}

/// One request's plan, shared by the streaming and the one-shot paths.
struct Job {
    engine: Shared,
    protocol: &'static dyn MockProtocol,
    req: GenRequest,
    fault: Option<FaultKind>,
    writer: ChunkWriter,
    output_tokens: u32,
    arrival: Instant,
    seed: u64,
    /// Prompt tokens the prefix cache held (None: the cache is off).
    cached: Option<u32>,
    /// Where its token chunks are noted as they leave (None: nobody asked).
    emission: Option<EmissionRecorder>,
}

impl Job {
    /// The usage after `completion` output tokens.
    fn usage(&self, completion: u32) -> Usage {
        Usage {
            prompt: self.req.prompt_tokens,
            completion,
            reasoning: self.writer.reasoning_of(completion),
            cached: self.cached,
        }
    }

    /// A finished answer: the prefix cache remembers its prompt and generated text.
    fn remember(&self, emitted: u32) {
        let Some(cache) = &self.engine.prefix_cache else {
            return;
        };
        let piece = self.writer.piece(0, emitted);
        let mut words = self.req.prompt_words.clone();
        push_words(&mut words, &piece.reasoning);
        push_words(&mut words, &piece.answer);
        cache.insert(&cache.keys(&words));
    }
}

async fn generate(
    engine: Shared,
    ctl: ConnCtl,
    headers: HeaderMap,
    body: Bytes,
    endpoint: Endpoint,
) -> Response {
    // Time zero: the request body has been read.
    let mut arrival = Instant::now();
    if let Some(r) = unauthorized(&engine, &headers) {
        return r;
    }
    let protocol = protocol::of(endpoint);
    let req = match parse_request(protocol, &body, &engine.cfg.model) {
        Ok(r) => r,
        Err(msg) => return error_response(StatusCode::BAD_REQUEST, &msg, "BadRequestError"),
    };
    let fault = match headers.get(FAULT_HEADER) {
        None => engine.draw_fault(),
        Some(v) => match v.to_str().map(FaultKind::parse_with_param) {
            Ok(Ok(k)) => Some(k),
            Ok(Err(e)) => {
                return error_response(StatusCode::BAD_REQUEST, &e.0, "BadRequestError");
            }
            Err(_) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    "x-mock-fault header is not ASCII",
                    "BadRequestError",
                );
            }
        },
    };
    if let Some(f) = fault {
        tracing::debug!(fault = %f, "mock injecting fault");
    }
    match fault {
        Some(FaultKind::Http500) => {
            return error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "mock fault http_500: internal server error",
                "InternalServerError",
            );
        }
        Some(FaultKind::Http503) => {
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "mock fault http_503: service unavailable",
                "ServiceUnavailableError",
            );
        }
        Some(FaultKind::Http429 { retry_after_secs }) => {
            let mut r = error_response(
                StatusCode::TOO_MANY_REQUESTS,
                "mock fault http_429: rate limit reached",
                "rate_limit_error",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            return r;
        }
        Some(FaultKind::CloseBeforeResponse) => {
            ctl.close();
            return std::future::pending().await;
        }
        Some(FaultKind::StallBeforeHeaders) => {
            stall(&engine).await;
            arrival = Instant::now();
        }
        _ => {}
    }
    let Some(reasoning) = reasoning_tokens(&engine, &headers) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "x-mock-reasoning-tokens must be a whole number",
            "BadRequestError",
        );
    };
    let seq = engine.next_seq();
    // Per-request jitter stream: reproducible from --seed and the arrival order.
    let seed = crate::schedule::splitmix64(engine.cfg.seed ^ seq);
    let writer = answer_writer(&engine, protocol, seq, &req, reasoning, fault, seed);
    // Embeddings keep no KV cache.
    let cached = protocol
        .generates()
        .then(|| engine.cached_prefix(&req.prompt_words))
        .flatten();
    let job = Job {
        emission: engine.recorder(&body, arrival),
        cached,
        output_tokens: writer
            .natural_len()
            .map_or(u32::MAX, |n| n.max(1))
            .min(engine.output_tokens(req.max_tokens)),
        writer,
        seed,
        engine,
        protocol,
        req,
        fault,
        arrival,
    };
    if !protocol.generates() {
        embeddings_response(job, ctl).await
    } else if job.req.stream && fault != Some(FaultKind::JsonInsteadOfSse) {
        stream_response(job, ctl)
    } else {
        full_response(job, ctl).await
    }
}

/// The reasoning tokens of one request: the `x-mock-reasoning-tokens` header, else the
/// configured count; None when the header is not a whole number.
fn reasoning_tokens(engine: &Engine, headers: &HeaderMap) -> Option<u32> {
    match headers.get(REASONING_HEADER) {
        None => Some(engine.cfg.reasoning_tokens),
        Some(v) => v.to_str().ok()?.parse().ok(),
    }
}

/// The writer of one response: the echoed model (another one under `wrong_model`) and
/// the voice of `--answer`, of the wrong-answer faults, or of a call to an offered tool.
fn answer_writer(
    engine: &Engine,
    protocol: &dyn MockProtocol,
    seq: u64,
    req: &GenRequest,
    reasoning: u32,
    fault: Option<FaultKind>,
    seed: u64,
) -> ChunkWriter {
    let model = if fault == Some(FaultKind::WrongModel) {
        WRONG_MODEL
    } else {
        &req.model
    };
    let answer = engine.cfg.answer.as_deref().map(|a| split_answer(a).into());
    let voice = Voice::new(answer, fault, seed).calling(req.tool.as_ref(), fault);
    ChunkWriter::new(protocol.id_prefix(), seq, model, reasoning).with_voice(voice)
}

/// Sleeps for the configured stall, cut short by shutdown.
async fn stall(engine: &Engine) {
    tokio::select! {
        _ = sleep(engine.cfg.stall) => {}
        _ = engine.shutdown.cancelled() => {}
    }
}

/// Inserts two bytes that are never valid UTF-8 right after the first token's text.
fn with_invalid_utf8(mut bytes: Vec<u8>) -> Vec<u8> {
    let marker = b" tok0";
    if let Some(pos) = bytes.windows(marker.len()).position(|w| w == marker) {
        let at = pos + marker.len();
        bytes.splice(at..at, [0xff, 0xfe]);
    }
    bytes
}

/// Non-streaming requests (and `json_instead_of_sse`): one JSON body after the whole
/// generation time, on the same schedule as a stream.
async fn full_response(job: Job, ctl: ConnCtl) -> Response {
    let engine = job.engine.clone();
    let Some(mut run) = engine
        .admit(
            job.req.prompt_tokens,
            job.arrival,
            engine.shutdown.cancelled(),
        )
        .await
    else {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "mock is shutting down",
            "ServiceUnavailableError",
        );
    };
    let empty = job.fault == Some(FaultKind::EmptyCompletion);
    let n = if empty { 0 } else { job.output_tokens };
    let mut sched = Schedule::new(&engine.cfg, run.start, n, job.seed);
    if empty {
        engine.timer.wait_until(sched.first_due()).await;
    }
    let mut stalled = false;
    while let Some((due, k)) = sched.next_for(&run) {
        engine.timer.wait_until(due).await;
        let to = sched.emitted();
        run.record_chunk(k);
        if let Some(FaultKind::StallAfterTokens { after_tokens }) = job.fault
            && !stalled
            && to >= after_tokens
        {
            stalled = true;
            let t0 = Instant::now();
            stall(&engine).await;
            sched.delay(t0.elapsed());
        }
    }
    if let Some(FaultKind::ResetMidStream { .. }) = job.fault {
        ctl.reset();
        return std::future::pending().await;
    }
    run.finish();
    let emitted = sched.emitted();
    job.remember(emitted);
    let usage = job.usage(emitted);
    let finish = if job.writer.stopped(emitted) {
        "stop"
    } else {
        "length"
    };
    let whole = Whole {
        emitted,
        finish,
        usage,
        vectors: job.req.inputs,
    };
    let bytes = job
        .protocol
        .full_response(&job.writer, &whole)
        .to_string()
        .into_bytes();
    full_body(bytes, job.fault)
}

/// A whole JSON answer, with the faults that spoil a body.
fn full_body(mut bytes: Vec<u8>, fault: Option<FaultKind>) -> Response {
    match fault {
        Some(FaultKind::MalformedJson) => bytes.truncate(bytes.len() / 2),
        Some(FaultKind::InvalidUtf8) => bytes = with_invalid_utf8(bytes),
        _ => {}
    }
    let content_type = if fault == Some(FaultKind::WrongContentType) {
        "text/plain; charset=utf-8"
    } else {
        "application/json"
    };
    ([(header::CONTENT_TYPE, content_type)], bytes).into_response()
}

/// Embeddings: one JSON answer after the prefill time (the TTFT), with one vector per
/// input. `empty_completion` answers with no vectors; the transport faults act as for
/// any other request.
async fn embeddings_response(job: Job, ctl: ConnCtl) -> Response {
    let engine = job.engine.clone();
    let Some(run) = engine
        .admit(
            job.req.prompt_tokens,
            job.arrival,
            engine.shutdown.cancelled(),
        )
        .await
    else {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "mock is shutting down",
            "ServiceUnavailableError",
        );
    };
    let sched = Schedule::new(&engine.cfg, run.start, 0, job.seed);
    engine.timer.wait_until(sched.first_due()).await;
    if let Some(FaultKind::StallAfterTokens { .. }) = job.fault {
        stall(&engine).await;
    }
    if let Some(FaultKind::ResetMidStream { .. }) = job.fault {
        ctl.reset();
        return std::future::pending().await;
    }
    run.finish();
    let vectors = if job.fault == Some(FaultKind::EmptyCompletion) {
        0
    } else {
        job.req.inputs
    };
    let whole = Whole {
        emitted: 0,
        finish: "stop",
        usage: job.usage(0),
        vectors,
    };
    let body = job.protocol.full_response(&job.writer, &whole);
    full_body(body.to_string().into_bytes(), job.fault)
}

enum Frame {
    Data(Bytes),
    /// A chunk of `tokens` tokens due at `due`: its leaving is noted in the emission log.
    Tokens {
        bytes: Bytes,
        due: Instant,
        tokens: u32,
    },
    /// End the connection with a TCP RST once everything before it is flushed.
    Reset,
}

fn stream_response(mut job: Job, ctl: ConnCtl) -> Response {
    let (tx, rx) = mpsc::channel::<Frame>(8);
    let content_type = if job.fault == Some(FaultKind::WrongContentType) {
        "text/plain; charset=utf-8"
    } else {
        "text/event-stream"
    };
    let out = SseOut {
        tx,
        trickle: job.fault == Some(FaultKind::Trickle),
        timer: job.engine.timer.clone(),
    };
    // Noted where the body hands a chunk to hyper, which writes it on this same task.
    let emission = job.emission.take();
    tokio::spawn(run_stream(job, out));
    let state = (rx, ctl, emission);
    let body = futures_util::stream::unfold(state, |(mut rx, ctl, emission)| async move {
        match rx.recv().await {
            Some(Frame::Data(b)) => Some((Ok::<_, Infallible>(b), (rx, ctl, emission))),
            Some(Frame::Tokens { bytes, due, tokens }) => {
                if let Some(e) = &emission {
                    e.chunk_out(due, tokens);
                }
                Some((Ok(bytes), (rx, ctl, emission)))
            }
            Some(Frame::Reset) => {
                ctl.reset();
                std::future::pending().await
            }
            None => None,
        }
    });
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// The writing end of one SSE response. Every method returns false once the client
/// is gone, so the generator stops and frees its batch slot.
struct SseOut {
    tx: mpsc::Sender<Frame>,
    trickle: bool,
    timer: Timer,
}

impl SseOut {
    /// Sends a chunk that carries `tokens` tokens, due at `due` (trickled, it is only
    /// bytes).
    async fn send_tokens(&self, bytes: Bytes, due: Instant, tokens: u32) -> bool {
        if self.trickle {
            return self.send(bytes).await;
        }
        let frame = Frame::Tokens { bytes, due, tokens };
        self.tx.send(frame).await.is_ok()
    }

    async fn send(&self, b: Bytes) -> bool {
        if !self.trickle {
            return self.tx.send(Frame::Data(b)).await.is_ok();
        }
        for i in 0..b.len() {
            if i > 0 {
                sleep(TRICKLE_BYTE_GAP).await;
            }
            if self.tx.send(Frame::Data(b.slice(i..i + 1))).await.is_err() {
                return false;
            }
        }
        true
    }

    async fn wait_until(&self, t: Instant) -> bool {
        tokio::select! {
            _ = self.timer.wait_until(t) => true,
            _ = self.tx.closed() => false,
        }
    }

    async fn stall(&self, engine: &Engine) -> bool {
        tokio::select! {
            _ = stall(engine) => true,
            _ = self.tx.closed() => false,
        }
    }

    async fn reset(&self) {
        let _ = self.tx.send(Frame::Reset).await;
    }

    /// One line of exactly `bytes` bytes before its newline (a valid chunk whose
    /// content is all `x`), written in 64 KiB pieces from a static buffer.
    async fn huge_line(&self, p: &dyn MockProtocol, w: &ChunkWriter, bytes: usize) -> bool {
        let (head, tail) = huge_event_parts(p, w);
        // `tail` ends with the blank-line terminator "\n\n", which is not part of the line.
        let mut fill = bytes.saturating_sub(head.len() + tail.len() - 2);
        if !self.send(head).await {
            return false;
        }
        while fill > 0 {
            let n = fill.min(HUGE_PIECE);
            if !self.send(Bytes::from_static(&FILL[..n])).await {
                return false;
            }
            fill -= n;
        }
        self.send(tail).await
    }
}

/// The malformed event of `malformed_json`: a chunk cut in the middle of its JSON.
fn malformed_event(p: &dyn MockProtocol, w: &ChunkWriter) -> Bytes {
    let full = p.content_json(w, " tok");
    sse(&full.as_bytes()[..full.len() / 2])
}

async fn run_stream(job: Job, out: SseOut) {
    let engine = job.engine.clone();
    let (p, w) = (job.protocol, &job.writer);
    // Chat and completions send usage when asked (`stream_options`); the Responses and
    // Messages APIs always do.
    let asked = job.req.include_usage || p.usage_unasked();
    let usage_on = engine.cfg.usage && asked;
    let continuous = usage_on && job.req.continuous_usage;
    let prompt = job.req.prompt_tokens;
    let usage_at = |completion| job.usage(completion);
    // Like vLLM, chat streams open with a role-only chunk, before any token (and the
    // Responses and Messages streams with their opening events).
    if let Some(open) = p.open(w, usage_at(0))
        && !out.send(open).await
    {
        return;
    }
    let Some(mut run) = engine.admit(prompt, job.arrival, out.tx.closed()).await else {
        return;
    };
    let fault = job.fault;
    let empty = fault == Some(FaultKind::EmptyCompletion);
    let n = if empty { 0 } else { job.output_tokens };
    let mut sched = Schedule::new(&engine.cfg, run.start, n, job.seed);
    match fault {
        Some(FaultKind::EmptyCompletion) => {
            if !out.wait_until(sched.first_due()).await {
                return;
            }
            let ev = p.tokens(w, 0, 0, Some("stop"), continuous.then(|| usage_at(0)));
            if !ev.is_empty() && !out.send(ev).await {
                return;
            }
        }
        Some(FaultKind::HugeLine { bytes })
            if !out.wait_until(sched.first_due()).await || !out.huge_line(p, w, bytes).await =>
        {
            return;
        }
        _ => {}
    }
    if !emit_tokens(&job, &out, &mut run, &mut sched, continuous).await {
        return;
    }
    if let Some(FaultKind::ResetMidStream { .. }) = fault {
        return out.reset().await;
    }
    run.finish();
    let emitted = sched.emitted();
    job.remember(emitted);
    let end = p.close(
        w,
        emitted,
        usage_on.then(|| usage_at(emitted)),
        fault != Some(FaultKind::NoDone),
    );
    if !end.is_empty() {
        out.send(end).await;
    }
}

/// Writes the content chunks on schedule, with the faults that act between chunks.
/// Returns false when the stream has ended (client gone, or a fault finished it).
async fn emit_tokens(
    job: &Job,
    out: &SseOut,
    run: &mut Running,
    sched: &mut Schedule,
    continuous: bool,
) -> bool {
    let (p, w) = (job.protocol, &job.writer);
    let n = job.output_tokens;
    let mut stalled = false;
    loop {
        // Faults due once `after_tokens` tokens are out: before the first chunk when 0,
        // after the last one when the response is no longer than that.
        let so_far = sched.emitted();
        match job.fault {
            Some(FaultKind::ResetMidStream { after_tokens }) if so_far >= after_tokens => {
                out.reset().await;
                return false;
            }
            Some(FaultKind::StallAfterTokens { after_tokens })
                if !stalled && (so_far >= after_tokens || so_far == n) =>
            {
                stalled = true;
                let t0 = Instant::now();
                if !out.stall(&job.engine).await {
                    return false;
                }
                sched.delay(t0.elapsed());
            }
            _ => {}
        }
        let Some((due, k)) = sched.next_for(run) else {
            return true;
        };
        if !out.wait_until(due).await {
            return false;
        }
        let to = sched.emitted();
        let from = to - k;
        let finish = (to == n).then_some(if w.stopped(to) { "stop" } else { "length" });
        let usage = continuous.then(|| job.usage(to));
        run.record_chunk(k);
        let event = if job.fault == Some(FaultKind::InvalidUtf8) && from == 0 {
            Bytes::from(with_invalid_utf8(
                p.tokens(w, from, to, finish, usage).to_vec(),
            ))
        } else {
            p.tokens(w, from, to, finish, usage)
        };
        if !out.send_tokens(event, due, k).await {
            return false;
        }
        match job.fault {
            Some(FaultKind::MalformedJson)
                if from == 0 && !out.send(malformed_event(p, w)).await =>
            {
                return false;
            }
            Some(FaultKind::ErrorEvent) if from == 0 => {
                let err = p.error_event("mock fault error_event: the engine failed mid-stream");
                out.send(err).await;
                return false;
            }
            _ => {}
        }
    }
}
