//! What the mock's answer says. By default numbered tokens (` tok0 tok1 …`, one word
//! per token); with `--answer TEXT`, that text split into tokens (each starts at a
//! word, with the whitespace before it) and the answer stops when the text ends; and
//! under the wrong-answer faults, text that is fast but wrong. With a golden set
//! (`--golden`), a known question gets its reference answer as if it were `--answer`. Reasoning tokens stay
//! numbered. The faults that act on the voice ([`Act::Voice`]) act here: `Voice::new`,
//! `Voice::calling` and [`model`]. Pure: no timing, no IO.

use std::sync::Arc;

use super::tool::{OfferedTool, arguments_for};
use crate::mock::fault::{Act, FaultKind};

/// The model name the `wrong_model` fault answers with.
pub const WRONG_MODEL: &str = "mock-wrong-model";
/// What the `wrong_answer` fault says instead of the answer: wrong for every question
/// of the built-in golden set (a test holds it to that).
pub const WRONG_ANSWER: &str = "I do not know.";
/// The control tokens the `template_leak` fault puts before the answer.
pub const LEAKED_TEMPLATE: &str = "<|im_start|>assistant\n";

/// How a wrong answer is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wrong {
    /// Random words.
    Garbage { seed: u64 },
    /// The first token, over and over.
    Repeat,
    /// The answer behind an opening `{"answer": ` that never closes.
    BadJson,
    /// The answer behind chat-template control tokens.
    TemplateLeak,
}

/// The text of the answer's tokens.
#[derive(Clone, Debug, Default)]
pub struct Voice {
    /// `--answer` as tokens; `None`: numbered tokens without an end.
    answer: Option<Arc<[String]>>,
    wrong: Option<Wrong>,
    /// The function the answer calls: its tokens are then the call's arguments.
    tool: Option<Arc<str>>,
}

/// Splits `text` into tokens that concatenate back to it: each token is a word with
/// the whitespace before it (like the mock's ` tokN`).
pub fn split_answer(text: &str) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    let mut prev_space = false;
    for c in text.chars() {
        let space = c.is_whitespace();
        if tokens.is_empty() || (space && !prev_space) {
            tokens.push(String::new());
        }
        if let Some(t) = tokens.last_mut() {
            t.push(c);
        }
        prev_space = space;
    }
    tokens
}

/// The fault if it acts on the voice.
fn voice_fault(fault: Option<FaultKind>) -> Option<FaultKind> {
    fault.filter(|f| f.acts_at(Act::Voice))
}

/// The model a response names: the request's, or another one under `wrong_model`.
pub fn model(fault: Option<FaultKind>, asked: &str) -> &str {
    match voice_fault(fault) {
        Some(FaultKind::WrongModel) => WRONG_MODEL,
        _ => asked,
    }
}

impl Voice {
    /// The voice of one response: `answer` (already split) and the fault drawn for it.
    pub fn new(answer: Option<Arc<[String]>>, fault: Option<FaultKind>, seed: u64) -> Voice {
        let wrong = match voice_fault(fault) {
            Some(FaultKind::Garbage) => Some(Wrong::Garbage { seed }),
            Some(FaultKind::Repeat) => Some(Wrong::Repeat),
            Some(FaultKind::BadJson) => Some(Wrong::BadJson),
            Some(FaultKind::TemplateLeak) => Some(Wrong::TemplateLeak),
            _ => None,
        };
        let answer = match voice_fault(fault) {
            Some(FaultKind::WrongAnswer) => Some(split_answer(WRONG_ANSWER).into()),
            _ => answer,
        };
        Voice {
            answer,
            wrong,
            tool: None,
        }
    }

    /// The same voice calling the offered `tool` instead, with arguments that satisfy
    /// its parameter schema, unless a wrong-answer fault (or `no_tool_call`) hit.
    pub fn calling(self, tool: Option<&OfferedTool>, fault: Option<FaultKind>) -> Voice {
        let Some(t) = tool else { return self };
        if self.wrong.is_some()
            || matches!(
                voice_fault(fault),
                Some(FaultKind::NoToolCall | FaultKind::WrongAnswer)
            )
        {
            return self;
        }
        Voice {
            answer: Some(split_answer(&arguments_for(&t.parameters)).into()),
            wrong: None,
            tool: Some(t.name.as_str().into()),
        }
    }

    /// The function the answer calls, if it calls one.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// Answer tokens the voice has before it stops (`None`: it never stops by itself).
    /// Garbage and repeated tokens never stop: they run to the length limit.
    pub fn len(&self) -> Option<u32> {
        match self.wrong {
            Some(Wrong::Garbage { .. } | Wrong::Repeat) => None,
            _ => self
                .answer
                .as_ref()
                .map(|a| u32::try_from(a.len()).unwrap_or(u32::MAX)),
        }
    }

    /// Output token `i` when the answer starts at token `start`: numbered by `i`, or
    /// the `--answer` token `i - start`.
    fn base(&self, i: u32, start: u32) -> String {
        match &self.answer {
            Some(a) => a.get((i - start) as usize).cloned().unwrap_or_default(),
            None => token_text(i),
        }
    }

    /// The text of output token `i` (`i >= start`) of an answer that starts at token
    /// `start` (after the reasoning).
    pub fn token(&self, i: u32, start: u32) -> String {
        let first = i == start;
        match self.wrong {
            None => self.base(i, start),
            Some(Wrong::Repeat) => {
                let word = self.base(start, start);
                format!(" {}", word.trim_start())
            }
            Some(Wrong::Garbage { seed }) => garbage_word(seed, i),
            Some(Wrong::BadJson) if first => format!("{{\"answer\": {}", self.base(i, start)),
            Some(Wrong::TemplateLeak) if first => {
                format!("{LEAKED_TEMPLATE}{}", self.base(i, start))
            }
            Some(Wrong::BadJson | Wrong::TemplateLeak) => self.base(i, start),
        }
    }
}

/// The text of output token `i` (0-based): one word per token, so a client counting
/// whitespace-separated words gets the token count exactly.
pub fn token_text(i: u32) -> String {
    format!(" tok{i}")
}

/// The text of tokens `from..to`.
pub fn tokens_text(from: u32, to: u32) -> String {
    (from..to).map(token_text).collect()
}

/// A random word for token `j`: letters, digits and punctuation, 1 to 8 characters.
fn garbage_word(seed: u64, j: u32) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzQXZ0123456789#%&*;~^";
    let mut x = crate::schedule::splitmix64(seed ^ (u64::from(j) << 32 | u64::from(j)));
    let len = 1 + (x % 8) as usize;
    let mut w = String::from(" ");
    for _ in 0..len {
        x = crate::schedule::splitmix64(x);
        w.push(char::from(CHARS[(x % CHARS.len() as u64) as usize]));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &Voice, n: u32) -> String {
        (0..n).map(|i| v.token(i, 0)).collect()
    }

    #[test]
    fn token_text_is_one_word_per_token() {
        assert_eq!(tokens_text(0, 3), " tok0 tok1 tok2");
        assert_eq!(tokens_text(0, 40).split_whitespace().count(), 40);
    }

    #[test]
    fn an_answer_splits_into_tokens_that_join_back() {
        for s in [
            "The answer is 4.",
            "  two  spaces\nand a newline ",
            r#"{"a": 1}"#,
            "",
        ] {
            assert_eq!(split_answer(s).concat(), s);
        }
        assert_eq!(split_answer("a bc  d"), ["a", " bc", "  d"]);
        assert_eq!(split_answer(" x"), [" x"]);
    }

    #[test]
    fn wrong_voices() {
        let answer: Arc<[String]> = split_answer(r#"{"answer": 4}"#).into();
        let ok = Voice::new(Some(answer.clone()), None, 0);
        assert_eq!(
            (text(&ok, 2), ok.len()),
            (r#"{"answer": 4}"#.into(), Some(2))
        );
        let bad = Voice::new(Some(answer), Some(FaultKind::BadJson), 0);
        assert_eq!(text(&bad, 2), r#"{"answer": {"answer": 4}"#);
        let rep = Voice::new(None, Some(FaultKind::Repeat), 0);
        assert_eq!((text(&rep, 3), rep.len()), (" tok0 tok0 tok0".into(), None));
        let leak = Voice::new(None, Some(FaultKind::TemplateLeak), 0);
        assert_eq!(text(&leak, 2), "<|im_start|>assistant\n tok0 tok1");
        let g = Voice::new(None, Some(FaultKind::Garbage), 7);
        assert_eq!(
            text(&g, 20),
            text(&Voice::new(None, Some(FaultKind::Garbage), 7), 20)
        );
        assert_ne!(text(&g, 20), text(&Voice::new(None, None, 7), 20));
        assert_eq!(text(&g, 20).split_whitespace().count(), 20);
    }

    #[test]
    fn the_wrong_answer_is_wrong_for_every_builtin_question() {
        use crate::check::golden::{Asked, BUILTIN, GoldenSet};
        let set = Arc::new(GoldenSet::load(BUILTIN).unwrap());
        for index in 0..set.questions().len() {
            let asked = Asked {
                set: set.clone(),
                index,
            };
            assert!(asked.judge(WRONG_ANSWER).is_err(), "{index}");
        }
        let v = Voice::new(
            Some(split_answer("42").into()),
            Some(FaultKind::WrongAnswer),
            0,
        );
        assert_eq!((text(&v, 4), v.len()), (WRONG_ANSWER.into(), Some(4)));
    }

    #[test]
    fn an_offered_tool_is_called_unless_a_wrong_answer_fault_hit() {
        let tool = OfferedTool {
            name: "f".into(),
            parameters: serde_json::json!({"required": ["a", "b"],
                "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}),
        };
        let call = Voice::new(None, None, 0).calling(Some(&tool), None);
        assert_eq!(call.tool(), Some("f"));
        assert_eq!(
            (text(&call, 4), call.len()),
            (r#"{"a": "x", "b": 1}"#.into(), Some(4))
        );
        for fault in [
            FaultKind::NoToolCall,
            FaultKind::Repeat,
            FaultKind::Garbage,
            FaultKind::WrongAnswer,
        ] {
            let plain = Voice::new(None, Some(fault), 0).calling(Some(&tool), Some(fault));
            assert_eq!(plain.tool(), None, "{fault}");
        }
        let model = Some(FaultKind::WrongModel);
        assert_eq!(
            Voice::new(None, model, 0)
                .calling(Some(&tool), model)
                .tool(),
            Some("f")
        );
    }
}
