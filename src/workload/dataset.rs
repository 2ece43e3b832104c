//! Prompt datasets read from files: ShareGPT JSON and JSONL `{prompt, output_len?}`.
//! Bad input is a usage error naming the file, the line (or entry) and the field.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::exit::UsageError;

/// One prompt from a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetEntry {
    pub prompt: String,
    /// Output tokens to ask for, when the dataset says (ShareGPT: the first reply's
    /// length; JSONL: `output_len`). `None` = use the configured output length.
    pub output_len: Option<u32>,
    /// ShareGPT: the conversation's later human turns, in order, each with its reply's
    /// length; `--turns` replays them one by one.
    pub follow_ups: Vec<FollowUp>,
}

/// A later human turn of a dataset conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowUp {
    pub prompt: String,
    pub output_len: Option<u32>,
}

/// The dataset formats (`--dataset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetFormat {
    ShareGpt,
    Jsonl,
}

impl std::str::FromStr for DatasetFormat {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sharegpt" => Ok(DatasetFormat::ShareGpt),
            "jsonl" => Ok(DatasetFormat::Jsonl),
            other => Err(UsageError::new(format!(
                "unknown dataset format {other:?}: expected sharegpt or jsonl"
            ))),
        }
    }
}

/// Reads a dataset. `count_tokens` measures a ShareGPT reply to get its output length
/// (a tokenizer, or the approximate count).
pub fn load(
    path: &Path,
    format: DatasetFormat,
    count_tokens: &dyn Fn(&str) -> u32,
) -> Result<Vec<DatasetEntry>, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError::new(format!("cannot read dataset {}: {e}", path.display())))?;
    let entries = match format {
        DatasetFormat::ShareGpt => parse_sharegpt(&text, count_tokens),
        DatasetFormat::Jsonl => parse_jsonl(&text),
    }
    .map_err(|e| UsageError::new(format!("{}: {e}", path.display())))?;
    if entries.is_empty() {
        return Err(UsageError::new(format!(
            "{}: the dataset has no usable prompts",
            path.display()
        )));
    }
    Ok(entries)
}

/// ShareGPT: a JSON array of `{"conversations": [{"from": "human", "value": …},
/// {"from": "gpt", "value": …}, …]}`. Like vLLM's `ShareGPTDataset`, entries with fewer
/// than two turns are skipped; the prompt is the first human turn and the output length
/// the token count of the first gpt turn after it.
pub fn parse_sharegpt(
    text: &str,
    count_tokens: &dyn Fn(&str) -> u32,
) -> Result<Vec<DatasetEntry>, String> {
    // Typed parsing gives the line and column of a bad value; the untyped walk below
    // names the entry and field, which serde's message may not.
    let items: Vec<ShareGptEntry> = match serde_json::from_str(text) {
        Ok(items) => items,
        Err(e) => {
            let place = format!("line {}, column {}", e.line(), e.column());
            return Err(match sharegpt_field_error(text) {
                Some(FieldError::TopLevel(what)) => what,
                Some(FieldError::Field(what)) => format!("{place}: {what}"),
                None => format!("{place}: not valid ShareGPT JSON: {e}"),
            });
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let turns = &item.conversations;
        // Like vLLM's ShareGPTDataset: fewer than two turns cannot give a reply length.
        if turns.len() < 2 {
            continue;
        }
        let Some(h) = turns.iter().position(|t| t.from == "human") else {
            continue;
        };
        let Some(reply) = turns[h + 1..].iter().find(|t| t.from == "gpt") else {
            continue;
        };
        if turns[h].value.is_empty() {
            continue;
        }
        out.push(DatasetEntry {
            prompt: turns[h].value.clone(),
            output_len: Some(count_tokens(&reply.value).max(1)),
            follow_ups: follow_ups(&turns[h + 1..], count_tokens),
        });
    }
    Ok(out)
}

/// The human turns after the first, each with the length of the gpt reply after it
/// (`None` when none follows). Empty turns are left out.
fn follow_ups(turns: &[ShareGptTurn], count_tokens: &dyn Fn(&str) -> u32) -> Vec<FollowUp> {
    let mut out = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        if t.from != "human" || t.value.trim().is_empty() {
            continue;
        }
        let reply = turns[i + 1..]
            .iter()
            .take_while(|r| r.from != "human")
            .find(|r| r.from == "gpt");
        out.push(FollowUp {
            prompt: t.value.clone(),
            output_len: reply.map(|r| count_tokens(&r.value).max(1)),
        });
    }
    out
}

#[derive(Deserialize)]
struct ShareGptEntry {
    conversations: Vec<ShareGptTurn>,
}

#[derive(Deserialize)]
struct ShareGptTurn {
    from: String,
    value: String,
}

enum FieldError {
    /// The document's shape is wrong (a position would point at its first byte).
    TopLevel(String),
    Field(String),
}

/// Finds the first entry or field that does not have the ShareGPT shape, as
/// "entry N: field \"…\": what". `None` when the text is not JSON at all (serde's own
/// message says it best) or no such field is found.
fn sharegpt_field_error(text: &str) -> Option<FieldError> {
    let doc: Value = serde_json::from_str(text).ok()?;
    let Value::Array(items) = doc else {
        return Some(FieldError::TopLevel(
            "expected a JSON array of conversations at the top level".into(),
        ));
    };
    for (i, item) in items.iter().enumerate() {
        let at = |field: &str, what: &str| {
            Some(FieldError::Field(format!(
                "entry {i}: field {field:?}: {what}"
            )))
        };
        let Some(turns) = item.get("conversations") else {
            return at("conversations", "missing");
        };
        let Value::Array(turns) = turns else {
            return at("conversations", "expected an array of turns");
        };
        for (j, t) in turns.iter().enumerate() {
            for key in ["from", "value"] {
                match t.get(key) {
                    Some(Value::String(_)) => {}
                    None => return at(&format!("conversations[{j}].{key}"), "missing"),
                    Some(_) => {
                        return at(&format!("conversations[{j}].{key}"), "expected a string");
                    }
                }
            }
        }
    }
    None
}

/// JSONL: one object per line, `{"prompt": "…", "output_len": 128}` (`output_len`
/// optional). Blank lines are ignored.
pub fn parse_jsonl(text: &str) -> Result<Vec<DatasetEntry>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| format!("line {line_no}, column {}: not valid JSON: {e}", e.column()))?;
        let Value::Object(obj) = v else {
            return Err(format!("line {line_no}: expected a JSON object"));
        };
        let prompt = match obj.get("prompt") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::String(_)) => {
                return Err(format!("line {line_no}: field \"prompt\": empty string"));
            }
            Some(_) => {
                return Err(format!(
                    "line {line_no}: field \"prompt\": expected a string"
                ));
            }
            None => return Err(format!("line {line_no}: field \"prompt\": missing")),
        };
        let output_len = match obj.get("output_len") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n >= 1 => Some(n),
                _ => {
                    return Err(format!(
                        "line {line_no}: field \"output_len\": expected a positive integer, got {v}"
                    ));
                }
            },
        };
        out.push(DatasetEntry {
            prompt,
            output_len,
            follow_ups: Vec::new(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn words(s: &str) -> u32 {
        s.split_whitespace().count() as u32
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/datasets")
            .join(name)
    }

    #[test]
    fn sharegpt_fixture_takes_first_human_and_gpt_turns() {
        let e = load(&fixture("sharegpt.json"), DatasetFormat::ShareGpt, &words).unwrap();
        assert_eq!(
            e,
            vec![
                DatasetEntry {
                    prompt: "What is the capital of France?".into(),
                    output_len: Some(6),
                    follow_ups: vec![FollowUp {
                        prompt: "And of Spain?".into(),
                        output_len: Some(1),
                    }],
                },
                DatasetEntry {
                    prompt: "Write a haiku about rust.".into(),
                    output_len: Some(11),
                    follow_ups: Vec::new(),
                },
            ]
        );
    }

    #[test]
    fn jsonl_fixture_reads_optional_output_len() {
        let e = load(&fixture("prompts.jsonl"), DatasetFormat::Jsonl, &words).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].output_len, Some(64));
        assert_eq!(e[1].output_len, None);
    }

    #[test]
    fn jsonl_errors_name_line_and_field() {
        let cases = [
            (
                "{\"prompt\": \"a\"}\n{\"prompt\": 3}\n",
                "line 2: field \"prompt\": expected a string",
            ),
            ("\n{\"text\": \"a\"}", "line 2: field \"prompt\": missing"),
            (
                "{\"prompt\": \"\"}",
                "line 1: field \"prompt\": empty string",
            ),
            (
                "{\"prompt\": \"a\", \"output_len\": -1}",
                "line 1: field \"output_len\": expected a positive integer, got -1",
            ),
            (
                "{\"prompt\": \"a\", \"output_len\": 0}",
                "line 1: field \"output_len\": expected a positive integer, got 0",
            ),
            ("[1]", "line 1: expected a JSON object"),
        ];
        for (input, want) in cases {
            assert_eq!(parse_jsonl(input).unwrap_err(), want, "input {input:?}");
        }
        let e = parse_jsonl("{\"prompt\": \"a\"}\n{oops").unwrap_err();
        assert!(e.starts_with("line 2, column 2: not valid JSON"), "{e}");
    }

    #[test]
    fn sharegpt_errors_name_entry_and_field() {
        let e = parse_sharegpt("{}", &words).unwrap_err();
        assert_eq!(e, "expected a JSON array of conversations at the top level");
        let e = parse_sharegpt("[{\"id\": 1}]", &words).unwrap_err();
        assert_eq!(
            e,
            "line 1, column 10: entry 0: field \"conversations\": missing"
        );
        let e = parse_sharegpt(
            "[{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"},\n{\"from\": \"gpt\", \"value\": 3}]}]",
            &words,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "line 2, column 26: entry 0: field \"conversations[1].value\": expected a string"
        );
        let e = parse_sharegpt("[\n{", &words).unwrap_err();
        assert!(
            e.starts_with("line 2, column 1: not valid ShareGPT JSON"),
            "{e}"
        );
    }

    #[test]
    fn load_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.jsonl");
        std::fs::write(&p, "{\"prompt\": 1}\n").unwrap();
        let e = load(&p, DatasetFormat::Jsonl, &words).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: line 1: field \"prompt\": expected a string",
                p.display()
            )
        );
        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "\n\n").unwrap();
        let e = load(&empty, DatasetFormat::Jsonl, &words).unwrap_err();
        assert!(e.to_string().ends_with("the dataset has no usable prompts"));
        let missing = load(
            &dir.path().join("nope.json"),
            DatasetFormat::ShareGpt,
            &words,
        );
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .starts_with("cannot read dataset")
        );
        assert!("csv".parse::<DatasetFormat>().is_err());
    }

    #[test]
    fn sharegpt_keeps_each_conversations_later_human_turns() {
        let text = r#"[{"conversations": [
            {"from": "human", "value": "first question"},
            {"from": "gpt", "value": "a b c"},
            {"from": "human", "value": "second question"},
            {"from": "gpt", "value": "d e"},
            {"from": "human", "value": "  "},
            {"from": "human", "value": "last, unanswered"}
        ]}]"#;
        let words = |t: &str| t.split_whitespace().count() as u32;
        let entries = parse_sharegpt(text, &words).unwrap();
        assert_eq!(entries[0].prompt, "first question");
        assert_eq!(entries[0].output_len, Some(3));
        assert_eq!(
            entries[0].follow_ups,
            [
                FollowUp {
                    prompt: "second question".into(),
                    output_len: Some(2)
                },
                FollowUp {
                    prompt: "last, unanswered".into(),
                    output_len: None
                }
            ]
        );
    }
}
