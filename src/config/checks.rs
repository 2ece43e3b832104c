//! A scenario's answer checks and fixed question, resolved: the checks compiled (a bad
//! regex or schema is an error at its `checks.FIELD`; what the protocol can carry is
//! the probe's rule, `config/probe.rs`), and a `prompt_file` read.

use std::sync::Arc;

use super::schema::Scenario;
use crate::check::{CheckSpec, Checks, SchemaSource, ToolCallSpec, ToolOffer};
use crate::yaml_locate::Path;

/// Largest `prompt_file` read: a question, not a corpus.
const MAX_PROMPT_BYTES: u64 = 1 << 20;

/// Compiled checks with what they were compiled from, so a reload restarts a scenario
/// exactly when its checks (or a schema file's content) changed.
#[derive(Debug, Clone, Default)]
pub struct PlannedChecks {
    pub spec: CheckSpec,
    /// The JSON Schema as loaded (a file's content at load time).
    schema: Option<serde_json::Value>,
    /// The tool-call check's parameter schema as loaded.
    tool_parameters: Option<serde_json::Value>,
    pub compiled: Arc<Checks>,
}

impl PlannedChecks {
    /// The schema to ask for with the request's structured-output field, when the
    /// checks say so.
    pub fn response_schema(&self) -> Option<serde_json::Value> {
        self.schema.clone().filter(|_| self.spec.structured_output)
    }

    /// The function the requests offer, when a tool-call check is configured.
    pub fn tool_offer(&self) -> Option<ToolOffer> {
        let t = self.spec.expect_tool_call.as_ref()?;
        Some(t.offer(self.tool_parameters.clone()?))
    }
}

impl PartialEq for PlannedChecks {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
            && self.schema == other.schema
            && self.tool_parameters == other.tool_parameters
    }
}

/// The checks of scenario `s` (at `path`) of target `t`.
pub fn plan_checks(s: &Scenario, path: &Path) -> Result<PlannedChecks, (Path, String)> {
    let at = |field: &str| path.key("checks").key(field);
    let schema = match &s.checks.expect_json_schema {
        Some(src) => Some(src.load().map_err(|e| (at(e.field), e.message))?),
        None => None,
    };
    // A tool's parameter error points at its `parameters`.
    let located = |e: crate::check::CheckError| match e.message.strip_prefix("parameters: ") {
        Some(m) if e.field == "expect_tool_call" => (at(e.field).key("parameters"), m.to_string()),
        _ => match e.position {
            // Inside a regex: the line of a pattern that spans several.
            Some((line, column)) => (at(e.field).within(line, column), e.message),
            None => (at(e.field), e.message),
        },
    };
    let tool_parameters = match &s.checks.expect_tool_call {
        Some(t) => Some(t.parameters().map_err(located)?),
        None => None,
    };
    // Compile from the loaded schemas, so the plan judges what it compared.
    let spec = CheckSpec {
        expect_json_schema: schema.clone().map(SchemaSource::Inline),
        expect_tool_call: s.checks.expect_tool_call.clone().map(|t| ToolCallSpec {
            parameters: tool_parameters.clone().map(SchemaSource::Inline),
            ..t
        }),
        ..s.checks.clone()
    };
    let compiled = spec.compile().map_err(located)?;
    Ok(PlannedChecks {
        spec: s.checks.clone(),
        schema,
        tool_parameters,
        compiled: Arc::new(compiled),
    })
}

/// The scenario's fixed question: `prompt`, or `prompt_file` read (bounded).
pub fn plan_prompt(s: &Scenario, path: &Path) -> Result<Option<String>, (Path, String)> {
    // Both set is the probe's refusal (`probe::PromptSource`), before this.
    let text = match (&s.prompt, &s.prompt_file) {
        (Some(p), _) => p.clone(),
        (None, Some(file)) => {
            use std::io::Read;
            let mut text = String::new();
            std::fs::File::open(file)
                .and_then(|f| f.take(MAX_PROMPT_BYTES + 1).read_to_string(&mut text))
                .map_err(|e| {
                    (
                        path.key("prompt_file"),
                        format!("cannot read {}: {e}", file.display()),
                    )
                })?;
            if text.len() as u64 > MAX_PROMPT_BYTES {
                return Err((
                    path.key("prompt_file"),
                    format!("{} is larger than {MAX_PROMPT_BYTES} bytes", file.display()),
                ));
            }
            text
        }
        (None, None) => return Ok(None),
    };
    if text.trim().is_empty() {
        let field = if s.prompt.is_some() {
            "prompt"
        } else {
            "prompt_file"
        };
        return Err((path.key(field), "the prompt must not be empty".into()));
    }
    Ok(Some(text))
}
