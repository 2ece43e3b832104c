//! A scenario's `messages:`: a fixed question as a chat message list, checked (one
//! optional system message first, then user and assistant in turn, ending with the
//! user's question) and split into the question and what goes before it.

use std::sync::Arc;

use super::schema::{ChatRole, Scenario};
use crate::workload::prompt::approx_tokens;
use crate::workload::{Exchange, Preamble};
use crate::yaml_locate::Path;

/// Most bytes of all messages together: a question, not a corpus.
const MAX_MESSAGES_BYTES: usize = 1 << 20;

/// The last user message and the preamble before it; `None` without `messages:`.
pub fn plan_messages(
    s: &Scenario,
    path: &Path,
) -> Result<Option<(String, Preamble)>, (Path, String)> {
    let Some(list) = &s.messages else {
        return Ok(None);
    };
    let key = path.key("messages");
    let bytes: usize = list.iter().map(|m| m.content.len()).sum();
    if bytes > MAX_MESSAGES_BYTES {
        return Err((
            key,
            format!("the messages are longer than {MAX_MESSAGES_BYTES} bytes"),
        ));
    }
    let mut preamble = Preamble::default();
    let mut user: Option<&str> = None;
    for (i, m) in list.iter().enumerate() {
        let at = key.index(i);
        if m.content.trim().is_empty() {
            return Err((at.key("content"), "must not be empty".into()));
        }
        let expected = match (m.role, i, user) {
            (ChatRole::System, 0, _) => {
                preamble.system = Some(Arc::from(m.content.as_str()));
                continue;
            }
            (ChatRole::System, ..) => "only the first message may be the system message",
            (ChatRole::User, _, None) => {
                user = Some(&m.content);
                continue;
            }
            (ChatRole::Assistant, _, Some(question)) => {
                preamble.exchanges.push(Exchange {
                    user: question.to_string(),
                    assistant: m.content.clone(),
                });
                user = None;
                continue;
            }
            (ChatRole::User, _, Some(_)) => "a user message must be followed by an assistant one",
            (ChatRole::Assistant, _, None) => "an assistant message must follow a user one",
        };
        return Err((at.key("role"), expected.into()));
    }
    let Some(question) = user else {
        return Err((key, "the last message must be the user's question".into()));
    };
    preamble.tokens = preamble.system.as_deref().map_or(0, approx_tokens)
        + preamble
            .exchanges
            .iter()
            .map(|e| approx_tokens(&e.user) + approx_tokens(&e.assistant))
            .sum::<u32>();
    Ok(Some((question.to_string(), preamble)))
}
