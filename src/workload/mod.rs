//! Workload: what to send. Prompts (with a unique nonce so prefix caching cannot inflate
//! results, or a deliberate shared prefix), input/output lengths, datasets, tokenizers.
//! Pure and seeded: the same seed gives the same requests.

use std::sync::Arc;

/// One request to send: the prompt text and the output length to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// The full prompt text (nonce, optional shared prefix, body). Chat endpoints send it
    /// as a single user message.
    pub prompt: String,
    /// Tokens in `prompt`: exact when built with a tokenizer, else the generator's
    /// approximation.
    pub prompt_tokens: u32,
    /// Output tokens to ask for (`max_tokens` / `max_completion_tokens`).
    pub max_tokens: u32,
}

/// Counts the tokens of a piece of text (a Hugging Face tokenizer, in practice). Used by
/// the client when the server sends no usage.
pub type TokenCounter = Arc<dyn Fn(&str) -> u32 + Send + Sync>;
