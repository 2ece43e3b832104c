//! The function calls of one answer, kept for the tool-call check and bounded like
//! the answer text: at most [`MAX_TOOL_CALLS`] calls, names cut at
//! [`MAX_TOOL_NAME_BYTES`], and at most [`MAX_ANSWER_BYTES`] of arguments in all
//! (a call cut there is marked `truncated`, so the check does not validate a prefix).

use super::chunk::ToolCallDelta;
use crate::check::{MAX_ANSWER_BYTES, MAX_TOOL_CALLS, MAX_TOOL_NAME_BYTES, ToolCall};

/// The calls so far, by the stream's call index.
#[derive(Debug, Default)]
pub struct KeptToolCalls {
    /// Whether a check reads them (else nothing is kept).
    keep: bool,
    calls: Vec<(u32, ToolCall)>,
    /// Argument bytes kept over every call.
    bytes: usize,
}

impl KeptToolCalls {
    /// An empty store that keeps calls when `keep`.
    pub fn new(keep: bool) -> Self {
        KeptToolCalls {
            keep,
            ..KeptToolCalls::default()
        }
    }

    /// Applies one streamed piece: opens the call at its index (up to the cap), names
    /// it, and appends (or, when `whole`, replaces) its arguments.
    pub fn apply(&mut self, d: &ToolCallDelta<'_>) {
        if !self.keep {
            return;
        }
        let pos = match self.calls.iter().position(|(i, _)| *i == d.index) {
            Some(p) => p,
            None if self.calls.len() < MAX_TOOL_CALLS => {
                self.calls.push((d.index, ToolCall::default()));
                self.calls.len() - 1
            }
            None => return,
        };
        let call = &mut self.calls[pos].1;
        if let Some(name) = d.name.as_deref().filter(|n| !n.is_empty()) {
            call.name = cut(name, MAX_TOOL_NAME_BYTES).to_string();
        }
        let Some(args) = d.arguments.as_deref() else {
            return;
        };
        if d.whole {
            self.bytes -= call.arguments.len();
            call.arguments.clear();
            call.truncated = false;
        }
        if call.truncated {
            return;
        }
        let room = MAX_ANSWER_BYTES - self.bytes;
        let kept = cut(args, room);
        call.arguments.push_str(kept);
        self.bytes += kept.len();
        call.truncated = kept.len() < args.len();
    }

    /// Keeps the calls of a whole answer.
    pub fn take_whole(&mut self, calls: Vec<ToolCall>) {
        for (i, c) in calls.into_iter().enumerate() {
            self.apply(&ToolCallDelta {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                name: Some(c.name.into()),
                arguments: Some(c.arguments.into()),
                whole: true,
            });
        }
    }

    /// The calls in the order they opened.
    pub fn calls(&self) -> Vec<ToolCall> {
        self.calls.iter().map(|(_, c)| c.clone()).collect()
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends at a character.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(index: u32, name: Option<&str>, args: &str, whole: bool) -> ToolCallDelta<'static> {
        ToolCallDelta {
            index,
            name: name.map(|n| n.to_string().into()),
            arguments: Some(args.to_string().into()),
            whole,
        }
    }

    #[test]
    fn fragments_concatenate_per_index_and_whole_replaces() {
        let mut k = KeptToolCalls::new(true);
        k.apply(&piece(0, Some("f"), "", false));
        k.apply(&piece(1, Some("g"), "[", false));
        k.apply(&piece(0, None, "{\"a\":", false));
        k.apply(&piece(0, None, " 1}", false));
        let calls = k.calls();
        assert_eq!(
            (calls[0].name.as_str(), calls[0].arguments.as_str()),
            ("f", "{\"a\": 1}")
        );
        assert_eq!(
            (calls[1].name.as_str(), calls[1].arguments.as_str()),
            ("g", "[")
        );
        k.apply(&piece(1, None, "[2]", true));
        assert_eq!(k.calls()[1].arguments, "[2]");
        assert_eq!(k.bytes, "{\"a\": 1}[2]".len());
    }

    #[test]
    fn bounded_in_calls_names_and_argument_bytes() {
        let mut k = KeptToolCalls::new(true);
        let long_name = "n".repeat(1000);
        for i in 0..100 {
            k.apply(&piece(i, Some(&long_name), "x", false));
        }
        assert_eq!(k.calls().len(), MAX_TOOL_CALLS);
        assert_eq!(k.calls()[0].name.len(), MAX_TOOL_NAME_BYTES);
        let huge = "é".repeat(MAX_ANSWER_BYTES);
        k.apply(&piece(0, None, &huge, false));
        k.apply(&piece(0, None, "more", false));
        let c = &k.calls()[0];
        assert!(c.truncated && c.arguments.len() <= MAX_ANSWER_BYTES);
        assert!(k.bytes <= MAX_ANSWER_BYTES);
        let mut off = KeptToolCalls::default();
        off.apply(&piece(0, Some("f"), "{}", false));
        assert!(off.calls().is_empty());
    }
}
