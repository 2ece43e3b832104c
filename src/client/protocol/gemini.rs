//! Google's `generateContent` (Gemini API and Vertex AI): the prompt as `contents`
//! (`user` and `model` turns of `parts`), a system message as `systemInstruction`, the
//! output cap and temperature in `generationConfig`; the model and whether it streams
//! are in the URL (`client::provider`). A streamed answer is SSE (`alt=sse`), one
//! `GenerateContentResponse` per event: `candidates[0].content.parts[]` with `text`
//! (a part with `thought: true` is reasoning), `finishReason` on the last, and
//! `usageMetadata` (`promptTokenCount`, `candidatesTokenCount`, `thoughtsTokenCount`,
//! `cachedContentTokenCount`). The stream has no end event of its own: the event
//! with a `finishReason` ends it. Errors are `{"error": {code, status, message}}`;
//! `RESOURCE_EXHAUSTED` (429) is a rate limit.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::body;
use super::{Api, FullAnswer, Protocol, parse_full};
use crate::client::chunk::{ChunkData, ChunkError, Usage};
use crate::client::config::ClientConfig;
use crate::client::sse::Event;
use crate::workload::RequestSpec;

pub struct Gemini;

#[derive(Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: [Part<'a>; 1],
}

#[derive(Serialize)]
struct Part<'a> {
    text: &'a str,
}

#[derive(Serialize)]
struct SystemInstruction<'a> {
    parts: [Part<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    max_output_tokens: u32,
    temperature: f64,
}

/// The request's turns: each earlier exchange as `user` and `model`, then the prompt.
fn contents(spec: &RequestSpec) -> Vec<Content<'_>> {
    let turn = |role, text| Content {
        role,
        parts: [Part { text }],
    };
    let mut out = Vec::with_capacity(2 * spec.history.len() + 1);
    for e in &spec.history {
        out.push(turn("user", &e.user));
        out.push(turn("model", &e.assistant));
    }
    out.push(turn("user", &spec.prompt));
    out
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default, borrow)]
    model_version: Option<Cow<'a, str>>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default, borrow)]
    content: Option<CandidateContent<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct CandidateContent<'a> {
    #[serde(default, borrow)]
    parts: Vec<ResponsePart<'a>>,
}

#[derive(Deserialize, Default)]
struct ResponsePart<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: bool,
}

#[derive(Deserialize, Clone, Copy, Default)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: Option<u32>,
    #[serde(default)]
    candidates_token_count: Option<u32>,
    #[serde(default)]
    thoughts_token_count: Option<u32>,
    #[serde(default)]
    cached_content_token_count: Option<u32>,
}

impl UsageMetadata {
    /// In OpenAI's names: output is the candidates' tokens plus the thoughts' (Gemini
    /// counts them apart; the other APIs count reasoning inside the output).
    fn usage(self) -> Usage {
        let completion = match (self.candidates_token_count, self.thoughts_token_count) {
            (None, None) => None,
            (c, t) => Some(c.unwrap_or(0).saturating_add(t.unwrap_or(0))),
        };
        Usage {
            prompt_tokens: self.prompt_token_count,
            completion_tokens: completion,
            reasoning_tokens: self.thoughts_token_count,
            cached_tokens: self.cached_content_token_count,
        }
    }
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default)]
    code: Option<u32>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    message: Option<String>,
    /// `google.rpc` details; a `RetryInfo` carries `retryDelay` (`"30s"`).
    #[serde(default)]
    details: Vec<serde_json::Value>,
}

/// The `{"error": ...}` of a whole error body.
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorObject,
}

impl ErrorObject {
    /// The `RetryInfo` detail's `retryDelay`: seconds with an `s` (`"30s"`, `"1.5s"`).
    fn retry_delay(&self) -> Option<std::time::Duration> {
        self.details.iter().find_map(|d| {
            let secs = d.get("retryDelay")?.as_str()?.strip_suffix('s')?;
            let secs: f64 = secs.parse().ok()?;
            (0.0..1e9)
                .contains(&secs)
                .then(|| std::time::Duration::from_secs_f64(secs))
        })
    }

    fn into_error(self) -> ChunkError {
        let retry_after = self.retry_delay();
        let mut s = self
            .message
            .unwrap_or_else(|| "error without a message".into());
        if let Some(st) = &self.status {
            s.push_str(&format!(" ({st})"));
        }
        if self.status.as_deref() == Some("RESOURCE_EXHAUSTED") || self.code == Some(429) {
            ChunkError::RateLimited {
                message: s,
                retry_after,
            }
        } else {
            ChunkError::Server(s)
        }
    }
}

/// What `generateContent` is and can carry.
const API: Api = Api {
    images: false,
    documents: false,
    name: "generateContent",
    path: "/v1beta/models/{model}:generateContent",
    vllm_backend: "gemini",
    aliases: &[],
    streams: true,
    generates: true,
    message_list: true,
    tools: false,
    structured_output: None,
    stream_options: false,
    max_completion_tokens: false,
    otel_operation: "chat",
    otel_provider: "gcp.gemini",
    logprobs: None,
};

impl Protocol for Gemini {
    fn api(&self) -> &'static Api {
        &API
    }

    fn body(&self, cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
        body::write_without_model(cfg, spec, |f| {
            f.put("contents", &contents(spec))?;
            if let Some(system) = &spec.system {
                f.put(
                    "systemInstruction",
                    &SystemInstruction {
                        parts: [Part { text: system }],
                    },
                )?;
            }
            f.put(
                "generationConfig",
                &GenerationConfig {
                    max_output_tokens: spec.max_tokens,
                    temperature: cfg.temperature,
                },
            )
        })
    }

    fn decode_event<'a>(&self, ev: &Event<'a>) -> Result<ChunkData<'a>, ChunkError> {
        let r: Response<'a> = serde_json::from_slice(ev.data)
            .map_err(|err| ChunkError::Malformed(err.to_string()))?;
        if let Some(e) = r.error {
            return Err(e.into_error());
        }
        let mut out = ChunkData {
            model: r.model_version,
            usage: r.usage_metadata.map(UsageMetadata::usage),
            ..ChunkData::default()
        };
        let Some(c) = r.candidates.into_iter().next() else {
            return Ok(out);
        };
        out.has_choice = true;
        out.done = c.finish_reason.is_some();
        out.finish_reason = c.finish_reason;
        for part in c.content.map(|c| c.parts).unwrap_or_default() {
            let Some(text) = part.text else { continue };
            let slot = if part.thought {
                &mut out.reasoning
            } else {
                &mut out.content
            };
            *slot = Some(match slot.take() {
                None => text,
                Some(before) => Cow::Owned(before.into_owned() + &text),
            });
        }
        Ok(out)
    }

    fn decode_full(&self, body: &[u8]) -> Result<FullAnswer, ChunkError> {
        let r: Response<'_> = parse_full(body)?;
        if let Some(e) = r.error {
            return Err(e.into_error());
        }
        let mut out = FullAnswer {
            model: r.model_version.map(Cow::into_owned),
            usage: r.usage_metadata.unwrap_or_default().usage(),
            ..FullAnswer::default()
        };
        if let Some(c) = r.candidates.into_iter().next() {
            out.finish_reason = c.finish_reason.map(Cow::into_owned);
            for part in c.content.map(|c| c.parts).unwrap_or_default() {
                let text = part.text.unwrap_or_default();
                if part.thought {
                    out.reasoning.push_str(&text);
                } else {
                    out.answer.push_str(&text);
                }
            }
        }
        Ok(out)
    }

    fn final_event(&self) -> &'static str {
        "a candidate with a `finishReason`"
    }

    fn retry_delay(&self, body: &[u8]) -> Option<std::time::Duration> {
        serde_json::from_slice::<ErrorBody>(body)
            .ok()?
            .error
            .retry_delay()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ev(data: &[u8]) -> Event<'_> {
        Event { event: b"", data }
    }

    #[test]
    fn body_has_contents_and_generation_config_but_no_model() {
        let cfg = ClientConfig {
            model: "gemini-2.0-flash".into(),
            ..ClientConfig::default()
        };
        let spec = RequestSpec {
            prompt: "hi there".into(),
            prompt_tokens: 2,
            max_tokens: 7,
            history: Vec::new(),
            system: Some("be brief".into()),
            model: None,
        };
        let v: Value = serde_json::from_slice(&Gemini.body(&cfg, &spec).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"contents": [{"role": "user", "parts": [{"text": "hi there"}]}],
                   "systemInstruction": {"parts": [{"text": "be brief"}]},
                   "generationConfig": {"maxOutputTokens": 7, "temperature": 0.0}})
        );
    }

    #[test]
    fn thoughts_text_finish_and_usage() {
        let d = Gemini.decode_event(&ev(br#"{"candidates":[{"content":{"parts":[{"text":"hm","thought":true}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash"}"#)).unwrap();
        assert_eq!(d.reasoning.as_deref(), Some("hm"));
        assert!(d.content.is_none() && d.has_choice && !d.done);
        assert_eq!(d.model.as_deref(), Some("gemini-2.5-flash"));
        let d = Gemini.decode_event(&ev(br#"{"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":6,"candidatesTokenCount":10,"thoughtsTokenCount":20,"totalTokenCount":36}}"#)).unwrap();
        assert_eq!(d.content.as_deref(), Some("ab"));
        assert!(d.done);
        assert_eq!(d.finish_reason.as_deref(), Some("MAX_TOKENS"));
        let u = d.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.reasoning_tokens),
            (Some(6), Some(30), Some(20))
        );
    }

    #[test]
    fn resource_exhausted_is_a_rate_limit() {
        let body =
            br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(
            Gemini.decode_event(&ev(body)).unwrap_err(),
            ChunkError::RateLimited {
                message: "Quota exceeded (RESOURCE_EXHAUSTED)".into(),
                retry_after: None,
            }
        );
        let with_delay = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"31s"}]}}"#;
        assert_eq!(
            Gemini.retry_delay(with_delay),
            Some(std::time::Duration::from_secs(31))
        );
        assert!(matches!(
            Gemini.decode_event(&ev(with_delay)),
            Err(ChunkError::RateLimited { retry_after: Some(d), .. }) if d.as_secs() == 31
        ));
        assert!(matches!(
            Gemini.decode_full(br#"{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}"#),
            Err(ChunkError::Server(m)) if m.contains("INVALID_ARGUMENT")
        ));
        let a = Gemini.decode_full(br#"{"candidates":[{"content":{"parts":[{"text":"t","thought":true},{"text":"4"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}}"#).unwrap();
        assert_eq!((a.answer.as_str(), a.reasoning.as_str()), ("4", "t"));
        assert_eq!(a.usage.completion_tokens, Some(1));
    }
}
