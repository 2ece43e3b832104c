//! A Hugging Face `tokenizer.json`, loaded with the `tokenizers` crate: exact prompt
//! lengths for the workload and a [`TokenCounter`] for the client when the server sends
//! no usage. Never downloads anything: the user passes a file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::exit::UsageError;

/// Counts the tokens of a piece of text (a Hugging Face tokenizer, in practice). Used by
/// the client when the server sends no usage.
pub type TokenCounter = Arc<dyn Fn(&str) -> u32 + Send + Sync>;

/// A loaded tokenizer plus the ids that are safe to put in a random prompt.
#[derive(Clone)]
pub struct Tokenizer {
    inner: Arc<tokenizers::Tokenizer>,
    /// Ids of the base vocabulary that are not added/special tokens and decode to
    /// printable text, sorted.
    plain_ids: Arc<Vec<u32>>,
    path: PathBuf,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("path", &self.path)
            .field("plain_ids", &self.plain_ids.len())
            .finish()
    }
}

impl Tokenizer {
    /// Loads a `tokenizer.json`. A missing or malformed file is a usage error naming
    /// the file.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        if !path.is_file() {
            return Err(UsageError::new(format!(
                "tokenizer file {} does not exist or is not a file (pass a Hugging Face tokenizer.json)",
                path.display()
            ))
            .into());
        }
        let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| {
            UsageError::new(format!(
                "{}: not a usable Hugging Face tokenizer.json: {e}",
                path.display()
            ))
        })?;
        Self::from_tokenizer(inner, path.to_path_buf())
    }

    fn from_tokenizer(inner: tokenizers::Tokenizer, path: PathBuf) -> anyhow::Result<Self> {
        let added = inner.get_added_tokens_decoder();
        let vocab = u32::try_from(inner.get_vocab_size(false)).unwrap_or(u32::MAX);
        // Only ids that decode on their own to printable text: random byte fragments of
        // a byte-level BPE decode to U+FFFD and re-encode unpredictably, which makes
        // exact lengths slow to reach and the prompt unlike any real text.
        let plain_ids: Vec<u32> = (0..vocab)
            .filter(|id| !added.contains_key(id))
            .filter(|&id| {
                inner.decode(&[id], true).is_ok_and(|t| {
                    !t.trim().is_empty() && !t.chars().any(|c| c == '\u{FFFD}' || c.is_control())
                })
            })
            .collect();
        if plain_ids.is_empty() {
            return Err(UsageError::new(format!(
                "{}: the tokenizer has no ordinary (non-special) tokens",
                path.display()
            ))
            .into());
        }
        Ok(Tokenizer {
            inner: Arc::new(inner),
            plain_ids: Arc::new(plain_ids),
            path,
        })
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Token ids of `text`, without special tokens (a chat template or BOS added by the
    /// server is not part of the prompt we built).
    pub fn encode(&self, text: &str) -> anyhow::Result<Vec<u32>> {
        let enc = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("encoding with {}", self.path.display()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`, special tokens skipped.
    pub fn decode(&self, ids: &[u32]) -> anyhow::Result<String> {
        self.inner
            .decode(ids, true)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("decoding with {}", self.path.display()))
    }

    /// Tokens in `text`; 0 when the text cannot be encoded (the tokenizers crate only
    /// fails on pathological input such as a sequence longer than its truncation limit).
    pub fn count(&self, text: &str) -> u32 {
        self.inner
            .encode_fast(text, false)
            .map(|e| u32::try_from(e.len()).unwrap_or(u32::MAX))
            .unwrap_or(0)
    }

    /// Ids that may appear in a random prompt (no added or special tokens).
    pub fn plain_ids(&self) -> &[u32] {
        &self.plain_ids
    }

    /// A [`TokenCounter`] for the client.
    pub fn counter(&self) -> TokenCounter {
        let this = self.clone();
        Arc::new(move |text: &str| this.count(text))
    }
}

/// The tokenizer the tests use: a byte-level BPE with a 400-token vocabulary, trained by
/// `workload::prompt::tests::regenerate_fixture` on the approximate generator's word
/// list.
#[cfg(test)]
pub(crate) fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer/tiny-bpe.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_loads_and_round_trips() {
        let t = Tokenizer::from_file(&fixture_path()).unwrap();
        let ids = t.encode("the quick brown fox").unwrap();
        assert!(!ids.is_empty());
        assert_eq!(t.decode(&ids).unwrap(), "the quick brown fox");
        assert_eq!(t.count("the quick brown fox") as usize, ids.len());
        assert_eq!((t.counter())("the quick brown fox") as usize, ids.len());
        // Special tokens are never offered for random prompts.
        let special = t.inner.token_to_id("<|endoftext|>").unwrap();
        assert!(!t.plain_ids().contains(&special));
    }

    #[test]
    fn bad_files_are_usage_errors_naming_the_file() {
        let missing = Tokenizer::from_file(Path::new("/nonexistent/tokenizer.json")).unwrap_err();
        assert_eq!(crate::exit::code_for(&missing), crate::exit::USAGE);
        assert!(missing.to_string().contains("/nonexistent/tokenizer.json"));

        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("tokenizer.json");
        std::fs::write(&bad, "{\"model\": 3}").unwrap();
        let e = Tokenizer::from_file(&bad).unwrap_err();
        assert_eq!(crate::exit::code_for(&e), crate::exit::USAGE);
        assert!(
            e.to_string()
                .contains("not a usable Hugging Face tokenizer.json")
        );
    }
}
