//! The fingerprint kind's config: a scenario's `fingerprint:` block (its type is the
//! schema's) planned. The baseline file is read and checked when the config loads, so a bad file or
//! an API without logprobs is a config error at the block, never a failing scenario.

use std::sync::Arc;
use std::time::Duration;

use crate::config::schema::{Scenario, Target};
use crate::fingerprint::{Baseline, request::unsupported};
use crate::yaml_locate::Path;

/// A fingerprint scenario, checked: its name, its baseline read, its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct FingerprintPlan {
    pub scenario: String,
    pub baseline: Arc<Baseline>,
    pub every: Duration,
}

/// Plans fingerprint scenario `s` of target `t` at `sp`.
pub fn plan(t: &Target, s: &Scenario, sp: &Path) -> Result<FingerprintPlan, (Path, String)> {
    let Some(fp) = &s.fingerprint else {
        return Err((
            sp.key("fingerprint"),
            "kind: fingerprint needs a fingerprint: block".into(),
        ));
    };
    let at = sp.key("fingerprint");
    let only = Scenario {
        name: s.name.clone(),
        kind: s.kind,
        fingerprint: s.fingerprint.clone(),
        ..Scenario::default()
    };
    if *s != only {
        return Err((
            at,
            "a fingerprint scenario asks its baseline's prompts: it takes only name, kind and fingerprint".into(),
        ));
    }
    if fp.every.is_zero() {
        return Err((at.key("every"), "every must be greater than 0".into()));
    }
    if let Some(why) = unsupported(t.endpoint) {
        return Err((
            at,
            format!("target endpoint {}: {why}", t.endpoint.as_str()),
        ));
    }
    let baseline =
        Baseline::load(&fp.baseline).map_err(|e| (at.key("baseline"), format!("{e:#}")))?;
    if baseline.endpoint != t.endpoint {
        return Err((
            at.key("baseline"),
            format!(
                "the baseline was recorded on the {} API but the target's endpoint is {}",
                baseline.endpoint.as_str(),
                t.endpoint.as_str()
            ),
        ));
    }
    Ok(FingerprintPlan {
        scenario: s.name.clone(),
        baseline: Arc::new(baseline),
        every: fp.every,
    })
}
