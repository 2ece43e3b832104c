//! The `otlp:` section (OpenTelemetry export of every probe as a span and as metric
//! points; its YAML types are in `schema`): its own checks and the resolved [`OtlpPlan`].
//! It takes effect on restart only: the exporters live as long as the process.

use std::time::Duration;

use super::schema::OtlpConfig;
use crate::secret::Secret;
use crate::yaml_locate::Path;

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

/// The section's own rules (its headers are checked as the targets' are, by `validate`).
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
    Ok(())
}

/// The plan of a validated section whose header values `plan` has read.
pub fn resolve(cfg: &OtlpConfig, headers: Vec<(String, Secret)>) -> OtlpPlan {
    OtlpPlan {
        endpoint: cfg.endpoint.trim_end_matches('/').to_string(),
        headers,
        interval: cfg.interval,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::schema::{DEFAULT_OTLP_INTERVAL, OtlpProtocol};

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
        let plan = resolve(&config("http://c:4318/otlp/"), Vec::new());
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
