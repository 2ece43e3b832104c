//! `llmprobe mock --gateway N`: a small stand-in for an llm-d / Gateway API Inference
//! Extension gateway in front of upstream engines (mocks). It routes each request
//! (round-robin, or by a header's value on a consistent hash: `route.rs`), names the
//! upstream that served it in `x-gateway-destination-endpoint-served`, drops a share of
//! requests with a given `x-llm-d-request-dropped-reason` as the router does, serves an
//! endpoint-picker-shaped `/metrics` (`picker.rs`) and notes the llm-d headers it
//! received (`GET /mock/gateway`, for tests). It proxies bytes as they come, so an
//! upstream's timing reaches the client unchanged but for the hop.
//!
//! Header and reason names are llm-d's router's (`pkg/epp/metadata/consts.go`,
//! `pkg/common/error/error.go`), through `client::llm_d`, the one place they are written.

mod picker;
mod route;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::StreamExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::SERVED_ENDPOINT_HEADER;
use crate::client::llm_d::{self, DROPPED_REASON_HEADER};
use crate::exit::UsageError;
use crate::schedule::splitmix64;
pub use picker::POOL;
use picker::{PickerState, upstream_load};
pub use route::Route;
use route::Router as Picker;

/// Request bodies larger than this are refused, as the mock engine refuses them.
const MAX_BODY_BYTES: usize = 64 << 20;
/// How long the picker's `/metrics` waits for each upstream's.
const UPSTREAM_METRICS_TIMEOUT: Duration = Duration::from_secs(2);

/// One dropped-reason rule: this share of requests is dropped with this value.
#[derive(Debug, Clone, PartialEq)]
pub struct Drop {
    pub reason: String,
    pub probability: f64,
}

impl std::str::FromStr for Drop {
    type Err = UsageError;

    /// `REASON[:P]`, P in (0, 1], default 1.
    fn from_str(s: &str) -> Result<Drop, UsageError> {
        let (reason, p) = match s.rsplit_once(':') {
            Some((r, p)) => {
                let p: f64 = p.parse().map_err(|_| {
                    UsageError::new(format!("--gateway-drop {s:?}: {p:?} is not a probability"))
                })?;
                (r, p)
            }
            None => (s, 1.0),
        };
        if !(p > 0.0 && p <= 1.0) {
            return Err(UsageError::new(format!(
                "--gateway-drop {s:?}: the probability must be in (0, 1]"
            )));
        }
        if reason.is_empty() || !reason.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(UsageError::new(format!(
                "--gateway-drop {s:?}: the reason must be a header value of visible ASCII, \
                 e.g. rejected-saturated"
            )));
        }
        Ok(Drop {
            reason: reason.to_string(),
            probability: p,
        })
    }
}

/// What the gateway does.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// The upstream engines' base URLs (`http://HOST:PORT`).
    pub upstreams: Vec<String>,
    pub route: Route,
    /// Checked in order; each request draws once.
    pub drops: Vec<Drop>,
    /// The model named in the picker's labels.
    pub model: String,
    pub seed: u64,
}

/// What `GET /mock/gateway` answers: where requests went and the llm-d headers seen.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GatewayLog {
    /// Requests routed to each upstream, in the order of `upstreams`.
    pub routed: Vec<u64>,
    pub dropped: u64,
    /// Requests that carried each llm-d request header, by name.
    pub with_header: std::collections::BTreeMap<String, u64>,
    /// The llm-d request headers of the latest request, name and value.
    pub last: Vec<(String, String)>,
}

struct Gateway {
    cfg: GatewayConfig,
    picker: Picker,
    state: PickerState,
    http: reqwest::Client,
    draws: AtomicU64,
    log: std::sync::Mutex<GatewayLog>,
}

/// A running gateway on the caller's tokio runtime.
pub struct GatewayServer {
    addr: SocketAddr,
    cancel: CancellationToken,
    join: Option<JoinHandle<()>>,
}

impl GatewayServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting and lets requests in flight finish.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(join) = self.join.take() {
            let _ = join.await;
        }
    }
}

/// Starts the gateway on `listen` in front of `cfg.upstreams`.
pub async fn start(cfg: GatewayConfig, listen: SocketAddr) -> anyhow::Result<GatewayServer> {
    anyhow::ensure!(!cfg.upstreams.is_empty(), "a gateway needs an upstream");
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    // reqwest is built without a default TLS provider; upstreams are plain HTTP, but
    // the builder needs one installed all the same.
    crate::client::tls::install_crypto_provider();
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("building the gateway's HTTP client")?;
    let gateway = Arc::new(Gateway {
        picker: Picker::new(cfg.route.clone(), cfg.upstreams.len()),
        log: std::sync::Mutex::new(GatewayLog {
            routed: vec![0; cfg.upstreams.len()],
            ..GatewayLog::default()
        }),
        cfg,
        state: PickerState::default(),
        http,
        draws: AtomicU64::new(0),
    });
    let app = Router::new()
        .route("/metrics", get(picker_metrics))
        .route("/mock/gateway", get(gateway_log))
        .fallback(proxy)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(gateway);
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let join = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
    });
    Ok(GatewayServer {
        addr,
        cancel,
        join: Some(join),
    })
}

/// The llm-d request headers the picker reads.
const LLM_D_HEADERS: [&str; 4] = [
    llm_d::SLO_TTFT_HEADER,
    llm_d::SLO_TPOT_HEADER,
    llm_d::OBJECTIVE_HEADER,
    llm_d::FAIRNESS_ID_HEADER,
];

impl Gateway {
    /// The dropped reason this request draws, if any.
    fn draw_drop(&self) -> Option<&str> {
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        let u = (splitmix64(self.cfg.seed ^ splitmix64(n)) >> 11) as f64 / (1u64 << 53) as f64;
        let mut edge = 0.0;
        for d in &self.cfg.drops {
            edge += d.probability;
            if u < edge {
                return Some(&d.reason);
            }
        }
        None
    }

    fn note(&self, headers: &HeaderMap, routed: Option<usize>) {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        match routed {
            Some(i) => log.routed[i] += 1,
            None => log.dropped += 1,
        }
        let mut last = Vec::new();
        for name in LLM_D_HEADERS {
            if let Some(v) = headers.get(name) {
                *log.with_header.entry(name.to_string()).or_default() += 1;
                last.push((
                    name.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                ));
            }
        }
        log.last = last;
    }
}

/// A dropped request as the router answers it: the status of its error code, the
/// reason header, the error in the API's JSON envelope.
fn dropped(reason: &str) -> Response {
    let (status, code, kind) = if reason == "rejected-no-endpoints" {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "server_error",
        )
    } else if reason == "rejected-internal" {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal",
            "server_error",
        )
    } else {
        (
            StatusCode::TOO_MANY_REQUESTS,
            "ResourceExhausted",
            "rate_limit_error",
        )
    };
    let body = serde_json::json!({"error": {
        "message": format!("inference error: {code} - request dropped by the mock gateway ({reason})"),
        "type": kind,
        "code": status.as_u16(),
    }});
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (
                HeaderName::from_static(DROPPED_REASON_HEADER),
                reason.to_string(),
            ),
        ],
        body.to_string(),
    )
        .into_response()
}

async fn proxy(
    State(g): State<Arc<Gateway>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Instant::now();
    if let Some(reason) = g.draw_drop() {
        g.note(&headers, None);
        return dropped(reason);
    }
    let key = match g.picker.route() {
        Route::Header(name) => headers.get(name.as_str()).map(HeaderValue::as_bytes),
        Route::RoundRobin => None,
    };
    let pick = g.picker.pick(key);
    g.state.lookup(key.filter(|_| pick.keyed));
    g.note(&headers, Some(pick.upstream));
    let upstream = &g.cfg.upstreams[pick.upstream];
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = g.http.request(method, format!("{upstream}{path}"));
    for (name, value) in &headers {
        if name != header::HOST && name != header::CONTENT_LENGTH {
            request = request.header(name, value);
        }
    }
    let resp = match request.body(body).send().await {
        Ok(r) => r,
        Err(_) => {
            return (
                StatusCode::BAD_GATEWAY,
                "the mock gateway's upstream did not answer",
            )
                .into_response();
        }
    };
    let ttft_slo = headers
        .get(llm_d::SLO_TTFT_HEADER)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map(Duration::from_millis);
    let mut out = Response::builder().status(resp.status().as_u16());
    for (name, value) in resp.headers() {
        if name != header::CONTENT_LENGTH && name != header::TRANSFER_ENCODING {
            out = out.header(name.as_str(), value.as_bytes());
        }
    }
    let served = upstream
        .split_once("://")
        .map_or(upstream.as_str(), |(_, rest)| rest);
    out = out.header(SERVED_ENDPOINT_HEADER, served);
    let gateway = g.clone();
    let mut first = true;
    let stream = resp.bytes_stream().map(move |piece| {
        if first && piece.as_ref().is_ok_and(|b| !b.is_empty()) {
            first = false;
            if ttft_slo.is_some_and(|slo| received.elapsed() > slo) {
                gateway.state.ttft_violation();
            }
        }
        piece
    });
    out.body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

async fn picker_metrics(State(g): State<Arc<Gateway>>) -> Response {
    let loads = futures_util::future::join_all(g.cfg.upstreams.iter().map(|u| {
        let http = g.http.clone();
        let url = format!("{u}/metrics");
        async move {
            let resp = http
                .get(url)
                .timeout(UPSTREAM_METRICS_TIMEOUT)
                .send()
                .await
                .ok()?;
            if !resp.status().is_success() {
                return None;
            }
            upstream_load(&resp.text().await.ok()?)
        }
    }))
    .await;
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        g.state.render(&g.cfg.model, &loads),
    )
        .into_response()
}

async fn gateway_log(State(g): State<Arc<Gateway>>) -> Response {
    let log = g.log.lock().unwrap_or_else(|p| p.into_inner()).clone();
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(&log).unwrap_or_default(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_parse_with_clear_errors() {
        assert_eq!(
            "rejected-saturated:0.25".parse::<Drop>().unwrap(),
            Drop {
                reason: "rejected-saturated".into(),
                probability: 0.25
            }
        );
        assert_eq!("evicted".parse::<Drop>().unwrap().probability, 1.0);
        for (bad, why) in [
            ("evicted:2", "must be in (0, 1]"),
            ("evicted:x", "is not a probability"),
            (":0.5", "visible ASCII"),
        ] {
            let e = bad.parse::<Drop>().unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn dropped_answers_carry_the_reason_the_status_and_the_routers_message() {
        let r = dropped("rejected-saturated");
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[DROPPED_REASON_HEADER], "rejected-saturated");
        assert_eq!(
            dropped("rejected-no-endpoints").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
