//! What each API is and can carry ([`Api`], declared by its protocol file), and the
//! [`Endpoint`] methods that read it. Both front ends, the client, the request's
//! non-standard-field hint, the OTLP export and the fingerprint ask these instead of
//! matching on endpoints.

use crate::client::config::Endpoint;

impl Endpoint {
    /// What this API is and can carry.
    pub fn api(self) -> &'static Api {
        super::of(self).api()
    }

    pub fn path(self) -> &'static str {
        self.api().path
    }

    pub fn as_str(self) -> &'static str {
        self.api().name
    }

    /// vLLM's `backend` name for the same API, used in `--save-result` files.
    pub fn vllm_backend(self) -> &'static str {
        self.api().vllm_backend
    }

    /// Whether the answer can be streamed (everything but embeddings, rerank and score).
    pub fn can_stream(self) -> bool {
        self.api().streams
    }

    /// Whether the answer is generated text (everything but embeddings, rerank and
    /// score), so output tokens, TPOT and ITL exist.
    pub fn generates(self) -> bool {
        self.api().generates
    }

    /// `gen_ai.operation.name` of a probe of this API (OpenTelemetry GenAI conventions).
    pub fn otel_operation(self) -> &'static str {
        self.api().otel_operation
    }

    /// `gen_ai.provider.name` of a probe of this API.
    pub fn otel_provider(self) -> &'static str {
        self.api().otel_provider
    }

    /// How a request asks for logprobs and where the answer carries them; `None` when
    /// the API has none.
    pub fn logprobs(self) -> Option<&'static Logprobs> {
        self.api().logprobs.as_ref()
    }
}

/// What one API is and can carry.
#[derive(Debug)]
pub struct Api {
    /// The config and command-line name: `chat`.
    pub name: &'static str,
    /// The request path under the base URL: `/v1/chat/completions`.
    pub path: &'static str,
    /// vLLM's `--backend` name for it (`openai-chat`), accepted on the command line.
    pub vllm_backend: &'static str,
    /// Other command-line spellings with the same meaning (vLLM's `--backend` names).
    pub aliases: &'static [&'static str],
    /// The answer can be streamed.
    pub streams: bool,
    /// The answer is generated text (output tokens, TPOT and ITL exist).
    pub generates: bool,
    /// The prompt can be a message list (a system message, a conversation's history).
    pub message_list: bool,
    /// A function can be offered (a tool-call check).
    pub tools: bool,
    /// The new user message can carry images (a vision-language model).
    pub images: bool,
    /// The request ranks documents against its prompt (rerank, score): it needs a
    /// scenario's `documents`, and the answer's top document can be checked.
    pub documents: bool,
    /// The field that asks for structured output, if the API has one.
    pub structured_output: Option<Field>,
    /// vLLM's `stream_options` (usage in the stream) apply.
    pub stream_options: bool,
    /// `max_completion_tokens` is sent beside `max_tokens`.
    pub max_completion_tokens: bool,
    /// Its `gen_ai.operation.name`: the GenAI conventions' well-known value for it.
    pub otel_operation: &'static str,
    /// Its `gen_ai.provider.name`: the API's flavour, as the conventions ask of a client
    /// that cannot know what serves it (an OpenAI-compatible vLLM is `openai`;
    /// `server.address` and the model say which engine it is).
    pub otel_provider: &'static str,
    /// What it can do with logprobs (a fingerprint), if it has them.
    pub logprobs: Option<Logprobs>,
}

/// An API's logprobs: how a request asks for them and where the answer carries them.
#[derive(Debug)]
pub struct Logprobs {
    /// The request's own fields for `prompt` alone as one question, at most `max_tokens`
    /// generated, with the top `k` alternatives at each position. Model, temperature,
    /// streaming and `extra_body` are the caller's.
    pub request: fn(prompt: &str, max_tokens: u32, k: u32) -> serde_json::Value,
    /// Where the answer carries them.
    pub answer: LogprobsIn,
}

/// Where an answer carries its logprobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogprobsIn {
    /// `choices[0].logprobs`: the chat shape (`content[]`) or the legacy completions one
    /// (`tokens`, `token_logprobs`, `top_logprobs`).
    Choices,
    /// `output[].content[].logprobs[]` of the `output_text` parts (Responses).
    OutputText,
}

/// A request field: its top-level body key (an `extra_body` key of that name replaces
/// it) and how the hint on a 4xx names it.
#[derive(Debug)]
pub struct Field {
    pub key: &'static str,
    pub shown: &'static str,
}

/// The command line's spellings (`bench --endpoint`/`--backend`): llmprobe's names,
/// plus vLLM's `--endpoint` paths and `--backend` names with the same meaning.
impl std::str::FromStr for Endpoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Endpoint, String> {
        let want = s.trim().trim_end_matches('/');
        Endpoint::ALL
            .into_iter()
            .find(|e| {
                let api = e.api();
                [api.name, api.path, api.vllm_backend].contains(&want)
                    || api.aliases.contains(&want)
            })
            .ok_or_else(|| {
                let names: Vec<&str> = Endpoint::ALL.iter().map(|e| e.as_str()).collect();
                format!(
                    "unknown endpoint {s:?}: expected {} (or their paths, e.g. {})",
                    crate::exit::listed(&names, "or"),
                    Endpoint::Chat.path()
                )
            })
    }
}
