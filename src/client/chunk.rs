//! What one streamed event means for a measurement ([`ChunkData`]: generated text,
//! reasoning, usage, finish reason, end of stream), the shared error shapes, and the
//! decoder of OpenAI chat/completions chunks (both APIs stream the same chunk shape).
//! The other protocols decode their own events in `client::protocol` into the same
//! [`ChunkData`].
//!
//! Borrowed serde structs: strings are `Cow<str>` that borrow from the SSE buffer
//! unless they contain escapes, only `choices[0]` is kept (the rest of the array is
//! skipped without allocating), and unknown fields are skipped. No `serde_json::Value`
//! is built on the success path.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

/// What one chunk carried.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ChunkData<'a> {
    /// `choices[0].delta.content` (chat) or `choices[0].text` (completions).
    pub content: Option<Cow<'a, str>>,
    /// `choices[0].delta.reasoning_content` or `.reasoning` (reasoning models; when a
    /// server sends both they are the same text, so only the longer one is kept).
    pub reasoning: Option<Cow<'a, str>>,
    pub finish_reason: Option<Cow<'a, str>>,
    /// The response's `model` field, on the events that carry it.
    pub model: Option<Cow<'a, str>>,
    pub usage: Option<Usage>,
    /// The provider's own latency of the request in milliseconds (Bedrock's
    /// `metrics.latencyMs`), on the event that carries it.
    pub server_latency_ms: Option<u64>,
    /// True when the chunk had at least one choice (usage-only chunks have none).
    pub has_choice: bool,
    /// The protocol's end-of-stream event (`response.completed`, `message_stop`).
    pub done: bool,
    /// An event type the protocol's decoder does not know: ignored, and counted.
    pub unknown: bool,
    /// Pieces of function calls (chat `delta.tool_calls`, Responses function-call
    /// events). Empty, so unallocated, on every other chunk.
    pub tool_calls: Vec<ToolCallDelta<'a>>,
}

/// A piece of one function call in a stream: its name when it opens, and a fragment of
/// its arguments (concatenated per `index`), or the whole arguments (`whole`, the
/// Responses `.done` events) that replace the fragments.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ToolCallDelta<'a> {
    /// Which call: chat's `tool_calls[].index`, the Responses `output_index`.
    pub index: u32,
    pub name: Option<Cow<'a, str>>,
    pub arguments: Option<Cow<'a, str>>,
    pub whole: bool,
}

impl ChunkData<'_> {
    /// Bytes of generated text (content, reasoning and new tool-call arguments) in
    /// this chunk: a call's arguments are the answer of a tool-calling model.
    pub fn text_len(&self) -> usize {
        self.content.as_deref().map_or(0, str::len)
            + self.reasoning.as_deref().map_or(0, str::len)
            + self.tool_text().map(str::len).sum::<usize>()
    }

    /// The new argument fragments of this chunk's tool calls (not the whole-argument
    /// repeats, which carry no new text).
    pub fn tool_text(&self) -> impl Iterator<Item = &str> {
        self.tool_calls
            .iter()
            .filter(|t| !t.whole)
            .filter_map(|t| t.arguments.as_deref())
    }
}

/// Token counts a server reported, in OpenAI's names. With vLLM's
/// `continuous_usage_stats` they are on every chunk and cumulative.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(from = "OpenAiUsage")]
pub struct Usage {
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    /// Output tokens spent reasoning (included in `completion_tokens`).
    pub reasoning_tokens: Option<u32>,
    /// Prompt tokens the server read from its prefix cache (included in
    /// `prompt_tokens`): `prompt_tokens_details.cached_tokens`, Responses
    /// `input_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`.
    pub cached_tokens: Option<u32>,
}

/// `usage` as OpenAI-compatible chat/completions servers send it.
#[derive(Deserialize)]
struct OpenAiUsage {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens_details: Option<ReasoningDetails>,
    #[serde(default)]
    prompt_tokens_details: Option<CachedDetails>,
}

/// `completion_tokens_details` / `output_tokens_details`.
#[derive(Deserialize)]
pub(crate) struct ReasoningDetails {
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u32>,
}

/// `prompt_tokens_details` / `input_tokens_details`.
#[derive(Deserialize)]
pub(crate) struct CachedDetails {
    #[serde(default)]
    pub(crate) cached_tokens: Option<u32>,
}

impl From<OpenAiUsage> for Usage {
    fn from(u: OpenAiUsage) -> Usage {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
            cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
        }
    }
}

/// Why a chunk could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// The server reported an error inside the stream; its message is kept.
    #[error("server error in stream: {0}")]
    Server(String),
    #[error("malformed JSON chunk: {0}")]
    Malformed(String),
    /// The server refused for its rate limit inside the stream or the answer (an
    /// exception event of a 200 response): the failure is `http_429`, and the delay the
    /// server named, if any, pauses the daemon's target (`RequestRecord::retry_after`).
    #[error("rate limited: {message}")]
    RateLimited {
        message: String,
        retry_after: Option<std::time::Duration>,
    },
}

/// Decodes the data of one SSE event.
pub fn decode(data: &[u8]) -> Result<ChunkData<'_>, ChunkError> {
    // Checked as UTF-8 once here, serde_json need not check each string again (a
    // chunk is mostly short strings); invalid UTF-8 gets serde_json's own error.
    let raw: RawChunk<'_> = match std::str::from_utf8(data) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(data),
    }
    .map_err(|e| ChunkError::Malformed(e.to_string()))?;
    if let Some(err) = raw.error {
        return Err(ChunkError::Server(err.describe()));
    }
    if raw.object.as_deref() == Some("error") {
        // vLLM's ErrorResponse shape: {"object":"error","message":..,"type":..,"code":..}
        let msg = raw.message.map(Cow::into_owned);
        return Err(ChunkError::Server(
            msg.unwrap_or_else(|| "error object without a message".to_string()),
        ));
    }
    let mut out = ChunkData {
        usage: raw.usage,
        model: raw.model,
        ..ChunkData::default()
    };
    if let Some(choice) = raw.choices.0 {
        out.has_choice = true;
        out.finish_reason = choice.finish_reason;
        if let Some(delta) = choice.delta {
            out.tool_calls = delta
                .tool_calls
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, t)| {
                    let f = t.function.unwrap_or_default();
                    ToolCallDelta {
                        index: t.index.unwrap_or(u32::try_from(i).unwrap_or(u32::MAX)),
                        name: f.name,
                        arguments: f.arguments,
                        whole: false,
                    }
                })
                .collect();
            out.content = delta.content;
            out.reasoning = match (delta.reasoning_content, delta.reasoning) {
                (Some(a), Some(b)) => Some(if b.len() > a.len() { b } else { a }),
                (a, b) => a.or(b),
            };
        }
        if out.content.is_none() {
            out.content = choice.text;
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(default)]
    choices: FirstChoice<'a>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<RawDelta<'a>>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawDelta<'a> {
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<RawToolCall<'a>>>,
}

/// One entry of chat's `tool_calls`, streamed (`index`, fragments of `arguments`) or
/// whole (`message.tool_calls`).
#[derive(Deserialize)]
pub(crate) struct RawToolCall<'a> {
    #[serde(default)]
    pub(crate) index: Option<u32>,
    #[serde(default, borrow)]
    pub(crate) function: Option<RawFunction<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct RawFunction<'a> {
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow_str")]
    pub(crate) arguments: Option<Cow<'a, str>>,
}

/// An optional string that borrows from the input when it has no escapes. (serde's
/// own `Cow` impl always copies unless the field is a bare `Cow<str>`.)
pub(crate) fn opt_cow_str<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct V<'a>(std::marker::PhantomData<&'a ()>);
    impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
        type Value = Option<Cow<'a, str>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
    }
    d.deserialize_option(V(std::marker::PhantomData))
}

/// `choices`, keeping only the first element (`null` and `[]` give `None`).
#[derive(Default)]
struct FirstChoice<'a>(Option<RawChoice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(FirstChoice(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(FirstChoice(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_seq(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<RawChoice<'a>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        d.deserialize_option(V(std::marker::PhantomData))
    }
}

/// `error` inside a stream: an object with a message (OpenAI, vLLM) or a bare string.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum ErrorField {
    Text(String),
    Object {
        #[serde(default)]
        message: Option<String>,
        #[serde(default, rename = "type")]
        kind: Option<String>,
        #[serde(default)]
        code: Option<serde_json::Value>,
    },
    Other(serde_json::Value),
}

impl ErrorField {
    pub(crate) fn describe(self) -> String {
        match self {
            ErrorField::Text(s) => s,
            ErrorField::Object {
                message,
                kind,
                code,
            } => {
                let mut s = message.unwrap_or_else(|| "error without a message".to_string());
                let detail: Vec<String> = kind
                    .into_iter()
                    .chain(code.filter(|c| !c.is_null()).map(|c| match c {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    }))
                    .collect();
                if !detail.is_empty() {
                    s.push_str(&format!(" ({})", detail.join(", ")));
                }
                s
            }
            ErrorField::Other(v) => v.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn chat_content_borrows_when_unescaped() {
        let d = br#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#;
        let c = decode(d).unwrap();
        assert!(matches!(c.content, Some(Cow::Borrowed("Hello"))));
        assert_eq!(c.text_len(), 5);
        assert!(c.has_choice);
        assert_eq!(c.finish_reason, None);
    }

    #[test]
    fn escaped_content_is_decoded() {
        let c = decode(br#"{"choices":[{"delta":{"content":"a\nb\u00e9"}}]}"#).unwrap();
        assert_eq!(c.content.as_deref(), Some("a\nbé"));
        assert_eq!(c.text_len(), 5);
    }

    #[test]
    fn completions_text_and_finish_reason() {
        let c = decode(br#"{"choices":[{"index":0,"text":" world","finish_reason":"length","logprobs":null}]}"#).unwrap();
        assert_eq!(c.content.as_deref(), Some(" world"));
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn role_only_and_empty_deltas_carry_no_text() {
        let c = decode(br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#).unwrap();
        assert_eq!(c.text_len(), 0);
        let c = decode(br#"{"choices":[{"delta":{}}]}"#).unwrap();
        assert_eq!(c.text_len(), 0);
        assert!(c.has_choice);
    }

    #[test]
    fn usage_only_chunk() {
        let c = decode(br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}"#).unwrap();
        assert!(!c.has_choice);
        assert_eq!(
            c.usage,
            Some(Usage {
                prompt_tokens: Some(12),
                completion_tokens: Some(34),
                reasoning_tokens: None,
                cached_tokens: None,
            })
        );
        let c = decode(br#"{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":256}}}"#).unwrap();
        assert_eq!(c.usage.unwrap().cached_tokens, Some(256));
        let c =
            decode(br#"{"choices":[],"usage":{"prompt_tokens":3,"prompt_tokens_details":null}}"#)
                .unwrap();
        assert_eq!(c.usage.unwrap().cached_tokens, None);
        let c = decode(br#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":30,"completion_tokens_details":{"reasoning_tokens":20}}}"#).unwrap();
        assert_eq!(c.usage.unwrap().reasoning_tokens, Some(20));
        let c = decode(br#"{"choices":null,"usage":null}"#).unwrap();
        assert_eq!(c, ChunkData::default());
    }

    #[test]
    fn reasoning_fields_count_as_text() {
        let c = decode(br#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#).unwrap();
        assert_eq!(c.reasoning.as_deref(), Some("think"));
        let c = decode(br#"{"choices":[{"delta":{"reasoning":"hm","content":"ok"}}]}"#).unwrap();
        assert_eq!(c.text_len(), 4);
        let c =
            decode(br#"{"choices":[{"delta":{"reasoning":"same","reasoning_content":"same"}}]}"#)
                .unwrap();
        assert_eq!(c.text_len(), 4);
    }

    #[test]
    fn tool_call_fragments_are_decoded_and_count_as_text() {
        // OpenAI's shape: the first delta names the call, later ones carry fragments.
        let c = decode(br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#).unwrap();
        assert_eq!(c.tool_calls.len(), 1);
        assert_eq!(c.tool_calls[0].name.as_deref(), Some("get_weather"));
        assert_eq!(c.text_len(), 0);
        let c = decode(br#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"ci"}}]}}]}"#).unwrap();
        let t = &c.tool_calls[0];
        assert_eq!(
            (t.index, t.name.as_deref(), t.arguments.as_deref()),
            (1, None, Some("{\"ci"))
        );
        assert!(!t.whole && c.has_choice);
        assert_eq!(c.text_len(), 4);
        let c = decode(br#"{"choices":[{"delta":{"tool_calls":null,"content":"x"}}]}"#).unwrap();
        assert!(c.tool_calls.is_empty());
    }

    #[test]
    fn only_the_first_choice_is_kept() {
        let c = decode(br#"{"choices":[{"text":"a"},{"text":"bbb"},{"weird":[1,2]}]}"#).unwrap();
        assert_eq!(c.content.as_deref(), Some("a"));
    }

    #[test]
    fn errors_in_the_stream_keep_the_message() {
        let e = decode(
            br#"{"error":{"message":"out of KV cache","type":"InternalServerError","code":500}}"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            ChunkError::Server("out of KV cache (InternalServerError, 500)".into())
        );
        let e = decode(br#"{"error":"overloaded"}"#).unwrap_err();
        assert_eq!(e, ChunkError::Server("overloaded".into()));
        let e =
            decode(br#"{"object":"error","message":"bad","type":"BadRequestError","code":400}"#)
                .unwrap_err();
        assert_eq!(e, ChunkError::Server("bad".into()));
    }

    #[test]
    fn malformed_json_is_an_error() {
        assert!(matches!(
            decode(b"{\"choices\":[{"),
            Err(ChunkError::Malformed(_))
        ));
        assert!(matches!(decode(b"not json"), Err(ChunkError::Malformed(_))));
        assert!(matches!(decode(b"[1,2]"), Err(ChunkError::Malformed(_))));
        assert!(matches!(
            decode(b"{\"choices\":[{\"text\":\"\xff\"}]}"),
            Err(ChunkError::Malformed(_))
        ));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn any_content_round_trips(text in ".{0,40}", reasoning in proptest::option::of(".{0,10}")) {
            let mut delta = serde_json::json!({"content": text});
            if let Some(r) = &reasoning {
                delta["reasoning_content"] = serde_json::Value::String(r.clone());
            }
            let chunk = serde_json::json!({"choices": [{"index": 0, "delta": delta}]});
            let bytes = serde_json::to_vec(&chunk).unwrap();
            let c = decode(&bytes).unwrap();
            prop_assert_eq!(c.content.as_deref(), Some(text.as_str()));
            prop_assert_eq!(c.text_len(), text.len() + reasoning.map_or(0, |r| r.len()));
        }
    }
}
