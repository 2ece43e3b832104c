//! The daemon's HTTP endpoints (axum): `/metrics` in the Prometheus text format,
//! `/-/healthy`, `/-/ready`, `POST /-/reload`, `/config` (the running config with
//! secrets as `<secret>`) and `/`, a small HTML status page. The server only reads
//! shared state; a reload is a request sent to the daemon, which owns the config.
//! Every endpoint sits behind the `web` guard (TLS, basic auth, headers); lifecycle
//! endpoints answer 403 unless `--web.enable-lifecycle` is given, as in Prometheus.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::exposition::Metrics;
use crate::exposition::openmetrics;
use crate::status::StatusBoard;
use crate::status::page;
use crate::web::{ConnInfo, Web, WebListener};

/// A reload request: the daemon answers on the oneshot with the outcome (the error
/// text of a rejected config).
pub type ReloadRequest = oneshot::Sender<Result<(), String>>;

/// What the handlers read.
#[derive(Clone)]
pub struct ServerState {
    pub metrics: Arc<Metrics>,
    pub status: Arc<StatusBoard>,
    pub reload: mpsc::Sender<ReloadRequest>,
    /// `--web.enable-lifecycle`: `POST /-/reload` works (SIGHUP always does).
    pub lifecycle: bool,
}

/// The router with every endpoint (exposed for in-process tests).
pub fn router(state: ServerState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/target/{name}", get(target))
        .route("/probe/{id}", get(probe))
        .route("/status.css", get(stylesheet))
        .route("/metrics", get(metrics))
        .route("/-/healthy", get(|| async { "Healthy\n" }))
        .route("/-/ready", get(ready))
        .route("/-/reload", post(reload))
        .route("/config", get(config))
        .with_state(state)
}

/// The router behind the web guard: what the daemon serves.
pub fn guarded(state: ServerState, web: Arc<Web>) -> Router {
    router(state).layer(axum::middleware::from_fn_with_state(web, crate::web::guard))
}

/// Serves until `shutdown` is cancelled: plain HTTP, or TLS when the web config has a
/// `tls_server_config`; the web config is re-read on change meanwhile.
pub async fn serve(
    listener: TcpListener,
    state: ServerState,
    web: Arc<Web>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let tls: Option<Arc<dyn crate::web::listener::TlsSource>> =
        web.tls_enabled().then(|| web.clone() as _);
    let listener = WebListener::new(listener, tls)?;
    let watch = web.clone().watch(shutdown.clone());
    let app = guarded(state, web).into_make_service_with_connect_info::<ConnInfo>();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await;
    watch.abort();
    served?;
    Ok(())
}

/// OpenMetrics (with exemplars) for a scraper that prefers it, the classic text format
/// otherwise.
async fn metrics(State(s): State<ServerState>, headers: axum::http::HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if openmetrics::preferred(accept) {
        let text = s.metrics.render_openmetrics();
        return ([(header::CONTENT_TYPE, openmetrics::CONTENT_TYPE)], text).into_response();
    }
    match s.metrics.render() {
        Ok(text) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error encoding metrics: {e:#}\n"),
        )
            .into_response(),
    }
}

async fn ready(State(s): State<ServerState>) -> Response {
    if s.status.ready() {
        (StatusCode::OK, "Ready\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not ready: waiting for the first result of every target\n",
        )
            .into_response()
    }
}

async fn reload(State(s): State<ServerState>) -> Response {
    if !s.lifecycle {
        return (
            StatusCode::FORBIDDEN,
            "Lifecycle API is not enabled: start the daemon with --web.enable-lifecycle, \
             or send SIGHUP\n",
        )
            .into_response();
    }
    let (tx, rx) = oneshot::channel();
    if s.reload.send(tx).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "daemon is shutting down\n").into_response();
    }
    match rx.await {
        Ok(Ok(())) => (StatusCode::OK, "OK\n").into_response(),
        Ok(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("failed to reload config: {e}\n"),
        )
            .into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "daemon is shutting down\n").into_response(),
    }
}

async fn config(State(s): State<ServerState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        s.status.config_yaml(),
    )
        .into_response()
}

#[derive(serde::Deserialize)]
struct PageQuery {
    /// `off` turns the page's auto-refresh off.
    refresh: Option<String>,
    /// `json`: the probe page as JSON.
    format: Option<String>,
}

impl PageQuery {
    fn refresh(&self) -> bool {
        self.refresh.as_deref() != Some("off")
    }
}

fn html(page: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, page::CSP),
            (header::CACHE_CONTROL, "no-store"),
        ],
        page,
    )
        .into_response()
}

async fn index(State(s): State<ServerState>, Query(q): Query<PageQuery>) -> Response {
    html(page::status_page(
        &s.status,
        crate::clock::unix_now(),
        q.refresh(),
    ))
}

async fn target(
    State(s): State<ServerState>,
    Path(name): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    match page::target_page(&s.status, &name, crate::clock::unix_now(), q.refresh()) {
        Some(p) => html(p),
        None => (
            StatusCode::NOT_FOUND,
            format!("no target named {:?}\n", page::escape(&name)),
        )
            .into_response(),
    }
}

/// `/probe/ID`: one recent probe, HTML or (`?format=json`) JSON; 404 once it is no
/// longer kept.
async fn probe(
    State(s): State<ServerState>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let page = id
        .parse::<u64>()
        .ok()
        .and_then(|id| s.status.pages().get(id));
    let Some(page) = page else {
        return (
            StatusCode::NOT_FOUND,
            format!(
                "no probe {:?} is kept: IDs count probes from 1, and only the latest are kept \
                 (probe_pages in the config)\n",
                page::escape(&id)
            ),
        )
            .into_response();
    };
    match q.format.as_deref() {
        Some("json") => (
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_string_pretty(&page).unwrap_or_default(),
        )
            .into_response(),
        None | Some("html") => html(crate::status::probe_view::probe_page(&page)),
        Some(other) => (
            StatusCode::BAD_REQUEST,
            format!("format {:?}: use html or json\n", page::escape(other)),
        )
            .into_response(),
    }
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        page::CSS,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    #[test]
    fn status_page_escapes_remote_text() {
        let board = StatusBoard::new();
        let h = board.scenario("prod", "llama", "short");
        h.lock().unwrap().record(
            Outcome::Http5xx,
            false,
            Some("<script>alert(1)</script>".into()),
            1.0,
        );
        let page = page::status_page(&board, 2.0, true);
        assert!(page.contains("&lt;script&gt;"));
        assert!(!page.contains("<script"));
        assert!(page.contains("<a href=\"/target/prod\">prod</a>"));
        assert!(page.contains("<td data-label=\"scenario\">short</td>"));
        assert!(page.contains("http_5xx 1"));
    }
}
