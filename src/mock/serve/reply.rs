//! The mock's error replies: an OpenAI-style JSON error with its status, and the
//! API-key check that answers 401.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::mock::engine::Engine;
use crate::mock::protocol::{MockProtocol, error_body};

/// `status` with `{"error": {message, type: kind, param: null, code: status}}`.
pub fn error_response(status: StatusCode, message: &str, kind: &str) -> Response {
    let body = error_body(message, kind, json!(status.as_u16()));
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `status` with `protocol`'s error body (and its error headers).
pub fn protocol_error(
    protocol: &dyn MockProtocol,
    status: StatusCode,
    message: &str,
    kind: &str,
) -> Response {
    let body = protocol.error_response(status.as_u16(), message, kind);
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    for (name, value) in protocol.error_headers(status.as_u16()) {
        if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
            r.headers_mut().insert(name, v);
        }
    }
    r
}

/// A 503: the mock is shutting down.
pub fn shutting_down() -> Response {
    error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "mock is shutting down",
        "ServiceUnavailableError",
    )
}

/// A 400 with `message`.
pub fn bad_request(message: &str) -> Response {
    error_response(StatusCode::BAD_REQUEST, message, "BadRequestError")
}

/// With `--api-key`, every `/v1` route demands `Authorization: Bearer KEY` (or, as
/// Anthropic's API takes it, `x-api-key: KEY`).
pub fn unauthorized(engine: &Engine, headers: &HeaderMap) -> Option<Response> {
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
