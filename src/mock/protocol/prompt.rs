//! Reading a prompt's words out of a request body, in the shapes the APIs share: a
//! `messages` array (chat, Messages), raw text or token ids (completions `prompt`,
//! embeddings `input`). Roles are not words: a conversation's turns run on as one text.

use serde_json::{Map, Value};

pub use super::super::prefix_cache::push_words;
use super::super::prefix_cache::word_hash;

/// The words of `system` (Messages) and each message's `content`.
pub fn messages(obj: &Map<String, Value>) -> Result<Vec<u64>, String> {
    let Some(Value::Array(msgs)) = obj.get("messages") else {
        return Err("'messages' must be an array".into());
    };
    let mut out = Vec::new();
    content_words(&mut out, obj.get("system"));
    for m in msgs {
        content_words(&mut out, m.get("content"));
    }
    Ok(out)
}

/// The words of a raw prompt field `key` (a string, strings, token ids or arrays of
/// them); `expected` names the shapes in the error.
pub fn raw(obj: &Map<String, Value>, key: &str, expected: &str) -> Result<Vec<u64>, String> {
    match obj.get(key) {
        Some(p @ (Value::String(_) | Value::Array(_))) => {
            let mut out = Vec::new();
            raw_prompt_words(&mut out, p);
            Ok(out)
        }
        _ => Err(format!("'{key}' must be {expected}")),
    }
}

/// Words in a chat message `content`: a string, or an array of parts with `text`.
pub fn content_words(out: &mut Vec<u64>, content: Option<&Value>) {
    match content {
        Some(Value::String(s)) => push_words(out, s),
        Some(Value::Array(parts)) => {
            for p in parts {
                match p {
                    Value::String(s) => push_words(out, s),
                    other => content_words(out, other.get("text")),
                }
            }
        }
        _ => {}
    }
}

/// A string, an array of strings, token ids (one each), or arrays of token ids.
fn raw_prompt_words(out: &mut Vec<u64>, p: &Value) {
    match p {
        Value::String(s) => push_words(out, s),
        Value::Array(items) => {
            for i in items {
                match i {
                    Value::Number(n) => out.push(word_hash(&n.to_string())),
                    other => raw_prompt_words(out, other),
                }
            }
        }
        _ => {}
    }
}
