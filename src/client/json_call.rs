//! One whole JSON request and its whole JSON answer, for callers that read the answer
//! itself rather than time it (the fingerprint, the model list). Same connection pool,
//! headers, TLS, limits and stale-connection retry as every other request of this
//! client; the body is the caller's.

use anyhow::{Context, bail};
use futures_util::StreamExt;
use tokio::time::timeout;

use super::{Client, ERROR_BODY_BYTES, stale, truncate_text};

impl Client {
    /// POSTs `body` to this client's URL and returns the parsed JSON answer. A non-2xx
    /// status, a timeout, a body over `limits.max_response_bytes` or a body that is not
    /// JSON is an error, with secrets scrubbed from its text.
    pub async fn post_json(&self, body: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
        let bytes = serde_json::to_vec(body).context("serializing the request")?;
        let request = self.http.post(self.url.clone()).body(bytes);
        self.whole_json(request, "POST", self.url.as_str()).await
    }

    /// GETs `path` (such as `/v1/models`) on this client's server, with the same rules
    /// as [`Client::post_json`].
    pub async fn get_json(&self, path: &str) -> anyhow::Result<serde_json::Value> {
        let url = reqwest::Url::parse(&self.cfg.url_of(path)).context("the URL of the path")?;
        let request = self.http.get(url.clone());
        self.whole_json(request, "GET", url.as_str()).await
    }

    async fn whole_json(
        &self,
        request: reqwest::RequestBuilder,
        method: &str,
        url: &str,
    ) -> anyhow::Result<serde_json::Value> {
        let result = timeout(
            self.cfg.timeouts.total,
            read_json(self, request, method, url),
        )
        .await;
        let result = match result {
            Ok(r) => r,
            Err(_) => Err(anyhow::anyhow!(
                "no whole answer within timeouts.total ({:?})",
                self.cfg.timeouts.total
            )),
        };
        result.map_err(|e| anyhow::anyhow!(crate::secret::scrub(&format!("{e:#}"), self.secrets())))
    }
}

async fn read_json(
    client: &Client,
    request: reqwest::RequestBuilder,
    method: &str,
    url: &str,
) -> anyhow::Result<serde_json::Value> {
    let again = request.try_clone();
    let response = stale::send(
        request,
        || again,
        &client.connects,
        client.cfg.reuse_connections,
    )
    .await
    .with_context(|| format!("{method} {url}"))?;
    let status = response.status();
    let limit = client.cfg.limits.max_response_bytes;
    let mut data = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece.context("reading the answer")?;
        if data.len() as u64 + piece.len() as u64 > limit {
            bail!("the answer is larger than limits.max_response_bytes ({limit})");
        }
        data.extend_from_slice(&piece);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&data);
        bail!("HTTP {status}: {}", truncate_text(&text, ERROR_BODY_BYTES));
    }
    serde_json::from_slice(&data).context("the answer is not JSON")
}
