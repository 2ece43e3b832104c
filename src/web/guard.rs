//! The request guard in front of every endpoint: the toolkit's rate limit, a client
//! certificate where the handshake left it optional, basic auth, and the configured
//! response headers (on every answer, refusals included).

use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::listener::ConnInfo;
use super::state::{Active, Web};

/// The endpoints `--web.health-unauthenticated` opens.
pub const HEALTH_PATHS: [&str; 2] = ["/-/healthy", "/-/ready"];

/// axum middleware (`from_fn_with_state`).
pub async fn guard(State(web): State<Arc<Web>>, req: Request, next: Next) -> Response {
    let active = web.active();
    let limited = active
        .limiter
        .as_ref()
        .is_some_and(|l| !l.lock().unwrap_or_else(|e| e.into_inner()).allow());
    let mut response = if limited {
        (StatusCode::TOO_MANY_REQUESTS, "Too Many Requests\n").into_response()
    } else {
        let open = web.options.health_unauthenticated && HEALTH_PATHS.contains(&req.uri().path());
        let has_cert = req
            .extensions()
            .get::<ConnectInfo<ConnInfo>>()
            .is_some_and(|c| c.0.client_cert);
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let refused = if open {
            None
        } else {
            refusal(&web, &active, has_cert, given.as_deref()).await
        };
        match refused {
            Some(refused) => refused,
            None => next.run(req).await,
        }
    };
    for (name, value) in &active.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}

async fn refusal(
    web: &Web,
    active: &Active,
    has_cert: bool,
    given: Option<&str>,
) -> Option<Response> {
    if active.cert_required_by_http && !has_cert {
        return Some((StatusCode::FORBIDDEN, "a client certificate is required\n").into_response());
    }
    if active.users.is_empty() {
        return None;
    }
    if web.auth.check(&active.users, given).await {
        return None;
    }
    Some(
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic")],
            "Unauthorized\n",
        )
            .into_response(),
    )
}
