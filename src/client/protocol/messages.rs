//! The Anthropic Messages API: `POST /v1/messages` with `max_tokens`, the key in
//! `x-api-key` and the `anthropic-version` header. A stream is `message_start` (input
//! usage), content blocks (`content_block_start`, `content_block_delta` carrying a
//! `text_delta` for the answer or a `thinking_delta` for reasoning,
//! `content_block_stop`), `message_delta` (stop reason and output usage) and
//! `message_stop`; `ping` keeps the connection alive and `error` reports a failure.

use std::borrow::Cow;

use reqwest::header::HeaderName;
use serde::Deserialize;

use super::Api;
use super::{FullAnswer, Protocol, body, event_type, parse_full};
use crate::client::chunk::{self, ChunkData, ChunkError, Usage};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Messages;

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(
        default,
        rename = "type",
        borrow,
        deserialize_with = "chunk::opt_cow_str"
    )]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    message: Option<MessageObject>,
    #[serde(default)]
    usage: Option<AnthropicUsage>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(
        default,
        rename = "type",
        borrow,
        deserialize_with = "chunk::opt_cow_str"
    )]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
    stop_reason: Option<Cow<'a, str>>,
}

/// The message object: in `message_start`, and as the non-streamed body.
#[derive(Deserialize, Default)]
struct MessageObject {
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<AnthropicUsage>,
    #[serde(default)]
    error: Option<ErrorObject>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    thinking: String,
}

/// Anthropic's usage. `input_tokens` counts only the prompt tokens that were not read
/// from or written to the prompt cache, so the prompt is the sum of all three.
#[derive(Deserialize, Clone, Copy)]
struct AnthropicUsage {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    cache_read_input_tokens: Option<u32>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
}

impl AnthropicUsage {
    fn prompt_tokens(self) -> Option<u32> {
        let input = self.input_tokens?;
        Some(
            input
                .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
                .saturating_add(self.cache_creation_input_tokens.unwrap_or(0)),
        )
    }

    /// In OpenAI's names: cache reads are the cached share of the prompt.
    fn usage(self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens(),
            completion_tokens: self.output_tokens,
            reasoning_tokens: None,
            cached_tokens: self.cache_read_input_tokens,
        }
    }
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

impl ErrorObject {
    fn into_error(self) -> ChunkError {
        let mut s = self
            .message
            .unwrap_or_else(|| "error without a message".into());
        if let Some(k) = self.kind {
            s.push_str(&format!(" ({k})"));
        }
        ChunkError::Server(s)
    }
}

/// What the Messages API is and can carry.
const API: Api = Api {
    name: "messages",
    path: "/v1/messages",
    vllm_backend: "anthropic-messages",
    aliases: &["anthropic"],
    streams: true,
    generates: true,
    message_list: true,
    tools: false,
    images: true,
    documents: false,
    structured_output: None,
    stream_options: false,
    max_completion_tokens: false,
    otel_operation: "chat",
    otel_provider: "anthropic",
    logprobs: None,
};

impl Protocol for Messages {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write(cfg, spec, |f| {
            if let Some(system) = &spec.system {
                f.put("system", &**system)?;
            }
            let parts = body::image_parts(cfg, spec, body::ImageParts::Messages);
            f.put(
                "messages",
                &body::messages(spec, body::System::Separate, parts),
            )?;
            f.put("max_tokens", &spec.max_tokens)?;
            f.put("stream", &cfg.stream)?;
            f.put("temperature", &cfg.temperature)?;
            body::length_extensions(f, cfg, spec)
        })
    }

    fn decode_event<'a>(&self, ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        let e: StreamEvent<'a> = serde_json::from_slice(ev.data)
            .map_err(|err| ChunkError::Malformed(err.to_string()))?;
        let mut out = ChunkData::default();
        match event_type(ev, e.kind.as_deref()) {
            "message_start" => {
                let m = e.message.unwrap_or_default();
                out.model = m.model.map(Cow::Owned);
                out.usage = m.usage.map(|u| Usage {
                    // message_start's output_tokens is a placeholder, not a count.
                    completion_tokens: None,
                    ..u.usage()
                });
            }
            "content_block_delta" => {
                if let Some(d) = e.delta {
                    match d.kind.as_deref() {
                        Some("text_delta") => out.content = d.text,
                        Some("thinking_delta") => out.reasoning = d.thinking,
                        _ => {}
                    }
                }
                out.has_choice = true;
            }
            "message_delta" => {
                out.finish_reason = e.delta.and_then(|d| d.stop_reason);
                out.usage = e.usage.map(AnthropicUsage::usage);
            }
            "message_stop" => out.done = true,
            "error" => {
                return Err(e
                    .error
                    .map(ErrorObject::into_error)
                    .unwrap_or_else(|| ChunkError::Server("error event without an error".into())));
            }
            "ping" | "content_block_start" | "content_block_stop" => {}
            _ => out.unknown = true,
        }
        Ok(out)
    }

    fn final_event(&self) -> &'static str {
        "`message_stop`"
    }

    fn decode_full(&self, body: &[u8]) -> Result<FullAnswer, ChunkError> {
        let m: MessageObject = parse_full(body)?;
        if let Some(e) = m.error {
            return Err(e.into_error());
        }
        let mut out = FullAnswer {
            finish_reason: m.stop_reason,
            model: m.model,
            usage: m.usage.map(AnthropicUsage::usage).unwrap_or_default(),
            ..FullAnswer::default()
        };
        for block in m.content {
            match block.kind.as_str() {
                "text" => out.answer.push_str(&block.text),
                "thinking" => out.reasoning.push_str(&block.thinking),
                _ => {}
            }
        }
        Ok(out)
    }

    fn api_key_header(&self, key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-api-key"), key.to_string())
    }

    fn fixed_headers(&self, cfg: &ClientConfig) -> Vec<(HeaderName, String)> {
        vec![(
            HeaderName::from_static("anthropic-version"),
            cfg.anthropic_version.clone(),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(data: &[u8]) -> Event<'_> {
        Event { event: b"", data }
    }

    #[test]
    fn a_llama_server_stream() {
        let start = Messages.decode_event(&ev(br#"{"type":"message_start","message":{"id":"x","type":"message","role":"assistant","content":[],"model":"gemma-3-270m","stop_reason":null,"usage":{"cache_read_input_tokens":21,"input_tokens":5,"output_tokens":0}}}"#)).unwrap();
        assert_eq!(start.usage.unwrap().prompt_tokens, Some(26));
        assert_eq!(start.usage.unwrap().cached_tokens, Some(21));
        assert_eq!(start.usage.unwrap().completion_tokens, None);
        let d = Messages.decode_event(&ev(br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"<"}}"#)).unwrap();
        assert_eq!((d.content.as_deref(), d.has_choice), (Some("<"), true));
        let d = Messages.decode_event(&ev(br#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#)).unwrap();
        assert_eq!(d.reasoning.as_deref(), Some("hm"));
        let d = Messages.decode_event(&ev(br#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":5}}"#)).unwrap();
        assert_eq!(d.finish_reason.as_deref(), Some("max_tokens"));
        assert_eq!(d.usage.unwrap().completion_tokens, Some(5));
        assert!(!d.done);
        assert!(
            Messages
                .decode_event(&ev(br#"{"type":"message_stop"}"#))
                .unwrap()
                .done
        );
        for quiet in [
            &br#"{"type":"ping"}"#[..],
            br#"{"type":"content_block_stop","index":0}"#,
        ] {
            assert_eq!(
                Messages.decode_event(&ev(quiet)).unwrap(),
                ChunkData::default()
            );
        }
        assert!(
            Messages
                .decode_event(&ev(br#"{"type":"future_thing"}"#))
                .unwrap()
                .unknown
        );
    }

    #[test]
    fn errors_and_full_bodies() {
        let e = Messages
            .decode_event(&ev(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ))
            .unwrap_err();
        assert_eq!(
            e,
            ChunkError::Server("Overloaded (overloaded_error)".into())
        );
        let a = Messages.decode_full(br#"{"id":"x","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"say hi<|im"}],"model":"gemma-3-270m","stop_reason":"max_tokens","usage":{"cache_read_input_tokens":21,"input_tokens":5,"output_tokens":5}}"#).unwrap();
        assert_eq!(
            (a.answer.as_str(), a.reasoning.as_str()),
            ("say hi<|im", "t")
        );
        assert_eq!(a.usage.prompt_tokens, Some(26));
        assert_eq!(a.usage.cached_tokens, Some(21));
        assert_eq!(a.finish_reason.as_deref(), Some("max_tokens"));
        let e = Messages
            .decode_full(br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}"#)
            .unwrap_err();
        assert!(matches!(e, ChunkError::Server(m) if m.contains("max_tokens: required")));
    }

    #[test]
    fn headers() {
        let cfg = ClientConfig::default();
        assert_eq!(Messages.api_key_header("k").0.as_str(), "x-api-key");
        assert_eq!(Messages.fixed_headers(&cfg)[0].1, "2023-06-01");
    }
}
