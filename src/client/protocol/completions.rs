//! OpenAI completions: `POST /v1/completions` with a raw `prompt` (a conversation's
//! turns as one text, `RequestSpec::flat_prompt`); streamed chunks
//! carry `choices[0].text` and end with `data: [DONE]`.

use super::chat::{decode_full_openai, stream_fields};
use super::{Api, Logprobs, LogprobsIn};
use super::{FullAnswer, Protocol, body};
use crate::client::chunk::{self, ChunkData, ChunkError};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Completions;

/// What the Completions API is and can carry.
const API: Api = Api {
    name: "completions",
    path: "/v1/completions",
    vllm_backend: "openai",
    aliases: &["vllm", "sglang"],
    streams: true,
    generates: true,
    message_list: false,
    tools: false,
    images: false,
    documents: false,
    structured_output: None,
    stream_options: true,
    max_completion_tokens: false,
    otel_operation: "text_completion",
    otel_provider: "openai",
    logprobs: Some(Logprobs {
        request: |prompt, max_tokens, k| {
            serde_json::json!({"prompt": prompt, "max_tokens": max_tokens,
                "logprobs": k})
        },
        answer: LogprobsIn::Choices,
    }),
};

impl Protocol for Completions {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write(cfg, spec, |f| {
            f.put("prompt", &spec.flat_prompt())?;
            stream_fields(f, cfg)?;
            f.put("max_tokens", &spec.max_tokens)?;
            f.put("temperature", &cfg.temperature)?;
            body::length_extensions(f, cfg, spec)
        })
    }

    fn decode_event<'a>(&self, ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        chunk::decode(ev.data)
    }

    fn final_event(&self) -> &'static str {
        "`data: [DONE]`"
    }

    fn decode_full(&self, body: &[u8]) -> Result<FullAnswer, ChunkError> {
        decode_full_openai(body)
    }

    fn ends_with_done_sentinel(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_completion() {
        let a = Completions
            .decode_full(br#"{"choices":[{"text":" tok0 tok1","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#)
            .unwrap();
        assert_eq!(a.answer, " tok0 tok1");
        assert_eq!(a.usage.completion_tokens, Some(2));
    }
}
