//! The baseline file: what an endpoint answered to each prompt (tokens and top-k per
//! position) and how much it diverged from itself when asked again (its noise). JSON;
//! this struct is the file's contract.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::client::Endpoint;

use super::answer::Answer;
use super::compare::Noise;
use super::request::Ask;

/// The format this llmprobe writes and reads.
pub const FORMAT: u32 = 1;

/// A recorded fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The file format ([`FORMAT`]).
    pub format: u32,
    /// The llmprobe that recorded it.
    pub llmprobe_version: String,
    /// The API asked: chat, completions or responses.
    pub endpoint: Endpoint,
    /// The `model` field sent.
    pub model: String,
    /// Alternatives asked per position.
    pub top_logprobs: u32,
    /// Most tokens per answer.
    pub max_tokens: u32,
    /// How many times each prompt was asked (the first answer is the reference).
    pub repeats: u32,
    /// The endpoint's divergence from itself over the repeats.
    pub noise: Noise,
    /// Each prompt and its reference answer.
    pub prompts: Vec<PromptAnswer>,
}

/// One prompt and the answer recorded for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptAnswer {
    pub prompt: String,
    pub answer: Answer,
}

impl Baseline {
    /// What a candidate must be asked to be compared with this baseline.
    pub fn ask(&self) -> Ask {
        Ask {
            endpoint: self.endpoint,
            model: self.model.clone(),
            top_logprobs: self.top_logprobs,
            max_tokens: self.max_tokens,
        }
    }

    /// The reference answers, in prompt order.
    pub fn answers(&self) -> Vec<Answer> {
        self.prompts.iter().map(|p| p.answer.clone()).collect()
    }

    /// Reads and checks a baseline file. Every error names the file.
    pub fn load(path: &Path) -> anyhow::Result<Baseline> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => crate::usage_bail!("cannot read baseline {}: {e}", path.display()),
        };
        match Baseline::parse(&text) {
            Ok(b) => Ok(b),
            Err(e) => crate::usage_bail!("baseline {}: {e}", path.display()),
        }
    }

    /// Parses and checks a baseline's text.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let b: Baseline = serde_json::from_str(text).map_err(|e| e.to_string())?;
        b.check()?;
        Ok(b)
    }

    fn check(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "format {} is not {FORMAT}: record it again with this llmprobe",
                self.format
            ));
        }
        self.ask().validate()?;
        if self.repeats == 0 {
            return Err("repeats must be at least 1".into());
        }
        if self.prompts.is_empty() {
            return Err("it has no prompts".into());
        }
        if self.prompts.iter().all(|p| p.answer.positions.is_empty()) {
            return Err("every recorded answer is empty: nothing to compare".into());
        }
        let n = &self.noise;
        if !(0.0..=1.0).contains(&n.divergence) || !(0.0..=1.0).contains(&n.token_agreement) {
            return Err("noise.divergence and noise.token_agreement must be within 0..1".into());
        }
        for (i, p) in self.prompts.iter().enumerate() {
            for (j, pos) in p.answer.positions.iter().enumerate() {
                let bad = |lp: f64| !lp.is_finite() || lp > 1e-6;
                if bad(pos.logprob) || pos.top.iter().any(|a| bad(a.logprob)) {
                    return Err(format!(
                        "prompts[{i}].answer.positions[{j}] has a logprob that is not a finite number <= 0"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Writes the baseline as pretty JSON (atomically: a temporary file, then rename).
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        use anyhow::Context;
        let text = serde_json::to_string_pretty(self).context("serializing the baseline")?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text + "\n").with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::answer::{Alt, Position};

    fn sample() -> Baseline {
        Baseline {
            format: FORMAT,
            llmprobe_version: "0".into(),
            endpoint: Endpoint::Chat,
            model: "m".into(),
            top_logprobs: 2,
            max_tokens: 4,
            repeats: 3,
            noise: Noise {
                divergence: 0.01,
                token_agreement: 1.0,
            },
            prompts: vec![PromptAnswer {
                prompt: "p".into(),
                answer: Answer {
                    positions: vec![Position {
                        token: "a".into(),
                        logprob: -0.1,
                        top: vec![Alt {
                            token: "a".into(),
                            logprob: -0.1,
                        }],
                    }],
                },
            }],
        }
    }

    #[test]
    fn round_trip_and_checks() {
        let b = sample();
        let text = serde_json::to_string(&b).unwrap();
        assert_eq!(Baseline::parse(&text).unwrap(), b);
        let mut m = sample();
        m.endpoint = Endpoint::Messages;
        let e = Baseline::parse(&serde_json::to_string(&m).unwrap()).unwrap_err();
        assert!(e.contains("messages API has no logprobs"), "{e}");
        let mut m = sample();
        m.prompts[0].answer.positions[0].top[0].logprob = 0.5;
        let e = Baseline::parse(&serde_json::to_string(&m).unwrap()).unwrap_err();
        assert!(e.contains("positions[0] has a logprob"), "{e}");
        let e = Baseline::parse("{\"format\": 1}").unwrap_err();
        assert!(e.contains("missing field"), "{e}");
        let e = Baseline::parse(&text.replace("\"format\":1", "\"format\":9")).unwrap_err();
        assert!(e.starts_with("format 9 is not 1"), "{e}");
    }
}
