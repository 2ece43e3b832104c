//! The Google token source's unit tests: a token endpoint of their own on 127.0.0.1 that
//! checks each assertion with the test key's public half and counts the exchanges, and an
//! injected wall clock, so "one exchange until refresh time, then two" is exact.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Form, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::google_token::*;
use super::jwt::{ServiceAccountKey, verify_assertion};

const T0: u64 = 1_800_000_000;

struct Endpoint {
    public_key: Vec<u8>,
    aud: String,
    clock: Arc<Mutex<SystemTime>>,
    exchanges: AtomicU64,
    refuse: AtomicBool,
}

async fn token(
    State(ep): State<Arc<Endpoint>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let n = ep.exchanges.fetch_add(1, Ordering::SeqCst) + 1;
    let now = *ep.clock.lock().unwrap();
    let checked = match form.get("grant_type").map(String::as_str) {
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
            verify_assertion(&form["assertion"], &ep.public_key, &ep.aud, now)
        }
        other => Err(format!("grant_type {other:?}")),
    };
    match checked {
        Ok(_) if !ep.refuse.load(Ordering::SeqCst) => {
            axum::Json(serde_json::json!({"access_token": format!("tok-{n}"), "expires_in": 3600, "token_type": "Bearer"}))
                .into_response()
        }
        Ok(_) => (StatusCode::BAD_REQUEST, r#"{"error":"invalid_grant","error_description":"account disabled"}"#).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, e).into_response(),
    }
}

struct Setup {
    source: Arc<GoogleTokenSource>,
    endpoint: Arc<Endpoint>,
    clock: Arc<Mutex<SystemTime>>,
    uri: String,
}

impl Setup {
    fn at(&self, secs_after_t0: u64) {
        *self.clock.lock().unwrap() = UNIX_EPOCH + Duration::from_secs(T0 + secs_after_t0);
    }
    fn exchanges(&self) -> u64 {
        self.endpoint.exchanges.load(Ordering::SeqCst)
    }
}

async fn setup() -> Setup {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}/token", listener.local_addr().unwrap());
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/google/service-account.json"
    );
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    file["token_uri"] = uri.clone().into();
    let key = ServiceAccountKey::from_json(&file.to_string()).unwrap();
    let clock = Arc::new(Mutex::new(UNIX_EPOCH + Duration::from_secs(T0)));
    let endpoint = Arc::new(Endpoint {
        public_key: key.public_key_der(),
        aud: uri.clone(),
        clock: clock.clone(),
        exchanges: AtomicU64::new(0),
        refuse: AtomicBool::new(false),
    });
    let app = axum::Router::new()
        .route("/token", axum::routing::post(token))
        .with_state(endpoint.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let read = clock.clone();
    crate::client::tls::install_crypto_provider();
    let source = GoogleTokenSource::service_account(key, None, reqwest::Client::new())
        .with_clock(Arc::new(move || *read.lock().unwrap()));
    Setup {
        source: Arc::new(source),
        endpoint,
        clock,
        uri,
    }
}

#[tokio::test]
async fn one_exchange_until_refresh_time_then_two() {
    let s = setup().await;
    assert_eq!(
        refresh_margin(Duration::from_secs(3600)),
        Duration::from_secs(360)
    );
    assert_eq!(
        refresh_margin(Duration::from_secs(300)),
        Duration::from_secs(60)
    );
    assert_eq!(s.source.token().await.unwrap().expose(), "tok-1");
    s.at(1000);
    assert_eq!(s.source.token().await.unwrap().expose(), "tok-1");
    s.at(3239);
    assert_eq!(s.source.token().await.unwrap().expose(), "tok-1");
    assert_eq!(s.exchanges(), 1);
    s.at(3240);
    assert_eq!(s.source.token().await.unwrap().expose(), "tok-2");
    s.at(3241);
    assert_eq!(s.source.token().await.unwrap().expose(), "tok-2");
    assert_eq!(s.exchanges(), 2);
}

#[tokio::test]
async fn callers_at_once_share_one_exchange() {
    let s = setup().await;
    let calls = (0..8).map(|_| {
        let source = s.source.clone();
        tokio::spawn(async move { source.token().await.unwrap().expose().to_string() })
    });
    for call in calls.collect::<Vec<_>>() {
        assert_eq!(call.await.unwrap(), "tok-1");
    }
    assert_eq!(s.exchanges(), 1);
}

#[tokio::test]
async fn a_refused_refresh_keeps_the_valid_token_then_fails_clearly() {
    let s = setup().await;
    assert_eq!(s.source.token().await.unwrap().expose(), "tok-1");
    s.endpoint.refuse.store(true, Ordering::SeqCst);
    s.at(3300);
    assert_eq!(
        s.source.token().await.unwrap().expose(),
        "tok-1",
        "still valid"
    );
    assert_eq!(s.exchanges(), 2);
    s.at(3600);
    let err = format!("{:#}", s.source.token().await.unwrap_err());
    assert_eq!(
        err,
        format!(
            "the token endpoint {} refused the service account prober@llmprobe-test.iam.gserviceaccount.com: \
             HTTP 400 Bad Request: {{\"error\":\"invalid_grant\",\"error_description\":\"account disabled\"}}",
            s.uri
        )
    );
    assert_eq!(s.exchanges(), 3);
}

#[tokio::test]
async fn a_token_file_is_read_again_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "ya29.first\n").unwrap();
    let source = GoogleTokenSource::token_file(path.clone());
    assert_eq!(source.token().await.unwrap().expose(), "ya29.first");
    std::fs::write(&path, "ya29.second\n").unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(10))
        .unwrap();
    assert_eq!(source.token().await.unwrap().expose(), "ya29.second");
    std::fs::write(&path, "\n").unwrap();
    let err = format!("{:#}", source.token().await.unwrap_err());
    assert!(
        err.contains("the Google access token") && err.contains("is empty"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
    let err = format!("{:#}", source.token().await.unwrap_err());
    assert!(
        err.starts_with(&format!("reading the token file {}", path.display())),
        "{err}"
    );
}
