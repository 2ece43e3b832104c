//! Prompt text: a unique nonce first (so prefix caching cannot inflate results), an
//! optional fixed shared prefix before it (to measure the cache on purpose), then a body
//! of the requested length.
//!
//! Two ways to hit a length:
//! - Approximate (default): the body is words from [`WORDS`], counted as one token each.
//!   Every word is a short, common English word; byte-pair vocabularies of current
//!   models (GPT-4's cl100k, Llama 3, Qwen 2) hold such words, with their leading space,
//!   as single tokens, so one token per word is the assumption. It is an assumption:
//!   for exact lengths pass a tokenizer.
//! - Exact: with a Hugging Face tokenizer, the way vLLM's random dataset does it
//!   (`vllm/benchmarks/datasets.py`, `RandomDataset`): decode random token ids to text,
//!   re-encode the whole prompt, then trim or pad the body's ids until the prompt
//!   encodes to exactly the target. The count returned is always the real one.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, RngExt, SeedableRng};

use super::tokenizer::Tokenizer;
use crate::exit::UsageError;

/// The approximate generator's vocabulary: 256 common English words, so a byte of
/// randomness picks one (the nonce uses that too).
pub const WORDS: [&str; 256] = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "at",
    "be",
    "by",
    "this",
    "from",
    "or",
    "have",
    "an",
    "they",
    "which",
    "one",
    "had",
    "not",
    "but",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "your",
    "said",
    "use",
    "each",
    "she",
    "how",
    "their",
    "if",
    "will",
    "up",
    "other",
    "about",
    "out",
    "many",
    "then",
    "them",
    "these",
    "so",
    "some",
    "her",
    "would",
    "make",
    "like",
    "him",
    "into",
    "time",
    "has",
    "look",
    "two",
    "more",
    "write",
    "go",
    "see",
    "number",
    "no",
    "way",
    "could",
    "people",
    "my",
    "than",
    "first",
    "water",
    "been",
    "call",
    "who",
    "its",
    "now",
    "find",
    "long",
    "down",
    "day",
    "did",
    "get",
    "come",
    "made",
    "may",
    "part",
    "over",
    "new",
    "sound",
    "take",
    "only",
    "little",
    "work",
    "know",
    "place",
    "year",
    "live",
    "me",
    "back",
    "give",
    "most",
    "very",
    "after",
    "thing",
    "our",
    "just",
    "name",
    "good",
    "sentence",
    "man",
    "think",
    "say",
    "great",
    "where",
    "help",
    "through",
    "much",
    "before",
    "line",
    "right",
    "too",
    "mean",
    "old",
    "any",
    "same",
    "tell",
    "boy",
    "follow",
    "came",
    "want",
    "show",
    "also",
    "around",
    "form",
    "three",
    "small",
    "set",
    "put",
    "end",
    "does",
    "another",
    "well",
    "large",
    "must",
    "big",
    "even",
    "such",
    "because",
    "turn",
    "here",
    "why",
    "ask",
    "went",
    "men",
    "read",
    "need",
    "land",
    "different",
    "home",
    "us",
    "move",
    "try",
    "kind",
    "hand",
    "picture",
    "again",
    "change",
    "off",
    "play",
    "spell",
    "air",
    "away",
    "animal",
    "house",
    "point",
    "page",
    "letter",
    "mother",
    "answer",
    "found",
    "study",
    "still",
    "learn",
    "should",
    "world",
    "high",
    "every",
    "near",
    "add",
    "food",
    "between",
    "own",
    "below",
    "country",
    "plant",
    "last",
    "school",
    "father",
    "keep",
    "tree",
    "never",
    "start",
    "city",
    "earth",
    "eye",
    "light",
    "thought",
    "head",
    "under",
    "story",
    "saw",
    "left",
    "few",
    "while",
    "along",
    "might",
    "close",
    "something",
    "seem",
    "next",
    "hard",
    "open",
    "example",
    "begin",
    "life",
    "always",
    "those",
    "both",
    "paper",
    "together",
    "got",
    "group",
    "often",
    "run",
    "important",
    "until",
    "children",
    "side",
    "feet",
    "car",
    "mile",
    "night",
    "walk",
    "white",
    "sea",
    "began",
    "grow",
    "took",
    "river",
    "four",
    "carry",
    "state",
];

/// Words in a nonce: 4 from the run's nonce and 4 from the request index, 8 bits each, so
/// the first 8 tokens of every prompt in a run differ (for fewer than 2³² requests).
pub const NONCE_WORDS: u32 = 8;

/// Seed of the shared prefix text: fixed, so the prefix is the same across runs and
/// seeds (a cache warmed by one run helps the next, which is the point of the flag),
/// unless a run draws its own ([`PromptGenerator::with_run_prefix`]).
const SHARED_PREFIX_SEED: u64 = 0x5eed_0f5b_a7ed;

/// Rounds of re-encoding in exact mode before settling for the closest length. vLLM's
/// `gen_prompt_decode_to_target_len` uses a similar bounded loop; in practice 1–3 rounds
/// suffice because only the joints between decoded pieces can merge differently.
const MAX_ADJUST_ROUNDS: usize = 16;

/// What makes a prompt unique: the run and the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nonce {
    pub run: u32,
    pub request: u64,
}

impl Nonce {
    /// The nonce as words: `run` and the low 32 bits of `request`, a byte per word.
    pub fn text(&self) -> String {
        let bytes = self
            .run
            .to_be_bytes()
            .into_iter()
            .chain((self.request as u32).to_be_bytes());
        let words: Vec<&str> = bytes.map(|b| WORDS[usize::from(b)]).collect();
        words.join(" ")
    }
}

/// How token lengths are obtained.
#[derive(Debug, Clone)]
enum Mode {
    Approximate,
    Exact(Tokenizer),
}

/// Builds prompts. Cheap to clone (a tokenizer is shared).
#[derive(Debug, Clone)]
pub struct PromptGenerator {
    mode: Mode,
    /// The shared prefix text and its token count.
    shared_prefix: Option<(String, u32)>,
    /// Whether [`wrap`](Self::wrap) puts the unique nonce in front of a fixed prompt
    /// (on unless [`without_nonce`](Self::without_nonce)).
    nonce: bool,
}

impl PromptGenerator {
    /// Approximate lengths (one token per word), with an optional shared prefix of
    /// `shared_prefix_len` words.
    pub fn approximate(shared_prefix_len: u32) -> Self {
        let shared_prefix = (shared_prefix_len > 0).then(|| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(SHARED_PREFIX_SEED);
            (random_words(&mut rng, shared_prefix_len), shared_prefix_len)
        });
        PromptGenerator {
            mode: Mode::Approximate,
            shared_prefix,
            nonce: true,
        }
    }

    /// Exact lengths with `tokenizer`; the shared prefix encodes to exactly
    /// `shared_prefix_len` tokens (or as close as the tokenizer allows).
    pub fn exact(tokenizer: Tokenizer, shared_prefix_len: u32) -> anyhow::Result<Self> {
        let shared_prefix = if shared_prefix_len > 0 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(SHARED_PREFIX_SEED);
            Some(exact_text(&tokenizer, "", shared_prefix_len, &mut rng)?)
        } else {
            None
        };
        Ok(PromptGenerator {
            mode: Mode::Exact(tokenizer),
            shared_prefix,
            nonce: true,
        })
    }

    /// The same generator with a shared prefix of the same length drawn for `run` alone:
    /// no other run sends it, so an engine's cache holds none of it when the run starts.
    pub fn with_run_prefix(mut self, run: u32) -> anyhow::Result<Self> {
        let Some((_, tokens)) = self.shared_prefix else {
            return Ok(self);
        };
        let seed = SHARED_PREFIX_SEED ^ crate::schedule::splitmix64(u64::from(run) + 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        self.shared_prefix = Some(match &self.mode {
            Mode::Approximate => (random_words(&mut rng, tokens), tokens),
            Mode::Exact(tok) => exact_text(tok, "", tokens, &mut rng)?,
        });
        Ok(self)
    }

    /// The same generator with fixed prompts sent without the unique nonce, byte for
    /// byte the same on every request (for exact-match questions to servers whose
    /// prefix cache does not matter). Synthetic prompts keep theirs.
    pub fn without_nonce(mut self) -> Self {
        self.nonce = false;
        self
    }

    /// Whether lengths are exact (a tokenizer is used).
    pub fn is_exact(&self) -> bool {
        matches!(self.mode, Mode::Exact(_))
    }

    /// Tokens of the shared prefix (0 without one).
    pub fn shared_prefix_tokens(&self) -> u32 {
        self.shared_prefix.as_ref().map_or(0, |(_, n)| *n)
    }

    /// The smallest prompt this generator can build: prefix + nonce + one body token.
    pub fn min_prompt_tokens(&self) -> u32 {
        self.shared_prefix_tokens() + NONCE_WORDS + 1
    }

    /// Checks that prompts of `min_input_len` tokens leave room for the body.
    pub fn check_fits(&self, min_input_len: u32) -> Result<(), UsageError> {
        check_room(self.shared_prefix_tokens(), min_input_len)
    }

    /// The same generator with no shared prefix.
    pub fn without_shared_prefix(mut self) -> Self {
        self.shared_prefix = None;
        self
    }

    /// Prefix and nonce as text (what every prompt starts with).
    fn head(&self, nonce: Nonce) -> String {
        match &self.shared_prefix {
            Some((prefix, _)) => format!("{prefix} {}", nonce.text()),
            None => nonce.text(),
        }
    }

    /// A synthetic prompt of `input_len` tokens in total (prefix and nonce included).
    /// Returns the text and its token count: exact with a tokenizer, else the estimate.
    /// When `input_len` is below [`min_prompt_tokens`](Self::min_prompt_tokens) the body
    /// is one token and the prompt is longer than asked (the count says so).
    pub fn synthetic<R: Rng + ?Sized>(
        &self,
        nonce: Nonce,
        input_len: u32,
        rng: &mut R,
    ) -> anyhow::Result<(String, u32)> {
        let head = self.head(nonce);
        match &self.mode {
            Mode::Approximate => {
                let body_len = input_len
                    .saturating_sub(self.shared_prefix_tokens() + NONCE_WORDS)
                    .max(1);
                let body = random_words(rng, body_len);
                Ok((
                    format!("{head} {body}"),
                    self.shared_prefix_tokens() + NONCE_WORDS + body_len,
                ))
            }
            Mode::Exact(tok) => exact_text(tok, &head, input_len, rng),
        }
    }

    /// A dataset prompt made unique: prefix, nonce, then `text`. Returns the prompt and
    /// its token count (exact with a tokenizer, else prefix + nonce + [`approx_tokens`]).
    /// Without the nonce ([`without_nonce`](Self::without_nonce)): prefix, then `text`.
    pub fn wrap(&self, nonce: Nonce, text: &str) -> (String, u32) {
        let (prompt, nonce_words) = match (&self.shared_prefix, self.nonce) {
            (_, true) => (format!("{} {text}", self.head(nonce)), NONCE_WORDS),
            (Some((prefix, _)), false) => (format!("{prefix} {text}"), 0),
            (None, false) => (text.to_string(), 0),
        };
        let tokens = match &self.mode {
            Mode::Exact(tok) => tok.count(&prompt),
            Mode::Approximate => self.shared_prefix_tokens() + nonce_words + approx_tokens(text),
        };
        (prompt, tokens)
    }

    /// Tokens in arbitrary text: exact with a tokenizer, else [`approx_tokens`].
    pub fn count(&self, text: &str) -> u32 {
        match &self.mode {
            Mode::Exact(tok) => tok.count(text),
            Mode::Approximate => approx_tokens(text),
        }
    }
}

/// Checks that generated prompts of `min_input_len` tokens leave room for a body after
/// a shared prefix of `shared_prefix_tokens` and the nonce.
pub fn check_room(shared_prefix_tokens: u32, min_input_len: u32) -> Result<(), UsageError> {
    let need = shared_prefix_tokens.saturating_add(NONCE_WORDS + 1);
    if min_input_len < need {
        return Err(UsageError::new(format!(
            "input length {min_input_len} is too short: the shared prefix \
             ({shared_prefix_tokens}) and the unique nonce ({NONCE_WORDS}) plus one token need \
             {need}"
        )));
    }
    Ok(())
}

/// Token estimate for arbitrary text without a tokenizer: one token per 4 bytes, the
/// usual rule of thumb for English with GPT-style BPE vocabularies (OpenAI's tokenizer
/// guide: "one token generally corresponds to ~4 characters of text"), at least 1.
pub fn approx_tokens(text: &str) -> u32 {
    u32::try_from(text.len().div_ceil(4))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// `n` words drawn from the prompt vocabulary, one token each by the approximate count.
pub fn random_words<R: Rng + ?Sized>(rng: &mut R, n: u32) -> String {
    let mut s = String::with_capacity(n as usize * 6);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
    s
}

/// `head` followed by a body, adjusted until the whole encodes to `target` tokens.
/// Returns the closest result after [`MAX_ADJUST_ROUNDS`] with its real count.
fn exact_text<R: Rng + ?Sized>(
    tok: &Tokenizer,
    head: &str,
    target: u32,
    rng: &mut R,
) -> anyhow::Result<(String, u32)> {
    let ids = tok.plain_ids();
    let join = |body: &str| -> String {
        if head.is_empty() {
            body.to_string()
        } else {
            format!("{head} {body}")
        }
    };
    let head_tokens = if head.is_empty() { 0 } else { tok.count(head) };
    let mut body: Vec<u32> = (0..target.saturating_sub(head_tokens).max(1))
        .map(|_| ids[rng.random_range(0..ids.len())])
        .collect();
    let mut best: Option<(String, u32)> = None;
    for _ in 0..MAX_ADJUST_ROUNDS {
        let text = join(&tok.decode(&body)?);
        let n = tok.count(&text);
        let closer = best
            .as_ref()
            .is_none_or(|(_, b)| n.abs_diff(target) < b.abs_diff(target));
        if closer {
            best = Some((text, n));
        }
        match n.cmp(&target) {
            std::cmp::Ordering::Equal => break,
            std::cmp::Ordering::Greater => {
                let excess = (n - target) as usize;
                // Keep at least one body token: a prompt needs a body.
                body.truncate(body.len().saturating_sub(excess).max(1));
                if body.len() == 1 && n > target {
                    // Prefix and nonce alone reach the target; cannot shrink further.
                    let text = join(&tok.decode(&body)?);
                    let n = tok.count(&text);
                    if best
                        .as_ref()
                        .is_none_or(|(_, b)| n.abs_diff(target) < b.abs_diff(target))
                    {
                        best = Some((text, n));
                    }
                    break;
                }
            }
            std::cmp::Ordering::Less => {
                let missing = target - n;
                body.extend((0..missing).map(|_| ids[rng.random_range(0..ids.len())]));
            }
        }
    }
    best.ok_or_else(|| anyhow::anyhow!("no prompt was built"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tokenizer::fixture_path;

    fn rng() -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(42)
    }

    #[test]
    fn words_are_distinct() {
        let set: std::collections::HashSet<_> = WORDS.iter().collect();
        assert_eq!(set.len(), WORDS.len());
    }

    #[test]
    fn nonces_differ_per_request_and_run() {
        let a = Nonce { run: 1, request: 0 }.text();
        let b = Nonce { run: 1, request: 1 }.text();
        let c = Nonce { run: 2, request: 0 }.text();
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.split(' ').count(), NONCE_WORDS as usize);
    }

    #[test]
    fn approximate_prompt_starts_with_the_nonce_and_counts_words() {
        let g = PromptGenerator::approximate(0);
        let nonce = Nonce { run: 9, request: 3 };
        let (p, n) = g.synthetic(nonce, 100, &mut rng()).unwrap();
        assert!(p.starts_with(&nonce.text()));
        assert_eq!(n, 100);
        assert_eq!(p.split(' ').count(), 100);
    }

    #[test]
    fn shared_prefix_comes_first_and_is_identical() {
        let g = PromptGenerator::approximate(20);
        let (a, na) = g
            .synthetic(Nonce { run: 1, request: 0 }, 64, &mut rng())
            .unwrap();
        let (b, _) = g
            .synthetic(Nonce { run: 1, request: 1 }, 64, &mut rng())
            .unwrap();
        let prefix = |s: &str| s.split(' ').take(20).collect::<Vec<_>>().join(" ");
        assert_eq!(prefix(&a), prefix(&b));
        assert_ne!(a, b);
        assert_eq!(na, 64);
        assert!(g.check_fits(28).is_err());
        assert!(g.check_fits(29).is_ok());
    }

    #[test]
    fn exact_prompts_encode_to_the_target() {
        let tok = Tokenizer::from_file(&fixture_path()).unwrap();
        let g = PromptGenerator::exact(tok.clone(), 0).unwrap();
        let mut r = rng();
        for (i, target) in [60u32, 128, 300, 1000].into_iter().enumerate() {
            let nonce = Nonce {
                run: 5,
                request: i as u64,
            };
            let (p, n) = g.synthetic(nonce, target, &mut r).unwrap();
            assert_eq!(n, target, "prompt {p:?}");
            assert_eq!(tok.count(&p), target);
            assert!(p.starts_with(&nonce.text()));
        }
    }

    #[test]
    fn exact_lengths_hold_over_many_targets_and_seeds() {
        let tok = Tokenizer::from_file(&fixture_path()).unwrap();
        let g = PromptGenerator::exact(tok, 0).unwrap();
        let mut misses = Vec::new();
        for seed in 0..20u64 {
            let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
            for target in (40..400).step_by(37) {
                let nonce = Nonce {
                    run: seed as u32,
                    request: u64::from(target),
                };
                let (_, n) = g.synthetic(nonce, target, &mut r).unwrap();
                if n != target {
                    misses.push((seed, target, n));
                }
            }
        }
        assert!(misses.is_empty(), "missed targets: {misses:?}");
    }

    #[test]
    fn exact_shared_prefix_has_its_length() {
        let tok = Tokenizer::from_file(&fixture_path()).unwrap();
        let g = PromptGenerator::exact(tok.clone(), 40).unwrap();
        assert_eq!(g.shared_prefix_tokens(), 40);
        let (p, n) = g
            .synthetic(Nonce { run: 1, request: 1 }, 200, &mut rng())
            .unwrap();
        assert_eq!(n, 200);
        assert_eq!(tok.count(&p), 200);
    }

    #[test]
    fn wrapped_dataset_prompts_are_counted() {
        let g = PromptGenerator::approximate(0);
        let (p, n) = g.wrap(Nonce { run: 0, request: 0 }, "abcdefgh");
        assert!(p.ends_with(" abcdefgh"));
        assert_eq!(n, NONCE_WORDS + 2);
        assert_eq!(approx_tokens(""), 1);
        assert_eq!(approx_tokens("abcde"), 2);
    }

    /// Rebuilds `tests/fixtures/tokenizer/tiny-bpe.json`:
    /// `cargo test --lib workload::prompt::tests::regenerate_fixture -- --ignored`.
    #[test]
    #[ignore = "writes the committed fixture"]
    fn regenerate_fixture() {
        use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
        use tokenizers::models::TrainerWrapper;
        use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
        use tokenizers::pre_tokenizers::byte_level::ByteLevel;
        use tokenizers::{AddedToken, ModelWrapper};

        let mut tok = tokenizers::Tokenizer::new(ModelWrapper::BPE(BPE::default()));
        tok.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
        tok.with_decoder(Some(ByteLevelDecoder::default()));
        let mut trainer = TrainerWrapper::BpeTrainer(
            BpeTrainerBuilder::new()
                .show_progress(false)
                .vocab_size(400)
                .min_frequency(0)
                .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
                .special_tokens(vec![AddedToken::from("<|endoftext|>", true)])
                .build(),
        );
        let corpus: Vec<String> = (0..50)
            .map(|i| {
                let words = WORDS;
                (0..200)
                    .map(|j| words[(i * 31 + j * 7) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        tok.train(&mut trainer, corpus.iter()).unwrap();
        tok.save(fixture_path(), false).unwrap();
    }
}
