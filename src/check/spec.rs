//! [`CheckSpec`]: the checks as configured (bench flags and the daemon's `checks:`),
//! and their compilation into [`Checks`] with a clear error for a bad regex or schema.

use std::path::PathBuf;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::tool::{ToolChoice, ToolOffer};
use super::{Check, Checks};
use crate::record::CheckKind;

/// Largest compiled regex: a pattern is configuration, so one that needs more is a
/// mistake, not a need.
const MAX_REGEX_BYTES: usize = 1 << 20;
/// Largest schema file read.
const MAX_SCHEMA_FILE_BYTES: u64 = 1 << 20;

/// What a correct answer looks like. Every field is optional; each one set is a check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// The answer text must match this regex (Rust `regex` syntax, unanchored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_regex: Option<String>,
    /// The answer text must not match this regex (e.g. leaked `<\|im_start\|>` tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_not_regex: Option<String>,
    /// The answer must parse as JSON and validate against this JSON Schema: inline, or
    /// `{file: PATH}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_json_schema: Option<SchemaSource>,
    /// The response's `model` field: a name (exact), or `{regex: PATTERN}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_model: Option<ModelMatch>,
    /// The finish reason as the protocol spells it (`stop`, `length`; `end_turn` for
    /// messages, `completed` for responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_finish_reason: Option<String>,
    /// At least this many output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_output_tokens: Option<u32>,
    /// Degenerate output: the share of the answer's word trigrams that repeat an
    /// earlier one must not exceed this (0..1; 0.5 is a good start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repetition: Option<f64>,
    /// Also ask for the `expect_json_schema` schema with the request's structured-output
    /// field (chat `response_format`, responses `text.format`), for servers that
    /// enforce it (vLLM, llama.cpp, OpenAI).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured_output: bool,
    /// The request offers this function (chat `tools`, responses `tools`; nothing is
    /// offered without this check), and the answer must call it with arguments that
    /// validate against its `parameters` schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_tool_call: Option<ToolCallSpec>,
    /// Rerank and score: the document (its 0-based index in `documents`) that must be
    /// ranked first: the highest score, the lower index on a tie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_top_document: Option<u32>,
}

/// `expect_tool_call`: the function offered and expected to be called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The function's name, offered in the request and expected in the answer.
    pub name: String,
    /// The function's description, sent with it (none: no description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the function's parameters, inline or `{file: PATH}`; the
    /// call's arguments must validate against it (default `{"type": "object"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<SchemaSource>,
    /// Send `tool_choice`: `auto`, `required`, or `function` (this function). Unset:
    /// no `tool_choice` (the server's default, `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

impl ToolCallSpec {
    /// The parameter schema as JSON (a file is read, bounded).
    pub fn parameters(&self) -> Result<serde_json::Value, super::CheckError> {
        match &self.parameters {
            Some(src) => src.load().map_err(|e| CheckError {
                field: "expect_tool_call",
                message: format!("parameters: {}", e.message),
                position: None,
            }),
            None => Ok(serde_json::json!({"type": "object"})),
        }
    }

    /// The offer the request carries, with `parameters` already loaded.
    pub fn offer(&self, parameters: serde_json::Value) -> ToolOffer {
        ToolOffer {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters,
            choice: self.tool_choice,
        }
    }
}

/// A JSON Schema, inline or in a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SchemaSource {
    File {
        /// A JSON Schema file.
        file: PathBuf,
    },
    Inline(serde_json::Value),
}

/// How the response's model must look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ModelMatch {
    Exact(String),
    Regex { regex: String },
}

/// A check that cannot be compiled. `field` names the check (`expect_regex`), so the
/// config can point at its line, and `position` the line and column (1-based) inside
/// the value where the problem is, when known (a regex's syntax error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CheckError {
    pub field: &'static str,
    pub message: String,
    pub position: Option<(usize, usize)>,
}

fn err(field: &'static str, message: impl Into<String>) -> CheckError {
    CheckError {
        field,
        message: message.into(),
        position: None,
    }
}

/// Compiles `pattern`. A syntax error is one line (the regex crate's own message is a
/// multi-line drawing) with where it is in the pattern, so a config error can point at
/// the line of a pattern that spans several.
fn regex(field: &'static str, pattern: &str) -> Result<Regex, CheckError> {
    RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_BYTES)
        .build()
        .map_err(|e| {
            let located = match regex_syntax::Parser::new().parse(pattern) {
                Err(regex_syntax::Error::Parse(p)) => Some((p.kind().to_string(), *p.span())),
                Err(regex_syntax::Error::Translate(t)) => Some((t.kind().to_string(), *t.span())),
                _ => None,
            };
            match located {
                Some((what, span)) => {
                    let (line, column) = (span.start.line, span.start.column);
                    let place = if pattern.contains('\n') {
                        format!("line {line}, column {column} of the pattern")
                    } else {
                        format!("column {column} of the pattern")
                    };
                    CheckError {
                        field,
                        message: format!("invalid regex: {what} (at {place})"),
                        position: Some((line, column)),
                    }
                }
                None => err(field, format!("invalid regex: {e}")),
            }
        })
}

impl SchemaSource {
    /// The schema as JSON (a file is read, bounded in size).
    pub fn load(&self) -> Result<serde_json::Value, CheckError> {
        const FIELD: &str = "expect_json_schema";
        match self {
            SchemaSource::Inline(v) => Ok(v.clone()),
            SchemaSource::File { file } => {
                use std::io::Read;
                let f = std::fs::File::open(file)
                    .map_err(|e| err(FIELD, format!("cannot read {}: {e}", file.display())))?;
                let mut text = String::new();
                f.take(MAX_SCHEMA_FILE_BYTES + 1)
                    .read_to_string(&mut text)
                    .map_err(|e| err(FIELD, format!("cannot read {}: {e}", file.display())))?;
                if text.len() as u64 > MAX_SCHEMA_FILE_BYTES {
                    return Err(err(
                        FIELD,
                        format!(
                            "{} is larger than {MAX_SCHEMA_FILE_BYTES} bytes",
                            file.display()
                        ),
                    ));
                }
                serde_json::from_str(&text)
                    .map_err(|e| err(FIELD, format!("{} is not JSON: {e}", file.display())))
            }
        }
    }
}

impl CheckSpec {
    pub fn is_empty(&self) -> bool {
        *self == CheckSpec::default()
    }

    /// The kinds of the checks set, in [`CheckKind::ALL`] order, before compiling:
    /// what a probe must carry for them.
    pub fn kinds(&self) -> Vec<CheckKind> {
        let set = |kind: CheckKind| match kind {
            CheckKind::ExpectRegex => self.expect_regex.is_some(),
            CheckKind::ExpectNotRegex => self.expect_not_regex.is_some(),
            CheckKind::ExpectJsonSchema => self.expect_json_schema.is_some(),
            CheckKind::ExpectModel => self.expect_model.is_some(),
            CheckKind::ExpectFinishReason => self.expect_finish_reason.is_some(),
            CheckKind::MinOutputTokens => self.min_output_tokens.is_some(),
            CheckKind::MaxRepetition => self.max_repetition.is_some(),
            CheckKind::ExpectToolCall => self.expect_tool_call.is_some(),
            CheckKind::ExpectTopDocument => self.expect_top_document.is_some(),
        };
        CheckKind::ALL.into_iter().filter(|k| set(*k)).collect()
    }

    /// Compiles every check set, in [`crate::record::CheckKind::ALL`] order.
    pub fn compile(&self) -> Result<Checks, CheckError> {
        let mut items = Vec::new();
        if let Some(p) = &self.expect_regex {
            items.push(Check::Regex(regex("expect_regex", p)?));
        }
        if let Some(p) = &self.expect_not_regex {
            items.push(Check::NotRegex(regex("expect_not_regex", p)?));
        }
        if let Some(src) = &self.expect_json_schema {
            let schema = src.load()?;
            let v = jsonschema::validator_for(&schema)
                .map_err(|e| err("expect_json_schema", format!("invalid JSON Schema: {e}")))?;
            items.push(Check::JsonSchema(Box::new(v)));
        }
        match &self.expect_model {
            Some(ModelMatch::Exact(m)) => items.push(Check::ModelExact(m.clone())),
            Some(ModelMatch::Regex { regex: p }) => {
                items.push(Check::ModelRegex(regex("expect_model", p)?));
            }
            None => {}
        }
        if let Some(r) = &self.expect_finish_reason {
            items.push(Check::FinishReason(r.clone()));
        }
        if let Some(n) = self.min_output_tokens {
            items.push(Check::MinOutputTokens(n));
        }
        if self.structured_output && self.expect_json_schema.is_none() {
            return Err(err(
                "structured_output",
                "asks for the expect_json_schema schema, and there is none",
            ));
        }
        if let Some(r) = self.max_repetition {
            if !(0.0..=1.0).contains(&r) {
                return Err(err("max_repetition", format!("must be in [0, 1], got {r}")));
            }
            items.push(Check::MaxRepetition(r));
        }
        if let Some(t) = &self.expect_tool_call {
            const FIELD: &str = "expect_tool_call";
            if t.name.trim().is_empty() || t.name.len() > super::MAX_TOOL_NAME_BYTES {
                return Err(err(
                    FIELD,
                    format!(
                        "name must be 1 to {} bytes, got {:?}",
                        super::MAX_TOOL_NAME_BYTES,
                        t.name
                    ),
                ));
            }
            let schema = t.parameters()?;
            let v = jsonschema::validator_for(&schema)
                .map_err(|e| err(FIELD, format!("parameters: invalid JSON Schema: {e}")))?;
            items.push(Check::ToolCall {
                name: t.name.clone(),
                parameters: Box::new(v),
            });
        }
        if let Some(n) = self.expect_top_document {
            items.push(Check::TopDocument(n));
        }
        Ok(Checks { items })
    }
}
