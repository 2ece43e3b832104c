//! Workload: what to send. Prompts (with a unique nonce so prefix caching cannot inflate
//! results, or a deliberate shared prefix), input/output lengths, datasets, tokenizers.
//! Pure and seeded: the same seed gives the same requests.

use std::sync::Arc;

/// One request to send: the prompt text and the output length to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// The full prompt text (nonce, optional shared prefix, body). Chat endpoints send it
    /// as a single user message; in a conversation it is the new user message.
    pub prompt: String,
    /// Tokens of the whole request: `prompt`'s (exact when built with a tokenizer, else
    /// the generator's approximation), plus the history's in a conversation.
    pub prompt_tokens: u32,
    /// Output tokens to ask for (`max_tokens` / `max_completion_tokens`).
    pub max_tokens: u32,
    /// A later turn of a conversation, or a fixed question's example exchanges: the
    /// earlier turns, oldest first, sent before `prompt` (empty for a single request).
    pub history: Vec<Exchange>,
    /// A system message sent before everything (a fixed question's `messages:`).
    pub system: Option<Arc<str>>,
    /// The model it names when not the client's (a LoRA adapter of `--lora-split`).
    pub model: Option<Arc<str>>,
}

impl RequestSpec {
    /// The history and the new message as one text, for APIs that take a single prompt
    /// (completions): each user message followed directly by its answer, turns apart
    /// by a newline, so an earlier turn's prompt and answer are a byte-identical prefix.
    pub fn flat_prompt(&self) -> std::borrow::Cow<'_, str> {
        if self.history.is_empty() {
            return std::borrow::Cow::Borrowed(&self.prompt);
        }
        let mut text = String::new();
        for e in &self.history {
            text.push_str(&e.user);
            text.push_str(&e.assistant);
            text.push('\n');
        }
        text.push_str(&self.prompt);
        std::borrow::Cow::Owned(text)
    }
}

pub use conversation::{Exchange, History, Preamble};

pub use tokenizer::TokenCounter;

pub mod conversation;
pub mod dataset;
pub mod image;
pub mod lengths;
pub mod lora;
pub mod prompt;
pub mod replay;
pub mod tokenizer;
pub mod trace;
pub mod trace_prompt;

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

use crate::schedule::splitmix64;
use dataset::DatasetEntry;
use lengths::Lengths;
use prompt::{Nonce, PromptGenerator};

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum PromptSource {
    /// Generated text of the given input length (prefix and nonce included).
    Synthetic { input: Lengths },
    /// Prompts from a dataset, visited in a seeded shuffled order, cycling.
    Dataset(Arc<Vec<DatasetEntry>>),
}

/// Everything that defines the requests of a run. The same seed and run nonce give the
/// same requests, index by index.
#[derive(Debug, Clone)]
pub struct Workload {
    source: PromptSource,
    /// Output lengths; for a dataset it applies only when `override_output` is set or an
    /// entry has no length of its own.
    output: Lengths,
    override_output: bool,
    prompts: PromptGenerator,
    seed: u64,
    run_nonce: u32,
    /// Dataset visiting order (a seeded permutation of entry indexes).
    order: Arc<Vec<u32>>,
    /// What every request carries before its prompt (a fixed question's `messages:`).
    preamble: Option<Arc<Preamble>>,
    /// Conversations replay the dataset's own turns (ShareGPT with later human turns),
    /// found once here rather than per turn.
    replays: bool,
    /// The golden set whose questions the dataset entries are, in its order.
    golden: Option<Arc<crate::check::GoldenSet>>,
    /// Synthetic prompts: the share of requests that start with the shared prefix, and
    /// the generator of the others (without it), drawn per request from a stream of its
    /// own.
    prefix_share: Option<(f64, PromptGenerator)>,
    /// The base model and its LoRA adapters, one picked per request from the seed.
    models: Option<Arc<lora::ModelSplit>>,
}

impl Workload {
    /// Each request names a model of `split`, picked from the seed and its index.
    pub fn with_models(mut self, split: lora::ModelSplit) -> Self {
        self.models = Some(Arc::new(split));
        self
    }

    /// Synthetic prompts. Fails when the smallest possible input length cannot hold the
    /// shared prefix and the nonce.
    pub fn synthetic(
        input: Lengths,
        output: Lengths,
        prompts: PromptGenerator,
        seed: u64,
    ) -> Result<Self, crate::exit::UsageError> {
        prompts.check_fits(input.bounds().0)?;
        Ok(Workload {
            source: PromptSource::Synthetic { input },
            output,
            override_output: true,
            prompts,
            seed,
            run_nonce: default_run_nonce(seed),
            order: Arc::new(Vec::new()),
            preamble: None,
            replays: false,
            golden: None,
            prefix_share: None,
            models: None,
        })
    }

    /// Dataset prompts. With `override_output` every request draws its output length
    /// from `output`; without it each entry's own length is used and `output` covers
    /// entries that have none.
    pub fn dataset(
        entries: Vec<DatasetEntry>,
        output: Lengths,
        override_output: bool,
        prompts: PromptGenerator,
        seed: u64,
    ) -> Result<Self, crate::exit::UsageError> {
        if entries.is_empty() {
            return Err(crate::exit::UsageError::new("the dataset has no prompts"));
        }
        let n = u32::try_from(entries.len())
            .map_err(|_| crate::exit::UsageError::new("the dataset has too many prompts"))?;
        let mut order: Vec<u32> = (0..n).collect();
        let mut rng = rng_for(seed, u64::MAX);
        rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut rng);
        let replays = entries.iter().any(|e| !e.follow_ups.is_empty());
        Ok(Workload {
            source: PromptSource::Dataset(Arc::new(entries)),
            output,
            override_output,
            prompts,
            seed,
            run_nonce: default_run_nonce(seed),
            order: Arc::new(order),
            preamble: None,
            replays,
            golden: None,
            prefix_share: None,
            models: None,
        })
    }

    /// A golden set's questions, visited like a dataset (a seeded shuffled order,
    /// cycling); each request's question is [`Workload::golden_question`]. A question
    /// is asked as written, whatever `prompts` would put before it: no nonce, no shared
    /// prefix (words in front of a question change what is asked, and the answer is
    /// what is measured here). The probe's rules refuse a prefix asked for beside it.
    pub fn golden(
        set: Arc<crate::check::GoldenSet>,
        output: Lengths,
        prompts: PromptGenerator,
        seed: u64,
    ) -> Result<Self, crate::exit::UsageError> {
        let prompts = prompts.without_nonce().without_shared_prefix();
        let entries = set
            .questions()
            .iter()
            .map(|q| DatasetEntry {
                prompt: q.text.clone(),
                output_len: None,
                follow_ups: Vec::new(),
            })
            .collect();
        let mut w = Self::dataset(entries, output, true, prompts, seed)?;
        w.golden = Some(set);
        Ok(w)
    }

    /// The golden question request `index` asks, when the prompts are a golden set's.
    pub fn golden_question(&self, index: u64) -> Option<crate::check::Asked> {
        let set = self.golden.as_ref()?;
        let pos = (index % self.order.len() as u64) as usize;
        Some(crate::check::Asked {
            set: set.clone(),
            index: self.order[pos] as usize,
        })
    }

    /// Sets the run part of every nonce. Two runs with the same seed send the same
    /// prompts unless their run nonces differ: give each run a fresh one (e.g. from the
    /// clock) when a server's prefix cache must not remember the previous run.
    pub fn with_run_nonce(mut self, run_nonce: u32) -> Self {
        self.run_nonce = run_nonce;
        self
    }

    /// Sends `preamble` (a system message, example exchanges) before every prompt.
    pub fn with_preamble(mut self, preamble: Preamble) -> Self {
        self.preamble = Some(Arc::new(preamble));
        self
    }

    /// Synthetic prompts: only a share `share` (0..1) of the requests, drawn per request
    /// ([`shares_prefix`]), start with the shared prefix; the rest are as long without
    /// it. The prefix is drawn for `run` alone, so no earlier run (another share of a
    /// sweep) warmed it, and the engine's prefix-cache hit ratio follows `share`.
    pub fn with_prefix_share(mut self, share: f64, run: u32) -> anyhow::Result<Self> {
        let unprefixed = self.prompts.clone().without_shared_prefix();
        self.prompts = self.prompts.with_run_prefix(run)?;
        self.prefix_share = Some((share.clamp(0.0, 1.0), unprefixed));
        Ok(self)
    }

    /// The same workload drawn from another seed (lengths and prompt bodies; a
    /// dataset keeps its visiting order).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// An upper bound on the prompt bytes of one request: the longest possible input
    /// at [`PROMPT_BYTES_PER_TOKEN`], or the longest dataset prompt with the shared
    /// prefix and nonce around it.
    pub fn max_prompt_bytes(&self) -> u64 {
        let per_token = PROMPT_BYTES_PER_TOKEN;
        match &self.source {
            PromptSource::Synthetic { input } => u64::from(input.bounds().1) * per_token,
            PromptSource::Dataset(entries) => {
                let longest = entries.iter().map(|e| e.prompt.len()).max().unwrap_or(0);
                longest as u64 + u64::from(self.prompts.min_prompt_tokens()) * per_token
            }
        }
    }

    /// The most output tokens any request may ask for.
    pub fn max_output_tokens(&self) -> u32 {
        let drawn = self.output.bounds().1;
        match &self.source {
            PromptSource::Dataset(entries) if !self.override_output => entries
                .iter()
                .filter_map(|e| e.output_len)
                .max()
                .map_or(drawn, |m| m.max(drawn)),
            _ => drawn,
        }
    }

    pub fn prompts(&self) -> &PromptGenerator {
        &self.prompts
    }

    /// The request with sequence number `index`: a pure function of the seed, the run
    /// nonce and `index`, so requests can be built ahead of time or on demand.
    pub fn spec(&self, index: u64) -> anyhow::Result<RequestSpec> {
        let mut rng = rng_for(self.seed, index);
        let nonce = Nonce {
            run: self.run_nonce,
            request: index,
        };
        let mut spec = self.unprefaced(index, &mut rng, nonce)?;
        if let Some(split) = &self.models {
            spec.model = Some(Arc::from(split.pick(self.seed, index)));
        }
        if let Some(p) = &self.preamble {
            spec.system.clone_from(&p.system);
            spec.history.clone_from(&p.exchanges);
            spec.prompt_tokens = spec.prompt_tokens.saturating_add(p.tokens);
        }
        Ok(spec)
    }

    /// The dataset entry request `index` asks (entries visited in the seeded order).
    fn entry<'a>(&self, entries: &'a [DatasetEntry], index: u64) -> &'a DatasetEntry {
        let pos = (index % self.order.len() as u64) as usize;
        &entries[self.order[pos] as usize]
    }

    /// The first message of conversation `conversation` of `per` turns: a replayed
    /// dataset's conversation number `conversation`, else request `conversation × per`
    /// (so every turn of every conversation has a request index of its own).
    pub fn first_turn(&self, conversation: u64, per: u32) -> anyhow::Result<RequestSpec> {
        if self.replays {
            self.spec(conversation)
        } else {
            self.spec(conversation.saturating_mul(u64::from(per)))
        }
    }

    /// The new message of turn `turn` (2, 3, …) of conversation `conversation`: a
    /// replayed dataset conversation's next human turn as written (`None` when it has
    /// no more), else request `conversation × per + turn − 1`, a fresh message of the
    /// configured length.
    pub fn later_turn(
        &self,
        conversation: u64,
        per: u32,
        turn: u32,
    ) -> anyhow::Result<Option<RequestSpec>> {
        let index = conversation
            .saturating_mul(u64::from(per))
            .saturating_add(u64::from(turn.saturating_sub(1)));
        let (PromptSource::Dataset(entries), true) = (&self.source, self.replays) else {
            return self.spec(index).map(Some);
        };
        let entry = self.entry(entries, conversation);
        let Some(next) = entry.follow_ups.get(turn.saturating_sub(2) as usize) else {
            return Ok(None);
        };
        let sampled = self.output.sample(&mut rng_for(self.seed, index));
        let max_tokens = match (self.override_output, next.output_len) {
            (false, Some(n)) => n,
            _ => sampled,
        };
        // The conversation's first message carries the nonce; later ones are the
        // dataset's text as written.
        Ok(Some(RequestSpec {
            prompt: next.prompt.clone(),
            prompt_tokens: self.prompts.count(&next.prompt),
            max_tokens,
            history: Vec::new(),
            system: None,
            model: None,
        }))
    }

    /// The request without the preamble.
    fn unprefaced(
        &self,
        index: u64,
        rng: &mut Xoshiro256PlusPlus,
        nonce: Nonce,
    ) -> anyhow::Result<RequestSpec> {
        match &self.source {
            PromptSource::Synthetic { input } => {
                let input_len = input.sample(rng);
                let max_tokens = self.output.sample(rng);
                let prompts = match &self.prefix_share {
                    Some((share, unprefixed)) if !shares_prefix(self.seed, index, *share) => {
                        unprefixed
                    }
                    _ => &self.prompts,
                };
                let (prompt, prompt_tokens) = prompts.synthetic(nonce, input_len, rng)?;
                Ok(RequestSpec {
                    prompt,
                    prompt_tokens,
                    max_tokens,
                    history: Vec::new(),
                    system: None,
                    model: None,
                })
            }
            PromptSource::Dataset(entries) => {
                let entry = self.entry(entries, index);
                let sampled = self.output.sample(rng);
                let max_tokens = match (self.override_output, entry.output_len) {
                    (false, Some(n)) => n,
                    _ => sampled,
                };
                let (prompt, prompt_tokens) = self.prompts.wrap(nonce, &entry.prompt);
                Ok(RequestSpec {
                    prompt,
                    prompt_tokens,
                    max_tokens,
                    history: Vec::new(),
                    system: None,
                    model: None,
                })
            }
        }
    }
}

/// Generous bytes per token of generated prompt text (English words average ~4 to 5
/// characters with the space, and a token is at most a word here); the exact
/// tokenizer's text is of the same order.
pub const PROMPT_BYTES_PER_TOKEN: u64 = 6;

/// The default run nonce: derived from the seed, so a seeded run is reproducible.
fn default_run_nonce(seed: u64) -> u32 {
    (splitmix64(seed ^ 0x6e6f_6e63_6500_0000) >> 32) as u32
}

/// Whether request `index` starts with the shared prefix when a share `share` of the
/// requests do: a draw of its own stream, so the prompts' other draws stay as they were.
pub fn shares_prefix(seed: u64, index: u64, share: f64) -> bool {
    use rand::RngExt;
    const PREFIX_STREAM: u64 = 0x7072_6566_6978;
    rng_for(seed ^ PREFIX_STREAM, index).random::<f64>() < share
}

/// An independent RNG for (`seed`, `index`): SplitMix64 mixing (Steele, Lea & Flood,
/// "Fast splittable pseudorandom number generators", OOPSLA 2014) of both into the seed
/// of a Xoshiro256++, whose output is stable across rand versions (unlike `StdRng`).
pub fn rng_for(seed: u64, index: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(splitmix64(seed) ^ splitmix64(index.wrapping_add(0x9e37)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lengths::LengthDist;

    fn synthetic(seed: u64) -> Workload {
        Workload::synthetic(
            Lengths::new(100, LengthDist::Uniform { range_ratio: 0.5 }).unwrap(),
            Lengths::new(50, LengthDist::LogNormal { sigma: 0.5 }).unwrap(),
            PromptGenerator::approximate(0),
            seed,
        )
        .unwrap()
    }

    #[test]
    fn a_fixed_prompt_carries_a_nonce_unless_turned_off() {
        let question = "What is 2 + 2?";
        let fixed = |prompts: PromptGenerator| {
            let entry = dataset::DatasetEntry {
                prompt: question.into(),
                output_len: None,
                follow_ups: Vec::new(),
            };
            Workload::dataset(vec![entry], Lengths::fixed(8).unwrap(), true, prompts, 1).unwrap()
        };
        let on = fixed(PromptGenerator::approximate(0));
        let (a, b) = (on.spec(0).unwrap(), on.spec(1).unwrap());
        assert_ne!(a.prompt, b.prompt);
        assert!(a.prompt.ends_with(question) && a.prompt.len() > question.len());
        let off = fixed(PromptGenerator::approximate(0).without_nonce());
        let (a, b) = (off.spec(0).unwrap(), off.spec(1).unwrap());
        assert_eq!(a.prompt.as_bytes(), b.prompt.as_bytes());
        assert_eq!(a.prompt, question);
        assert_eq!(a.prompt_tokens, prompt::approx_tokens(question));
        // Another run nonce changes nothing either.
        assert_eq!(off.with_run_nonce(99).spec(0).unwrap().prompt, question);
    }

    #[test]
    fn a_golden_question_is_asked_as_written() {
        let set = Arc::new(crate::check::GoldenSet::load("builtin").unwrap());
        let w = Workload::golden(
            set.clone(),
            Lengths::fixed(16).unwrap(),
            PromptGenerator::approximate(0),
            7,
        )
        .unwrap()
        .with_run_nonce(99);
        for i in 0..(2 * set.questions().len() as u64) {
            let asked = w.golden_question(i).unwrap();
            let spec = w.spec(i).unwrap();
            assert_eq!(
                spec.prompt,
                set.questions()[asked.index].text,
                "request {i}"
            );
        }
        // Nothing the generator would put before a prompt goes before a question.
        let prefixed = Workload::golden(
            set.clone(),
            Lengths::fixed(16).unwrap(),
            PromptGenerator::approximate(16),
            7,
        )
        .unwrap();
        let asked = prefixed.golden_question(0).unwrap();
        assert_eq!(
            prefixed.spec(0).unwrap().prompt,
            set.questions()[asked.index].text
        );
    }

    #[test]
    fn specs_are_deterministic_per_seed_and_index() {
        let a = synthetic(1);
        let b = synthetic(1);
        for i in [0, 1, 17, 1_000_000] {
            assert_eq!(a.spec(i).unwrap(), b.spec(i).unwrap());
        }
        assert_ne!(a.spec(0).unwrap(), synthetic(2).spec(0).unwrap());
        assert_ne!(a.spec(0).unwrap().prompt, a.spec(1).unwrap().prompt);
        let c = synthetic(1).with_run_nonce(99);
        assert_ne!(a.spec(0).unwrap().prompt, c.spec(0).unwrap().prompt);
    }

    #[test]
    fn synthetic_lengths_follow_the_distributions() {
        let w = synthetic(3);
        for i in 0..200 {
            let s = w.spec(i).unwrap();
            assert!((50..=150).contains(&s.prompt_tokens), "{}", s.prompt_tokens);
            assert_eq!(s.prompt.split(' ').count() as u32, s.prompt_tokens);
            assert!(s.max_tokens >= 1);
        }
    }

    #[test]
    fn upper_bounds_cover_every_spec() {
        let w = synthetic(5);
        let d = Workload::dataset(
            vec![
                DatasetEntry {
                    prompt: "x".repeat(500),
                    output_len: Some(900),
                    follow_ups: Vec::new(),
                },
                DatasetEntry {
                    prompt: "short".into(),
                    output_len: None,
                    follow_ups: Vec::new(),
                },
            ],
            Lengths::fixed(77).unwrap(),
            false,
            PromptGenerator::approximate(0),
            4,
        )
        .unwrap();
        assert_eq!(d.max_output_tokens(), 900);
        for w in [&w, &d] {
            for i in 0..100 {
                let s = w.spec(i).unwrap();
                assert!(s.prompt.len() as u64 <= w.max_prompt_bytes());
                assert!(s.max_tokens <= w.max_output_tokens());
            }
        }
    }

    #[test]
    fn each_run_of_a_prefix_share_draws_its_own_prefix() {
        let fixed = || {
            Workload::synthetic(
                Lengths::fixed(64).unwrap(),
                Lengths::fixed(4).unwrap(),
                PromptGenerator::approximate(32),
                7,
            )
            .unwrap()
        };
        let run = |nonce: u32, share: f64| {
            fixed()
                .with_run_nonce(nonce)
                .with_prefix_share(share, nonce)
                .unwrap()
        };
        let head = |w: &Workload, i: u64| -> String {
            let prompt = w.spec(i).unwrap().prompt;
            prompt.split(' ').take(32).collect::<Vec<_>>().join(" ")
        };
        let (a, b) = (run(1, 1.0), run(2, 1.0));
        // Within a run every prefixed request starts with it; no other run's does.
        assert_eq!(head(&a, 0), head(&a, 5));
        assert_ne!(head(&a, 0), head(&b, 0));
        assert_ne!(head(&a, 0), head(&fixed(), 0));
        assert_eq!(a.spec(0).unwrap().prompt_tokens, 64);
        // Which requests carry it is the seeded draw, whatever the run.
        let (c, prefix) = (run(3, 0.5), head(&run(3, 1.0), 0));
        let prefixed: Vec<bool> = (0..40).map(|i| head(&c, i) == prefix).collect();
        let drawn: Vec<bool> = (0..40).map(|i| shares_prefix(7, i, 0.5)).collect();
        assert_eq!(prefixed, drawn);
        assert!(drawn.contains(&true) && drawn.contains(&false));
    }

    #[test]
    fn too_short_inputs_for_the_prefix_are_rejected() {
        let e = Workload::synthetic(
            Lengths::fixed(10).unwrap(),
            Lengths::fixed(10).unwrap(),
            PromptGenerator::approximate(5),
            0,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("input length 10 is too short"),
            "{e}"
        );
    }

    #[test]
    fn dataset_cycles_in_seeded_order_and_honours_output_lengths() {
        let entries: Vec<DatasetEntry> = (0..5)
            .map(|i| DatasetEntry {
                prompt: format!("prompt number {i}"),
                output_len: (i % 2 == 0).then_some(10 + i),
                follow_ups: Vec::new(),
            })
            .collect();
        let w = Workload::dataset(
            entries.clone(),
            Lengths::fixed(77).unwrap(),
            false,
            PromptGenerator::approximate(0),
            4,
        )
        .unwrap();
        let mut seen = std::collections::HashSet::new();
        for i in 0..5 {
            let s = w.spec(i).unwrap();
            let body = s.prompt.rsplit_once(" prompt number ").unwrap().1;
            let n: u32 = body.parse().unwrap();
            seen.insert(n);
            let want = if n.is_multiple_of(2) { 10 + n } else { 77 };
            assert_eq!(s.max_tokens, want);
            // The cycle repeats the same entry with a different nonce.
            let again = w.spec(i + 5).unwrap();
            assert!(again.prompt.ends_with(&format!("prompt number {n}")));
            assert_ne!(again.prompt, s.prompt);
        }
        assert_eq!(seen.len(), 5);
        let overridden = Workload::dataset(
            entries,
            Lengths::fixed(77).unwrap(),
            true,
            PromptGenerator::approximate(0),
            4,
        )
        .unwrap();
        assert!((0..5).all(|i| overridden.spec(i).unwrap().max_tokens == 77));
    }
}
