//! OpenAI chat completions: `POST /v1/chat/completions` with the prompt as one user
//! message (after a conversation's earlier turns); streamed chunks carry `choices[0].delta.content` (answer) and
//! `delta.reasoning_content` / `delta.reasoning` (reasoning models), and end with
//! `data: [DONE]`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::body::{self, Fields};
use super::{Api, Field, Logprobs, LogprobsIn};
use super::{FullAnswer, Protocol, parse_full};
use crate::check::{ToolCall, ToolChoice, ToolOffer};
use crate::client::chunk::{self, ChunkData, ChunkError, ErrorField, Usage};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Chat;

#[derive(Serialize)]
struct StreamOptions {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    include_usage: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    continuous_usage_stats: bool,
}

/// `stream`, and `stream_options` when streaming with usage switched on: shared by
/// chat and completions.
pub(super) fn stream_fields(f: &mut Fields<'_, '_>, cfg: &ClientConfig) -> serde_json::Result<()> {
    f.put("stream", &cfg.stream)?;
    if cfg.stream && (cfg.include_usage || cfg.continuous_usage_stats) {
        f.put(
            "stream_options",
            &StreamOptions {
                include_usage: cfg.include_usage,
                continuous_usage_stats: cfg.continuous_usage_stats,
            },
        )?;
    }
    Ok(())
}

/// What the Chat API is and can carry.
const API: Api = Api {
    name: "chat",
    path: "/v1/chat/completions",
    vllm_backend: "openai-chat",
    aliases: &[],
    streams: true,
    generates: true,
    message_list: true,
    tools: true,
    images: true,
    documents: false,
    structured_output: Some(Field {
        key: "response_format",
        shown: "response_format",
    }),
    stream_options: true,
    max_completion_tokens: true,
    otel_operation: "chat",
    otel_provider: "openai",
    logprobs: Some(Logprobs {
        request: |prompt, max_tokens, k| {
            serde_json::json!({"messages": [{"role": "user", "content": prompt}],
                "max_tokens": max_tokens, "logprobs": true, "top_logprobs": k})
        },
        answer: LogprobsIn::Choices,
    }),
};

impl Protocol for Chat {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write(cfg, spec, |f| {
            let parts = body::image_parts(cfg, spec, body::ImageParts::Chat);
            f.put(
                "messages",
                &body::messages(spec, body::System::InList, parts),
            )?;
            stream_fields(f, cfg)?;
            f.put("max_tokens", &spec.max_tokens)?;
            if cfg.max_completion_tokens {
                f.put("max_completion_tokens", &spec.max_tokens)?;
            }
            f.put("temperature", &cfg.temperature)?;
            if let Some(schema) = &cfg.response_schema {
                let format = serde_json::json!({"type": "json_schema", "json_schema":
                    {"name": "answer", "schema": schema, "strict": true}});
                f.put("response_format", &format)?;
            }
            if let Some(tool) = &cfg.tool {
                put_tools(f, tool)?;
            }
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

/// Chat's `tools` (one function) and `tool_choice` when configured.
fn put_tools(f: &mut Fields<'_, '_>, tool: &ToolOffer) -> serde_json::Result<()> {
    let mut function = serde_json::json!({"name": tool.name, "parameters": tool.parameters});
    if let Some(d) = &tool.description {
        function["description"] = d.as_str().into();
    }
    f.put(
        "tools",
        &[serde_json::json!({"type": "function", "function": function})],
    )?;
    match tool.choice {
        None => Ok(()),
        Some(ToolChoice::Auto) => f.put("tool_choice", "auto"),
        Some(ToolChoice::Required) => f.put("tool_choice", "required"),
        Some(ToolChoice::Function) => f.put(
            "tool_choice",
            &serde_json::json!({"type": "function", "function": {"name": tool.name}}),
        ),
    }
}

/// A non-streamed chat or completions answer: `choices[0].message` (chat) or
/// `choices[0].text` (completions), `usage`, or an `error` object.
pub(super) fn decode_full_openai(body: &[u8]) -> Result<FullAnswer, ChunkError> {
    #[derive(Deserialize)]
    struct Full<'a> {
        #[serde(default, borrow)]
        choices: Vec<FullChoice<'a>>,
        #[serde(default)]
        usage: Option<Usage>,
        #[serde(default)]
        error: Option<ErrorField>,
        #[serde(default)]
        model: Option<String>,
    }
    #[derive(Deserialize)]
    struct FullChoice<'a> {
        #[serde(default, borrow)]
        message: Option<FullMessage<'a>>,
        #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
        text: Option<Cow<'a, str>>,
        #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
        finish_reason: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct FullMessage<'a> {
        #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
        content: Option<Cow<'a, str>>,
        #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
        reasoning_content: Option<Cow<'a, str>>,
        #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
        reasoning: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        tool_calls: Option<Vec<chunk::RawToolCall<'a>>>,
    }
    let full: Full<'_> = parse_full(body)?;
    if let Some(e) = full.error {
        return Err(ChunkError::Server(e.describe()));
    }
    let mut out = FullAnswer {
        usage: full.usage.unwrap_or_default(),
        model: full.model,
        ..FullAnswer::default()
    };
    if let Some(choice) = full.choices.into_iter().next() {
        out.finish_reason = choice.finish_reason.map(Cow::into_owned);
        if let Some(m) = choice.message {
            out.answer = m.content.map(Cow::into_owned).unwrap_or_default();
            out.reasoning = m
                .reasoning_content
                .or(m.reasoning)
                .map(Cow::into_owned)
                .unwrap_or_default();
            out.tool_calls = m
                .tool_calls
                .into_iter()
                .flatten()
                .map(|t| {
                    let f = t.function.unwrap_or_default();
                    ToolCall {
                        name: f.name.map(Cow::into_owned).unwrap_or_default(),
                        arguments: f.arguments.map(Cow::into_owned).unwrap_or_default(),
                        truncated: false,
                    }
                })
                .collect();
        } else if let Some(t) = choice.text {
            out.answer = t.into_owned();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_chat_answer_with_reasoning() {
        let body = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"4","reasoning_content":"2+2"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":4}}}"#;
        let a = Chat.decode_full(body).unwrap();
        assert_eq!((a.answer.as_str(), a.reasoning.as_str()), ("4", "2+2"));
        assert_eq!(a.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            a.usage,
            Usage {
                prompt_tokens: Some(9),
                completion_tokens: Some(5),
                reasoning_tokens: Some(4),
                cached_tokens: None,
            }
        );
        assert_eq!(a.model, None);
        let a = Chat
            .decode_full(br#"{"model":"gemma","choices":[{"message":{"content":"x"}}]}"#)
            .unwrap();
        assert_eq!(a.model.as_deref(), Some("gemma"));
    }

    #[test]
    fn full_answer_with_tool_calls() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]},"finish_reason":"tool_calls"}]}"#;
        let a = Chat.decode_full(body).unwrap();
        assert_eq!(a.answer, "");
        assert_eq!(
            a.tool_calls,
            [ToolCall {
                name: "f".into(),
                arguments: "{\"a\": 1}".into(),
                truncated: false
            }]
        );
    }

    #[test]
    fn full_answer_errors() {
        let e = Chat
            .decode_full(br#"{"error":{"message":"no","type":"BadRequestError"}}"#)
            .unwrap_err();
        assert_eq!(e, ChunkError::Server("no (BadRequestError)".into()));
        assert!(matches!(
            Chat.decode_full(b"<html>"),
            Err(ChunkError::Malformed(_))
        ));
    }
}
