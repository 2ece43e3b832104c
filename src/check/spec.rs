//! [`CheckSpec`]: the checks as configured (bench flags and the daemon's `checks:`),
//! and their compilation into [`Checks`] with a clear error for a bad regex or schema.

use std::path::PathBuf;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Check, Checks};

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
/// config can point at its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CheckError {
    pub field: &'static str,
    pub message: String,
}

fn err(field: &'static str, message: impl Into<String>) -> CheckError {
    CheckError {
        field,
        message: message.into(),
    }
}

fn regex(field: &'static str, pattern: &str) -> Result<Regex, CheckError> {
    RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_BYTES)
        .build()
        .map_err(|e| err(field, format!("invalid regex: {e}")))
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
        Ok(Checks { items })
    }
}
