//! The mock's tool calling: the first function a chat or Responses request offers,
//! and arguments that satisfy its parameter schema, built from the schema alone
//! (docs/mock.md): every required property gets a value of its type. Pure.

use serde_json::Value;

/// Deepest schema nesting the arguments follow; deeper objects are left empty.
const MAX_DEPTH: usize = 8;

/// The function a request offers (the first of its `tools`).
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedTool {
    pub name: String,
    pub parameters: Value,
}

/// The first function of the request's `tools`; `function` finds the object holding
/// its `name` and `parameters` in one entry (chat's `{type: function, function: {…}}`,
/// the Responses API's flat `{type: function, name, parameters}`), or None where the
/// protocol offers the mock no tools.
pub fn offered<'a>(
    obj: &'a serde_json::Map<String, Value>,
    function: impl Fn(&'a Value) -> Option<&'a Value>,
) -> Option<OfferedTool> {
    let tools = obj.get("tools")?.as_array()?;
    tools.iter().find_map(|t| {
        if t.get("type").and_then(Value::as_str) != Some("function") {
            return None;
        }
        let f = function(t)?;
        Some(OfferedTool {
            name: f.get("name")?.as_str()?.to_string(),
            parameters: f.get("parameters").cloned().unwrap_or(Value::Null),
        })
    })
}

/// Arguments valid against a simple `schema`, as JSON text with a space after each `:`
/// and `,` (so it streams as several tokens): always an object, whose required
/// properties each get `const`, the first of `enum`, or by its type "x", 1, true, {}
/// (filled the same way) or [].
pub fn arguments_for(schema: &Value) -> String {
    object_for(schema, 0)
}

fn value_for(schema: &Value, depth: usize) -> String {
    if let Some(c) = schema.get("const") {
        return c.to_string();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.to_string();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.iter().find_map(Value::as_str).unwrap_or("object"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "string" => "\"x\"".into(),
        "integer" | "number" => "1".into(),
        "boolean" => "true".into(),
        "array" => "[]".into(),
        "null" => "null".into(),
        _ => object_for(schema, depth),
    }
}

fn object_for(schema: &Value, depth: usize) -> String {
    if depth >= MAX_DEPTH {
        return "{}".into();
    }
    let required = schema.get("required").and_then(Value::as_array);
    let fields: Vec<String> = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|k| {
            let sub = schema
                .get("properties")
                .and_then(|p| p.get(k))
                .unwrap_or(&Value::Null);
            format!("{}: {}", Value::from(k), value_for(sub, depth + 1))
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Endpoint;
    use crate::mock::protocol::of;
    use serde_json::json;

    fn offered_by(e: Endpoint, body: &Value) -> Option<OfferedTool> {
        offered(body.as_object().unwrap(), |t| of(e).tool_function(t))
    }

    #[test]
    fn required_properties_get_a_value_of_their_type() {
        let schema = json!({"type": "object", "required": ["city", "days", "metric", "unit", "at"],
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                "metric": {"type": "boolean"}, "unit": {"enum": ["C", "F"]},
                "at": {"type": "object", "required": ["lat"],
                       "properties": {"lat": {"type": "number"}}},
                "optional": {"type": "string"}}});
        let args = arguments_for(&schema);
        assert_eq!(
            args,
            r#"{"city": "x", "days": 1, "metric": true, "unit": "C", "at": {"lat": 1}}"#
        );
        let v: Value = serde_json::from_str(&args).unwrap();
        assert!(jsonschema::is_valid(&schema, &v));
        assert_eq!(arguments_for(&json!({"type": "object"})), "{}");
        assert_eq!(arguments_for(&Value::Null), "{}");
    }

    #[test]
    fn the_first_function_of_either_shape() {
        let chat = json!({"tools": [{"type": "web_search"},
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]});
        let t = offered_by(Endpoint::Chat, &chat).unwrap();
        assert_eq!(
            (t.name.as_str(), &t.parameters),
            ("f", &json!({"type": "object"}))
        );
        let resp = json!({"tools": [{"type": "function", "name": "g"}]});
        let t = offered_by(Endpoint::Responses, &resp).unwrap();
        assert_eq!((t.name.as_str(), t.parameters), ("g", Value::Null));
        assert_eq!(offered_by(Endpoint::Messages, &resp), None);
        assert_eq!(offered_by(Endpoint::Chat, &json!({})), None);
    }
}
