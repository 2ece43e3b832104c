//! Multi-turn conversations: what a later turn carries. Each turn sends every earlier
//! user message with the answer the server actually gave to it, then a new user
//! message; the history grows turn by turn and is the prefix a server's cache can hit.

use super::RequestSpec;

/// One earlier turn: the user's message and the assistant's answer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub user: String,
    pub assistant: String,
}

/// What a fixed question (`messages:`) sends before its last user message: a system
/// message and example exchanges, the same on every request, and their tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Preamble {
    pub system: Option<std::sync::Arc<str>>,
    pub exchanges: Vec<Exchange>,
    pub tokens: u32,
}

/// A conversation in progress: its exchanges so far and their tokens. Requests take
/// the history with them and give it back with their answer, so it is never copied.
#[derive(Debug, Default)]
pub struct History {
    exchanges: Vec<Exchange>,
    tokens: u32,
}

impl History {
    /// The request of the next turn: the history so far, then `next`'s prompt as the
    /// new user message. Its prompt tokens are the history's plus the new message's.
    pub fn request(&mut self, next: RequestSpec) -> RequestSpec {
        RequestSpec {
            prompt_tokens: self.tokens.saturating_add(next.prompt_tokens),
            history: std::mem::take(&mut self.exchanges),
            ..next
        }
    }

    /// Takes back the request just sent, with its answer and the answer's tokens: its
    /// user message and the answer become the latest exchange.
    pub fn answered(&mut self, sent: RequestSpec, answer: String, answer_tokens: u32) {
        self.tokens = sent.prompt_tokens.saturating_add(answer_tokens);
        self.exchanges = sent.history;
        self.exchanges.push(Exchange {
            user: sent.prompt,
            assistant: answer,
        });
    }

    /// Exchanges so far.
    pub fn len(&self) -> usize {
        self.exchanges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str, tokens: u32) -> RequestSpec {
        RequestSpec {
            prompt: text.into(),
            prompt_tokens: tokens,
            max_tokens: 2,
            history: Vec::new(),
            system: None,
            model: None,
        }
    }

    #[test]
    fn each_turn_carries_every_earlier_exchange_and_its_tokens() {
        let mut h = History::default();
        let first = h.request(user("hello there", 2));
        assert_eq!((first.prompt_tokens, first.history.len()), (2, 0));
        assert_eq!(first.flat_prompt(), "hello there");
        h.answered(first, " tok0 tok1".into(), 2);
        assert_eq!(h.len(), 1);

        let second = h.request(user("and now", 2));
        assert_eq!(second.prompt_tokens, 2 + 2 + 2);
        assert_eq!(
            second.history,
            vec![Exchange {
                user: "hello there".into(),
                assistant: " tok0 tok1".into()
            }]
        );
        assert_eq!(second.prompt, "and now");
        assert!(
            h.is_empty(),
            "the request holds the history while it is out"
        );
        // The flat text starts with the first turn's prompt and answer, byte for byte.
        assert_eq!(second.flat_prompt(), "hello there tok0 tok1\nand now");
        h.answered(second, " tok0".into(), 1);

        let third = h.request(user("last one", 2));
        assert_eq!(third.prompt_tokens, 6 + 1 + 2);
        assert_eq!(third.history.len(), 2);
        assert_eq!(third.history[1].user, "and now");
        assert_eq!(
            third.flat_prompt(),
            "hello there tok0 tok1\nand now tok0\nlast one"
        );
    }
}
