//! What rerank and score requests share on the mock: the query and the documents read
//! from a body, the prompt's words (each document paired with the query, as a
//! cross-encoder reads them), and the relevance the mock gives each document: the
//! share of the query's distinct words that the document contains (words compared
//! lower-cased, without the punctuation around them), so the expected top document of
//! a test is known by reading it.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::prompt::push_words;
use crate::workload::prompt::WORDS;

/// The relevance of each document of a request, in the request's order, and how many
/// results it asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    pub scores: Vec<f64>,
    /// Rerank's `top_n` (None: every document).
    pub top_n: Option<usize>,
}

impl Ranking {
    /// The documents' indexes, best first: the higher score, the lower index on a tie;
    /// at most `top_n`.
    pub fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.scores.len()).collect();
        order.sort_by(|a, b| self.scores[*b].total_cmp(&self.scores[*a]).then(a.cmp(b)));
        order.truncate(self.top_n.unwrap_or(usize::MAX));
        order
    }
}

/// The query (a string at `query_key`) and the documents (strings at `docs_key`; a
/// single string is one document).
pub fn read<'a>(
    body: &'a Map<String, Value>,
    query_key: &str,
    docs_key: &str,
) -> Result<(&'a str, Vec<&'a str>), String> {
    let Some(Value::String(query)) = body.get(query_key) else {
        return Err(format!("'{query_key}' must be a string"));
    };
    let docs = match body.get(docs_key) {
        Some(Value::String(d)) => vec![d.as_str()],
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.as_str()),
                // Cohere's object form.
                Value::Object(o) => o
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("each of '{docs_key}' must be a string")),
                _ => Err(format!("each of '{docs_key}' must be a string")),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(format!("'{docs_key}' must be a non-empty array of strings")),
    };
    Ok((query, docs))
}

/// The words a cross-encoder reads: the query before each document.
pub fn pair_words(query: &str, docs: &[&str]) -> Vec<u64> {
    let mut out = Vec::new();
    for d in docs {
        push_words(&mut out, query);
        push_words(&mut out, d);
    }
    out
}

/// Lower-cased content words without the punctuation around them.
fn words(text: &str) -> BTreeSet<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty() && !WORDS.contains(&w.as_str()))
        .collect()
}

/// Each document's relevance: the share of the query's distinct content words it
/// contains (0 for every document of a query without any).
pub fn scores(query: &str, docs: &[&str]) -> Vec<f64> {
    let q = words(query);
    docs.iter()
        .map(|d| {
            if q.is_empty() {
                return 0.0;
            }
            let d = words(d);
            q.iter().filter(|w| d.contains(*w)).count() as f64 / q.len() as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_sharing_most_query_words_ranks_first() {
        // "in", "the" and "of" are common words: not counted.
        let query = "Cats sleep in Paris, the capital of France?";
        let docs = [
            "Dogs bark.",
            "cats sleep on sofas",
            "Paris is lovely",
            "CATS!",
        ];
        let s = scores(query, &docs);
        assert_eq!(s, [0.0, 0.4, 0.2, 0.2]);
        // A nonce in front changes nothing.
        assert_eq!(scores(&format!("the of and to is {query}"), &docs), s);
        let r = Ranking {
            scores: s,
            top_n: None,
        };
        assert_eq!(r.order(), [1, 2, 3, 0]);
        let r = Ranking {
            top_n: Some(2),
            ..r
        };
        assert_eq!(r.order(), [1, 2]);
    }
}
