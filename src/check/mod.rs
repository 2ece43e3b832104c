//! Answer checks: what a correct answer looks like ([`CheckSpec`], from bench flags or
//! a daemon scenario), compiled once into [`Checks`], and judged on every answer whose
//! transport succeeded into the record's [`CheckResult`]s. A failed check makes a
//! request not good; it never changes its outcome (docs/measurement.md).
//!
//! Golden-set questions carry their own expected answers (`golden.rs`); their verdicts
//! feed a rolling accuracy (`accuracy.rs`), apart from the checks and from goodput.
//!
//! Pure: no IO besides reading a schema file or a golden set while compiling.

pub mod accuracy;
mod excerpt;
pub mod golden;
mod json;
mod repetition;
mod spec;
mod tool;

use regex::Regex;

pub use accuracy::AccuracyWindow;
pub use excerpt::{EXCERPT_CHARS, excerpt};
pub use golden::{Asked, GoldenError, GoldenSet};
pub use json::{MAX_JSON_DEPTH, json_depth_ok};
pub use repetition::repetition;
pub use spec::{CheckError, CheckSpec, ModelMatch, SchemaSource, ToolCallSpec};
pub use tool::{MAX_TOOL_CALLS, MAX_TOOL_NAME_BYTES, ToolCall, ToolChoice, ToolOffer};

use crate::record::{CheckKind, CheckResult};

/// How much answer text the client keeps for the checks that read it: memory per
/// request in flight stays bounded whatever the server sends.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// The answer a request got, as the checks see it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answer<'a> {
    /// The answer text (not reasoning), at most [`MAX_ANSWER_BYTES`].
    pub text: &'a str,
    /// Whether the answer was longer than `text`.
    pub truncated: bool,
    /// The response's `model` field.
    pub model: Option<&'a str>,
    pub finish_reason: Option<&'a str>,
    pub output_tokens: u32,
    /// The function calls the answer made (kept only when a check reads them).
    pub tool_calls: &'a [ToolCall],
    /// Rerank and score: the index of the document ranked first.
    pub top_document: Option<u32>,
}

/// One compiled check.
#[derive(Debug)]
enum Check {
    Regex(Regex),
    NotRegex(Regex),
    JsonSchema(Box<jsonschema::Validator>),
    ModelExact(String),
    ModelRegex(Regex),
    FinishReason(String),
    MinOutputTokens(u32),
    MaxRepetition(f64),
    ToolCall {
        name: String,
        parameters: Box<jsonschema::Validator>,
    },
    TopDocument(u32),
}

impl Check {
    fn kind(&self) -> CheckKind {
        match self {
            Check::Regex(_) => CheckKind::ExpectRegex,
            Check::NotRegex(_) => CheckKind::ExpectNotRegex,
            Check::JsonSchema(_) => CheckKind::ExpectJsonSchema,
            Check::ModelExact(_) | Check::ModelRegex(_) => CheckKind::ExpectModel,
            Check::FinishReason(_) => CheckKind::ExpectFinishReason,
            Check::MinOutputTokens(_) => CheckKind::MinOutputTokens,
            Check::MaxRepetition(_) => CheckKind::MaxRepetition,
            Check::ToolCall { .. } => CheckKind::ExpectToolCall,
            Check::TopDocument(_) => CheckKind::ExpectTopDocument,
        }
    }

    /// What a failing answer's excerpt quotes: the arguments of the expected call (or
    /// of the first call) for `expect_tool_call` when there is one, else the text.
    fn excerpt_source<'a>(&self, a: &Answer<'a>) -> &'a str {
        match self {
            Check::ToolCall { name, .. } => a
                .tool_calls
                .iter()
                .find(|c| c.name == *name)
                .or(a.tool_calls.first())
                .map_or(a.text, |c| c.arguments.as_str()),
            _ => a.text,
        }
    }

    /// Where a failing answer's excerpt starts: a little before the offending match
    /// for `expect_not_regex` (a leak late in a long answer), else at the start.
    fn excerpt_from(&self, text: &str) -> usize {
        let Check::NotRegex(re) = self else { return 0 };
        let Some(m) = re.find(text) else { return 0 };
        let mut from = m.start().saturating_sub(40);
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        from
    }

    /// `Err(reason)` when the answer fails.
    fn judge(&self, a: &Answer<'_>) -> Result<(), String> {
        let on_prefix = if a.truncated {
            format!(" (on the first {} bytes only)", a.text.len())
        } else {
            String::new()
        };
        match self {
            Check::Regex(re) if !re.is_match(a.text) => Err(format!(
                "the answer does not match /{}/{on_prefix}",
                re.as_str()
            )),
            Check::NotRegex(re) => match re.find(a.text) {
                Some(m) => Err(format!(
                    "the answer matches /{}/ at byte {}",
                    re.as_str(),
                    m.start()
                )),
                None => Ok(()),
            },
            Check::JsonSchema(v) => json::judge(v, a),
            Check::ModelExact(want) => match a.model {
                Some(got) if got == want => Ok(()),
                Some(got) => Err(format!("model {got:?} is not {want:?}")),
                None => Err("the response carried no model field".into()),
            },
            Check::ModelRegex(re) => match a.model {
                Some(got) if re.is_match(got) => Ok(()),
                Some(got) => Err(format!("model {got:?} does not match /{}/", re.as_str())),
                None => Err("the response carried no model field".into()),
            },
            Check::FinishReason(want) => match a.finish_reason {
                Some(got) if got == want => Ok(()),
                Some(got) => Err(format!("finish reason {got:?} is not {want:?}")),
                None => Err("the response carried no finish reason".into()),
            },
            Check::MinOutputTokens(min) if a.output_tokens < *min => Err(format!(
                "{} output tokens, fewer than {min}",
                a.output_tokens
            )),
            Check::MaxRepetition(max) => {
                let r = repetition(a.text);
                if r > *max {
                    Err(format!("repetition {r:.3} exceeds {max}{on_prefix}"))
                } else {
                    Ok(())
                }
            }
            Check::ToolCall { name, parameters } => tool::judge(name, parameters, a.tool_calls),
            Check::TopDocument(want) => match a.top_document {
                Some(got) if got == *want => Ok(()),
                Some(got) => Err(format!("document {got} ranked first, not document {want}")),
                None => Err("the answer ranked no document".into()),
            },
            _ => Ok(()),
        }
    }
}

/// A scenario's or a bench run's checks, compiled.
#[derive(Debug, Default)]
pub struct Checks {
    items: Vec<Check>,
}

impl Checks {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The configured kinds, in [`CheckKind::ALL`] order.
    pub fn kinds(&self) -> impl Iterator<Item = CheckKind> + '_ {
        self.items.iter().map(Check::kind)
    }

    /// Whether any check reads the answer text.
    pub fn needs_text(&self) -> bool {
        self.kinds().any(CheckKind::reads_text)
    }

    /// Whether any check reads the answer's tool calls.
    pub fn needs_tool_calls(&self) -> bool {
        self.kinds().any(CheckKind::reads_tool_calls)
    }

    /// Judges one answer. Excerpts of failures have `secrets` scrubbed out.
    pub fn judge<'s>(
        &self,
        answer: &Answer<'_>,
        secrets: impl IntoIterator<Item = &'s str> + Clone,
    ) -> Vec<CheckResult> {
        self.items
            .iter()
            .map(|c| {
                let verdict = c.judge(answer);
                let failed = verdict.is_err();
                CheckResult {
                    check: c.kind(),
                    passed: !failed,
                    reason: verdict
                        .err()
                        .map(|r| excerpt(&crate::secret::scrub(&r, secrets.clone()))),
                    excerpt: failed.then(|| {
                        let text = c.excerpt_source(answer);
                        let from = c.excerpt_from(text);
                        excerpt(&crate::secret::scrub(&text[from..], secrets.clone()))
                    }),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
