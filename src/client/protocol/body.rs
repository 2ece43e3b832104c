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

/// One message of a `messages` (chat, Anthropic) or `input` (Responses) list.
#[derive(Serialize)]
pub struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

/// The request as a message list: each earlier turn's user message and answer, then
/// the new user message (just that one for a single request).
pub fn messages(spec: &RequestSpec) -> Vec<Message<'_>> {
    let mut out = Vec::with_capacity(2 * spec.history.len() + 1);
    for e in &spec.history {
        out.push(Message {
            role: "user",
            content: &e.user,
        });
        out.push(Message {
            role: "assistant",
            content: &e.assistant,
        });
    }
    out.push(Message {
        role: "user",
        content: &spec.prompt,
    });
    out
}

/// The body: `model`, then the protocol's fields, then `extra_body`.
pub fn write(
    cfg: &ClientConfig,
    spec: &RequestSpec,
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
        f.put("model", &cfg.model)?;
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
