//! Writing a request body straight into JSON bytes, without building a
//! `serde_json::Value` (the prompt is not copied): each protocol puts its fields, a
//! field that `extra_body` also has is left to `extra_body`, and every `extra_body`
//! entry is written last.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::ser::{CompactFormatter, Compound};

use crate::client::config::ClientConfig;
use crate::workload::RequestSpec;

/// The body's top-level fields while they are being written.
pub struct Fields<'a, 'b> {
    map: Compound<'a, &'b mut Vec<u8>, CompactFormatter>,
    extra: &'a serde_json::Map<String, serde_json::Value>,
}

impl Fields<'_, '_> {
    /// Writes `key`, unless `extra_body` has it (then `extra_body`'s value is sent).
    pub fn put<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> serde_json::Result<()> {
        if self.extra.contains_key(key) {
            return Ok(());
        }
        self.map.serialize_entry(key, value)
    }

    /// Whether `key` is ours to write (not overridden by `extra_body`).
    pub fn ours(&self, key: &str) -> bool {
        !self.extra.contains_key(key)
    }
}

/// Where a request's system message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// First in the message list (chat).
    InList,
    /// In a field of its own: the caller writes it.
    Separate,
}

/// One message of a `messages` (chat, Anthropic) or `input` (Responses) list.
#[derive(Serialize)]
pub struct Message<'a> {
    role: &'static str,
    content: Content<'a>,
}

/// A message's content: its text, or parts (the new user message with images).
#[derive(Serialize)]
#[serde(untagged)]
pub enum Content<'a> {
    Text(&'a str),
    Parts(Vec<serde_json::Value>),
}

/// How an API writes a text part and an image part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageParts {
    /// Chat: `{type: text}` and `{type: image_url, image_url: {url}}` with a data URL.
    Chat,
    /// Responses: `{type: input_text}` and `{type: input_image, image_url}`.
    Responses,
    /// Anthropic Messages: `{type: text}` and `{type: image, source: {type: base64}}`.
    Messages,
}

/// The new user message's parts when the request carries images: its text, then each
/// image (`None` without images).
pub fn image_parts(
    cfg: &ClientConfig,
    spec: &RequestSpec,
    style: ImageParts,
) -> Option<Vec<serde_json::Value>> {
    use serde_json::json;
    let images = cfg.images.for_prompt(&spec.prompt);
    if images.is_empty() {
        return None;
    }
    let text_kind = if style == ImageParts::Responses {
        "input_text"
    } else {
        "text"
    };
    let mut parts = vec![json!({"type": text_kind, "text": spec.prompt})];
    parts.extend(images.into_iter().map(|i| match style {
        ImageParts::Chat => json!({"type": "image_url", "image_url": {"url": i.data_url()}}),
        ImageParts::Responses => json!({"type": "input_image", "image_url": i.data_url()}),
        ImageParts::Messages => json!({"type": "image", "source":
            {"type": "base64", "media_type": i.media_type, "data": i.base64}}),
    }));
    Some(parts)
}

/// The request as a message list: each earlier turn's user message and answer, then
/// the new user message (just that one for a single request), as `parts` when given
/// (its text and images). `System::InList` puts the
/// system message first, as chat does; APIs with a field of their own for it (Anthropic
/// `system`, Responses `instructions`) leave it out.
pub fn messages(
    spec: &RequestSpec,
    system: System,
    parts: Option<Vec<serde_json::Value>>,
) -> Vec<Message<'_>> {
    let mut out = Vec::with_capacity(2 * spec.history.len() + 2);
    if let (System::InList, Some(text)) = (system, &spec.system) {
        out.push(Message {
            role: "system",
            content: Content::Text(text),
        });
    }
    for e in &spec.history {
        out.push(Message {
            role: "user",
            content: Content::Text(&e.user),
        });
        out.push(Message {
            role: "assistant",
            content: Content::Text(&e.assistant),
        });
    }
    out.push(Message {
        role: "user",
        content: parts.map_or(Content::Text(&spec.prompt), Content::Parts),
    });
    out
}

/// The body: `model`, then the protocol's fields, then `extra_body`.
pub fn write(
    cfg: &ClientConfig,
    spec: &RequestSpec,
    fields: impl FnOnce(&mut Fields<'_, '_>) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    write_body(cfg, spec, true, fields)
}

/// The body of an API that names the model in its URL (Gemini, Bedrock): the
/// protocol's fields, then `extra_body`.
pub fn write_without_model(
    cfg: &ClientConfig,
    spec: &RequestSpec,
    fields: impl FnOnce(&mut Fields<'_, '_>) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    write_body(cfg, spec, false, fields)
}

fn write_body(
    cfg: &ClientConfig,
    spec: &RequestSpec,
    model: bool,
    fields: impl FnOnce(&mut Fields<'_, '_>) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    // Prompt plus a few hundred bytes of fields: one allocation in the common case.
    let history: usize = spec
        .history
        .iter()
        .map(|e| e.user.len() + e.assistant.len() + 48)
        .sum();
    let mut out = Vec::with_capacity(spec.prompt.len() + history + 256);
    {
        let mut ser = serde_json::Serializer::new(&mut out);
        let map = ser.serialize_map(None)?;
        let mut f = Fields {
            map,
            extra: &cfg.extra_body,
        };
        if model {
            f.put("model", spec.model.as_deref().unwrap_or(&cfg.model))?;
        }
        fields(&mut f)?;
        for (k, v) in &cfg.extra_body {
            f.map.serialize_entry(k, v)?;
        }
        f.map.end()?;
    }
    Ok(out)
}

/// The fields every generating protocol sends the same way when switched on: the
/// vLLM/SGLang/llama.cpp extensions for exact output lengths.
pub fn length_extensions(
    f: &mut Fields<'_, '_>,
    cfg: &ClientConfig,
    spec: &RequestSpec,
) -> serde_json::Result<()> {
    if cfg.ignore_eos {
        f.put("ignore_eos", &true)?;
    }
    if cfg.min_tokens {
        f.put("min_tokens", &spec.max_tokens)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use crate::client::{ClientConfig, Endpoint, protocol};
    use crate::workload::{Exchange, RequestSpec};

    /// A `messages:` question: a system message, one example exchange, the question.
    fn spec() -> RequestSpec {
        RequestSpec {
            prompt: "What is 3 + 3?".into(),
            prompt_tokens: 20,
            max_tokens: 4,
            history: vec![Exchange {
                user: "What is 2 + 2?".into(),
                assistant: "4".into(),
            }],
            system: Some(Arc::from("Answer with a number.")),
            model: None,
        }
    }

    fn body(endpoint: Endpoint) -> Value {
        let cfg = ClientConfig {
            endpoint,
            model: "m".into(),
            ..ClientConfig::default()
        };
        serde_json::from_slice(&protocol::of(endpoint).body(&cfg, &spec()).unwrap()).unwrap()
    }

    #[test]
    fn each_api_carries_the_system_message_its_own_way() {
        let turns = json!([
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "What is 3 + 3?"},
        ]);
        let chat = body(Endpoint::Chat);
        let mut with_system = vec![json!({"role": "system", "content": "Answer with a number."})];
        with_system.extend(turns.as_array().unwrap().iter().cloned());
        assert_eq!(chat["messages"], Value::Array(with_system));
        let anthropic = body(Endpoint::Messages);
        assert_eq!(anthropic["system"], "Answer with a number.");
        assert_eq!(anthropic["messages"], turns);
        let responses = body(Endpoint::Responses);
        assert_eq!(responses["instructions"], "Answer with a number.");
        assert_eq!(responses["input"], turns);
    }
}
