//! The `http_sd` source, its block and its finder: Prometheus HTTP SD. A GET returns the
//! target-group JSON; any status but 200, or a body that is not that JSON, fails the
//! refresh.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::DiscoveryError;
use super::replica::Found;
use super::sd_format::{self, Syntax};
use super::source::{BlockError, Discoverer, Finding, Needs, SourceKind, Step};

/// The largest answer read: an SD list of thousands of targets fits well inside.
const MAX_BODY_BYTES: usize = 4 << 20;

/// `http_sd: {url, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpSdFrom {
    pub url: String,
    /// How often the endpoint is asked again (default 1m).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

impl SourceKind for HttpSdFrom {
    const NAME: &'static str = "http_sd";
    const HELP: &'static str = "A Prometheus HTTP SD endpoint: `{url, interval}` (default 1m).";
    const LABELS: bool = true;
    /// Prometheus' own default `refresh_interval` for HTTP SD.
    const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

    fn interval(&self) -> Option<Duration> {
        self.interval
    }

    fn check(&self, _scheme: &str) -> Result<(), BlockError> {
        parse_url(&self.url).map_err(|e| BlockError::at(&[Step::Key("url")], e))?;
        Ok(())
    }

    fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        Ok(Box::new(HttpSd::new(&self.url, needs.http.clone())?))
    }
}

/// An HTTP SD endpoint and the client that asks it.
#[derive(Debug, Clone)]
pub struct HttpSd {
    url: reqwest::Url,
    http: reqwest::Client,
}

/// An http(s) URL with a host.
fn parse_url(url: &str) -> Result<reqwest::Url, DiscoveryError> {
    let bad =
        |reason: String| DiscoveryError::input(format!("{}: {url:?}", HttpSdFrom::NAME), reason);
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https".into()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host".into()));
    }
    Ok(parsed)
}

impl HttpSd {
    pub fn new(url: &str, http: reqwest::Client) -> Result<Self, DiscoveryError> {
        Ok(HttpSd {
            url: parse_url(url)?,
            http,
        })
    }

    /// One GET with `timeout` for the whole exchange; the body is bounded.
    async fn get(&self, timeout: Duration) -> Result<Vec<Found>, DiscoveryError> {
        let shown = crate::secret::redact_url(self.url.as_str());
        let fail = |reason: String| DiscoveryError::Http {
            url: shown.clone(),
            reason,
        };
        let fetch = async {
            let mut response = self
                .http
                .get(self.url.clone())
                .header(reqwest::header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| fail(e.without_url().to_string()))?;
            if response.status() != reqwest::StatusCode::OK {
                return Err(fail(format!("status {}", response.status())));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| fail(e.without_url().to_string()))?
            {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(fail(format!("answer larger than {MAX_BODY_BYTES} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            let text = String::from_utf8(body).map_err(|_| fail("answer is not UTF-8".into()))?;
            sd_format::parse(&text, Syntax::Json, &shown)
        };
        tokio::time::timeout(timeout, fetch)
            .await
            .map_err(|_| fail(format!("no answer within {timeout:?}")))?
    }
}

impl Discoverer for HttpSd {
    fn kind(&self) -> &'static str {
        HttpSdFrom::NAME
    }

    fn find(&self, timeout: Duration) -> Finding<'_> {
        Box::pin(self.get(timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_are_taken() {
        assert!(parse_url("http://sd:8080/targets").is_ok());
        for bad in ["sd:8080/targets", "ftp://sd/x", "http://", ""] {
            assert_eq!(parse_url(bad).unwrap_err().reason(), "input", "{bad}");
        }
    }
}
