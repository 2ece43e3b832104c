//! `llmprobe fingerprint record` and `compare`: flags checked into a client and an
//! ask, the sampler run, the result printed. Compare exits [`DRIFT`] when the
//! candidate diverges beyond the baseline's noise.

use std::process::ExitCode;

use serde::Serialize;

use crate::client::{ClientConfig, valid_header_name};
use crate::exit::UsageError;
use crate::secret::Secret;

use super::args::{CompareArgs, FingerprintArgs, FingerprintCommand, RecordArgs, TargetArgs};
use super::baseline::Baseline;
use super::compare::{Divergence, Threshold};
use super::prompts::{default_prompts, read_prompts};
use super::request::Ask;
use super::sample::Sampler;

/// `compare`'s exit code when the candidate drifted (the same code as a failed gate).
pub const DRIFT: u8 = crate::exit::SLO_FAILED;

pub async fn run(args: &FingerprintArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        FingerprintCommand::Record(a) => record(a).await,
        FingerprintCommand::Compare(a) => compare(a).await,
    }
}

async fn record(a: &RecordArgs) -> anyhow::Result<ExitCode> {
    let prompts = match &a.prompts {
        Some(path) => read_prompts(path)?,
        None => default_prompts(),
    };
    if a.repeats == 0 {
        crate::usage_bail!("--repeats must be at least 1");
    }
    let ask = Ask {
        endpoint: a.endpoint,
        model: a.model.clone(),
        top_logprobs: a.top_logprobs,
        max_tokens: a.max_tokens,
    };
    let sampler = Sampler::new(client_config(&a.target)?, ask)?;
    let baseline = sampler.record(&prompts, a.repeats).await?;
    baseline.save(&a.out)?;
    let t = baseline.noise.threshold();
    println!(
        "recorded {} prompts × {} repeats into {}: noise divergence {:.4}, token agreement {:.3}; drift above divergence {:.4} or below agreement {:.3}",
        baseline.prompts.len(),
        baseline.repeats,
        a.out.display(),
        baseline.noise.divergence,
        baseline.noise.token_agreement,
        t.divergence,
        t.token_agreement,
    );
    Ok(ExitCode::SUCCESS)
}

/// `compare --json`: the candidate's figures, the limits and the verdict.
#[derive(Serialize)]
struct Verdict {
    #[serde(flatten)]
    divergence: Divergence,
    threshold: Threshold,
    drift: bool,
}

async fn compare(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let baseline = Baseline::load(&a.baseline)?;
    let mut ask = baseline.ask();
    if let Some(m) = &a.model {
        ask.model = m.clone();
    }
    let sampler = Sampler::new(client_config(&a.target)?, ask)?;
    let d = sampler.compare(&baseline).await?;
    let threshold = baseline.noise.threshold();
    let drift = threshold.drifted(&d);
    if a.json {
        let v = Verdict {
            divergence: d,
            threshold,
            drift,
        };
        println!("{}", serde_json::to_string(&v)?);
    } else {
        println!(
            "divergence {:.4} (drift above {:.4}; baseline noise {:.4})",
            d.divergence, threshold.divergence, baseline.noise.divergence
        );
        println!(
            "token agreement {:.3} (drift below {:.3}; baseline noise {:.3})",
            d.token_agreement, threshold.token_agreement, baseline.noise.token_agreement
        );
        match d.first_divergence {
            Some(p) => println!("first divergence at token {p}"),
            None => println!("first divergence: none"),
        }
        println!(
            "{}",
            if drift {
                "DRIFT: the answers diverge beyond the baseline's own noise"
            } else {
                "same model: within the baseline's noise"
            }
        );
    }
    Ok(ExitCode::from(if drift { DRIFT } else { crate::exit::OK }))
}

/// The target flags as a client configuration.
fn client_config(t: &TargetArgs) -> anyhow::Result<ClientConfig> {
    let mut cfg = ClientConfig {
        base_url: t.base_url.clone(),
        api_key: t.api_key.as_deref().map(Secret::new),
        ..ClientConfig::default()
    };
    cfg.timeouts.total = match crate::duration::parse(&t.timeout) {
        Ok(d) if !d.is_zero() => d,
        _ => crate::usage_bail!(
            "--timeout {:?} is not a duration above 0 (e.g. 120s)",
            t.timeout
        ),
    };
    cfg.timeouts.first_token = cfg.timeouts.total;
    for h in &t.headers {
        let Some((k, v)) = h.split_once(':') else {
            crate::usage_bail!("--header {h:?}: expected Name:Value");
        };
        if !valid_header_name(k.trim()) {
            crate::usage_bail!("--header {h:?}: {:?} is not a valid header name", k.trim());
        }
        cfg.headers
            .push((k.trim().to_string(), Secret::new(v.trim())));
    }
    if let Some(text) = &t.extra_body {
        cfg.extra_body = match serde_json::from_str(text) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => {
                return Err(
                    UsageError::new(format!("--extra-body {text:?} is not a JSON object")).into(),
                );
            }
        };
    }
    Ok(cfg)
}
