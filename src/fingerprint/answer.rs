//! One answer as the fingerprint sees it: the chosen token and the top-k alternatives
//! (token, logprob) at each generated position, read from where the API carries them
//! (its `Api`'s `LogprobsIn`). A body without them is an error naming the missing
//! field.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::protocol::LogprobsIn;

/// One alternative at a position: a token and its log-probability (natural log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alt {
    pub token: String,
    pub logprob: f64,
}

/// One generated position: the token chosen and the top-k alternatives listed for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Position {
    pub token: String,
    pub logprob: f64,
    /// The server's top-k at this position, most likely first as the server sent them.
    pub top: Vec<Alt>,
}

/// The generated positions of one answer, in order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Answer {
    pub positions: Vec<Position>,
}

impl Answer {
    /// The answer's text: its tokens joined.
    pub fn text(&self) -> String {
        self.positions.iter().map(|p| p.token.as_str()).collect()
    }
}

/// Reads the logprobs of a response body from where its API carries them.
pub fn parse(at: LogprobsIn, body: &Value) -> Result<Answer, String> {
    match at {
        LogprobsIn::Choices => parse_choices(body),
        LogprobsIn::OutputText => parse_responses(body),
    }
}

/// Reads the logprobs of a chat or completions body. Both the chat shape
/// (`choices[0].logprobs.content[]`, which llama.cpp also uses for completions) and
/// the legacy completions shape (`tokens`, `token_logprobs`, `top_logprobs[]` maps,
/// as vLLM sends) are accepted.
pub fn parse_choices(body: &Value) -> Result<Answer, String> {
    let choice = body
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("the answer has no choices[0]")?;
    let logprobs = match choice.get("logprobs") {
        None | Some(Value::Null) => {
            return Err(
                "the answer has no choices[0].logprobs: the server ignored the logprobs request"
                    .into(),
            );
        }
        Some(l) => l,
    };
    if let Some(content) = logprobs.get("content") {
        let list = content
            .as_array()
            .ok_or("choices[0].logprobs.content is not a list")?;
        return entries(list, "choices[0].logprobs.content");
    }
    if logprobs.get("tokens").is_some() {
        return legacy(logprobs);
    }
    Err("choices[0].logprobs has neither content[] nor tokens[]".into())
}

/// Reads the logprobs of a Responses body: `output[].content[].logprobs[]` of its
/// `output_text` parts, in order.
pub fn parse_responses(body: &Value) -> Result<Answer, String> {
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or("the answer has no output[]")?;
    let mut positions = Vec::new();
    let mut text_len = 0;
    for item in output {
        let Some(parts) = item.get("content").and_then(Value::as_array) else {
            continue;
        };
        for part in parts {
            if part.get("type").and_then(Value::as_str) != Some("output_text") {
                continue;
            }
            text_len += part.get("text").and_then(Value::as_str).map_or(0, str::len);
            let list = part
                .get("logprobs")
                .and_then(Value::as_array)
                .ok_or("an output_text part has no logprobs[]: the server ignored include")?;
            positions.extend(entries(list, "output_text.logprobs")?.positions);
        }
    }
    if positions.is_empty() && text_len > 0 {
        return Err("output_text.logprobs is empty although the answer has text: the server does not return Responses logprobs".into());
    }
    Ok(Answer { positions })
}

/// `[{token, logprob, top_logprobs: [{token, logprob}]}]`, the OpenAI chat shape.
fn entries(list: &[Value], at: &str) -> Result<Answer, String> {
    let mut positions = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        let (token, logprob) =
            token_and_logprob(e).ok_or_else(|| format!("{at}[{i}] lacks token or logprob"))?;
        let top = e
            .get("top_logprobs")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{at}[{i}] has no top_logprobs[]"))?
            .iter()
            .enumerate()
            .map(|(j, a)| {
                token_and_logprob(a)
                    .map(|(token, logprob)| Alt { token, logprob })
                    .ok_or_else(|| format!("{at}[{i}].top_logprobs[{j}] lacks token or logprob"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        positions.push(Position {
            token,
            logprob,
            top,
        });
    }
    Ok(Answer { positions })
}

/// `{tokens: [..], token_logprobs: [..], top_logprobs: [{token: logprob}]}`.
fn legacy(l: &Value) -> Result<Answer, String> {
    let list = |key: &str| {
        l.get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("choices[0].logprobs.{key} is not a list"))
    };
    let (tokens, lps, tops) = (
        list("tokens")?,
        list("token_logprobs")?,
        list("top_logprobs")?,
    );
    if tokens.len() != lps.len() || tokens.len() != tops.len() {
        return Err("choices[0].logprobs lists differ in length".into());
    }
    let mut positions = Vec::with_capacity(tokens.len());
    for (i, ((t, lp), top)) in tokens.iter().zip(lps).zip(tops).enumerate() {
        let (Some(token), Some(logprob)) = (t.as_str(), lp.as_f64()) else {
            return Err(format!(
                "choices[0].logprobs.tokens[{i}] or token_logprobs[{i}] is not a token and a number"
            ));
        };
        let map = top
            .as_object()
            .ok_or_else(|| format!("choices[0].logprobs.top_logprobs[{i}] is not an object"))?;
        let mut alts = map
            .iter()
            .map(|(k, v)| {
                v.as_f64()
                    .map(|logprob| Alt {
                        token: k.clone(),
                        logprob,
                    })
                    .ok_or_else(|| {
                        format!("choices[0].logprobs.top_logprobs[{i}][{k:?}] is not a number")
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        alts.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
        positions.push(Position {
            token: token.to_string(),
            logprob,
            top: alts,
        });
    }
    Ok(Answer { positions })
}

fn token_and_logprob(v: &Value) -> Option<(String, f64)> {
    Some((
        v.get("token")?.as_str()?.to_string(),
        v.get("logprob")?.as_f64()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_shape() {
        let body = json!({"choices": [{"logprobs": {"content": [
            {"token": "Hi", "logprob": -0.1, "top_logprobs": [
                {"token": "Hi", "logprob": -0.1}, {"token": "Yo", "logprob": -2.5}]}]}}]});
        let a = parse_choices(&body).unwrap();
        assert_eq!(a.text(), "Hi");
        assert_eq!(
            a.positions[0].top[1],
            Alt {
                token: "Yo".into(),
                logprob: -2.5
            }
        );
    }

    #[test]
    fn legacy_completions_shape_sorted_by_logprob() {
        let body = json!({"choices": [{"logprobs": {"tokens": [" a"], "token_logprobs": [-0.2],
            "top_logprobs": [{" b": -3.0, " a": -0.2}]}}]});
        let a = parse_choices(&body).unwrap();
        assert_eq!(a.positions[0].top[0].token, " a");
        assert_eq!(a.positions[0].top[1].logprob, -3.0);
    }

    #[test]
    fn missing_fields_are_named() {
        let e = parse_choices(&json!({"choices": [{"logprobs": null}]})).unwrap_err();
        assert!(e.contains("choices[0].logprobs"), "{e}");
        let e = parse_choices(&json!({"choices": [{"logprobs": {"content": [{"token": "x"}]}}]}))
            .unwrap_err();
        assert_eq!(e, "choices[0].logprobs.content[0] lacks token or logprob");
        assert!(
            parse_choices(&json!({}))
                .unwrap_err()
                .contains("choices[0]")
        );
        let e = parse_responses(&json!({"output": [{"content": [
            {"type": "output_text", "text": "hi", "logprobs": []}]}]}))
        .unwrap_err();
        assert!(e.contains("does not return Responses logprobs"), "{e}");
    }

    #[test]
    fn responses_shape() {
        let body = json!({"output": [{"type": "message", "content": [{"type": "output_text",
            "text": "ok", "logprobs": [{"token": "ok", "logprob": -0.5,
            "top_logprobs": [{"token": "ok", "logprob": -0.5}]}]}]}]});
        assert_eq!(parse_responses(&body).unwrap().text(), "ok");
    }
}
