//! The mock as a server: bind, serve on the caller's runtime, shut down; the axum
//! routes (one generating route per endpoint, answered by `generate.rs`) and the small
//! ones (`/v1/models`, `/health`, `/metrics`). Connections are `conn.rs`'s.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::conn::accept_loop;
use super::generate::route_for;
use super::reply::{error_response, unauthorized};
use crate::client::Endpoint;
use crate::mock::config::MockConfig;
use crate::mock::emissions::EmissionLog;
use crate::mock::engine::Engine;
use crate::mock::metrics::render;
use crate::runner::{PreciseTimer, Spins, Timer};

/// Request bodies larger than this are refused (413) before any timing starts.
const MAX_BODY_BYTES: usize = 64 << 20;

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
    engine.address = addr.to_string();
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

fn routes(engine: Arc<Engine>) -> Router {
    let mut router = Router::new();
    for endpoint in Endpoint::ALL {
        router = router.route(
            endpoint.path(),
            post(move |state, ctl, headers, body| route_for(endpoint, state, ctl, headers, body)),
        );
    }
    super::hosted::routes(router)
        .route("/v1/models", get(models))
        .route("/v1/load_lora_adapter", post(load_lora))
        .route("/v1/unload_lora_adapter", post(unload_lora))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/gpu/metrics", get(gpu_metrics))
        .route("/mock/traceparents", get(traceparents))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(engine)
}

async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "no such route on the llmprobe mock",
        "NotFoundError",
    )
}

/// The `traceparent` headers received (`trace_log::Counts` as JSON), for tests.
async fn traceparents(State(engine): State<Arc<Engine>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(&engine.traces.snapshot()).unwrap_or_default(),
    )
        .into_response()
}

async fn health() -> StatusCode {
    StatusCode::OK
}

async fn metrics(State(engine): State<Arc<Engine>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        {
            let mut page = render(&engine.snapshot());
            engine.lora.render(&mut page);
            page
        },
    )
        .into_response()
}

/// The GPUs' telemetry in dcgm-exporter's format (`gpu` set; else 404).
async fn gpu_metrics(State(engine): State<Arc<Engine>>) -> Response {
    match engine.gpu_page() {
        Some(page) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            page,
        )
            .into_response(),
        None => not_found().await,
    }
}

async fn models(State(engine): State<Arc<Engine>>, headers: HeaderMap) -> Response {
    if let Some(r) = unauthorized(&engine, &headers) {
        return r;
    }
    let mut data = vec![json!({
        "id": engine.cfg.model, "object": "model", "created": 0, "owned_by": "llmprobe-mock",
        "parent": null,
    })];
    data.extend(engine.lora.models(&engine.cfg.model));
    let body = json!({"object": "list", "data": data});
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `POST /v1/load_lora_adapter` (vLLM's body: `{lora_name, lora_path}`).
async fn load_lora(
    State(engine): State<Arc<Engine>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(r) = unauthorized(&engine, &headers) {
        return r;
    }
    lora_reply(engine.lora.load(&body))
}

/// `POST /v1/unload_lora_adapter` (vLLM's body: `{lora_name}`).
async fn unload_lora(
    State(engine): State<Arc<Engine>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(r) = unauthorized(&engine, &headers) {
        return r;
    }
    lora_reply(engine.lora.unload(&body))
}

fn lora_reply(r: crate::mock::lora::Reply) -> Response {
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let kind = if status.is_success() {
        "text/plain; charset=utf-8"
    } else {
        "application/json"
    };
    (status, [(header::CONTENT_TYPE, kind)], r.body).into_response()
}
