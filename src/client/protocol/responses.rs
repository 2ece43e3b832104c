//! The OpenAI Responses API: `POST /v1/responses` with the prompt as `input` and
//! `max_output_tokens`. A stream is a sequence of typed events:
//! `response.output_text.delta` (answer), `response.reasoning_text.delta` and
//! `response.reasoning_summary_text.delta` (reasoning), and one terminal event,
//! `response.completed` or `response.incomplete` (with `usage`), or `response.failed`
//! / `error`. Every other `response.*` event is bookkeeping (items and parts opening
//! and closing) and carries nothing to time.

use std::borrow::Cow;

use serde::Deserialize;

use super::{Api, Field, Logprobs, LogprobsIn};
use super::{FullAnswer, Protocol, body, event_type, parse_full};
use crate::check::{ToolCall, ToolChoice, ToolOffer};
use crate::client::chunk::{
    self, CachedDetails, ChunkData, ChunkError, ReasoningDetails, ToolCallDelta, Usage,
};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Responses;

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(
        default,
        rename = "type",
        borrow,
        deserialize_with = "chunk::opt_cow_str"
    )]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    response: Option<ResponseObject>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    output_index: Option<u32>,
    #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item: Option<StreamItem<'a>>,
}

/// The `item` of `response.output_item.added` / `.done`: only function calls matter.
#[derive(Deserialize)]
struct StreamItem<'a> {
    #[serde(
        default,
        rename = "type",
        borrow,
        deserialize_with = "chunk::opt_cow_str"
    )]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "chunk::opt_cow_str")]
    arguments: Option<Cow<'a, str>>,
}

/// The `response` object: in terminal events and as the non-streamed body.
#[derive(Deserialize, Default)]
struct ResponseObject {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<ResponsesUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<ResponseError>,
    #[serde(default)]
    output: Vec<OutputItem>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct ResponsesUsage {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    output_tokens_details: Option<ReasoningDetails>,
    #[serde(default)]
    input_tokens_details: Option<CachedDetails>,
}

impl From<ResponsesUsage> for Usage {
    fn from(u: ResponsesUsage) -> Usage {
        Usage {
            prompt_tokens: u.input_tokens,
            completion_tokens: u.output_tokens,
            reasoning_tokens: u.output_tokens_details.and_then(|d| d.reasoning_tokens),
            cached_tokens: u.input_tokens_details.and_then(|d| d.cached_tokens),
        }
    }
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ResponseError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
}

/// An item of `output`: a `message` with `output_text` parts, a `reasoning` item
/// with `reasoning_text` parts and/or a `summary`, or a `function_call`.
#[derive(Deserialize)]
struct OutputItem {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    content: Vec<TextPart>,
    #[serde(default)]
    summary: Vec<TextPart>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct TextPart {
    #[serde(default)]
    text: String,
}

/// `message (code)` for an error with an optional code.
fn describe(message: Option<String>, code: Option<serde_json::Value>) -> String {
    let mut s = message.unwrap_or_else(|| "error without a message".to_string());
    match code {
        Some(serde_json::Value::String(c)) => s.push_str(&format!(" ({c})")),
        Some(c) if !c.is_null() => s.push_str(&format!(" ({c})")),
        _ => {}
    }
    s
}

impl ResponseObject {
    /// Why the response ended: the incomplete reason (e.g. `max_output_tokens`), else
    /// its status (`completed`).
    fn finish_reason(&self) -> Option<String> {
        self.incomplete_details
            .as_ref()
            .and_then(|d| d.reason.clone())
            .or_else(|| self.status.clone())
    }

    fn failure(&mut self) -> Option<ChunkError> {
        let failed = self.status.as_deref() == Some("failed");
        match self.error.take() {
            Some(e) => Some(ChunkError::Server(describe(e.message, e.code))),
            None if failed => Some(ChunkError::Server("response failed".into())),
            None => None,
        }
    }
}

/// The Responses API's `tools` (one function, flat) and `tool_choice` when configured.
fn put_tools(f: &mut body::Fields<'_, '_>, tool: &ToolOffer) -> serde_json::Result<()> {
    let mut function =
        serde_json::json!({"type": "function", "name": tool.name, "parameters": tool.parameters});
    if let Some(d) = &tool.description {
        function["description"] = d.as_str().into();
    }
    f.put("tools", &[function])?;
    match tool.choice {
        None => Ok(()),
        Some(ToolChoice::Auto) => f.put("tool_choice", "auto"),
        Some(ToolChoice::Required) => f.put("tool_choice", "required"),
        Some(ToolChoice::Function) => f.put(
            "tool_choice",
            &serde_json::json!({"type": "function", "name": tool.name}),
        ),
    }
}

/// What the Responses API is and can carry.
const API: Api = Api {
    name: "responses",
    path: "/v1/responses",
    vllm_backend: "openai-responses",
    aliases: &[],
    streams: true,
    generates: true,
    message_list: true,
    tools: true,
    images: true,
    documents: false,
    structured_output: Some(Field {
        key: "text",
        shown: "text.format",
    }),
    stream_options: false,
    max_completion_tokens: false,
    otel_operation: "chat",
    otel_provider: "openai",
    logprobs: Some(Logprobs {
        request: |prompt, max_tokens, k| {
            serde_json::json!({"input": prompt, "max_output_tokens": max_tokens,
                "top_logprobs": k, "include": ["message.output_text.logprobs"]})
        },
        answer: LogprobsIn::OutputText,
    }),
};

impl Protocol for Responses {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write(cfg, spec, |f| {
            if let Some(system) = &spec.system {
                f.put("instructions", &**system)?;
            }
            let parts = body::image_parts(cfg, spec, body::ImageParts::Responses);
            if spec.history.is_empty() && parts.is_none() {
                f.put("input", &spec.prompt)?;
            } else {
                f.put(
                    "input",
                    &body::messages(spec, body::System::Separate, parts),
                )?;
            }
            f.put("stream", &cfg.stream)?;
            f.put("max_output_tokens", &spec.max_tokens)?;
            f.put("temperature", &cfg.temperature)?;
            // A probe's answer is not worth keeping on the server.
            f.put("store", &false)?;
            if let Some(schema) = &cfg.response_schema {
                let format = serde_json::json!({"format": {"type": "json_schema",
                    "name": "answer", "schema": schema, "strict": true}});
                f.put("text", &format)?;
            }
            if let Some(tool) = &cfg.tool {
                put_tools(f, tool)?;
            }
            body::length_extensions(f, cfg, spec)
        })
    }

    fn decode_event<'a>(&self, ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        let e: StreamEvent<'a> = serde_json::from_slice(ev.data)
            .map_err(|err| ChunkError::Malformed(err.to_string()))?;
        let mut out = ChunkData::default();
        let kind = event_type(ev, e.kind.as_deref());
        match kind {
            "response.output_text.delta" => {
                out.content = e.delta;
                out.has_choice = true;
            }
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                out.reasoning = e.delta;
                out.has_choice = true;
            }
            "response.completed" | "response.incomplete" => {
                let r = e.response.unwrap_or_default();
                out.finish_reason = r.finish_reason().map(Cow::Owned);
                out.model = r.model.map(Cow::Owned);
                out.usage = r.usage.map(Usage::from);
                out.done = true;
            }
            "response.failed" => {
                let mut r = e.response.unwrap_or_default();
                return Err(r
                    .failure()
                    .unwrap_or_else(|| ChunkError::Server("response failed".into())));
            }
            "response.function_call_arguments.delta" => {
                out.tool_calls.push(ToolCallDelta {
                    index: e.output_index.unwrap_or(0),
                    arguments: e.delta,
                    ..ToolCallDelta::default()
                });
                out.has_choice = true;
            }
            "response.function_call_arguments.done" => {
                out.tool_calls.push(ToolCallDelta {
                    index: e.output_index.unwrap_or(0),
                    arguments: e.arguments,
                    whole: true,
                    ..ToolCallDelta::default()
                });
            }
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(item) = e
                    .item
                    .filter(|i| i.kind.as_deref() == Some("function_call"))
                {
                    // An added item's arguments are empty; a done item's are whole.
                    let whole = kind == "response.output_item.done";
                    out.tool_calls.push(ToolCallDelta {
                        index: e.output_index.unwrap_or(0),
                        name: item.name,
                        arguments: item.arguments.filter(|a| whole || !a.is_empty()),
                        whole,
                    });
                }
            }
            "error" => return Err(ChunkError::Server(describe(e.message, e.code))),
            k if k.starts_with("response.") => {
                // `response.created` and `response.in_progress` name the model.
                out.model = e.response.and_then(|r| r.model).map(Cow::Owned);
            }
            _ => out.unknown = true,
        }
        Ok(out)
    }

    fn final_event(&self) -> &'static str {
        "`response.completed`"
    }

    fn decode_full(&self, body: &[u8]) -> Result<FullAnswer, ChunkError> {
        let mut r: ResponseObject = parse_full(body)?;
        if let Some(e) = r.failure() {
            return Err(e);
        }
        let mut out = FullAnswer {
            finish_reason: r.finish_reason(),
            usage: r.usage.take().map(Usage::from).unwrap_or_default(),
            model: r.model.take(),
            ..FullAnswer::default()
        };
        for item in r.output {
            let text = item.content.iter().chain(&item.summary).map(|p| &p.text);
            match item.kind.as_str() {
                "message" => text.for_each(|t| out.answer.push_str(t)),
                "reasoning" => text.for_each(|t| out.reasoning.push_str(t)),
                "function_call" => out.tool_calls.push(ToolCall {
                    name: item.name.unwrap_or_default(),
                    arguments: item.arguments.unwrap_or_default(),
                    truncated: false,
                }),
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev<'a>(event: &'a [u8], data: &'a [u8]) -> Event<'a> {
        Event { event, data }
    }

    #[test]
    fn deltas_reasoning_and_completion() {
        let d = Responses
            .decode_event(&ev(
                b"response.output_text.delta",
                br#"{"type":"response.output_text.delta","item_id":"m","delta":"Hi"}"#,
            ))
            .unwrap();
        assert_eq!((d.content.as_deref(), d.has_choice), (Some("Hi"), true));
        let d = Responses
            .decode_event(&ev(
                b"",
                br#"{"type":"response.reasoning_text.delta","delta":"hmm"}"#,
            ))
            .unwrap();
        assert_eq!(d.reasoning.as_deref(), Some("hmm"));
        let d = Responses
            .decode_event(&ev(b"response.completed", br#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":26,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"input_tokens_details":{"cached_tokens":16}}}}"#))
            .unwrap();
        assert!(d.done && !d.has_choice);
        assert_eq!(d.finish_reason.as_deref(), Some("completed"));
        assert_eq!(
            d.usage,
            Some(Usage {
                prompt_tokens: Some(26),
                completion_tokens: Some(5),
                reasoning_tokens: Some(2),
                cached_tokens: Some(16),
            })
        );
        let d = Responses
            .decode_event(&ev(b"", br#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#))
            .unwrap();
        assert_eq!(
            (d.done, d.finish_reason.as_deref()),
            (true, Some("max_output_tokens"))
        );
    }

    #[test]
    fn bookkeeping_known_and_unknown_events() {
        let d = Responses
            .decode_event(&ev(b"", br#"{"type":"response.content_part.added"}"#))
            .unwrap();
        assert_eq!(d, ChunkData::default());
        let d = Responses
            .decode_event(&ev(b"", br#"{"type":"keepalive"}"#))
            .unwrap();
        assert!(d.unknown);
        // No `type` in the data: the SSE event name decides.
        let d = Responses
            .decode_event(&ev(b"response.output_text.delta", br#"{"delta":"x"}"#))
            .unwrap();
        assert_eq!(d.content.as_deref(), Some("x"));
    }

    #[test]
    fn function_call_events_and_items() {
        let d = Responses
            .decode_event(&ev(b"", br#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}"#))
            .unwrap();
        let t = &d.tool_calls[0];
        assert_eq!(
            (t.index, t.name.as_deref(), t.arguments.as_deref()),
            (1, Some("get_weather"), None)
        );
        let d = Responses
            .decode_event(&ev(b"", br#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"a\":"}"#))
            .unwrap();
        assert_eq!(d.tool_calls[0].arguments.as_deref(), Some("{\"a\":"));
        assert!(d.has_choice && d.text_len() == 5);
        let d = Responses
            .decode_event(&ev(b"", br#"{"type":"response.function_call_arguments.done","output_index":1,"arguments":"{\"a\":1}"}"#))
            .unwrap();
        assert!(d.tool_calls[0].whole && d.text_len() == 0);
        // A message item opening is bookkeeping.
        let d = Responses
            .decode_event(&ev(
                b"",
                br#"{"type":"response.output_item.added","item":{"type":"message"}}"#,
            ))
            .unwrap();
        assert!(d.tool_calls.is_empty() && !d.unknown);
        let a = Responses
            .decode_full(br#"{"status":"completed","output":[{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}]}"#)
            .unwrap();
        assert_eq!(
            a.tool_calls,
            [ToolCall {
                name: "f".into(),
                arguments: "{}".into(),
                truncated: false
            }]
        );
    }

    #[test]
    fn failures_keep_the_message() {
        let e = Responses
            .decode_event(&ev(
                b"error",
                br#"{"type":"error","code":"server_error","message":"boom"}"#,
            ))
            .unwrap_err();
        assert_eq!(e, ChunkError::Server("boom (server_error)".into()));
        let e = Responses
            .decode_event(&ev(b"", br#"{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}}"#))
            .unwrap_err();
        assert_eq!(
            e,
            ChunkError::Server("slow down (rate_limit_exceeded)".into())
        );
        assert!(matches!(
            Responses.decode_event(&ev(b"", b"{\"type\":")),
            Err(ChunkError::Malformed(_))
        ));
    }

    #[test]
    fn full_response_from_llama_server() {
        let body = br#"{"id":"resp_1","model":"gemma-3-270m","object":"response","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"think"}],"summary":[]},{"content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"<|im_end"}],"id":"msg_1","role":"assistant","status":"completed","type":"message"}],"status":"completed","usage":{"input_tokens":26,"output_tokens":5,"total_tokens":31,"input_tokens_details":{"cached_tokens":21}}}"#;
        let a = Responses.decode_full(body).unwrap();
        assert_eq!(a.answer, "<|im_end");
        assert_eq!(a.reasoning, "think");
        assert_eq!(a.usage.completion_tokens, Some(5));
        assert_eq!(a.usage.prompt_tokens, Some(26));
        let e = Responses
            .decode_full(br#"{"status":"failed","error":{"message":"bad"}}"#)
            .unwrap_err();
        assert_eq!(e, ChunkError::Server("bad".into()));
    }
}
