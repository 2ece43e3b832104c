//! The JSON-schema check, bounded: an answer longer than the kept text or nested
//! deeper than [`MAX_JSON_DEPTH`] is refused before it is parsed, so a hostile answer
//! costs at most one linear scan.

use super::Answer;

/// Deepest JSON nesting validated.
pub const MAX_JSON_DEPTH: usize = 64;

/// Whether `text` nests arrays and objects at most `max` deep (a linear scan that
/// skips strings; it does not check that the JSON is valid).
pub fn json_depth_ok(text: &str, max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

pub(super) fn judge(v: &jsonschema::Validator, a: &Answer<'_>) -> Result<(), String> {
    if a.truncated {
        return Err(format!(
            "the answer is longer than {} bytes: not validated",
            a.text.len()
        ));
    }
    if !json_depth_ok(a.text, MAX_JSON_DEPTH) {
        return Err(format!(
            "the answer nests JSON deeper than {MAX_JSON_DEPTH}"
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(a.text.trim()).map_err(|e| format!("the answer is not JSON: {e}"))?;
    v.validate(&value).map_err(|e| {
        let at = e.instance_path().to_string();
        let place = if at.is_empty() { "/".to_string() } else { at };
        format!("the answer does not match the schema at {place}: {e}")
    })
}
