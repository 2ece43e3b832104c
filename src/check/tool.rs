//! The tool-call check: the request offers one function ([`ToolOffer`], built from
//! `ToolCallSpec` and sent only when this check is configured), and the answer must
//! call it with arguments that parse as JSON and validate against its parameter
//! schema. The arguments are judged with the same bounds as a JSON answer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::json::{MAX_JSON_DEPTH, json_depth_ok};

/// Most tool calls kept from one answer: a probe offers one function.
pub const MAX_TOOL_CALLS: usize = 16;
/// Longest function name kept.
pub const MAX_TOOL_NAME_BYTES: usize = 256;

/// The request's `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    Auto,
    Required,
    /// Force the configured function.
    Function,
}

impl std::str::FromStr for ToolChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            "function" => Ok(ToolChoice::Function),
            _ => Err(format!(
                "unknown tool choice {s:?}: expected auto, required or function"
            )),
        }
    }
}

/// What the request offers: one function, its parameter schema loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOffer {
    pub name: String,
    pub description: Option<String>,
    pub parameters: serde_json::Value,
    pub choice: Option<ToolChoice>,
}

/// One call the answer made, as the client kept it (bounded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    /// The arguments' JSON text, concatenated from its fragments.
    pub arguments: String,
    /// Whether the arguments were longer than kept.
    pub truncated: bool,
}

/// `Err(reason)` unless some call to `name` has arguments valid against `v`.
pub(super) fn judge(
    name: &str,
    v: &jsonschema::Validator,
    calls: &[ToolCall],
) -> Result<(), String> {
    let mut first_error = None;
    for call in calls.iter().filter(|c| c.name == name) {
        match judge_arguments(v, call) {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    if calls.is_empty() {
        return Err(format!("the answer called no tool (expected {name})"));
    }
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    Err(format!(
        "the answer called {} but not {name}",
        names.join(", ")
    ))
}

fn judge_arguments(v: &jsonschema::Validator, call: &ToolCall) -> Result<(), String> {
    let name = &call.name;
    if call.truncated {
        return Err(format!(
            "the arguments of {name} are longer than {} bytes: not validated",
            call.arguments.len()
        ));
    }
    if !json_depth_ok(&call.arguments, MAX_JSON_DEPTH) {
        return Err(format!(
            "the arguments of {name} nest JSON deeper than {MAX_JSON_DEPTH}"
        ));
    }
    let value: serde_json::Value = serde_json::from_str(call.arguments.trim())
        .map_err(|e| format!("the arguments of {name} are not JSON: {e}"))?;
    v.validate(&value).map_err(|e| {
        let at = e.instance_path().to_string();
        let place = if at.is_empty() { "/".to_string() } else { at };
        format!("the arguments of {name} do not match its parameters at {place}: {e}")
    })
}
