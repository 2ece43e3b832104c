//! The daemon's HTTP endpoints (axum): `/metrics` in the Prometheus text format,
//! `/-/healthy`, `/-/ready`, `POST /-/reload`, `/config` (the running config with
//! secrets as `<secret>`) and `/`, a small HTML status page. The server only reads
//! shared state; a reload is a request sent to the daemon, which owns the config.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::metrics::Metrics;
use super::status::StatusBoard;

/// A reload request: the daemon answers on the oneshot with the outcome (the error
/// text of a rejected config).
pub type ReloadRequest = oneshot::Sender<Result<(), String>>;

/// What the handlers read.
#[derive(Clone)]
pub struct ServerState {
    pub metrics: Arc<Metrics>,
    pub status: Arc<StatusBoard>,
    pub reload: mpsc::Sender<ReloadRequest>,
}

/// The router with every endpoint (exposed for in-process tests).
pub fn router(state: ServerState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/metrics", get(metrics))
        .route("/-/healthy", get(|| async { "Healthy\n" }))
        .route("/-/ready", get(ready))
        .route("/-/reload", post(reload))
        .route("/config", get(config))
        .with_state(state)
}

/// Serves until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    state: ServerState,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await?;
    Ok(())
}

async fn metrics(State(s): State<ServerState>) -> Response {
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

async fn index(State(s): State<ServerState>) -> Html<String> {
    Html(status_page(&s.status))
}

/// The `/` page: one row per target × scenario.
pub fn status_page(board: &StatusBoard) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>llmprobe daemon</title>\
         <style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:left}\
         .bad{color:#b00}</style></head><body>\n<h1>llmprobe daemon</h1>\n\
         <p><a href=\"/metrics\">Metrics</a> · <a href=\"/config\">Configuration</a> · \
         <a href=\"/-/ready\">Readiness</a></p>\n<table>\n<tr><th>target</th><th>model</th>\
         <th>scenario</th><th>probes</th><th>failures</th><th>skipped</th>\
         <th>SLO attainment</th><th>last result</th><th>last error</th>\
         <th>last answer-check failures</th></tr>\n",
    );
    for s in board.snapshot() {
        let attainment = s
            .attainment()
            .map_or_else(|| "-".to_string(), |a| format!("{:.2} %", a * 100.0));
        let last = s.last_outcome.unwrap_or("-");
        let class = if last == "ok" || last == "-" {
            ""
        } else {
            " class=\"bad\""
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td{class}>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&s.target),
            escape(&s.model),
            escape(&s.scenario),
            s.requests,
            s.failures,
            s.skipped,
            attainment,
            escape(last),
            escape(s.last_error.as_deref().unwrap_or("")),
            s.last_check_failures
                .iter()
                .map(|(_, text)| escape(text))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
    }
    out.push_str("</table>\n</body></html>\n");
    out
}

/// Minimal HTML escaping for text nodes (error texts come from remote servers).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
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
        let page = status_page(&board);
        assert!(page.contains("&lt;script&gt;"));
        assert!(!page.contains("<script>"));
        assert!(page.contains("<td>prod</td><td>llama</td><td>short</td><td>1</td><td>1</td>"));
        assert!(page.contains("0.00 %"));
    }
}
