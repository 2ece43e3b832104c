//! The prompts a fingerprint asks: a file (one JSON string or one plain line per
//! line), or the built-in set.

use std::path::Path;

/// Short prompts with a short, fairly determined continuation, so a greedy answer
/// is stable on an unchanged model and sensitive to a changed one.
pub const DEFAULT_PROMPTS: [&str; 8] = [
    "Name the capital of France in one word.",
    "Count from one to ten in words.",
    "What is 12 times 12? Answer with the number only.",
    "Write the first line of a poem about the sea.",
    "List three primary colors.",
    "Translate 'good morning' into Spanish.",
    "Complete the sentence: The quick brown fox",
    "Explain in one sentence what a CPU does.",
];

/// The built-in prompts as owned strings.
pub fn default_prompts() -> Vec<String> {
    DEFAULT_PROMPTS.iter().map(|p| (*p).to_string()).collect()
}

/// Reads prompts from `path`: a line starting with `"` is a JSON string, any other
/// non-empty line is taken as it is. Errors name the file and line.
pub fn read_prompts(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => crate::usage_bail!("cannot read prompts file {}: {e}", path.display()),
    };
    let prompts = parse_prompts(&text).map_err(|e| {
        crate::exit::UsageError::new(format!("prompts file {}:{e}", path.display()))
    })?;
    Ok(prompts)
}

/// The prompts of a file's text; an error is `LINE: reason`.
pub fn parse_prompts(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('"') {
            match serde_json::from_str::<String>(line) {
                Ok(s) if !s.trim().is_empty() => out.push(s),
                Ok(_) => return Err(format!("{}: the prompt is empty", i + 1)),
                Err(e) => return Err(format!("{}: not a JSON string: {e}", i + 1)),
            }
        } else {
            out.push(line.to_string());
        }
    }
    if out.is_empty() {
        return Err("1: no prompts in the file".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_plain_lines() {
        let p = parse_prompts("\"a\\nb\"\n\nplain line\n").unwrap();
        assert_eq!(p, vec!["a\nb".to_string(), "plain line".to_string()]);
        assert_eq!(
            parse_prompts("\n\n").unwrap_err(),
            "1: no prompts in the file"
        );
        assert!(
            parse_prompts("ok\n\"bad\n")
                .unwrap_err()
                .starts_with("2: not a JSON string")
        );
    }
}
