//! The Gemini API: `generateContent` (`client::protocol::gemini`) at
//! `/v1beta/models/{model}:generateContent`, or `:streamGenerateContent?alt=sse` when
//! streamed; the key (`api_key`) in `x-goog-api-key`, never in the URL.

use reqwest::header::HeaderName;

use super::{Host, base, encode_segment};
use crate::client::config::{ClientConfig, Endpoint, Provider};
use crate::client::protocol::{self, Protocol};

pub struct Gemini;

/// `:streamGenerateContent?alt=sse` or `:generateContent`.
pub(super) fn method(streamed: bool) -> &'static str {
    if streamed {
        ":streamGenerateContent?alt=sse"
    } else {
        ":generateContent"
    }
}

impl Host for Gemini {
    fn provider(&self) -> Provider {
        Provider::Gemini
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        &[Endpoint::Chat]
    }

    fn protocol(&self, _endpoint: Endpoint) -> &'static dyn Protocol {
        protocol::gemini()
    }

    fn url(&self, cfg: &ClientConfig, streamed: bool) -> String {
        // A model given as `models/NAME` (as the API lists them) is the same model.
        let model = cfg.model.strip_prefix("models/").unwrap_or(&cfg.model);
        format!(
            "{}/v1beta/models/{}{}",
            base(cfg),
            encode_segment(model),
            method(streamed)
        )
    }

    fn key_header(&self, key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-goog-api-key"), key.to_string())
    }

    fn otel_provider(&self) -> &'static str {
        "gcp.gemini"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_and_whole_urls() {
        let c = ClientConfig {
            base_url: "https://generativelanguage.googleapis.com".into(),
            provider: Some(Provider::Gemini),
            model: "models/gemini-2.0-flash".into(),
            ..ClientConfig::default()
        };
        assert_eq!(
            Gemini.url(&c, true),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
        );
        assert!(
            Gemini
                .url(&c, false)
                .ends_with("/gemini-2.0-flash:generateContent")
        );
    }
}
