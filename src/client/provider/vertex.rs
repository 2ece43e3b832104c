//! Vertex AI: the Gemini body and events (`client::protocol::gemini`) at
//! `/v1/projects/{project}/locations/{location}/publishers/google/models/{model}`
//! `:streamGenerateContent?alt=sse` (or `:generateContent`), with an OAuth2 access
//! token as `Authorization: Bearer`, from `google.service_account_file` (JWT-bearer
//! flow, refreshed before it expires) or `google.token_file`.

use super::{Host, SignerKind, base, encode_segment};
use crate::client::config::{ClientConfig, Endpoint, Provider};
use crate::client::protocol::{self, Protocol};

pub struct Vertex;

impl Host for Vertex {
    fn provider(&self) -> Provider {
        Provider::Vertex
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        &[Endpoint::Chat]
    }

    fn protocol(&self, _endpoint: Endpoint) -> &'static dyn Protocol {
        protocol::gemini()
    }

    fn url(&self, cfg: &ClientConfig, streamed: bool) -> String {
        let g = cfg.google.clone().unwrap_or_default();
        format!(
            "{}/v1/projects/{}/locations/{}/publishers/google/models/{}{}",
            base(cfg),
            encode_segment(&g.project),
            encode_segment(&g.location),
            encode_segment(&cfg.model),
            super::gemini::method(streamed)
        )
    }

    fn signer(&self, _cfg: &ClientConfig) -> SignerKind {
        SignerKind::BearerSource
    }

    fn otel_provider(&self) -> &'static str {
        "gcp.vertex_ai"
    }

    fn check(&self, cfg: &ClientConfig) -> Result<(), String> {
        let Some(g) = &cfg.google else {
            return Err("provider vertex needs google: {project, location, \
                        service_account_file or token_file}"
                .into());
        };
        if g.project.trim().is_empty() {
            return Err("google.project must not be empty".into());
        }
        if g.location.trim().is_empty() {
            return Err("google.location must not be empty".into());
        }
        match (&g.service_account_file, &g.token_file) {
            (Some(_), Some(_)) => {
                Err("set google.service_account_file or google.token_file, not both".into())
            }
            (None, None) => Err(
                "google needs service_account_file or token_file (the access token's source)"
                    .into(),
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::config::GoogleConfig;

    #[test]
    fn the_url_names_project_location_and_model() {
        let mut c = ClientConfig {
            base_url: "https://us-central1-aiplatform.googleapis.com/".into(),
            provider: Some(Provider::Vertex),
            model: "gemini-2.0-flash".into(),
            google: Some(GoogleConfig {
                project: "p1".into(),
                location: "us-central1".into(),
                token_file: Some("/t".into()),
                ..GoogleConfig::default()
            }),
            ..ClientConfig::default()
        };
        assert_eq!(
            Vertex.url(&c, true),
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
        );
        Vertex.check(&c).unwrap();
        c.google.as_mut().unwrap().project = String::new();
        assert!(Vertex.check(&c).unwrap_err().contains("google.project"));
        c.google = None;
        assert!(Vertex.check(&c).unwrap_err().contains("needs google"));
    }
}
