//! A fingerprint request: one prompt at temperature 0 with the API's logprobs fields,
//! never streamed, and where each API keeps its logprobs in the answer. The logprobs
//! fields are sent only here, never on ordinary probes.

use serde_json::{Map, Value, json};

use crate::client::Endpoint;

use super::answer::{self, Answer};

/// Most alternatives per position the OpenAI APIs allow.
pub const MAX_TOP_LOGPROBS: u32 = 20;

/// What every request of a fingerprint carries besides its prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub endpoint: Endpoint,
    pub model: String,
    /// Alternatives per position (1..=20).
    pub top_logprobs: u32,
    /// Most generated tokens per answer.
    pub max_tokens: u32,
}

/// Why `endpoint` cannot give a fingerprint, if it cannot.
pub fn unsupported(endpoint: Endpoint) -> Option<&'static str> {
    match endpoint {
        Endpoint::Chat | Endpoint::Completions | Endpoint::Responses => None,
        Endpoint::Messages => Some(
            "the messages API has no logprobs: fingerprint a chat, completions or responses endpoint",
        ),
        Endpoint::Embeddings => Some(
            "the embeddings API generates no tokens, so it has no logprobs: fingerprint a chat, completions or responses endpoint",
        ),
    }
}

impl Ask {
    /// Checks the settings; errors are the caller's input.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(why) = unsupported(self.endpoint) {
            return Err(why.into());
        }
        if !(1..=MAX_TOP_LOGPROBS).contains(&self.top_logprobs) {
            return Err(format!(
                "top_logprobs must be between 1 and {MAX_TOP_LOGPROBS}, got {}",
                self.top_logprobs
            ));
        }
        if self.max_tokens == 0 {
            return Err("max_tokens must be at least 1".into());
        }
        Ok(())
    }

    /// The body for `prompt`, with `extra` merged last (its keys replace ours).
    pub fn body(&self, prompt: &str, extra: &Map<String, Value>) -> Value {
        let k = self.top_logprobs;
        let mut body = match self.endpoint {
            Endpoint::Completions => json!({"prompt": prompt, "max_tokens": self.max_tokens,
                "logprobs": k}),
            Endpoint::Responses => json!({"input": prompt,
                "max_output_tokens": self.max_tokens, "top_logprobs": k,
                "include": ["message.output_text.logprobs"]}),
            // Messages and embeddings are refused by `validate`; chat is the default.
            _ => json!({"messages": [{"role": "user", "content": prompt}],
                "max_tokens": self.max_tokens, "logprobs": true, "top_logprobs": k}),
        };
        body["model"] = json!(self.model);
        body["temperature"] = json!(0);
        body["stream"] = json!(false);
        if let Value::Object(map) = &mut body {
            for (key, value) in extra {
                map.insert(key.clone(), value.clone());
            }
        }
        body
    }

    /// Reads the answer's logprobs out of a response body.
    pub fn parse(&self, body: &Value) -> Result<Answer, String> {
        match self.endpoint {
            Endpoint::Responses => answer::parse_responses(body),
            _ => answer::parse_choices(body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(endpoint: Endpoint) -> Ask {
        Ask {
            endpoint,
            model: "m".into(),
            top_logprobs: 5,
            max_tokens: 16,
        }
    }

    #[test]
    fn bodies_per_api() {
        let none = Map::new();
        let b = ask(Endpoint::Chat).body("hi", &none);
        assert_eq!(b["logprobs"], json!(true));
        assert_eq!(b["top_logprobs"], json!(5));
        assert_eq!(b["temperature"], json!(0));
        assert_eq!(
            ask(Endpoint::Completions).body("hi", &none)["logprobs"],
            json!(5)
        );
        let r = ask(Endpoint::Responses).body("hi", &none);
        assert_eq!(r["include"], json!(["message.output_text.logprobs"]));
        let mut extra = Map::new();
        extra.insert("top_logprobs".into(), json!(2));
        assert_eq!(
            ask(Endpoint::Chat).body("hi", &extra)["top_logprobs"],
            json!(2)
        );
    }

    #[test]
    fn apis_without_logprobs_are_refused() {
        assert_eq!(
            ask(Endpoint::Messages).validate().unwrap_err(),
            "the messages API has no logprobs: fingerprint a chat, completions or responses endpoint"
        );
        assert!(ask(Endpoint::Embeddings).validate().is_err());
        let mut a = ask(Endpoint::Chat);
        a.top_logprobs = 21;
        assert!(a.validate().unwrap_err().contains("between 1 and 20"));
    }
}
