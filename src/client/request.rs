//! The request: its body (built by the endpoint's protocol, `client::protocol`) and
//! the list of non-standard fields it carries, for the hint on a 4xx answer.

use super::config::ClientConfig;

use crate::workload::RequestSpec;

/// The JSON body for one request, in the protocol of the config's provider and
/// endpoint.
pub fn body(cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
    super::provider::protocol(cfg).body(cfg, spec)
}

/// Non-standard fields this config puts in a request, each with the config switch that
/// turns it off. Servers that are strict about the OpenAI schema reject them with a 4xx.
pub fn non_standard_fields(cfg: &ClientConfig) -> Vec<(&'static str, &'static str)> {
    let ours = |key: &str| !cfg.extra_body.contains_key(key);
    let mut out = Vec::new();
    let api = super::provider::api(cfg);
    let generates = api.generates;
    if generates && cfg.ignore_eos && ours("ignore_eos") {
        out.push(("ignore_eos", "ignore_eos: false"));
    }
    if generates && cfg.min_tokens && ours("min_tokens") {
        out.push(("min_tokens", "min_tokens: false"));
    }
    if api.stream_options && cfg.stream && ours("stream_options") {
        if cfg.continuous_usage_stats {
            out.push((
                "stream_options.continuous_usage_stats",
                "continuous_usage_stats: false",
            ));
        }
        if cfg.include_usage {
            out.push(("stream_options.include_usage", "include_usage: false"));
        }
    }
    if api.max_completion_tokens && cfg.max_completion_tokens && ours("max_completion_tokens") {
        out.push(("max_completion_tokens", "max_completion_tokens: false"));
    }
    if cfg.response_schema.is_some()
        && let Some(field) = &api.structured_output
        && ours(field.key)
    {
        out.push((field.shown, "checks.structured_output: false"));
    }
    if cfg.tool.is_some() && api.tools {
        // Offered only for a tool-call check: that check is the switch.
        if ours("tools") {
            out.push(("tools", "checks.expect_tool_call"));
        }
        if cfg.tool.as_ref().is_some_and(|t| t.choice.is_some()) && ours("tool_choice") {
            out.push(("tool_choice", "checks.expect_tool_call.tool_choice"));
        }
    }
    if !cfg.extra_body.is_empty() {
        out.push(("extra_body fields", "extra_body"));
    }
    out
}

/// The sentence appended to a 4xx error when the request carried non-standard fields.
pub fn non_standard_hint(cfg: &ClientConfig) -> Option<String> {
    let fields = non_standard_fields(cfg);
    if fields.is_empty() {
        return None;
    }
    let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
    let switches: Vec<&str> = fields.iter().map(|f| f.1).collect();
    Some(format!(
        "the request carried non-standard fields ({}); if this server rejects them, \
         turn them off in the client config ({})",
        names.join(", "),
        switches.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Endpoint;
    use crate::workload::RequestSpec;
    use serde_json::{Value, json};

    fn spec() -> RequestSpec {
        RequestSpec {
            prompt: "nonce-1 say \"hi\"".into(),
            prompt_tokens: 5,
            max_tokens: 64,
            history: Vec::new(),
            system: None,
            model: None,
        }
    }

    fn parsed(cfg: &ClientConfig) -> Value {
        serde_json::from_slice(&body(cfg, &spec()).unwrap()).unwrap()
    }

    #[test]
    fn chat_body_defaults() {
        let cfg = ClientConfig {
            model: "m".into(),
            ..ClientConfig::default()
        };
        assert_eq!(
            parsed(&cfg),
            json!({
                "model": "m",
                "messages": [{"role": "user", "content": "nonce-1 say \"hi\""}],
                "stream": true,
                "stream_options": {"include_usage": true, "continuous_usage_stats": true},
                "max_tokens": 64,
                "temperature": 0.0
            })
        );
    }

    #[test]
    fn a_later_turn_sends_the_history_as_messages_or_one_text() {
        use crate::workload::Exchange;
        let mut later = spec();
        later.history = vec![Exchange {
            user: "first".into(),
            assistant: " tok0 tok1".into(),
        }];
        let sent = |endpoint| {
            let cfg = ClientConfig {
                endpoint,
                ..ClientConfig::default()
            };
            serde_json::from_slice::<Value>(&body(&cfg, &later).unwrap()).unwrap()
        };
        let list = json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": " tok0 tok1"},
            {"role": "user", "content": "nonce-1 say \"hi\""},
        ]);
        assert_eq!(sent(Endpoint::Chat)["messages"], list);
        assert_eq!(sent(Endpoint::Messages)["messages"], list);
        assert_eq!(sent(Endpoint::Responses)["input"], list);
        assert_eq!(
            sent(Endpoint::Completions)["prompt"],
            "first tok0 tok1\nnonce-1 say \"hi\""
        );
        // A single request keeps the plain string input.
        let cfg = ClientConfig {
            endpoint: Endpoint::Responses,
            ..ClientConfig::default()
        };
        assert_eq!(parsed(&cfg)["input"], "nonce-1 say \"hi\"");
    }

    #[test]
    fn completions_body_with_every_switch() {
        let mut cfg = ClientConfig {
            model: "m".into(),
            endpoint: Endpoint::Completions,
            ignore_eos: true,
            min_tokens: true,
            continuous_usage_stats: false,
            max_completion_tokens: true, // chat only: not sent here
            temperature: 0.7,
            ..ClientConfig::default()
        };
        cfg.extra_body.insert("top_p".into(), json!(0.9));
        cfg.extra_body.insert("temperature".into(), json!(1.0));
        assert_eq!(
            parsed(&cfg),
            json!({
                "model": "m",
                "prompt": "nonce-1 say \"hi\"",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 64,
                "ignore_eos": true,
                "min_tokens": 64,
                "top_p": 0.9,
                "temperature": 1.0
            })
        );
        // The serializer must not write a key twice even when extra_body overrides it.
        let text = String::from_utf8(body(&cfg, &spec()).unwrap()).unwrap();
        assert_eq!(text.matches("\"temperature\"").count(), 1);
    }

    #[test]
    fn stream_options_can_be_switched_off_entirely() {
        let cfg = ClientConfig {
            include_usage: false,
            continuous_usage_stats: false,
            max_completion_tokens: true,
            ..ClientConfig::default()
        };
        let v = parsed(&cfg);
        assert!(v.get("stream_options").is_none());
        assert_eq!(v["max_completion_tokens"], json!(64));
        assert_eq!(
            non_standard_fields(&cfg),
            vec![("max_completion_tokens", "max_completion_tokens: false")]
        );
    }

    #[test]
    fn responses_messages_and_embeddings_bodies() {
        let cfg = |endpoint| ClientConfig {
            model: "m".into(),
            endpoint,
            ..ClientConfig::default()
        };
        assert_eq!(
            parsed(&cfg(Endpoint::Responses)),
            json!({"model": "m", "input": "nonce-1 say \"hi\"", "stream": true,
                   "max_output_tokens": 64, "temperature": 0.0, "store": false})
        );
        assert_eq!(
            parsed(&cfg(Endpoint::Messages)),
            json!({"model": "m", "messages": [{"role": "user", "content": "nonce-1 say \"hi\""}],
                   "max_tokens": 64, "stream": true, "temperature": 0.0})
        );
        let mut emb = cfg(Endpoint::Embeddings);
        emb.ignore_eos = true;
        assert_eq!(
            parsed(&emb),
            json!({"model": "m", "input": "nonce-1 say \"hi\"", "encoding_format": "float"})
        );
        // Only chat and completions have stream_options; embeddings carry no length
        // extension: nothing non-standard is sent.
        assert_eq!(non_standard_fields(&emb), vec![]);
        assert_eq!(non_standard_fields(&cfg(Endpoint::Messages)), vec![]);
    }

    #[test]
    fn not_streaming_sends_stream_false_and_no_stream_options() {
        for endpoint in [
            Endpoint::Chat,
            Endpoint::Completions,
            Endpoint::Responses,
            Endpoint::Messages,
        ] {
            let cfg = ClientConfig {
                endpoint,
                stream: false,
                ..ClientConfig::default()
            };
            let v = parsed(&cfg);
            assert_eq!(v["stream"], json!(false), "{endpoint:?}");
            assert!(v.get("stream_options").is_none(), "{endpoint:?}");
            assert!(non_standard_fields(&cfg).is_empty(), "{endpoint:?}");
        }
    }

    #[test]
    fn a_response_schema_is_each_protocols_structured_output_field() {
        let schema = serde_json::json!({"type": "object"});
        let mut cfg = ClientConfig {
            response_schema: Some(schema.clone()),
            ..ClientConfig::default()
        };
        let chat = parsed(&cfg);
        assert_eq!(chat["response_format"]["type"], "json_schema");
        assert_eq!(chat["response_format"]["json_schema"]["schema"], schema);
        assert!(
            non_standard_hint(&cfg)
                .unwrap()
                .contains("checks.structured_output: false")
        );
        cfg.endpoint = Endpoint::Responses;
        let resp = parsed(&cfg);
        assert_eq!(resp["text"]["format"]["schema"], schema);
        assert!(resp.get("response_format").is_none());
        cfg.endpoint = Endpoint::Messages;
        let msg = parsed(&cfg);
        assert!(msg.get("response_format").is_none() && msg.get("text").is_none());
    }

    #[test]
    fn a_tool_is_offered_in_each_protocols_shape_only_when_set() {
        use crate::check::{ToolChoice, ToolOffer};
        let params = json!({"type": "object", "required": ["city"]});
        let mut cfg = ClientConfig {
            tool: Some(ToolOffer {
                name: "get_weather".into(),
                description: Some("Weather.".into()),
                parameters: params.clone(),
                choice: Some(ToolChoice::Function),
            }),
            ..ClientConfig::default()
        };
        let chat = parsed(&cfg);
        assert_eq!(
            chat["tools"],
            json!([{"type": "function", "function": {"name": "get_weather",
                "description": "Weather.", "parameters": params}}])
        );
        assert_eq!(
            chat["tool_choice"],
            json!({"type": "function", "function": {"name": "get_weather"}})
        );
        let names: Vec<&str> = non_standard_fields(&cfg).iter().map(|f| f.0).collect();
        assert!(
            names.contains(&"tools") && names.contains(&"tool_choice"),
            "{names:?}"
        );
        cfg.endpoint = Endpoint::Responses;
        let resp = parsed(&cfg);
        assert_eq!(
            resp["tools"],
            json!([{"type": "function", "name": "get_weather", "description": "Weather.",
                "parameters": params}])
        );
        assert_eq!(
            resp["tool_choice"],
            json!({"type": "function", "name": "get_weather"})
        );
        if let Some(t) = cfg.tool.as_mut() {
            t.choice = Some(ToolChoice::Required);
            t.description = None;
        }
        let resp = parsed(&cfg);
        assert_eq!(resp["tool_choice"], json!("required"));
        assert!(resp["tools"][0].get("description").is_none());
        cfg.tool = None;
        let plain = parsed(&cfg);
        assert!(plain.get("tools").is_none() && plain.get("tool_choice").is_none());
    }

    #[test]
    fn hint_names_fields_and_switches() {
        let cfg = ClientConfig {
            ignore_eos: true,
            ..ClientConfig::default()
        };
        let hint = non_standard_hint(&cfg).unwrap();
        assert!(
            hint.contains("ignore_eos, stream_options.continuous_usage_stats"),
            "{hint}"
        );
        assert!(hint.contains("ignore_eos: false"), "{hint}");
        let plain = ClientConfig {
            include_usage: false,
            continuous_usage_stats: false,
            ..ClientConfig::default()
        };
        assert_eq!(non_standard_hint(&plain), None);
    }
}
