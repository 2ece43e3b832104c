//! The hosted APIs a target can name with `provider:` (Azure OpenAI, AWS Bedrock,
//! Google Gemini and Vertex AI), one file each behind the [`Host`] trait: which
//! endpoints it serves and with which protocol (`client::protocol`), its URL (which
//! may name the model, the deployment, the project and a query), the header that
//! carries a static key, how each request is authorised (`Signer`: nothing more,
//! SigV4 over the final URL and body, or a bearer token from a source that refreshes
//! it) and how its stream is framed (SSE, or AWS's binary event stream). A target
//! without a provider is the plain OpenAI/Anthropic shape of its `endpoint`; the
//! timing, the record and the answer checks are the same for all.

mod azure;
mod bedrock;
mod gemini;
mod signer;
mod vertex;

pub use signer::Signer;

use reqwest::header::{AUTHORIZATION, HeaderName};

use super::config::{ClientConfig, Endpoint, Provider};
use super::protocol::{self, Api, Protocol};

/// How a stream's events are framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-Sent Events (`text/event-stream`).
    Sse,
    /// AWS's binary event stream (`application/vnd.amazon.eventstream`): frames with a
    /// prelude, headers, a JSON payload and CRC32 checks.
    EventStream,
}

impl Framing {
    /// The Content-Type a stream of this framing comes with.
    pub fn content_type(self) -> &'static str {
        match self {
            Framing::Sse => "text/event-stream",
            Framing::EventStream => "application/vnd.amazon.eventstream",
        }
    }
}

/// How each request of a provider is authorised, beyond the fixed headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignerKind {
    /// The default headers say it all (a static key, or no auth).
    Static,
    /// AWS Signature V4 over the final URL, headers and body (Bedrock).
    SigV4,
    /// `Authorization: Bearer` with a token from a source that refreshes it (Vertex).
    BearerSource,
}

/// One hosted API: its endpoints, URL, key header, request signing and framing.
pub trait Host: Sync {
    /// Which provider this is.
    fn provider(&self) -> Provider;

    /// The endpoints it serves.
    fn endpoints(&self) -> &'static [Endpoint];

    /// The protocol (body and events) of `endpoint` at this provider.
    fn protocol(&self, endpoint: Endpoint) -> &'static dyn Protocol {
        protocol::of(endpoint)
    }

    /// The URL of one request; `streamed` when the answer is streamed (Gemini and
    /// Bedrock name that in the URL, not the body).
    fn url(&self, cfg: &ClientConfig, streamed: bool) -> String;

    /// The header that carries a static API key, and its value.
    fn key_header(&self, key: &str) -> (HeaderName, String) {
        (AUTHORIZATION, format!("Bearer {key}"))
    }

    /// How each request is authorised beyond the default headers.
    fn signer(&self, _cfg: &ClientConfig) -> SignerKind {
        SignerKind::Static
    }

    /// How a streamed answer is framed.
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    /// `gen_ai.provider.name` of a probe of this provider (GenAI conventions).
    fn otel_provider(&self) -> &'static str;

    /// What else it needs of the config, as an error naming the setting.
    fn check(&self, _cfg: &ClientConfig) -> Result<(), String> {
        Ok(())
    }
}

/// The one map from a provider to its implementation.
pub fn of(provider: Provider) -> &'static dyn Host {
    match provider {
        Provider::Azure => &azure::Azure,
        Provider::Bedrock => &bedrock::Bedrock,
        Provider::Gemini => &gemini::Gemini,
        Provider::Vertex => &vertex::Vertex,
    }
}

/// The protocol a config speaks: its provider's for its endpoint, else the endpoint's.
pub fn protocol(cfg: &ClientConfig) -> &'static dyn Protocol {
    match cfg.provider {
        Some(p) => of(p).protocol(cfg.endpoint),
        None => protocol::of(cfg.endpoint),
    }
}

/// What the config's API is and can carry.
pub fn api(cfg: &ClientConfig) -> &'static Api {
    protocol(cfg).api()
}

/// Whether a config's answers are streamed.
pub fn streamed(cfg: &ClientConfig) -> bool {
    cfg.stream && api(cfg).streams
}

/// The request URL.
pub fn url(cfg: &ClientConfig) -> String {
    match cfg.provider {
        Some(p) => of(p).url(cfg, streamed(cfg)),
        None => cfg.url(),
    }
}

/// The header that carries the config's static key.
pub fn key_header(cfg: &ClientConfig, key: &str) -> (HeaderName, String) {
    match cfg.provider {
        Some(p) => of(p).key_header(key),
        None => protocol::of(cfg.endpoint).api_key_header(key),
    }
}

/// How a config's requests are authorised beyond the default headers.
pub fn signer(cfg: &ClientConfig) -> SignerKind {
    cfg.provider
        .map_or(SignerKind::Static, |p| of(p).signer(cfg))
}

/// The framing of a config's streams.
pub fn framing(cfg: &ClientConfig) -> Framing {
    cfg.provider.map_or(Framing::Sse, |p| of(p).framing())
}

/// `gen_ai.provider.name` of a config's probes.
pub fn otel_provider(cfg: &ClientConfig) -> &'static str {
    match cfg.provider {
        Some(p) => of(p).otel_provider(),
        None => cfg.endpoint.otel_provider(),
    }
}

/// The config as a hosted API takes it: the vLLM extensions (`ignore_eos`,
/// `min_tokens`, `stream_options.continuous_usage_stats`) are never sent to one, as no
/// provider knows them and Azure refuses unknown fields.
pub fn without_engine_extensions(mut cfg: ClientConfig) -> ClientConfig {
    if cfg.provider.is_some() {
        cfg.ignore_eos = false;
        cfg.min_tokens = false;
        cfg.continuous_usage_stats = false;
    }
    cfg
}

/// Checks the provider's settings: an endpoint it serves, the blocks it needs and no
/// block of another provider. The error names the setting.
pub fn check(cfg: &ClientConfig) -> Result<(), String> {
    let Some(p) = cfg.provider else {
        for (set, name) in [
            (cfg.api_version.is_some(), "api_version"),
            (cfg.aws.is_some(), "aws"),
            (cfg.google.is_some(), "google"),
        ] {
            if set {
                return Err(format!(
                    "{name} is set but provider is not (it belongs to provider: {})",
                    match name {
                        "api_version" => "azure",
                        "aws" => "bedrock",
                        _ => "vertex",
                    }
                ));
            }
        }
        return Ok(());
    };
    let host = of(p);
    if !host.endpoints().contains(&cfg.endpoint) {
        let names: Vec<&str> = host.endpoints().iter().map(|e| e.as_str()).collect();
        return Err(format!(
            "provider {} serves endpoint {}, not {}",
            p.as_str(),
            crate::exit::listed(&names, "or"),
            cfg.endpoint.as_str()
        ));
    }
    for (set, name, owner) in [
        (cfg.api_version.is_some(), "api_version", Provider::Azure),
        (cfg.aws.is_some(), "aws", Provider::Bedrock),
        (cfg.google.is_some(), "google", Provider::Vertex),
    ] {
        if set && p != owner {
            return Err(format!(
                "{name} belongs to provider: {}, not provider: {}",
                owner.as_str(),
                p.as_str()
            ));
        }
    }
    let api = host.protocol(cfg.endpoint).api();
    if cfg.tool.is_some() && !api.tools {
        return Err(format!(
            "provider {} ({}) cannot offer a function: no tool-call check",
            p.as_str(),
            cfg.endpoint.as_str()
        ));
    }
    if cfg.response_schema.is_some() && api.structured_output.is_none() {
        return Err(format!(
            "provider {} ({}) has no structured-output field: no structured_output check",
            p.as_str(),
            cfg.endpoint.as_str()
        ));
    }
    if !cfg.images.is_none() && !api.images {
        return Err(format!(
            "provider {} ({}) sends no image parts: no images",
            p.as_str(),
            cfg.endpoint.as_str()
        ));
    }
    host.check(cfg)
}

/// `s` with every byte outside RFC 3986's unreserved set percent-encoded: a model id
/// or deployment as one path segment (Bedrock's ids contain `:`).
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The base URL without its trailing `/`.
fn base(cfg: &ClientConfig) -> &str {
    cfg.base_url.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(p: Provider, endpoint: Endpoint) -> ClientConfig {
        ClientConfig {
            provider: Some(p),
            endpoint,
            model: "m".into(),
            ..ClientConfig::default()
        }
    }

    #[test]
    fn each_provider_serves_its_endpoints_and_refuses_the_others() {
        for p in Provider::ALL {
            for e in Endpoint::ALL {
                let mut c = cfg(p, e);
                match p {
                    Provider::Bedrock => c.aws = Some(Default::default()),
                    Provider::Vertex => c.google = Some(Default::default()),
                    _ => {}
                }
                let served = of(p).endpoints().contains(&e);
                let got = check(&c);
                if served {
                    assert!(
                        got.as_ref()
                            .map_or_else(|e| !e.contains("serves"), |()| true),
                        "{p:?} {e:?}: {got:?}"
                    );
                } else {
                    assert!(got.unwrap_err().contains("serves endpoint"), "{p:?} {e:?}");
                }
            }
        }
    }

    #[test]
    fn a_providers_block_on_another_provider_is_refused() {
        let mut c = cfg(Provider::Gemini, Endpoint::Chat);
        c.aws = Some(Default::default());
        assert!(
            check(&c)
                .unwrap_err()
                .contains("aws belongs to provider: bedrock")
        );
        let c = ClientConfig {
            api_version: Some("v1".into()),
            ..ClientConfig::default()
        };
        assert!(check(&c).unwrap_err().contains("provider is not"));
    }

    #[test]
    fn a_hosted_api_gets_no_engine_extensions() {
        let cfg = without_engine_extensions(ClientConfig {
            ignore_eos: true,
            min_tokens: true,
            ..cfg(Provider::Azure, Endpoint::Chat)
        });
        let spec = crate::workload::RequestSpec {
            prompt: "p".into(),
            prompt_tokens: 1,
            max_tokens: 4,
            history: Vec::new(),
            system: None,
            model: None,
        };
        let body: serde_json::Value =
            serde_json::from_slice(&protocol(&cfg).body(&cfg, &spec).unwrap()).unwrap();
        assert_eq!(
            body["stream_options"],
            serde_json::json!({"include_usage": true})
        );
        assert!(body.get("ignore_eos").is_none() && body.get("min_tokens").is_none());
        let named: Vec<&str> = crate::client::request::non_standard_fields(&cfg)
            .into_iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(named, ["stream_options.include_usage"]);
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(
            encode_segment("anthropic.claude-3-haiku-20240307-v1:0"),
            "anthropic.claude-3-haiku-20240307-v1%3A0"
        );
        assert_eq!(encode_segment("a/b c"), "a%2Fb%20c");
    }
}
