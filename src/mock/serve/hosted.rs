//! The hosted APIs' routes (Azure OpenAI, Gemini, Vertex AI, Bedrock): each reads
//! its model and streaming from its URL where the API puts them there, checks the
//! provider's own auth, and answers through the one generating path (`generate.rs`),
//! so the engine's timing and every fault act on them as on the plain routes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::extract::{Extension, Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use tokio::time::Instant;

use super::aws_auth;
use super::conn::ConnCtl;
use super::generate::{Route, generate};
use super::reply::protocol_error;
use crate::client::Endpoint;
use crate::mock::engine::Engine;
use crate::mock::google_tokens::GRANT_TYPE;
use crate::mock::protocol;

type Params = HashMap<String, String>;

/// Azure OpenAI's routes: the v1 API, and the dated paths (which need `api-version`).
const AZURE: [(&str, Endpoint, bool); 6] = [
    ("/openai/v1/chat/completions", Endpoint::Chat, false),
    ("/openai/v1/responses", Endpoint::Responses, false),
    ("/openai/v1/embeddings", Endpoint::Embeddings, false),
    (
        "/openai/deployments/{deployment}/chat/completions",
        Endpoint::Chat,
        true,
    ),
    (
        "/openai/deployments/{deployment}/embeddings",
        Endpoint::Embeddings,
        true,
    ),
    ("/openai/responses", Endpoint::Responses, true),
];

/// Adds every hosted API's routes.
pub fn routes(mut router: Router<Arc<Engine>>) -> Router<Arc<Engine>> {
    for (path, endpoint, dated) in AZURE {
        router = router.route(
            path,
            post(
                move |State(engine): State<Arc<Engine>>,
                      Extension(ctl): Extension<ConnCtl>,
                      Path(params): Path<Params>,
                      Query(query): Query<Params>,
                      headers: HeaderMap,
                      body: Bytes| async move {
                    let at = (endpoint, dated);
                    azure(engine, ctl, at, params, query, headers, body).await
                },
            ),
        );
    }
    for (path, stream) in [
        ("/model/{model}/converse", false),
        ("/model/{model}/converse-stream", true),
    ] {
        router = router.route(
            path,
            post(
                move |State(engine): State<Arc<Engine>>,
                      Extension(ctl): Extension<ConnCtl>,
                      Path(model): Path<String>,
                      uri: Uri,
                      headers: HeaderMap,
                      body: Bytes| async move {
                    bedrock(engine, ctl, (model, stream), uri, headers, body).await
                },
            ),
        );
    }
    router
        .route("/token", post(token))
        .route(
            "/mock/tokens",
            axum::routing::get(|State(engine): State<Arc<Engine>>| async move {
                let body = serde_json::json!({"issued": engine.google_tokens.issued()});
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    body.to_string(),
                )
                    .into_response()
            }),
        )
        .route(
            "/v1beta/models/{call}",
            post(
                |State(engine): State<Arc<Engine>>,
                 Extension(ctl): Extension<ConnCtl>,
                 Path(params): Path<Params>,
                 Query(query): Query<Params>,
                 headers: HeaderMap,
                 body: Bytes| async move {
                    google(engine, ctl, Google::Gemini, params, query, headers, body).await
                },
            ),
        )
        .route(
            "/v1/projects/{project}/locations/{location}/publishers/google/models/{call}",
            post(
                |State(engine): State<Arc<Engine>>,
                 Extension(ctl): Extension<ConnCtl>,
                 Path(params): Path<Params>,
                 Query(query): Query<Params>,
                 headers: HeaderMap,
                 body: Bytes| async move {
                    google(engine, ctl, Google::Vertex, params, query, headers, body).await
                },
            ),
        )
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    header(headers, header::AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer "))
}

/// Azure: `api-key` (or an Entra bearer token: the same key, to the mock) when the mock
/// has a key; a dated path needs `api-version`; the deployment is the model.
async fn azure(
    engine: Arc<Engine>,
    ctl: ConnCtl,
    (endpoint, dated): (Endpoint, bool),
    params: Params,
    query: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrival = Instant::now();
    let p = protocol::of(endpoint);
    if let Some(key) = engine.cfg.api_key.as_deref()
        && header(&headers, "api-key") != Some(key)
        && bearer(&headers) != Some(key)
    {
        return protocol_error(
            p,
            StatusCode::UNAUTHORIZED,
            "Access denied due to invalid subscription key or wrong API endpoint.",
            "401",
        );
    }
    if dated && query.get("api-version").is_none_or(|v| v.is_empty()) {
        return protocol_error(p, StatusCode::NOT_FOUND, "Resource not found", "404");
    }
    let route = Route {
        protocol: p,
        model: params.get("deployment").cloned(),
        stream: None,
    };
    generate(engine, ctl, headers, body, route, arrival).await
}

/// Which of Google's two hosts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Google {
    Gemini,
    Vertex,
}

/// Gemini and Vertex: `{model}:generateContent` or `{model}:streamGenerateContent`
/// (with `alt=sse`); the Gemini key in `x-goog-api-key`, a Vertex token as a bearer.
async fn google(
    engine: Arc<Engine>,
    ctl: ConnCtl,
    host: Google,
    params: Params,
    query: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrival = Instant::now();
    let p = protocol::gemini();
    let fail = |status, msg: &str| protocol_error(p, status, msg, "");
    let authorised = match host {
        Google::Gemini => engine
            .cfg
            .api_key
            .as_deref()
            .is_none_or(|k| header(&headers, "x-goog-api-key") == Some(k)),
        Google::Vertex => vertex_authorised(&engine, &headers),
    };
    if !authorised {
        return match host {
            Google::Gemini => fail(
                StatusCode::BAD_REQUEST,
                "API key not valid. Please pass a valid API key.",
            ),
            Google::Vertex => fail(
                StatusCode::UNAUTHORIZED,
                "Request had invalid authentication credentials.",
            ),
        };
    }
    let call = params.get("call").map_or("", String::as_str);
    let Some((model, method)) = call.rsplit_once(':') else {
        return fail(StatusCode::NOT_FOUND, "no method in the model path");
    };
    let stream = match method {
        "generateContent" => false,
        "streamGenerateContent" if query.get("alt").map(String::as_str) == Some("sse") => true,
        "streamGenerateContent" => {
            return fail(
                StatusCode::BAD_REQUEST,
                "the mock streams only with alt=sse",
            );
        }
        _ => return fail(StatusCode::NOT_FOUND, "unknown method"),
    };
    let route = Route {
        protocol: p,
        model: Some(model.to_string()),
        stream: Some(stream),
    };
    generate(engine, ctl, headers, body, route, arrival).await
}

/// A Vertex request's bearer token: one the mock's token endpoint issued and that has
/// not expired (with `--google-service-account`), or the mock's `--api-key`; anything
/// when the mock demands neither.
fn vertex_authorised(engine: &Engine, headers: &HeaderMap) -> bool {
    let token = bearer(headers);
    if engine.cfg.google.is_some()
        && token.is_some_and(|t| engine.google_tokens.valid(t, SystemTime::now()))
    {
        return true;
    }
    match (&engine.cfg.api_key, token) {
        (None, _) => engine.cfg.google.is_none(),
        (Some(k), Some(t)) => t == k,
        (Some(_), None) => false,
    }
}

/// `POST /token`: Google's OAuth2 token endpoint for the JWT-bearer grant, granting a
/// token for an assertion of the trusted service account (`google_tokens.rs`).
async fn token(
    State(engine): State<Arc<Engine>>,
    headers: HeaderMap,
    Form(form): Form<Params>,
) -> Response {
    let error = |status: StatusCode, error: &str, description: &str| {
        let body = serde_json::json!({"error": error, "error_description": description});
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    };
    let Some(account) = &engine.cfg.google else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "the mock trusts no service account",
        );
    };
    if form.get("grant_type").map(String::as_str) != Some(GRANT_TYPE) {
        return error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "Invalid grant_type",
        );
    }
    // The assertion's audience is this endpoint's URL, as the key file's token_uri.
    let host = header(&headers, header::HOST.as_str()).unwrap_or("");
    let url = format!("http://{host}/token");
    let assertion = form.get("assertion").map_or("", String::as_str);
    match engine
        .google_tokens
        .grant(account, assertion, &url, SystemTime::now())
    {
        Ok(g) => {
            let body = serde_json::json!({"access_token": g.access_token,
                "expires_in": g.expires_in, "token_type": "Bearer"});
            (
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response()
        }
        Err(msg) => error(StatusCode::BAD_REQUEST, "invalid_grant", &msg),
    }
}

/// Bedrock: a SigV4 signature (`aws_auth.rs`), or a Bedrock API key as a bearer when
/// the mock has `--api-key`; the model id and streaming from the path.
async fn bedrock(
    engine: Arc<Engine>,
    ctl: ConnCtl,
    (model, stream): (String, bool),
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrival = Instant::now();
    let p = protocol::converse();
    let by_key = engine
        .cfg
        .api_key
        .as_deref()
        .is_some_and(|k| bearer(&headers) == Some(k));
    if !by_key && let Err(msg) = aws_auth::check(engine.cfg.aws.as_ref(), &uri, &headers, &body) {
        return protocol_error(p, StatusCode::FORBIDDEN, &msg, "");
    }
    let route = Route {
        protocol: p,
        model: Some(model),
        stream: Some(stream),
    };
    generate(engine, ctl, headers, body, route, arrival).await
}
