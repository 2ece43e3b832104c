//! The logprobs the mock answers with when a request asks for them: at each answer
//! position the token said plus `k − 1` alternatives, with probabilities drawn from a
//! seed of the prompt's words and `MockConfig::logprob_seed`. The same prompt and seed
//! always give the same numbers (a perfectly repeatable engine); another seed is
//! another model to a fingerprint. Pure.

use serde_json::{Map, Value, json};

use crate::schedule::splitmix64;

/// Most alternatives a request may ask for (OpenAI's limit).
pub const MAX_TOP_LOGPROBS: u32 = 20;

/// What a request asked for: `k` alternatives per position, under `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    pub k: u32,
    pub seed: u64,
}

/// Reads the logprobs request of any API: chat `logprobs: true` with `top_logprobs`,
/// completions `logprobs: K`, Responses `top_logprobs` with `include` naming
/// `message.output_text.logprobs`. The error is a message for a 400 response.
pub fn requested(obj: &Map<String, Value>) -> Result<Option<u32>, String> {
    let top = match obj.get("top_logprobs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or("'top_logprobs' must be an integer")?),
    };
    let k = match obj.get("logprobs") {
        Some(Value::Bool(true)) => Some(top.unwrap_or(0)),
        Some(Value::Number(n)) => Some(n.as_u64().ok_or("'logprobs' must be an integer >= 0")?),
        _ => {
            let include = obj.get("include").and_then(Value::as_array);
            let asks = include.is_some_and(|l| {
                l.iter()
                    .any(|i| i.as_str() == Some("message.output_text.logprobs"))
            });
            if asks { top } else { None }
        }
    };
    match k {
        Some(k) if k > u64::from(MAX_TOP_LOGPROBS) => Err(format!(
            "the number of logprobs must be at most {MAX_TOP_LOGPROBS}"
        )),
        Some(k) => Ok(Some(k as u32)),
        None => Ok(None),
    }
}

/// The seed of one request: the configured seed mixed with the prompt's words.
pub fn seed(logprob_seed: u64, prompt_words: &[u64]) -> u64 {
    prompt_words
        .iter()
        .fold(splitmix64(logprob_seed), |h, w| splitmix64(h ^ w))
}

/// One position: the chosen token and the alternatives, most likely first, each with
/// its natural-log probability. The chosen token has probability in [0.5, 0.9); the
/// alternatives take geometrically less of the rest, which leaves some unlisted.
pub fn position(asked: Asked, i: u32, token: &str) -> (f64, Vec<(String, f64)>) {
    let x = splitmix64(asked.seed ^ (u64::from(i) << 20));
    let p0 = 0.5 + 0.4 * ((x >> 11) as f64 / (1u64 << 53) as f64);
    let mut top = vec![(token.to_string(), p0.ln())];
    let mut rest = 1.0 - p0;
    for j in 1..asked.k.max(1) {
        rest /= 2.0;
        top.push((format!(" alt{j}"), rest.ln()));
    }
    (p0.ln(), top)
}

/// An answer's logprobs: what was asked and the answer's tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Logprobs {
    pub asked: Asked,
    pub tokens: Vec<String>,
}

/// The chat shape: `{content: [{token, logprob, bytes, top_logprobs: [..]}]}`.
pub fn chat_json(asked: Asked, tokens: &[String]) -> Value {
    json!({"content": entries(asked, tokens)})
}

/// The Responses shape of an `output_text` part's `logprobs`.
pub fn entries(asked: Asked, tokens: &[String]) -> Vec<Value> {
    let mut out = Vec::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        let (lp, top) = position(asked, i as u32, t);
        let top: Vec<Value> = top
            .into_iter()
            .take(asked.k as usize)
            .map(|(token, logprob)| json!({"token": token, "logprob": logprob}))
            .collect();
        out.push(json!({"token": t, "logprob": lp, "bytes": t.as_bytes(), "top_logprobs": top}));
    }
    out
}

/// The legacy completions shape (as vLLM sends it): parallel lists and one
/// `{token: logprob}` map per position.
pub fn completions_json(asked: Asked, tokens: &[String]) -> Value {
    let mut lps = Vec::new();
    let mut tops = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let (lp, top) = position(asked, i as u32, t);
        lps.push(lp);
        let map: Map<String, Value> = top
            .into_iter()
            .take(asked.k as usize)
            .map(|(token, logprob)| (token, json!(logprob)))
            .collect();
        tops.push(Value::Object(map));
    }
    json!({"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_per_api() {
        let obj = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            requested(&obj(json!({"logprobs": true, "top_logprobs": 3}))),
            Ok(Some(3))
        );
        assert_eq!(requested(&obj(json!({"logprobs": 4}))), Ok(Some(4)));
        assert_eq!(requested(&obj(json!({"logprobs": false}))), Ok(None));
        assert_eq!(
            requested(&obj(
                json!({"top_logprobs": 2, "include": ["message.output_text.logprobs"]})
            )),
            Ok(Some(2))
        );
        assert!(requested(&obj(json!({"logprobs": 21}))).is_err());
    }

    #[test]
    fn deterministic_and_seed_dependent() {
        let a = Asked {
            k: 3,
            seed: seed(0, &[1, 2]),
        };
        let b = Asked {
            k: 3,
            seed: seed(1, &[1, 2]),
        };
        assert_eq!(position(a, 0, " x"), position(a, 0, " x"));
        assert_ne!(position(a, 0, " x").0, position(b, 0, " x").0);
        let (lp, top) = position(a, 1, " y");
        assert_eq!(top.len(), 3);
        assert_eq!(top[0], (" y".to_string(), lp));
        let total: f64 = top.iter().map(|(_, l)| l.exp()).sum();
        assert!(total < 1.0 && lp.exp() >= 0.5);
    }
}
