//! The degenerate-output detector behind `max_repetition`.
//!
//! repetition = (word trigrams that repeat an earlier trigram) / (word trigrams), so
//! 0 for text that never repeats three words in a row and close to 1 for a model
//! looping on anything, one token or a whole sentence (a loop of period p over n words
//! scores about 1 − p/n). Answers under four words score 0: too short to loop.

use std::collections::HashSet;

/// The answer's repetition in [0, 1].
pub fn repetition(text: &str) -> f64 {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() < 4 {
        return 0.0;
    }
    let trigrams = words.windows(3);
    let total = trigrams.len();
    let distinct: HashSet<&[&str]> = trigrams.collect();
    (total - distinct.len()) as f64 / total as f64
}
