//! One generating request, whatever its protocol: read and checked, its fault drawn
//! (or forced by `x-mock-fault`) and let act before the headers, then planned into a
//! [`Job`] and answered streamed (`stream.rs`) or whole (`whole.rs`).

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use tokio::time::Instant;

use super::conn::ConnCtl;
use super::job::Job;
use super::reply::{bad_request, unauthorized};
use super::{stream, whole};
use crate::client::Endpoint;
use crate::mock::answer::voice;
use crate::mock::answer::{ChunkWriter, Voice, split_answer};
use crate::mock::engine::Engine;
use crate::mock::fault::inject::{self, BeforeHeaders};
use crate::mock::fault::{FAULT_HEADER, FaultKind};
use crate::mock::protocol::{self, MockProtocol};
use crate::mock::request::{GenRequest, parse_request};

/// A request header that sets this request's reasoning tokens (else `reasoning_tokens`).
pub const REASONING_HEADER: &str = "x-mock-reasoning-tokens";

/// What a route says about its requests besides their body: the protocol, and for a
/// hosted API the model and whether it streams (named in its URL, not its body).
pub struct Route {
    pub protocol: &'static dyn MockProtocol,
    pub model: Option<String>,
    pub stream: Option<bool>,
}

/// The handler of one generating route: every protocol shares `generate`.
pub async fn route_for(
    endpoint: Endpoint,
    State(engine): State<Arc<Engine>>,
    Extension(ctl): Extension<ConnCtl>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrival = Instant::now();
    if let Some(r) = unauthorized(&engine, &headers) {
        return r;
    }
    let route = Route {
        protocol: protocol::of(endpoint),
        model: None,
        stream: None,
    };
    generate(engine, ctl, headers, body, route, arrival).await
}

/// Answers one authorised request of `route` that arrived (its body read) at
/// `arrival`.
pub async fn generate(
    engine: Arc<Engine>,
    ctl: ConnCtl,
    headers: HeaderMap,
    body: Bytes,
    route: Route,
    arrival: Instant,
) -> Response {
    let mut arrival = arrival;
    engine.traces.note(&headers);
    let protocol = route.protocol;
    let mut req = match parse_request(protocol, &body, &engine.cfg.model) {
        Ok(r) => r,
        Err(msg) => return bad_request(&msg),
    };
    if let Some(model) = route.model {
        req.model = model;
    }
    if let Some(stream) = route.stream {
        req.stream = stream;
    }
    let fault = match request_fault(&engine, &headers) {
        Ok(f) => f,
        Err(msg) => return bad_request(&msg),
    };
    if let Some(r) = inject::status(fault, protocol) {
        return r;
    }
    match inject::before_headers(fault, &engine, &ctl).await {
        BeforeHeaders::Answer => {}
        BeforeHeaders::AnswerFromNow => arrival = Instant::now(),
        BeforeHeaders::Closed => return std::future::pending().await,
    }
    let Some(reasoning) = reasoning_tokens(&engine, &headers) else {
        return bad_request("x-mock-reasoning-tokens must be a whole number");
    };
    let job = plan(engine, protocol, req, fault, reasoning, &body, arrival);
    if !protocol.generates() {
        whole::embeddings_response(job, ctl).await
    } else if job.req.stream && inject::framing(fault).streams {
        stream::stream_response(job, ctl)
    } else {
        whole::full_response(job, ctl).await
    }
}

/// The request's fault: forced by the `x-mock-fault` header, else drawn from the
/// configured ones; the error (a bad header) is a message for a 400.
fn request_fault(engine: &Engine, headers: &HeaderMap) -> Result<Option<FaultKind>, String> {
    let fault = match headers.get(FAULT_HEADER) {
        None => engine.draw_fault(),
        Some(v) => match v.to_str().map(FaultKind::parse_with_param) {
            Ok(Ok(k)) => Some(k),
            Ok(Err(e)) => return Err(e.0),
            Err(_) => return Err("x-mock-fault header is not ASCII".into()),
        },
    };
    if let Some(f) = fault {
        tracing::debug!(fault = %f, "mock injecting fault");
    }
    Ok(fault)
}

/// The answer's plan: its id and seed, writer, cached prefix and length.
fn plan(
    engine: Arc<Engine>,
    protocol: &'static dyn MockProtocol,
    req: GenRequest,
    fault: Option<FaultKind>,
    reasoning: u32,
    body: &[u8],
    arrival: Instant,
) -> Job {
    let seq = engine.next_seq();
    // Per-request jitter stream: reproducible from --seed and the arrival order.
    let seed = crate::schedule::splitmix64(engine.cfg.seed ^ seq);
    let writer = answer_writer(&engine, protocol, seq, &req, reasoning, fault, seed);
    // Embeddings keep no KV cache.
    let cached = protocol
        .generates()
        .then(|| engine.cached_prefix(&req.prompt_words))
        .flatten();
    Job {
        _adapter: engine.lora.begin(&req.model),
        emission: engine.recorder(body, arrival),
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

/// The writer of one response: the echoed model and the voice of a known golden
/// question's answer or `--answer`, of a
/// call to an offered tool, or of a fault acting on the voice.
fn answer_writer(
    engine: &Engine,
    protocol: &dyn MockProtocol,
    seq: u64,
    req: &GenRequest,
    reasoning: u32,
    fault: Option<FaultKind>,
    seed: u64,
) -> ChunkWriter {
    let model = voice::model(fault, &req.model);
    let answer = engine
        .golden_answer(&req.prompt_words)
        .or_else(|| engine.cfg.answer.as_deref().map(|a| split_answer(a).into()));
    let voice = Voice::new(answer, fault, seed).calling(req.tool.as_ref(), fault);
    ChunkWriter::new(protocol.id_prefix(), seq, model, reasoning).with_voice(voice)
}
