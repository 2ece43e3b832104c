//! Asking an endpoint for its fingerprint over the network: each prompt's answer with
//! its logprobs, a recording with repeats (the noise), and a candidate's divergence
//! from a baseline. The only file of this module that does IO besides the baseline's.

use anyhow::Context;
use serde_json::{Map, Value};

use crate::client::{Client, ClientConfig};

use super::answer::Answer;
use super::baseline::{Baseline, FORMAT, PromptAnswer};
use super::compare::{self, Divergence, Noise};
use super::request::Ask;

/// One endpoint's client with the fingerprint's settings.
pub struct Sampler {
    client: Client,
    ask: Ask,
    extra: Map<String, Value>,
}

impl Sampler {
    /// A sampler for `ask` over the target settings of `cfg` (URL, key, headers, TLS,
    /// timeouts, `extra_body`); its endpoint and model are the ask's, never streamed.
    pub fn new(mut cfg: ClientConfig, ask: Ask) -> anyhow::Result<Sampler> {
        if let Err(e) = ask.validate() {
            crate::usage_bail!("{e}");
        }
        cfg.endpoint = ask.endpoint;
        cfg.model = ask.model.clone();
        cfg.stream = false;
        let extra = cfg.extra_body.clone();
        let client = Client::new(cfg, None)?;
        Ok(Sampler { client, ask, extra })
    }

    pub fn ask(&self) -> &Ask {
        &self.ask
    }

    /// One prompt's answer with its logprobs.
    pub async fn answer(&self, prompt: &str) -> anyhow::Result<Answer> {
        let body = self
            .ask
            .body(prompt, &self.extra)
            .map_err(anyhow::Error::msg)?;
        let reply = self.client.post_json(&body).await?;
        self.ask.parse(&reply).map_err(anyhow::Error::msg)
    }

    /// Every prompt's answer, one after the other.
    pub async fn answers(&self, prompts: &[String]) -> anyhow::Result<Vec<Answer>> {
        let mut out = Vec::with_capacity(prompts.len());
        for (i, p) in prompts.iter().enumerate() {
            out.push(
                self.answer(p)
                    .await
                    .with_context(|| format!("prompt {}", i + 1))?,
            );
        }
        Ok(out)
    }

    /// Every prompt's answer, all sent at once, so the engine batches them.
    pub async fn answers_at_once(&self, prompts: &[String]) -> anyhow::Result<Vec<Answer>> {
        let all = futures_util::future::join_all(prompts.iter().map(|p| self.answer(p))).await;
        all.into_iter()
            .enumerate()
            .map(|(i, a)| a.with_context(|| format!("prompt {}", i + 1)))
            .collect()
    }

    /// Records a baseline: the prompts asked one after the other (the reference), then
    /// `repeats − 1` more times, every other repeat all at once, each repeat's
    /// divergence from the reference being the endpoint's noise.
    pub async fn record(&self, prompts: &[String], repeats: u32) -> anyhow::Result<Baseline> {
        if repeats == 0 {
            crate::usage_bail!("repeats must be at least 1");
        }
        let reference = self.answers(prompts).await?;
        let mut noise = Noise {
            divergence: 0.0,
            token_agreement: 1.0,
        };
        for r in 1..repeats {
            let again = if r % 2 == 1 {
                self.answers_at_once(prompts).await?
            } else {
                self.answers(prompts).await?
            };
            let d = compare::divergence(&reference, &again);
            noise.divergence = noise.divergence.max(d.divergence);
            noise.token_agreement = noise.token_agreement.min(d.token_agreement);
        }
        let ask = &self.ask;
        let baseline = Baseline {
            format: FORMAT,
            llmprobe_version: env!("CARGO_PKG_VERSION").to_string(),
            endpoint: ask.endpoint,
            model: ask.model.clone(),
            top_logprobs: ask.top_logprobs,
            max_tokens: ask.max_tokens,
            repeats,
            noise,
            prompts: prompts
                .iter()
                .zip(reference)
                .map(|(p, a)| PromptAnswer {
                    prompt: p.clone(),
                    answer: a,
                })
                .collect(),
        };
        if baseline
            .prompts
            .iter()
            .all(|p| p.answer.positions.is_empty())
        {
            anyhow::bail!("every answer was empty: nothing to fingerprint");
        }
        Ok(baseline)
    }

    /// This endpoint's divergence from `baseline` (whose prompts it asks, one after the
    /// other).
    pub async fn compare(&self, baseline: &Baseline) -> anyhow::Result<Divergence> {
        let prompts: Vec<String> = baseline.prompts.iter().map(|p| p.prompt.clone()).collect();
        let answers = self.answers(&prompts).await?;
        Ok(compare::divergence(&baseline.answers(), &answers))
    }
}
