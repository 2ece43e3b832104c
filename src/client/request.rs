//! The request body: an OpenAI-compatible streaming request built straight into JSON
//! bytes from the config and a [`RequestSpec`], with `extra_body` merged last. Also the
//! list of non-standard fields a request carries, for the hint on a 4xx answer.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::config::{ClientConfig, Endpoint};
use crate::workload::RequestSpec;

/// Serializes the body without building an intermediate `serde_json::Value`: our
/// fields are written unless `extra_body` has the same top-level key, then every
/// `extra_body` entry.
struct Body<'a> {
    cfg: &'a ClientConfig,
    spec: &'a RequestSpec,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct StreamOptions {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    include_usage: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    continuous_usage_stats: bool,
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cfg = self.cfg;
        let ours = |key: &str| !cfg.extra_body.contains_key(key);
        let mut m = s.serialize_map(None)?;
        if ours("model") {
            m.serialize_entry("model", &cfg.model)?;
        }
        match cfg.endpoint {
            Endpoint::Chat if ours("messages") => {
                let msg = [Message {
                    role: "user",
                    content: &self.spec.prompt,
                }];
                m.serialize_entry("messages", &msg)?;
            }
            Endpoint::Completions if ours("prompt") => {
                m.serialize_entry("prompt", &self.spec.prompt)?;
            }
            _ => {}
        }
        if ours("stream") {
            m.serialize_entry("stream", &true)?;
        }
        if (cfg.include_usage || cfg.continuous_usage_stats) && ours("stream_options") {
            m.serialize_entry(
                "stream_options",
                &StreamOptions {
                    include_usage: cfg.include_usage,
                    continuous_usage_stats: cfg.continuous_usage_stats,
                },
            )?;
        }
        if ours("max_tokens") {
            m.serialize_entry("max_tokens", &self.spec.max_tokens)?;
        }
        if cfg.endpoint == Endpoint::Chat
            && cfg.max_completion_tokens
            && ours("max_completion_tokens")
        {
            m.serialize_entry("max_completion_tokens", &self.spec.max_tokens)?;
        }
        if ours("temperature") {
            m.serialize_entry("temperature", &cfg.temperature)?;
        }
        if cfg.ignore_eos && ours("ignore_eos") {
            m.serialize_entry("ignore_eos", &true)?;
        }
        if cfg.min_tokens && ours("min_tokens") {
            m.serialize_entry("min_tokens", &self.spec.max_tokens)?;
        }
        for (k, v) in &cfg.extra_body {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The JSON body for one request.
pub fn body(cfg: &ClientConfig, spec: &RequestSpec) -> serde_json::Result<Vec<u8>> {
    // Prompt plus a few hundred bytes of fields: one allocation in the common case.
    let mut out = Vec::with_capacity(spec.prompt.len() + 256);
    serde_json::to_writer(&mut out, &Body { cfg, spec })?;
    Ok(out)
}

/// Non-standard fields this config puts in a request, each with the config switch that
/// turns it off. Servers that are strict about the OpenAI schema reject them with a 4xx.
pub fn non_standard_fields(cfg: &ClientConfig) -> Vec<(&'static str, &'static str)> {
    let ours = |key: &str| !cfg.extra_body.contains_key(key);
    let mut out = Vec::new();
    if cfg.ignore_eos && ours("ignore_eos") {
        out.push(("ignore_eos", "ignore_eos: false"));
    }
    if cfg.min_tokens && ours("min_tokens") {
        out.push(("min_tokens", "min_tokens: false"));
    }
    if ours("stream_options") {
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
    if cfg.endpoint == Endpoint::Chat && cfg.max_completion_tokens && ours("max_completion_tokens")
    {
        out.push(("max_completion_tokens", "max_completion_tokens: false"));
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
    use serde_json::{Value, json};

    fn spec() -> RequestSpec {
        RequestSpec {
            prompt: "nonce-1 say \"hi\"".into(),
            prompt_tokens: 5,
            max_tokens: 64,
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
