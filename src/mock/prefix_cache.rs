//! The mock's prefix cache: which prompt blocks it has seen, so it reports cached
//! prompt tokens the way a server with prefix caching does (vLLM's
//! `prompt_tokens_details.cached_tokens`). A token is a word (as the mock counts
//! prompts), a block is `block_size` of them, and a block's key hashes its words
//! chained with the key of the block before it, so a block hits only when everything
//! before it matched too. What a request adds: its prompt's whole blocks on arrival,
//! and the blocks of prompt plus generated text when it ends (a conversation's next
//! turn starts with exactly that). Bounded: at `capacity` blocks the least recently
//! used go first. Timing is not affected.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

/// The hash of one word (one token, as the mock counts them).
pub fn word_hash(word: &str) -> u64 {
    let mut h = DefaultHasher::new();
    word.hash(&mut h);
    h.finish()
}

/// The hashes of the whitespace-separated words of `text`, appended to `out`.
pub fn push_words(out: &mut Vec<u64>, text: &str) {
    out.extend(text.split_whitespace().map(word_hash));
}

/// Remembered blocks, least recently used first out.
pub struct PrefixCache {
    block_size: usize,
    capacity: usize,
    lru: Mutex<Lru>,
}

#[derive(Default)]
struct Lru {
    /// Block key → when it was last used.
    used: HashMap<u64, u64>,
    /// When → block key, oldest first.
    order: BTreeMap<u64, u64>,
    clock: u64,
}

impl Lru {
    fn touch(&mut self, key: u64) {
        self.clock += 1;
        if let Some(old) = self.used.insert(key, self.clock) {
            self.order.remove(&old);
        }
        self.order.insert(self.clock, key);
    }
}

impl PrefixCache {
    /// A cache of `capacity` blocks of `block_size` tokens (both at least 1).
    pub fn new(block_size: u32, capacity: u32) -> Self {
        PrefixCache {
            block_size: block_size.max(1) as usize,
            capacity: capacity.max(1) as usize,
            lru: Mutex::new(Lru::default()),
        }
    }

    /// The chained keys of the whole blocks of a token stream.
    pub fn keys(&self, tokens: &[u64]) -> Vec<u64> {
        let mut prev = 0u64;
        tokens
            .chunks_exact(self.block_size)
            .map(|block| {
                let mut h = DefaultHasher::new();
                prev.hash(&mut h);
                block.hash(&mut h);
                prev = h.finish();
                prev
            })
            .collect()
    }

    /// How many of a prompt's `tokens` (with block keys `keys`) are cached: the
    /// longest run of leading blocks seen before, in tokens, leaving at least one token
    /// to compute (as vLLM does). Remembers the prompt's blocks.
    pub fn lookup(&self, keys: &[u64], tokens: u32) -> u32 {
        let mut lru = self.lru.lock().unwrap_or_else(|p| p.into_inner());
        let hits = keys.iter().take_while(|k| lru.used.contains_key(k)).count();
        Self::remember(&mut lru, keys, self.capacity);
        let cached = u32::try_from(hits * self.block_size).unwrap_or(u32::MAX);
        if cached >= tokens {
            // Every block hit: the last one is computed again for the first token.
            cached.saturating_sub(self.block_size as u32)
        } else {
            cached
        }
    }

    /// Remembers the blocks of `keys` (a finished request's prompt and output).
    pub fn insert(&self, keys: &[u64]) {
        let mut lru = self.lru.lock().unwrap_or_else(|p| p.into_inner());
        Self::remember(&mut lru, keys, self.capacity);
    }

    fn remember(lru: &mut Lru, keys: &[u64], capacity: usize) {
        for &k in keys {
            lru.touch(k);
        }
        while lru.used.len() > capacity {
            let Some((_, oldest)) = lru.order.pop_first() else {
                break;
            };
            lru.used.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        push_words(&mut out, text);
        out
    }

    fn numbered(from: u32, to: u32) -> String {
        (from..to).map(|i| format!(" w{i}")).collect()
    }

    #[test]
    fn a_conversation_hits_its_previous_turn_in_whole_blocks() {
        let cache = PrefixCache::new(4, 100);
        // Turn 1: 10 prompt words, nothing cached; then 3 output words.
        let p1 = words(&numbered(0, 10));
        assert_eq!(cache.lookup(&cache.keys(&p1), 10), 0);
        let out = words(" tok0 tok1 tok2");
        let done: Vec<u64> = p1.iter().chain(&out).copied().collect();
        cache.insert(&cache.keys(&done));
        // Turn 2: prompt 1, answer, 6 new words = 19 words; 13 seen → 3 whole blocks.
        let p2: Vec<u64> = done
            .iter()
            .copied()
            .chain(words(&numbered(50, 56)))
            .collect();
        assert_eq!(cache.lookup(&cache.keys(&p2), 19), 12);
        // Another prompt sharing no first block shares nothing, even with equal later
        // words (keys are chained).
        let other: Vec<u64> = words(" x y z q")
            .into_iter()
            .chain(p1[4..].to_vec())
            .collect();
        assert_eq!(cache.lookup(&cache.keys(&other), 10), 0);
    }

    #[test]
    fn a_fully_cached_prompt_leaves_its_last_block_to_compute() {
        let cache = PrefixCache::new(4, 100);
        let p = words(&numbered(0, 8));
        assert_eq!(cache.lookup(&cache.keys(&p), 8), 0);
        assert_eq!(cache.lookup(&cache.keys(&p), 8), 4);
        let longer = words(&numbered(0, 9));
        assert_eq!(cache.lookup(&cache.keys(&longer), 9), 8);
    }

    #[test]
    fn the_least_recently_used_blocks_are_evicted() {
        let cache = PrefixCache::new(2, 3);
        let a = words("a1 a2 a3 a4");
        let b = words("b1 b2 b3 b4");
        let (ka, kb) = (cache.keys(&a), cache.keys(&b));
        cache.insert(&ka);
        cache.insert(&kb);
        // Capacity 3: a's first block went first.
        assert_eq!(cache.lookup(&ka, 5), 0);
        let cache = PrefixCache::new(2, 3);
        cache.insert(&ka);
        assert_eq!(cache.lookup(&ka, 5), 4);
    }
}
