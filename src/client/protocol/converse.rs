//! AWS Bedrock's Converse API: `POST /model/{modelId}/converse` (whole) or
//! `/converse-stream` (AWS's binary event stream, decoded into one event per frame
//! by `client::frames`: the frame's `:event-type` as the event name, its JSON payload
//! as the data). The prompt as `messages` of `content` blocks, a system message as
//! `system`, the output cap and temperature in `inferenceConfig`; the model is in the
//! URL. A stream is `messageStart`, `contentBlockDelta` (`delta.text`, or
//! `delta.reasoningContent.text` for reasoning) between `contentBlockStart`/`Stop`,
//! `messageStop` (`stopReason`) and `metadata` (`usage` and Bedrock's own
//! `metrics.latencyMs`), which ends it. An exception frame arrives as an event named
//! by its `:exception-type`: `throttlingException` is a rate limit.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::body;
use super::{Api, FullAnswer, Protocol, parse_full};
use crate::client::chunk::{ChunkData, ChunkError, Usage};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Converse;

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: [Text<'a>; 1],
}

#[derive(Serialize)]
struct Text<'a> {
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig {
    max_tokens: u32,
    temperature: f64,
}

fn messages(spec: &RequestSpec) -> Vec<Message<'_>> {
    let turn = |role, text| Message {
        role,
        content: [Text { text }],
    };
    let mut out = Vec::with_capacity(2 * spec.history.len() + 1);
    for e in &spec.history {
        out.push(turn("user", &e.user));
        out.push(turn("assistant", &e.assistant));
    }
    out.push(turn("user", &spec.prompt));
    out
}

/// One stream event's payload (the fields of every event type this reads).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StreamPayload<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<ConverseUsage>,
    #[serde(default)]
    metrics: Option<Metrics>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Delta<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<ReasoningDelta<'a>>,
}

#[derive(Deserialize, Default)]
struct ReasoningDelta<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Clone, Copy, Default)]
#[serde(rename_all = "camelCase")]
struct ConverseUsage {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    cache_read_input_tokens: Option<u32>,
}

impl ConverseUsage {
    fn usage(self) -> Usage {
        Usage {
            // Like Anthropic's, the input count leaves out what was read from the cache.
            prompt_tokens: self
                .input_tokens
                .map(|i| i.saturating_add(self.cache_read_input_tokens.unwrap_or(0))),
            completion_tokens: self.output_tokens,
            reasoning_tokens: None,
            cached_tokens: self.cache_read_input_tokens,
        }
    }
}

#[derive(Deserialize, Clone, Copy, Default)]
#[serde(rename_all = "camelCase")]
struct Metrics {
    #[serde(default)]
    latency_ms: Option<u64>,
}

/// The whole (non-streamed) answer.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Whole {
    #[serde(default)]
    output: Option<Output>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<ConverseUsage>,
    #[serde(default)]
    metrics: Option<Metrics>,
    /// An error body (`{"message": ...}`, the kind in a header).
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct Output {
    #[serde(default)]
    message: Option<OutputMessage>,
}

#[derive(Deserialize, Default)]
struct OutputMessage {
    #[serde(default)]
    content: Vec<Block>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Block {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    reasoning_content: Option<ReasoningBlock>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ReasoningBlock {
    #[serde(default)]
    reasoning_text: Option<ReasoningText>,
}

#[derive(Deserialize, Default)]
struct ReasoningText {
    #[serde(default)]
    text: String,
}

/// What Converse is and can carry.
const API: Api = Api {
    images: false,
    documents: false,
    name: "converse",
    path: "/model/{modelId}/converse",
    vllm_backend: "bedrock-converse",
    aliases: &[],
    streams: true,
    generates: true,
    message_list: true,
    tools: false,
    structured_output: None,
    stream_options: false,
    max_completion_tokens: false,
    otel_operation: "chat",
    otel_provider: "aws.bedrock",
    logprobs: None,
};

/// The error of an exception frame named `kind` with payload `p`.
fn exception(kind: &str, p: &StreamPayload<'_>) -> ChunkError {
    let msg = format!(
        "{} ({kind})",
        p.message
            .as_deref()
            .unwrap_or("exception without a message")
    );
    if kind.eq_ignore_ascii_case("throttlingException") {
        ChunkError::RateLimited {
            message: msg,
            retry_after: None,
        }
    } else {
        ChunkError::Server(msg)
    }
}

impl Protocol for Converse {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write_without_model(cfg, spec, |f| {
            f.put("messages", &messages(spec))?;
            if let Some(system) = &spec.system {
                f.put("system", &[Text { text: system }])?;
            }
            f.put(
                "inferenceConfig",
                &InferenceConfig {
                    max_tokens: spec.max_tokens,
                    temperature: cfg.temperature,
                },
            )
        })
    }

    fn decode_event<'a>(&self, ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        let p: StreamPayload<'a> = serde_json::from_slice(ev.data)
            .map_err(|err| ChunkError::Malformed(err.to_string()))?;
        let kind = std::str::from_utf8(ev.event).unwrap_or("");
        let mut out = ChunkData::default();
        match kind {
            "contentBlockDelta" => {
                out.has_choice = true;
                if let Some(d) = p.delta {
                    out.content = d.text;
                    out.reasoning = d.reasoning_content.and_then(|r| r.text);
                }
            }
            "messageStop" => out.finish_reason = p.stop_reason.map(Cow::Owned),
            "metadata" => {
                out.usage = p.usage.map(ConverseUsage::usage);
                out.server_latency_ms = p.metrics.and_then(|m| m.latency_ms);
                out.done = true;
            }
            "messageStart" | "contentBlockStart" | "contentBlockStop" => {}
            k if k.ends_with("Exception") || k.ends_with("exception") => {
                return Err(exception(k, &p));
            }
            _ => out.unknown = true,
        }
        Ok(out)
    }

    fn decode_full(&self, body: &[u8]) -> Result<FullAnswer, ChunkError> {
        let w: Whole = parse_full(body)?;
        let Some(output) = w.output else {
            return Err(ChunkError::Server(
                w.message
                    .unwrap_or_else(|| "an answer without output".into()),
            ));
        };
        let mut out = FullAnswer {
            finish_reason: w.stop_reason,
            usage: w.usage.unwrap_or_default().usage(),
            server_latency_ms: w.metrics.and_then(|m| m.latency_ms),
            ..FullAnswer::default()
        };
        for block in output.message.map(|m| m.content).unwrap_or_default() {
            if let Some(t) = block.text {
                out.answer.push_str(&t);
            }
            if let Some(r) = block.reasoning_content.and_then(|r| r.reasoning_text) {
                out.reasoning.push_str(&r.text);
            }
        }
        Ok(out)
    }

    fn final_event(&self) -> &'static str {
        "the `metadata` event"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ev<'a>(name: &'a str, data: &'a [u8]) -> Event<'a> {
        Event {
            event: name.as_bytes(),
            data,
        }
    }

    #[test]
    fn body_has_messages_and_inference_config_but_no_model() {
        let cfg = ClientConfig::default();
        let spec = RequestSpec {
            prompt: "hi".into(),
            prompt_tokens: 1,
            max_tokens: 9,
            history: Vec::new(),
            system: None,
            model: None,
        };
        let v: Value = serde_json::from_slice(&Converse.body(&cfg, &spec).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}],
                   "inferenceConfig": {"maxTokens": 9, "temperature": 0.0}})
        );
    }

    #[test]
    fn stream_events() {
        let d = Converse
            .decode_event(&ev(
                "contentBlockDelta",
                br#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hm"}}}"#,
            ))
            .unwrap();
        assert_eq!((d.reasoning.as_deref(), d.has_choice), (Some("hm"), true));
        let d = Converse
            .decode_event(&ev(
                "contentBlockDelta",
                br#"{"contentBlockIndex":1,"delta":{"text":"4"}}"#,
            ))
            .unwrap();
        assert_eq!(d.content.as_deref(), Some("4"));
        let d = Converse
            .decode_event(&ev("messageStop", br#"{"stopReason":"max_tokens"}"#))
            .unwrap();
        assert_eq!(d.finish_reason.as_deref(), Some("max_tokens"));
        let d = Converse
            .decode_event(&ev("metadata", br#"{"usage":{"inputTokens":6,"outputTokens":30,"totalTokens":36},"metrics":{"latencyMs":195}}"#))
            .unwrap();
        assert!(d.done);
        assert_eq!(d.server_latency_ms, Some(195));
        assert_eq!(d.usage.unwrap().completion_tokens, Some(30));
        assert!(Converse.decode_event(&ev("future", b"{}")).unwrap().unknown);
        assert_eq!(
            Converse
                .decode_event(&ev(
                    "throttlingException",
                    br#"{"message":"Too many requests"}"#
                ))
                .unwrap_err(),
            ChunkError::RateLimited {
                message: "Too many requests (throttlingException)".into(),
                retry_after: None,
            }
        );
        assert!(matches!(
            Converse.decode_event(&ev("validationException", br#"{"message":"bad"}"#)),
            Err(ChunkError::Server(m)) if m == "bad (validationException)"
        ));
    }

    #[test]
    fn whole_answer() {
        let a = Converse.decode_full(br#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"t","signature":"s"}}},{"text":"4"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5},"metrics":{"latencyMs":40}}"#).unwrap();
        assert_eq!((a.answer.as_str(), a.reasoning.as_str()), ("4", "t"));
        assert_eq!(a.server_latency_ms, Some(40));
        assert_eq!(a.usage.prompt_tokens, Some(3));
        assert!(
            Converse
                .decode_full(
                    br#"{"message":"The security token included in the request is invalid."}"#
                )
                .is_err()
        );
    }
}
