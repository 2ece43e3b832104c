//! Prompts for trace replay, built block by block so a server's prefix cache sees what
//! it saw in production: requests whose `hash_ids` agree on their first k blocks get
//! byte-identical first k blocks, and different blocks never collide.
//!
//! A block is a stream of words from [`WORDS`], each with a leading space. It starts
//! with a header that spells out, a byte per word, the run's nonce (so a later run does
//! not hit this run's cache), whether the block is shared or the request's own, and its
//! 64-bit key (the hash id, or the request and block index): two different blocks differ
//! within their first [`BLOCK_HEADER_WORDS`] words. The rest of the block is random
//! words seeded by the same three. A full block has [`TRACE_BLOCK_TOKENS`] tokens; the
//! last block of a prompt has what is left, and is the full block's beginning.
//!
//! Lengths: without a tokenizer each word counts as one token. With one, each word's
//! cost is the token count of `" word"`; byte-level BPE tokenizers split text before a
//! space, so costs add up, and blocks are filled to exactly their share, ending with
//! one-token words. The whole prompt is then counted; if the tokenizer did merge across
//! words, words at the tail are trimmed or added until the count is exact (the shared
//! blocks before the tail are untouched), and the count reported is the real one.

use rand::RngExt;
use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

use super::RequestSpec;
use super::prompt::WORDS;
use super::tokenizer::Tokenizer;
use super::trace::{TRACE_BLOCK_TOKENS, TraceEntry};
use crate::schedule::splitmix64;

/// Words in a block's header: 8 of the mixed key and run, 1 for shared/own.
pub const BLOCK_HEADER_WORDS: usize = 9;

/// Rounds of tail adjustment when a tokenizer merged across words.
const MAX_TAIL_ROUNDS: usize = 16;

/// Which block: a trace's hash id, or a block of one request's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKey {
    Shared(u64),
    /// Request index and block index (below 2^44 requests, 2^20 blocks each).
    Own {
        request: u64,
        block: u32,
    },
}

impl BlockKey {
    fn tag_and_bits(self) -> (u8, u64) {
        match self {
            BlockKey::Shared(id) => (0, id),
            BlockKey::Own { request, block } => (1, (request << 20) | u64::from(block)),
        }
    }
}

/// Token costs of the words, with a tokenizer.
#[derive(Debug, Clone)]
struct Costs {
    tokenizer: Tokenizer,
    /// Tokens of `" word"` for each word of [`WORDS`].
    cost: Vec<u32>,
    /// Indexes of the words that cost one token.
    ones: Vec<u8>,
}

/// Builds trace prompts for one run.
#[derive(Debug, Clone)]
pub struct BlockPrompts {
    run: u32,
    costs: Option<Costs>,
}

impl BlockPrompts {
    /// Approximate lengths: one token per word.
    pub fn approximate(run: u32) -> Self {
        BlockPrompts { run, costs: None }
    }

    /// Exact lengths with `tokenizer`. Fails when no word of [`WORDS`] is a single
    /// token (the block fill needs them).
    pub fn exact(run: u32, tokenizer: Tokenizer) -> anyhow::Result<Self> {
        let cost: Vec<u32> = WORDS
            .iter()
            .map(|w| tokenizer.count(&format!(" {w}")).max(1))
            .collect();
        let ones: Vec<u8> = (0..=255u8).filter(|&i| cost[usize::from(i)] == 1).collect();
        if ones.is_empty() {
            anyhow::bail!(
                "{}: no word of the prompt vocabulary is a single token, so trace blocks \
                 cannot be filled to exact lengths",
                tokenizer.path().display()
            );
        }
        Ok(BlockPrompts {
            run,
            costs: Some(Costs {
                tokenizer,
                cost,
                ones,
            }),
        })
    }

    /// A copy for another run (another nonce).
    pub fn with_run(&self, run: u32) -> Self {
        BlockPrompts {
            run,
            costs: self.costs.clone(),
        }
    }

    fn cost(&self, word: u8) -> u32 {
        self.costs.as_ref().map_or(1, |c| c.cost[usize::from(word)])
    }

    /// The words of block `key`, up to `tokens` tokens.
    fn block(&self, key: BlockKey, tokens: u32, out: &mut String) {
        let (tag, bits) = key.tag_and_bits();
        // For one run and tag, a bijection of the key (SplitMix64 is one), and for one
        // key a bijection of the run: its 8 bytes differ between any two blocks of a
        // run, usually in the first.
        let mixed = splitmix64(bits ^ splitmix64(u64::from(self.run)));
        let header = mixed.to_be_bytes().into_iter().chain([tag]);
        let seed = splitmix64(mixed ^ u64::from(tag));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut body = std::iter::from_fn(move || Some(rng.random::<u8>()));
        let mut words = header.chain(&mut body);
        let mut left = tokens;
        while left > 0 {
            let Some(w) = words.next() else { break };
            let c = self.cost(w);
            if c > left {
                break;
            }
            push_word(out, w);
            left -= c;
        }
        // Finish with one-token words (always one token each without a tokenizer).
        if let Some(costs) = &self.costs {
            while left > 0 {
                let Some(w) = body.next() else { break };
                push_word(out, costs.ones[usize::from(w) % costs.ones.len()]);
                left -= 1;
            }
        }
    }

    /// The request of trace entry `entry`, the `index`-th of the run.
    pub fn spec(&self, index: u64, entry: &TraceEntry) -> anyhow::Result<RequestSpec> {
        let target = entry.input_tokens;
        let blocks = target.div_ceil(TRACE_BLOCK_TOKENS);
        let mut prompt = String::with_capacity(target as usize * 6);
        for b in 0..blocks {
            let key = match entry.hash_ids.get(b as usize) {
                Some(&id) => BlockKey::Shared(id),
                None => BlockKey::Own {
                    request: index,
                    block: b,
                },
            };
            let tokens = (target - b * TRACE_BLOCK_TOKENS).min(TRACE_BLOCK_TOKENS);
            self.block(key, tokens, &mut prompt);
        }
        let prompt_tokens = match &self.costs {
            None => target,
            Some(c) => fit_tail(c, &mut prompt, target, index)?,
        };
        Ok(RequestSpec {
            prompt,
            prompt_tokens,
            max_tokens: entry.output_tokens,
            history: Vec::new(),
            system: None,
            model: None,
        })
    }
}

fn push_word(out: &mut String, w: u8) {
    out.push(' ');
    out.push_str(WORDS[usize::from(w)]);
}

/// Counts `prompt` with the tokenizer and, when it is off `target`, trims or adds
/// one-token words at its end until it is exact (or the rounds run out). Returns the
/// real count.
fn fit_tail(c: &Costs, prompt: &mut String, target: u32, index: u64) -> anyhow::Result<u32> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(splitmix64(index ^ 0x7a11));
    let mut n = c.tokenizer.count(prompt);
    for _ in 0..MAX_TAIL_ROUNDS {
        match n.cmp(&target) {
            std::cmp::Ordering::Equal => break,
            std::cmp::Ordering::Greater => {
                // Drop one word per excess token (a word is at least one).
                for _ in 0..(n - target) {
                    match prompt.rfind(' ') {
                        Some(i) if i > 0 => prompt.truncate(i),
                        _ => break,
                    }
                }
            }
            std::cmp::Ordering::Less => {
                for _ in 0..(target - n) {
                    let w = c.ones[rng.random_range(0..c.ones.len())];
                    push_word(prompt, w);
                }
            }
        }
        n = c.tokenizer.count(prompt);
    }
    if n == 0 {
        anyhow::bail!("the prompt of {target} tokens could not be encoded");
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tokenizer::fixture_path;
    use std::time::Duration;

    fn entry(input: u32, ids: &[u64]) -> TraceEntry {
        TraceEntry {
            line: 1,
            at: Duration::ZERO,
            input_tokens: input,
            output_tokens: 7,
            hash_ids: ids.to_vec(),
        }
    }

    /// Splits a prompt into its blocks of 512 words (approximate mode).
    fn blocks(p: &str) -> Vec<String> {
        let words: Vec<&str> = p.split(' ').skip(1).collect();
        words
            .chunks(TRACE_BLOCK_TOKENS as usize)
            .map(|c| c.join(" "))
            .collect()
    }

    #[test]
    fn equal_hash_ids_give_byte_identical_blocks_and_different_ones_differ() {
        let g = BlockPrompts::approximate(42);
        let a = g.spec(0, &entry(1300, &[1, 2, 3])).unwrap();
        let b = g.spec(1, &entry(1300, &[1, 2, 9])).unwrap();
        let c = g.spec(2, &entry(700, &[5, 2])).unwrap();
        assert_eq!((a.prompt_tokens, a.max_tokens), (1300, 7));
        let (ba, bb, bc) = (blocks(&a.prompt), blocks(&b.prompt), blocks(&c.prompt));
        assert_eq!(ba.len(), 3);
        assert_eq!(ba[0], bb[0]);
        assert_eq!(ba[1], bb[1]);
        assert_ne!(ba[2], bb[2]);
        // The shared prefix is a byte prefix of both prompts.
        let shared = 2 * TRACE_BLOCK_TOKENS as usize;
        let end = |p: &str| p.match_indices(' ').nth(shared).unwrap().0;
        assert_eq!(&a.prompt[..end(&a.prompt)], &b.prompt[..end(&b.prompt)]);
        // Block 2 under id 2 is the same text wherever it sits; a different first block
        // makes the prompts differ from the first word.
        assert_eq!(bc[1][..200], ba[1][..200]);
        assert_ne!(ba[0][..60], bc[0][..60]);
        // Another run builds other blocks for the same ids.
        let other = BlockPrompts::approximate(43)
            .spec(0, &entry(1300, &[1, 2, 3]))
            .unwrap();
        assert_ne!(blocks(&other.prompt)[0], ba[0]);
    }

    #[test]
    fn a_partial_last_block_is_the_beginning_of_the_full_one() {
        let g = BlockPrompts::approximate(1);
        let full = g.spec(0, &entry(1024, &[10, 11])).unwrap();
        let part = g.spec(1, &entry(700, &[10, 11])).unwrap();
        assert!(full.prompt.starts_with(&part.prompt));
        assert_eq!(part.prompt.split(' ').count() - 1, 700);
    }

    #[test]
    fn blocks_without_ids_are_the_requests_own() {
        let g = BlockPrompts::approximate(1);
        let a = g.spec(0, &entry(600, &[])).unwrap();
        let b = g.spec(1, &entry(600, &[])).unwrap();
        assert_ne!(blocks(&a.prompt)[0][..60], blocks(&b.prompt)[0][..60]);
        // Fewer ids than blocks: the rest are the request's own.
        let c = g.spec(2, &entry(1100, &[4])).unwrap();
        let d = g.spec(3, &entry(1100, &[4])).unwrap();
        assert_eq!(blocks(&c.prompt)[0], blocks(&d.prompt)[0]);
        assert_ne!(blocks(&c.prompt)[1], blocks(&d.prompt)[1]);
    }

    #[test]
    fn headers_never_collide() {
        let g = BlockPrompts::approximate(3);
        let keys = [
            BlockKey::Shared(0),
            BlockKey::Shared(1),
            BlockKey::Shared(1 << 20),
            BlockKey::Own {
                request: 0,
                block: 0,
            },
            BlockKey::Own {
                request: 1,
                block: 0,
            },
            BlockKey::Own {
                request: 0,
                block: 1,
            },
        ];
        let heads: std::collections::HashSet<String> = keys
            .iter()
            .map(|&k| {
                let mut s = String::new();
                g.block(k, BLOCK_HEADER_WORDS as u32, &mut s);
                s
            })
            .collect();
        assert_eq!(heads.len(), keys.len());
    }

    #[test]
    fn exact_lengths_and_shared_prefixes_with_a_tokenizer() {
        let tok = Tokenizer::from_file(&fixture_path()).unwrap();
        let g = BlockPrompts::exact(9, tok.clone()).unwrap();
        let mut specs = Vec::new();
        for (i, (n, ids)) in [
            (1, vec![]),
            (13, vec![3]),
            (511, vec![3]),
            (512, vec![3]),
            (513, vec![3, 4]),
            (1500, vec![3, 4, 5]),
            (1500, vec![3, 4, 6]),
            (2049, vec![3, 4]),
        ]
        .into_iter()
        .enumerate()
        {
            let s = g.spec(i as u64, &entry(n, &ids)).unwrap();
            assert_eq!(s.prompt_tokens, n, "entry {i}");
            assert_eq!(tok.count(&s.prompt), n, "entry {i}");
            specs.push(s);
        }
        // Blocks 3 and 4 are byte-identical across the requests that share them.
        let p5 = &specs[5].prompt;
        let p6 = &specs[6].prompt;
        let common = p5
            .bytes()
            .zip(p6.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let two_blocks = tok.count(&p5[..common]);
        assert!(
            two_blocks >= 2 * TRACE_BLOCK_TOKENS,
            "common {two_blocks} tokens"
        );
        assert!(specs[7].prompt.starts_with(&p5[..common]));
    }
}
