//! A fingerprint request: one prompt at temperature 0, never streamed, with the
//! request fields its API's `Logprobs` gives, and the answer read where they say it
//! carries them; an API without logprobs is refused. The logprobs fields are sent only
//! here, never on ordinary probes.

use serde_json::{Map, Value, json};

use crate::client::Endpoint;
use crate::client::protocol::Logprobs;

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

/// Why `endpoint` cannot give a fingerprint, if it cannot: its API has no logprobs.
pub fn unsupported(endpoint: Endpoint) -> Option<String> {
    endpoint.logprobs().is_none().then(|| refusal(endpoint))
}

/// Why an API without logprobs is refused, naming those that have them.
fn refusal(endpoint: Endpoint) -> String {
    let why = if endpoint.generates() {
        "has no logprobs"
    } else {
        "generates no tokens, so it has no logprobs"
    };
    let with: Vec<&str> = Endpoint::ALL
        .into_iter()
        .filter(|e| e.logprobs().is_some())
        .map(Endpoint::as_str)
        .collect();
    format!(
        "the {} API {why}: fingerprint a {} endpoint",
        endpoint.as_str(),
        crate::exit::listed(&with, "or")
    )
}

impl Ask {
    /// Checks the settings; errors are the caller's input.
    pub fn validate(&self) -> Result<(), String> {
        self.logprobs()?;
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

    /// The endpoint's logprobs, or why it has none.
    fn logprobs(&self) -> Result<&'static Logprobs, String> {
        self.endpoint
            .logprobs()
            .ok_or_else(|| refusal(self.endpoint))
    }

    /// The body for `prompt`, with `extra` merged last (its keys replace ours).
    pub fn body(&self, prompt: &str, extra: &Map<String, Value>) -> Result<Value, String> {
        let mut body = (self.logprobs()?.request)(prompt, self.max_tokens, self.top_logprobs);
        body["model"] = json!(self.model);
        body["temperature"] = json!(0);
        body["stream"] = json!(false);
        if let Value::Object(map) = &mut body {
            for (key, value) in extra {
                map.insert(key.clone(), value.clone());
            }
        }
        Ok(body)
    }

    /// Reads the answer's logprobs out of a response body.
    pub fn parse(&self, body: &Value) -> Result<Answer, String> {
        answer::parse(self.logprobs()?.answer, body)
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

    /// The exact bytes sent: the Api's request fields, then ours.
    #[test]
    fn bodies_per_api() {
        let none = Map::new();
        let sent = |e: Endpoint| serde_json::to_string(&ask(e).body("hi", &none).unwrap()).unwrap();
        assert_eq!(
            sent(Endpoint::Chat),
            r#"{"logprobs":true,"max_tokens":16,"messages":[{"content":"hi","role":"user"}],"model":"m","stream":false,"temperature":0,"top_logprobs":5}"#
        );
        assert_eq!(
            sent(Endpoint::Completions),
            r#"{"logprobs":5,"max_tokens":16,"model":"m","prompt":"hi","stream":false,"temperature":0}"#
        );
        assert_eq!(
            sent(Endpoint::Responses),
            r#"{"include":["message.output_text.logprobs"],"input":"hi","max_output_tokens":16,"model":"m","stream":false,"temperature":0,"top_logprobs":5}"#
        );
        let mut extra = Map::new();
        extra.insert("top_logprobs".into(), json!(2));
        extra.insert("temperature".into(), json!(0.5));
        let b = ask(Endpoint::Chat).body("hi", &extra).unwrap();
        assert_eq!(
            (&b["top_logprobs"], &b["temperature"]),
            (&json!(2), &json!(0.5))
        );
    }

    #[test]
    fn apis_without_logprobs_are_refused_saying_which_have_them() {
        let a = ask(Endpoint::Messages);
        let why = "the messages API has no logprobs: fingerprint a chat, completions or responses endpoint";
        assert_eq!(a.validate().unwrap_err(), why);
        assert_eq!(a.body("hi", &Map::new()).unwrap_err(), why);
        assert_eq!(a.parse(&json!({})).unwrap_err(), why);
        assert_eq!(
            unsupported(Endpoint::Embeddings).unwrap(),
            "the embeddings API generates no tokens, so it has no logprobs: fingerprint a chat, completions or responses endpoint"
        );
        let mut a = ask(Endpoint::Chat);
        a.top_logprobs = 21;
        assert!(a.validate().unwrap_err().contains("between 1 and 20"));
    }

    #[test]
    fn each_api_is_parsed_where_it_carries_its_logprobs() {
        let choices = json!({"choices": [{"logprobs": {"content": [
            {"token": "a", "logprob": -0.1, "top_logprobs": []}]}}]});
        let output = json!({"output": [{"content": [{"type": "output_text", "text": "b",
            "logprobs": [{"token": "b", "logprob": -0.1, "top_logprobs": []}]}]}]});
        for (e, body, text) in [
            (Endpoint::Chat, &choices, "a"),
            (Endpoint::Completions, &choices, "a"),
            (Endpoint::Responses, &output, "b"),
        ] {
            assert_eq!(ask(e).parse(body).unwrap().text(), text, "{e:?}");
        }
        assert!(ask(Endpoint::Chat).parse(&output).is_err());
    }
}
