//! OAuth2 access tokens for Google APIs (Vertex AI): a service account's JWT assertion
//! exchanged at its `token_uri` (the JWT-bearer grant), cached and refreshed before it
//! expires; or a static token read from a file, read again when the file changes.
//!
//! The wall clock is a parameter ([`WallClock`]) so tests are exact. One exchange runs
//! at a time: callers that arrive meanwhile wait for it instead of starting their own.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use serde::Deserialize;

use super::jwt::{CLOUD_PLATFORM_SCOPE, ServiceAccountKey};
use crate::secret::{Secret, scrub};

/// Reads the wall clock.
pub type WallClock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// How long one exchange may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a token endpoint's answer is read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// How much of an error answer is quoted.
const MAX_ERROR_CHARS: usize = 300;
const GRANT_TYPE: &str = "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer";

/// How long before expiry a token is replaced: a minute, or a tenth of its lifetime when
/// that is longer.
pub fn refresh_margin(lifetime: Duration) -> Duration {
    (lifetime / 10).max(Duration::from_secs(60))
}

enum Kind {
    ServiceAccount {
        key: ServiceAccountKey,
        scope: String,
        http: reqwest::Client,
    },
    File(PathBuf),
}

#[derive(Default)]
struct Cached {
    token: Option<Secret>,
    refresh_at: Option<SystemTime>,
    expires_at: Option<SystemTime>,
    /// The token file's modification time and length when it was read.
    file_stamp: Option<(SystemTime, u64)>,
}

/// Where a target's bearer token comes from.
pub struct GoogleTokenSource {
    kind: Kind,
    clock: WallClock,
    cached: tokio::sync::Mutex<Cached>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: u64,
}

impl GoogleTokenSource {
    /// Tokens for `key`'s account and `scope` (`cloud-platform` when `None`), exchanged
    /// through `http`.
    pub fn service_account(
        key: ServiceAccountKey,
        scope: Option<&str>,
        http: reqwest::Client,
    ) -> Self {
        let scope = scope.unwrap_or(CLOUD_PLATFORM_SCOPE).to_string();
        Self::new(Kind::ServiceAccount { key, scope, http })
    }

    /// A static token kept in a file (surrounding whitespace dropped).
    pub fn token_file(path: PathBuf) -> Self {
        Self::new(Kind::File(path))
    }

    fn new(kind: Kind) -> Self {
        GoogleTokenSource {
            kind,
            clock: Arc::new(SystemTime::now),
            cached: tokio::sync::Mutex::new(Cached::default()),
        }
    }

    /// The same source reading `clock` instead of the system's wall clock.
    pub fn with_clock(mut self, clock: WallClock) -> Self {
        self.clock = clock;
        self
    }

    /// A token good for now: the cached one, or a fresh one when it is due. A failed
    /// refresh while the cached token is still valid keeps that token (and is logged);
    /// the next call tries again.
    pub async fn token(&self) -> anyhow::Result<Secret> {
        let mut cached = self.cached.lock().await;
        match &self.kind {
            Kind::File(path) => read_token_file(path, &mut cached),
            Kind::ServiceAccount { key, scope, http } => {
                let now = (self.clock)();
                if let (Some(token), Some(refresh_at)) = (&cached.token, cached.refresh_at)
                    && now < refresh_at
                {
                    return Ok(token.clone());
                }
                match exchange(key, scope, http, now).await {
                    Ok((token, lifetime)) => {
                        let expires_at = now + lifetime;
                        cached.refresh_at = Some(expires_at - refresh_margin(lifetime));
                        cached.expires_at = Some(expires_at);
                        cached.token = Some(token.clone());
                        Ok(token)
                    }
                    Err(e) => match (&cached.token, cached.expires_at) {
                        (Some(token), Some(expires_at)) if now < expires_at => {
                            tracing::warn!(error = %format!("{e:#}"), "refreshing the Google access token failed; the current one is kept until it expires");
                            Ok(token.clone())
                        }
                        _ => Err(e),
                    },
                }
            }
        }
    }
}

/// One JWT-bearer exchange: the token and how long it lives.
async fn exchange(
    key: &ServiceAccountKey,
    scope: &str,
    http: &reqwest::Client,
    now: SystemTime,
) -> anyhow::Result<(Secret, Duration)> {
    let assertion = key.assertion(scope, now)?;
    let uri = &key.token_uri;
    // The assertion's characters (base64url and dots) need no form encoding.
    let body = format!("grant_type={GRANT_TYPE}&assertion={assertion}");
    let answer = http
        .post(uri)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .timeout(EXCHANGE_TIMEOUT)
        .body(body)
        .send()
        .await
        .with_context(|| format!("exchanging the service account's JWT at {uri}"))?;
    let status = answer.status();
    let bytes = answer
        .bytes()
        .await
        .with_context(|| format!("reading the token answer of {uri}"))?;
    let bytes = &bytes[..bytes.len().min(MAX_ANSWER_BYTES)];
    if !status.is_success() {
        let text: String = String::from_utf8_lossy(bytes)
            .chars()
            .take(MAX_ERROR_CHARS)
            .collect();
        let text = scrub(&text, [assertion.as_str()]);
        bail!(
            "the token endpoint {uri} refused the service account {}: HTTP {status}: {}",
            key.client_email,
            text.trim()
        );
    }
    let answer: TokenAnswer = serde_json::from_slice(bytes).map_err(|e| {
        anyhow::anyhow!("the token answer of {uri} has no access_token and expires_in ({e})")
    })?;
    if answer.access_token.is_empty() || answer.expires_in == 0 {
        bail!("the token answer of {uri} has an empty access_token or expires_in 0");
    }
    Ok((
        Secret::new(answer.access_token),
        Duration::from_secs(answer.expires_in),
    ))
}

/// The token file's content, read again only when its modification time or length
/// changed since the last read.
fn read_token_file(path: &PathBuf, cached: &mut Cached) -> anyhow::Result<Secret> {
    let meta = std::fs::metadata(path)
        .with_context(|| format!("reading the token file {}", path.display()))?;
    let stamp = (
        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        meta.len(),
    );
    if let Some(token) = &cached.token
        && cached.file_stamp == Some(stamp)
    {
        return Ok(token.clone());
    }
    let token = Secret::from_file(path).context("the Google access token")?;
    cached.token = Some(token.clone());
    cached.file_stamp = Some(stamp);
    Ok(token)
}
