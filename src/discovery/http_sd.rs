//! The `http_sd` source: Prometheus HTTP SD. A GET returns the target-group JSON; any
//! status but 200, or a body that is not that JSON, fails the refresh.

use std::time::Duration;

use super::DiscoveryError;
use super::replica::Found;
use super::sd_format::{self, Syntax};

/// The largest answer read: an SD list of thousands of targets fits well inside.
const MAX_BODY_BYTES: usize = 4 << 20;

/// An HTTP SD endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSd {
    url: reqwest::Url,
}

impl HttpSd {
    pub fn new(url: &str) -> Result<Self, DiscoveryError> {
        let bad = |reason: String| DiscoveryError::input(format!("http_sd: {url:?}"), reason);
        let parsed = reqwest::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(bad("the scheme must be http or https".into()));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(bad("no host".into()));
        }
        Ok(HttpSd { url: parsed })
    }

    /// One GET with `timeout` for the whole exchange; the body is bounded.
    pub async fn find(
        &self,
        http: &reqwest::Client,
        timeout: Duration,
    ) -> Result<Vec<Found>, DiscoveryError> {
        let shown = crate::secret::redact_url(self.url.as_str());
        let fail = |reason: String| DiscoveryError::Http {
            url: shown.clone(),
            reason,
        };
        let fetch = async {
            let mut response = http
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_are_taken() {
        assert!(HttpSd::new("http://sd:8080/targets").is_ok());
        for bad in ["sd:8080/targets", "ftp://sd/x", "http://", ""] {
            assert_eq!(HttpSd::new(bad).unwrap_err().reason(), "input", "{bad}");
        }
    }
}
