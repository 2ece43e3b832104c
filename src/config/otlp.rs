//! The `otlp:` section (OpenTelemetry export of every probe as a span and as metric
//! points): its YAML types with their defaults, its checks, and the resolved
//! [`OtlpPlan`]. It takes effect on restart only: the exporters live as long as the
//! process.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::locate::Path;
use super::schema::HeaderValue;
use crate::secret::Secret;

/// How often spans and metrics are sent unless `interval` says.
pub const DEFAULT_OTLP_INTERVAL: Duration = Duration::from_secs(10);

/// `otlp: {endpoint, protocol, headers, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OtlpConfig {
    /// The collector's OTLP/HTTP base URL (`http://otel-collector:4318`): spans go to
    /// `ENDPOINT/v1/traces`, metrics to `ENDPOINT/v1/metrics`.
    pub endpoint: String,
    /// The wire protocol; only `http/protobuf` (OTLP over HTTP, protobuf bodies).
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// Extra request headers (a collector's API key): a literal value, or
    /// `{file: PATH}` / `{env: VAR}`, read at start.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, HeaderValue>,
    /// How often finished spans and the metrics are sent (default 10s).
    #[serde(default = "default_interval", with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub interval: Duration,
}

fn default_interval() -> Duration {
    DEFAULT_OTLP_INTERVAL
}

/// OTLP's transports, by the names of `OTEL_EXPORTER_OTLP_PROTOCOL`; llmprobe speaks one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum OtlpProtocol {
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

/// The checked `otlp:` section, its headers read.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpPlan {
    /// The base URL without a trailing `/`.
    pub endpoint: String,
    pub headers: Vec<(String, Secret)>,
    pub interval: Duration,
}

impl OtlpPlan {
    /// Where spans are posted.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.endpoint)
    }

    /// Where metrics are posted.
    pub fn metrics_url(&self) -> String {
        format!("{}/v1/metrics", self.endpoint)
    }
}

/// The section's own rules (header names and values are checked with the targets').
pub fn validate(cfg: &OtlpConfig, path: &Path) -> Result<(), (Path, String)> {
    let bad = |msg: String| Err((path.key("endpoint"), msg));
    match reqwest::Url::parse(&cfg.endpoint) {
        Err(e) => {
            return bad(format!(
                "{:?} is not a URL such as http://otel-collector:4318 ({e})",
                crate::secret::redact_url(&cfg.endpoint)
            ));
        }
        Ok(url) if !matches!(url.scheme(), "http" | "https") => {
            return bad(format!("scheme {:?}: must be http or https", url.scheme()));
        }
        Ok(url) if url.query().is_some() || url.fragment().is_some() => {
            return bad(
                "must be a base URL without a query or fragment (/v1/traces and /v1/metrics are appended)"
                    .into(),
            );
        }
        Ok(_) => {}
    }
    if cfg.interval < Duration::from_millis(100) {
        return Err((
            path.key("interval"),
            "must be at least 100ms (how often spans and metrics are sent)".into(),
        ));
    }
    super::validate::headers(&cfg.headers, &path.key("headers"))
}

/// Resolves a validated section: its header values read.
pub fn resolve(cfg: &OtlpConfig, path: &Path) -> Result<OtlpPlan, (Path, String)> {
    let mut headers = Vec::with_capacity(cfg.headers.len());
    for (name, value) in &cfg.headers {
        let v = super::plan::header_value(value, &path.key("headers").key(name))?;
        headers.push((name.clone(), v));
    }
    Ok(OtlpPlan {
        endpoint: cfg.endpoint.trim_end_matches('/').to_string(),
        headers,
        interval: cfg.interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(endpoint: &str) -> OtlpConfig {
        OtlpConfig {
            endpoint: endpoint.into(),
            protocol: OtlpProtocol::HttpProtobuf,
            headers: BTreeMap::new(),
            interval: DEFAULT_OTLP_INTERVAL,
        }
    }

    #[test]
    fn the_signal_urls_append_to_the_base() {
        let plan = resolve(&config("http://c:4318/otlp/"), &Path::root()).unwrap();
        assert_eq!(plan.traces_url(), "http://c:4318/otlp/v1/traces");
        assert_eq!(plan.metrics_url(), "http://c:4318/otlp/v1/metrics");
    }

    #[test]
    fn endpoints_must_be_http_base_urls() {
        assert!(validate(&config("http://c:4318"), &Path::root()).is_ok());
        for bad in ["c:4318", "grpc://c:4317", "http://c:4318/?x=1", "nonsense"] {
            assert!(validate(&config(bad), &Path::root()).is_err(), "{bad}");
        }
    }
}
