//! Request parsing for every protocol: what the engine needs from a body. The fields
//! that differ between APIs (output cap, prompt, tools) are read by the request's
//! protocol (`protocol/`). Pure: no timing, no IO.

use serde_json::Value;

use super::answer::tool::{self, OfferedTool};
use super::protocol::MockProtocol;

/// Output length when the request gives neither `max_completion_tokens` nor `max_tokens`
/// (vLLM's OpenAI server default for `/v1/completions`).
pub const DEFAULT_MAX_TOKENS: u32 = 16;
/// Largest output a request may ask for, so one request cannot make the mock build
/// gigabytes of text (a real server rejects max_tokens beyond its context the same way).
pub const MAX_OUTPUT_TOKENS: u32 = 1_000_000;

/// What the engine needs to know about one request.
#[derive(Clone, Debug, PartialEq)]
pub struct GenRequest {
    /// Echoed back in every chunk (any model name is accepted).
    pub model: String,
    pub stream: bool,
    /// `max_completion_tokens`, else `max_tokens`, else absent.
    pub max_tokens: Option<u32>,
    /// Whitespace-separated words of the prompt/messages (an approximation), plus the
    /// image tokens of its image parts.
    pub prompt_tokens: u32,
    /// Tiles of the images the request carries (each charged its prefill).
    pub image_tiles: u32,
    /// Those words, hashed in order (what the prefix cache compares).
    pub prompt_words: Vec<u64>,
    pub include_usage: bool,
    pub continuous_usage: bool,
    /// Embeddings: how many inputs (one vector each); rerank and score: documents.
    pub inputs: u32,
    /// Rerank and score: each document's relevance.
    pub ranking: Option<super::protocol::ranking::Ranking>,
    /// Alternatives per position when the request asks for logprobs.
    pub logprobs: Option<u32>,
    /// The first function offered in `tools` (chat and responses).
    pub tool: Option<OfferedTool>,
}

/// Parses a request body; the error is a message for a 400 response.
pub fn parse_request(
    protocol: &dyn MockProtocol,
    body: &[u8],
    default_model: &str,
) -> Result<GenRequest, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("request body is not valid JSON: {e}"))?;
    let Some(obj) = v.as_object() else {
        return Err("request body must be a JSON object".into());
    };
    let model = match obj.get("model") {
        None | Some(Value::Null) => default_model.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("'model' must be a string".into()),
    };
    let stream = match obj.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("'stream' must be a boolean".into()),
    };
    let mut max_tokens = None;
    for &key in protocol.max_tokens_keys() {
        // A dotted key is a field of an object (`generationConfig.maxOutputTokens`).
        let mut at = key.split('.');
        let first = obj.get(at.next().unwrap_or(key));
        match at.fold(first, |v, k| v.and_then(|v| v.get(k))) {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 && n <= u64::from(MAX_OUTPUT_TOKENS) => {
                    max_tokens = Some(n as u32)
                }
                _ => {
                    return Err(format!(
                        "'{key}' must be an integer between 1 and {MAX_OUTPUT_TOKENS}"
                    ));
                }
            },
        }
    }
    let (include_usage, continuous_usage) = match obj.get("stream_options") {
        Some(Value::Object(so)) => (
            so.get("include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            so.get("continuous_usage_stats")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ),
        _ => (false, false),
    };
    let prompt_words = protocol.prompt_words(obj)?;
    let image_tiles = super::protocol::image::tiles(&v);
    let image_tokens = image_tiles.saturating_mul(super::protocol::image::TOKENS_PER_TILE);
    let ranking = protocol.ranking(obj)?;
    let inputs = match (&ranking, obj.get("input")) {
        (Some(r), _) => r.scores.len(),
        (None, Some(Value::Array(items))) if items.iter().all(|i| !i.is_number()) => items.len(),
        _ => 1,
    };
    Ok(GenRequest {
        model,
        stream,
        max_tokens,
        prompt_tokens: u32::try_from(prompt_words.len())
            .unwrap_or(u32::MAX)
            .saturating_add(image_tokens),
        image_tiles,
        prompt_words,
        include_usage,
        continuous_usage,
        inputs: u32::try_from(inputs).unwrap_or(u32::MAX),
        ranking,
        logprobs: super::answer::logprobs::requested(obj)?,
        tool: tool::offered(obj, |t| protocol.tool_function(t)),
    })
}

#[cfg(test)]
mod tests {
    use super::super::protocol::of;
    use super::*;
    use crate::client::Endpoint;

    #[test]
    fn parses_chat_and_completions() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hello big world"},
            {"role":"user","content":[{"type":"text","text":"two words"}]}],
            "stream":true,"max_tokens":5,"max_completion_tokens":7,
            "stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#;
        let r = parse_request(of(Endpoint::Chat), body, "mock-llm").unwrap();
        assert_eq!(r.model, "m");
        assert_eq!(r.max_tokens, Some(7));
        assert_eq!(r.prompt_tokens, 5);
        assert!(r.stream && r.include_usage && r.continuous_usage);

        let r = parse_request(
            of(Endpoint::Completions),
            br#"{"prompt":["a b", [1,2,3]]}"#,
            "mock-llm",
        )
        .unwrap();
        assert_eq!(
            (r.model.as_str(), r.prompt_tokens, r.max_tokens, r.stream),
            ("mock-llm", 5, None, false)
        );
    }

    #[test]
    fn rejects_bad_requests() {
        for (ep, body) in [
            (Endpoint::Chat, &b"{"[..]),
            (Endpoint::Chat, br#"{"messages":"x"}"#),
            (Endpoint::Chat, br#"{"messages":[],"max_tokens":0}"#),
            (Endpoint::Chat, br#"{"messages":[],"max_tokens":-3}"#),
            (Endpoint::Chat, br#"{"messages":[],"max_tokens":1000001}"#),
            (Endpoint::Completions, br#"{"prompt":3}"#),
            (Endpoint::Completions, br#"[1]"#),
            (Endpoint::Responses, br#"{"input":3}"#),
            (
                Endpoint::Responses,
                br#"{"input":"x","max_output_tokens":0}"#,
            ),
            (Endpoint::Messages, br#"{"messages":{}}"#),
            (Endpoint::Embeddings, br#"{"input":{}}"#),
            (Endpoint::Rerank, br#"{"query":"q"}"#),
            (Endpoint::Rerank, br#"{"query":"q","documents":[]}"#),
            (
                Endpoint::Rerank,
                br#"{"query":"q","documents":["d"],"top_n":0}"#,
            ),
            (Endpoint::Score, br#"{"text_1":"q","text_2":[3]}"#),
        ] {
            assert!(
                parse_request(of(ep), body, "m").is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
