//! What each request of a provider carries that the default headers cannot: an AWS
//! Signature V4 over its final URL and body (Bedrock), made with credentials loaded
//! once when the client is built, or a bearer token from a source that refreshes it
//! (Vertex: a service account's tokens, or a token file). The secrets it holds are the
//! client's too (scrubbed from every error).

use std::sync::Arc;
use std::time::SystemTime;

use reqwest::header::{HeaderName, HeaderValue};

use super::{SignerKind, bedrock};
use crate::client::auth::aws_credentials::{self, CredentialFiles};
use crate::client::auth::google_token::GoogleTokenSource;
use crate::client::auth::jwt::ServiceAccountKey;
use crate::client::auth::sigv4::{self, AwsCredentials};
use crate::client::config::{AwsConfig, ClientConfig};
use crate::secret::Secret;

/// A provider's per-request signing.
pub enum Signer {
    /// Nothing beyond the default headers.
    None,
    /// AWS Signature V4 for `region`.
    SigV4 {
        creds: AwsCredentials,
        region: String,
    },
    /// `Authorization: Bearer` with the source's current token.
    Bearer(Arc<GoogleTokenSource>),
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signer::None => f.write_str("None"),
            Signer::Bearer(_) => f.write_str("Bearer"),
            Signer::SigV4 { creds, region } => f
                .debug_struct("SigV4")
                .field("access_key_id", &creds.access_key_id)
                .field("region", region)
                .finish(),
        }
    }
}

impl Signer {
    /// The signer of `cfg`, its credentials loaded now; an error is a usage error that
    /// names where the credentials were looked for, never their values.
    pub fn new(cfg: &ClientConfig) -> anyhow::Result<Signer> {
        match super::signer(cfg) {
            SignerKind::Static => Ok(Signer::None),
            SignerKind::BearerSource => {
                let g = cfg.google.clone().unwrap_or_default();
                let source = match (&g.service_account_file, &g.token_file) {
                    (Some(path), _) => {
                        let key = match ServiceAccountKey::from_file(path) {
                            Ok(k) => k,
                            Err(e) => crate::usage_bail!("google.service_account_file: {e:#}"),
                        };
                        let http = reqwest::Client::builder()
                            .tls_backend_preconfigured(crate::client::tls::client_config(&cfg.tls)?)
                            .connect_timeout(cfg.timeouts.connect)
                            .no_proxy()
                            .build()?;
                        GoogleTokenSource::service_account(key, None, http)
                    }
                    (None, Some(path)) => GoogleTokenSource::token_file(path.clone()),
                    (None, None) => crate::usage_bail!(
                        "provider vertex needs google.service_account_file or google.token_file"
                    ),
                };
                Ok(Signer::Bearer(Arc::new(source)))
            }
            SignerKind::SigV4 => {
                let aws = cfg.aws.clone().unwrap_or_default();
                Ok(Signer::SigV4 {
                    creds: aws_credentials(&aws)?,
                    region: aws.region.trim().to_string(),
                })
            }
        }
    }

    /// The headers to add to a request of `url` with `body`, signed now.
    pub fn headers(&self, url: &reqwest::Url, body: &[u8]) -> Vec<(HeaderName, HeaderValue)> {
        let Signer::SigV4 { creds, region } = self else {
            return Vec::new();
        };
        let signed = [("content-type".to_string(), "application/json".to_string())];
        let at = SystemTime::now();
        sigv4::sign(
            "POST",
            url,
            &signed,
            body,
            creds,
            region,
            bedrock::SERVICE,
            at,
        )
        .into_iter()
        .filter_map(|(name, value)| {
            let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
            let mut value = HeaderValue::from_str(&value).ok()?;
            value.set_sensitive(true);
            Some((name, value))
        })
        .collect()
    }

    /// The bearer token of the next request, when the signer has a source (fetched or
    /// refreshed now, before the request is timed); the error says why there is none.
    pub async fn bearer(&self) -> Result<Option<Secret>, String> {
        match self {
            Signer::Bearer(source) => source
                .token()
                .await
                .map(Some)
                .map_err(|e| format!("getting the access token: {e:#}")),
            _ => Ok(None),
        }
    }

    /// `Bearer TOKEN` as a sensitive header value (None when the token cannot be one).
    pub fn bearer_header(token: &Secret) -> Option<HeaderValue> {
        let mut v = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
        v.set_sensitive(true);
        Some(v)
    }

    /// The secrets it holds, for scrubbing.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Signer::None | Signer::Bearer(_) => Vec::new(),
            Signer::SigV4 { creds, .. } => {
                [Some(&creds.secret_access_key), creds.session_token.as_ref()]
                    .into_iter()
                    .flatten()
                    .map(Secret::expose)
                    .collect()
            }
        }
    }
}

/// Bedrock's credentials: the files `aws:` names, else the standard environment
/// variables, else the shared credentials file (its `aws.profile`, else `AWS_PROFILE`).
fn aws_credentials(aws: &AwsConfig) -> anyhow::Result<AwsCredentials> {
    let files = CredentialFiles {
        access_key_id_file: aws.access_key_id_file.clone(),
        secret_access_key_file: aws.secret_access_key_file.clone(),
        session_token_file: aws.session_token_file.clone(),
    };
    let env = |name: &str| match (name, &aws.profile) {
        ("AWS_PROFILE", Some(p)) => Some(p.clone()),
        _ => aws_credentials::process_env(name),
    };
    match aws_credentials::resolve(&files, env) {
        Ok((creds, source)) => {
            tracing::debug!(%source, "AWS credentials for bedrock");
            Ok(creds)
        }
        Err(e) => crate::usage_bail!("provider bedrock: {e:#}"),
    }
}
