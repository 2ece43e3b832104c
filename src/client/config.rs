//! The client's configuration: where to send, what to put in the body, timeouts, TLS
//! and hard limits. Plain data with serde defaults (the daemon's YAML embeds it) and a
//! JSON schema; [`ClientConfig::validate`] rejects what cannot work before any request.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// Which API to call: the protocol of the request body and of the answer.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Endpoint {
    /// `POST /v1/chat/completions` with the prompt as one user message.
    #[default]
    Chat,
    /// `POST /v1/completions` with a raw prompt.
    Completions,
    /// `POST /v1/responses` (OpenAI Responses API) with the prompt as `input`.
    Responses,
    /// `POST /v1/messages` (Anthropic Messages API) with the prompt as one user message.
    Messages,
    /// `POST /v1/embeddings` with the prompt as `input`; never streamed.
    Embeddings,
    /// `POST /v1/rerank` (Cohere/Jina style) with the prompt as `query` and the
    /// scenario's `documents`; never streamed.
    Rerank,
    /// `POST /v1/score` (vLLM) with the prompt as `text_1` and the scenario's
    /// `documents` as `text_2`; never streamed.
    Score,
}

impl Endpoint {
    /// Every endpoint, in a stable order.
    pub const ALL: [Endpoint; 7] = [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Responses,
        Endpoint::Messages,
        Endpoint::Embeddings,
        Endpoint::Rerank,
        Endpoint::Score,
    ];
}

/// A hosted API whose URL, auth and framing differ from the OpenAI/Anthropic shapes
/// (`client::provider`: one file each). Absent: the plain shapes of `endpoint`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Azure OpenAI: chat, responses and embeddings; `model` is the deployment; the key
    /// in `api-key` (or a bearer token from `headers`); `api_version` picks the path.
    Azure,
    /// AWS Bedrock Converse and ConverseStream (chat); SigV4 with the `aws:` credentials.
    Bedrock,
    /// Google Gemini API `generateContent`/`streamGenerateContent` (chat); key in
    /// `x-goog-api-key`.
    Gemini,
    /// Google Vertex AI, the Gemini body under `google:`'s project and location, with
    /// an OAuth2 token from a service account (or a token file).
    Vertex,
}

impl Provider {
    /// Every provider, in a stable order.
    pub const ALL: [Provider; 4] = [
        Provider::Azure,
        Provider::Bedrock,
        Provider::Gemini,
        Provider::Vertex,
    ];

    /// The config and command-line name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Azure => "azure",
            Provider::Bedrock => "bedrock",
            Provider::Gemini => "gemini",
            Provider::Vertex => "vertex",
        }
    }
}

/// Bedrock's AWS settings. Credentials come from the files named here, else the
/// standard environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`), else the shared credentials file's `profile`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AwsConfig {
    /// The region the requests are signed for (e.g. `us-east-1`).
    pub region: String,
    /// File holding the access key id.
    pub access_key_id_file: Option<PathBuf>,
    /// File holding the secret access key (needs `access_key_id_file`).
    pub secret_access_key_file: Option<PathBuf>,
    /// File holding a session token (temporary credentials).
    pub session_token_file: Option<PathBuf>,
    /// The shared credentials file's profile (default `AWS_PROFILE`, else `default`).
    pub profile: Option<String>,
}

/// Vertex AI's Google Cloud settings: where the model is, and where the OAuth2 access
/// token comes from (exactly one of `service_account_file` and `token_file`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GoogleConfig {
    /// The Google Cloud project id.
    pub project: String,
    /// The location (region) of the endpoint, e.g. `us-central1`.
    pub location: String,
    /// A service-account key file (JSON): tokens by the JWT-bearer flow at its
    /// `token_uri`, refreshed before they expire.
    pub service_account_file: Option<PathBuf>,
    /// A file holding an access token, re-read when it changes (kept fresh by
    /// something else, e.g. `gcloud auth print-access-token` on a timer).
    pub token_file: Option<PathBuf>,
}

/// Whether `name` is a valid HTTP header name (a non-empty RFC 9110 token), the one
/// check of header names in config files and on the command line.
pub fn valid_header_name(name: &str) -> bool {
    reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
}

/// The Messages API version llmprobe speaks (its event and field names).
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";

/// Everything the client needs to talk to one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ClientConfig {
    /// Server base URL, with or without a trailing `/v1` (e.g. `http://vllm:8000`).
    pub base_url: String,
    pub endpoint: Endpoint,
    /// A hosted API (`azure`, `bedrock`, `gemini`, `vertex`); absent: the plain
    /// OpenAI/Anthropic shapes.
    pub provider: Option<Provider>,
    /// Azure: the `api-version` query (`/openai/deployments/MODEL/...`); absent or `v1`:
    /// the v1 API (`/openai/v1/...`).
    pub api_version: Option<String>,
    /// Bedrock: region and credentials.
    pub aws: Option<AwsConfig>,
    /// Vertex: project, location and the token's source.
    pub google: Option<GoogleConfig>,
    /// The `model` field of the request.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>`, or as `x-api-key` for `messages`.
    pub api_key: Option<Secret>,
    /// Extra request headers; values are treated as secrets (they often carry auth).
    #[serde(with = "header_map")]
    #[schemars(with = "std::collections::BTreeMap<String, Secret>")]
    pub headers: Vec<(String, Secret)>,
    /// JSON fields merged into the body last (a top-level key here replaces ours).
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// Ask for a streamed answer (`stream: true`). `false` times the whole answer
    /// only: there is no TTFT, TPOT or ITL then. Embeddings are never streamed.
    pub stream: bool,
    /// The `anthropic-version` header sent to `messages` endpoints.
    pub anthropic_version: String,
    pub temperature: f64,
    /// Send `ignore_eos: true` (vLLM/SGLang/llama.cpp extension) so outputs reach
    /// `max_tokens`.
    pub ignore_eos: bool,
    /// Send `min_tokens = max_tokens` (vLLM extension) for exact output lengths.
    pub min_tokens: bool,
    /// Send `stream_options.include_usage` (OpenAI): the final chunk carries usage.
    pub include_usage: bool,
    /// Send `stream_options.continuous_usage_stats` (vLLM): usage on every chunk, so
    /// tokens per chunk are exact.
    pub continuous_usage_stats: bool,
    /// Chat only: also send `max_completion_tokens` (the newer OpenAI name).
    pub max_completion_tokens: bool,
    /// Send a W3C `traceparent` header (a fresh trace ID per request, sampled), so an
    /// engine exporting OpenTelemetry spans records its span under the probe's trace ID
    /// (`client::trace`). `false` for a gateway that rejects or strips it.
    pub traceparent: bool,
    /// Keep connections open and reuse them (default). `false` opens a new connection
    /// per request, so TTFT includes TCP/TLS setup as a brand-new client would see it.
    pub reuse_connections: bool,
    pub timeouts: Timeouts,
    pub tls: TlsConfig,
    pub limits: Limits,
    /// A JSON Schema the answer must follow, sent as the request's structured-output
    /// field (chat `response_format`, responses `text.format`); set from a scenario's
    /// `checks.structured_output`, never configured here.
    #[serde(skip)]
    #[schemars(skip)]
    pub response_schema: Option<serde_json::Value>,
    /// The function offered in the request's `tools` (chat and responses); set from a
    /// scenario's `checks.expect_tool_call`, never configured here.
    #[serde(skip)]
    #[schemars(skip)]
    pub tool: Option<crate::check::ToolOffer>,
    /// The documents a rerank or score request ranks against its prompt, and how many
    /// results to ask for; set from a scenario's `documents:` (bench `--document`),
    /// never configured here. Empty: none sent.
    #[serde(skip)]
    #[schemars(skip)]
    pub documents: Documents,
    /// The images the new user message carries (chat, responses, messages); set from a
    /// scenario's `images:` or `image_file:` (bench `--images`, `--image-file`), never
    /// configured here.
    #[serde(skip)]
    #[schemars(skip)]
    pub images: crate::workload::image::Images,
    /// The llm-d gateway headers (objectives, objective, fairness ID); set from a
    /// target's `llm_d:` block, never configured here. Empty: none sent.
    #[serde(skip)]
    #[schemars(skip)]
    pub llm_d: super::llm_d::LlmdHeaders,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            base_url: "http://127.0.0.1:8000".to_string(),
            endpoint: Endpoint::Chat,
            provider: None,
            api_version: None,
            aws: None,
            google: None,
            model: String::new(),
            api_key: None,
            headers: Vec::new(),
            extra_body: serde_json::Map::new(),
            stream: true,
            anthropic_version: DEFAULT_ANTHROPIC_VERSION.to_string(),
            temperature: 0.0,
            ignore_eos: false,
            min_tokens: false,
            include_usage: true,
            continuous_usage_stats: true,
            max_completion_tokens: false,
            traceparent: true,
            reuse_connections: true,
            timeouts: Timeouts::default(),
            tls: TlsConfig::default(),
            limits: Limits::default(),
            response_schema: None,
            tool: None,
            documents: Documents::default(),
            images: crate::workload::image::Images::None,
            llm_d: super::llm_d::LlmdHeaders::default(),
        }
    }
}

/// What a rerank or score request ranks: documents (shared by every request of a
/// scenario) and, for rerank, `top_n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Documents {
    pub texts: std::sync::Arc<Vec<String>>,
    /// Rerank's `top_n`: how many results to return (none: the server's default, all).
    pub top_n: Option<u32>,
}

/// Timeouts, each reported by name when it fires (outcome `timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Timeouts {
    /// TCP (and TLS) connection setup.
    #[serde(with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub connect: Duration,
    /// From sending the request to the first chunk with generated text.
    #[serde(with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub first_token: Duration,
    /// Longest silence between two pieces of the body once text has started.
    #[serde(with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub idle: Duration,
    /// The whole request, send to end of stream.
    #[serde(with = "crate::duration::human")]
    #[schemars(with = "String")]
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_token: Duration::from_secs(60),
            idle: Duration::from_secs(30),
            total: Duration::from_secs(600),
        }
    }
}

/// TLS settings for `https://` targets (rustls with the ring provider).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file with extra CA certificates, trusted in addition to the system roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain for mutual TLS (needs `client_key_file`).
    pub client_cert_file: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) for `client_cert_file`.
    pub client_key_file: Option<PathBuf>,
    /// Accept any server certificate. Only for tests and lab endpoints.
    pub insecure_skip_verify: bool,
}

/// Hard limits so a hostile or broken stream cannot exhaust memory or run forever.
/// Exceeding one ends the request as `stream_error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Longest SSE line, and largest SSE event.
    pub max_line_bytes: usize,
    /// Largest response body.
    pub max_response_bytes: u64,
    /// Most output tokens accepted in one response (as far as they can be counted
    /// while streaming).
    pub max_output_tokens: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: 1 << 20,
            max_response_bytes: 64 << 20,
            max_output_tokens: 1 << 20,
        }
    }
}

impl ClientConfig {
    /// Checks what can be checked without the network. Errors are [`UsageError`]s.
    ///
    /// [`UsageError`]: crate::exit::UsageError
    pub fn validate(&self) -> anyhow::Result<()> {
        let url = match reqwest::Url::parse(&self.base_url) {
            Ok(u) => u,
            Err(e) => crate::usage_bail!("base_url {:?} is not a URL: {e}", self.base_url),
        };
        if !matches!(url.scheme(), "http" | "https") {
            crate::usage_bail!(
                "base_url {:?} must start with http:// or https://",
                self.base_url
            );
        }
        if url.query().is_some() || url.fragment().is_some() {
            crate::usage_bail!(
                "base_url {:?} must not have a query or fragment",
                self.base_url
            );
        }
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            crate::usage_bail!(
                "temperature must be a number >= 0, got {}",
                self.temperature
            );
        }
        for (name, d) in [
            ("connect", self.timeouts.connect),
            ("first_token", self.timeouts.first_token),
            ("idle", self.timeouts.idle),
            ("total", self.timeouts.total),
        ] {
            if d.is_zero() {
                crate::usage_bail!("timeouts.{name} must be greater than zero");
            }
        }
        if self.limits.max_line_bytes == 0
            || self.limits.max_response_bytes == 0
            || self.limits.max_output_tokens == 0
        {
            crate::usage_bail!("limits must be greater than zero");
        }
        if reqwest::header::HeaderValue::from_str(&self.anthropic_version).is_err() {
            crate::usage_bail!(
                "anthropic_version {:?} is not a valid header value",
                self.anthropic_version
            );
        }
        for (name, _) in &self.headers {
            if !valid_header_name(name) {
                crate::usage_bail!("header name {name:?} is not a valid HTTP header name");
            }
        }
        match (&self.tls.client_cert_file, &self.tls.client_key_file) {
            (Some(_), None) => {
                crate::usage_bail!("tls.client_cert_file is set but tls.client_key_file is not")
            }
            (None, Some(_)) => {
                crate::usage_bail!("tls.client_key_file is set but tls.client_cert_file is not")
            }
            _ => {}
        }
        Ok(())
    }

    /// The full request URL: `base_url` with any trailing `/` and `/v1` removed, then
    /// the endpoint path.
    pub fn url(&self) -> String {
        self.url_of(self.endpoint.path())
    }

    /// The URL of `path` (such as `/v1/models`) on the same server and prefix.
    pub fn url_of(&self, path: &str) -> String {
        let base = self.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}{path}")
    }
}

/// Headers as a map in config files (`headers: {X-Team: infra}`), values redacted
/// when serialized.
mod header_map {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::secret::Secret;

    pub fn serialize<S: Serializer>(h: &[(String, Secret)], s: S) -> Result<S::Ok, S::Error> {
        let map: BTreeMap<&str, &Secret> = h.iter().map(|(k, v)| (k.as_str(), v)).collect();
        map.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, Secret)>, D::Error> {
        Ok(BTreeMap::<String, Secret>::deserialize(d)?
            .into_iter()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_accepts_base_with_or_without_v1() {
        let mut c = ClientConfig::default();
        for base in [
            "http://h:8000",
            "http://h:8000/",
            "http://h:8000/v1",
            "http://h:8000/v1/",
        ] {
            c.base_url = base.to_string();
            assert_eq!(c.url(), "http://h:8000/v1/chat/completions", "{base}");
        }
        c.endpoint = Endpoint::Completions;
        c.base_url = "https://gw.example/llm/v1".into();
        assert_eq!(c.url(), "https://gw.example/llm/v1/completions");
    }

    #[test]
    fn defaults_and_yaml_round_trip() {
        let yaml = "base_url: http://x:1\nendpoint: completions\nmodel: m\napi_key: sk-1\n\
                    headers: {X-Team: infra}\ntimeouts: {idle: 5s}\nlimits: {max_line_bytes: 4096}\n";
        let c: ClientConfig = serde_yaml_ng::from_str(yaml).unwrap();
        assert_eq!(c.endpoint, Endpoint::Completions);
        assert_eq!(c.api_key.as_ref().map(Secret::expose), Some("sk-1"));
        assert_eq!(c.headers[0].0, "X-Team");
        assert_eq!(c.timeouts.idle, Duration::from_secs(5));
        assert_eq!(c.timeouts.connect, Duration::from_secs(10));
        assert_eq!(c.limits.max_line_bytes, 4096);
        assert_eq!(c.limits.max_response_bytes, 64 << 20);
        assert!(c.include_usage && c.continuous_usage_stats);
        c.validate().unwrap();
        let out = serde_json::to_string(&c).unwrap();
        assert!(!out.contains("sk-1") && !out.contains("infra"), "{out}");
        assert!(out.contains("\"5s\""));
    }

    #[test]
    fn unknown_fields_and_bad_values_are_rejected() {
        let err = serde_yaml_ng::from_str::<ClientConfig>("base_ur: x\n").unwrap_err();
        assert!(err.to_string().contains("unknown field `base_ur`"), "{err}");
        let err = serde_yaml_ng::from_str::<ClientConfig>("timeouts: {idle: soon}\n").unwrap_err();
        assert!(
            err.to_string().contains("invalid duration \"soon\""),
            "{err}"
        );
        let bad = |f: fn(&mut ClientConfig)| {
            let mut c = ClientConfig::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            assert_eq!(crate::exit::code_for(&e), crate::exit::USAGE);
            e.to_string()
        };
        assert!(bad(|c| c.base_url = "ftp://x".into()).contains("http://"));
        assert!(bad(|c| c.base_url = "nope".into()).contains("not a URL"));
        assert!(bad(|c| c.temperature = -1.0).contains("temperature"));
        assert!(bad(|c| c.timeouts.idle = Duration::ZERO).contains("timeouts.idle"));
        assert!(bad(|c| c.headers.push(("bad header".into(), "v".into()))).contains("header"));
        assert!(bad(|c| c.tls.client_cert_file = Some("c.pem".into())).contains("client_key_file"));
    }

    #[test]
    fn schema_is_generated() {
        let schema = schemars::schema_for!(ClientConfig);
        let text = serde_json::to_string(&schema).unwrap();
        assert!(text.contains("continuous_usage_stats"));
    }
}
