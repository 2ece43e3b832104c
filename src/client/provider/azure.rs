//! Azure OpenAI: the OpenAI chat, Responses and embeddings formats as they are, the
//! key in `api-key` (an Entra ID token goes in `headers: {Authorization: ...}`). With
//! `api_version` absent or `v1`, the v1 API (`/openai/v1/chat/completions`, the
//! deployment as `model` in the body); with a dated `api_version`, the deployment in
//! the path (`/openai/deployments/{model}/chat/completions?api-version=...`; the
//! Responses API has no deployment path: `/openai/responses?api-version=...`).

use reqwest::header::HeaderName;

use super::{Host, base, encode_segment};
use crate::client::config::{ClientConfig, Endpoint, Provider};

pub struct Azure;

/// The path of `endpoint` after `/openai/v1` or `/openai/deployments/{model}`.
fn tail(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Responses => "/responses",
        Endpoint::Embeddings => "/embeddings",
        _ => "/chat/completions",
    }
}

/// The dated `api-version`, if one is set (`v1` is the undated API).
fn dated(cfg: &ClientConfig) -> Option<&str> {
    cfg.api_version.as_deref().filter(|v| *v != "v1")
}

impl Host for Azure {
    fn provider(&self) -> Provider {
        Provider::Azure
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        &[Endpoint::Chat, Endpoint::Responses, Endpoint::Embeddings]
    }

    fn url(&self, cfg: &ClientConfig, _streamed: bool) -> String {
        let base = base(cfg);
        match (dated(cfg), cfg.endpoint) {
            (None, e) => format!("{base}/openai/v1{}", tail(e)),
            (Some(v), Endpoint::Responses) => format!("{base}/openai/responses?api-version={v}"),
            (Some(v), e) => format!(
                "{base}/openai/deployments/{}{}?api-version={v}",
                encode_segment(&cfg.model),
                tail(e)
            ),
        }
    }

    fn key_header(&self, key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("api-key"), key.to_string())
    }

    fn otel_provider(&self) -> &'static str {
        "azure.ai.openai"
    }

    fn check(&self, cfg: &ClientConfig) -> Result<(), String> {
        if let Some(v) = &cfg.api_version
            && (v.is_empty()
                || !v
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.')))
        {
            return Err(format!(
                "api_version {v:?} must be `v1` or a version such as 2024-10-21"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_dated_paths() {
        let mut c = ClientConfig {
            base_url: "https://r.openai.azure.com/".into(),
            provider: Some(Provider::Azure),
            model: "gpt-4o-mini".into(),
            ..ClientConfig::default()
        };
        assert_eq!(
            Azure.url(&c, true),
            "https://r.openai.azure.com/openai/v1/chat/completions"
        );
        c.api_version = Some("2024-10-21".into());
        assert_eq!(
            Azure.url(&c, true),
            "https://r.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
        );
        c.endpoint = Endpoint::Embeddings;
        assert!(
            Azure
                .url(&c, false)
                .ends_with("/deployments/gpt-4o-mini/embeddings?api-version=2024-10-21")
        );
        c.endpoint = Endpoint::Responses;
        assert!(
            Azure
                .url(&c, true)
                .ends_with("/openai/responses?api-version=2024-10-21")
        );
        c.api_version = Some("v1".into());
        assert!(Azure.url(&c, true).ends_with("/openai/v1/responses"));
        c.api_version = Some("2024 10".into());
        assert!(Azure.check(&c).unwrap_err().contains("api_version"));
    }
}
