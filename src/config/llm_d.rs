//! A target's `llm_d:` block: the request headers an llm-d / Gateway API Inference
//! Extension endpoint picker reads (`client::llm_d`), each sent only when asked for:
//! a strict gateway rejects what it does not know. Checked here so a bad value is a
//! FILE:LINE:COL error, not a target whose every probe fails.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client::llm_d::{LlmdHeaders, ceil_ms};
use crate::latency::{Latency, Slo};
use crate::yaml_locate::Path;

/// `llm_d:` as written. Every field off or unset by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmdConfig {
    /// Send each scenario's `slo:` TTFT and TPOT objectives as `x-llm-d-slo-ttft-ms`
    /// and `x-llm-d-slo-tpot-ms` (whole milliseconds, rounded up; only those the
    /// scenario sets), for a latency-aware picker.
    #[serde(default)]
    pub slo_headers: bool,
    /// Sent as `x-llm-d-inference-objective`: the `InferenceObjective` the probes
    /// belong to (their priority in the picker's flow control).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// Sent as `x-llm-d-inference-fairness-id`: the flow-control queue the probes are
    /// fair-shared in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_id: Option<String>,
}

/// Longest value accepted for `objective` and `fairness_id`: a name, not a payload.
const MAX_VALUE_BYTES: usize = 253;

/// Checks the block at `path` (the `llm_d` key).
pub fn check(c: &LlmdConfig, path: &Path) -> Result<(), (Path, String)> {
    for (key, value) in [("objective", &c.objective), ("fairness_id", &c.fairness_id)] {
        let Some(v) = value else { continue };
        if v.is_empty() || v.len() > MAX_VALUE_BYTES {
            return Err((
                path.key(key),
                format!("must be 1 to {MAX_VALUE_BYTES} characters, got {}", v.len()),
            ));
        }
        if !v.bytes().all(|b| b.is_ascii_graphic()) {
            return Err((
                path.key(key),
                format!(
                    "{v:?} cannot be a header value: only visible ASCII characters, \
                     no spaces"
                ),
            ));
        }
    }
    Ok(())
}

/// The headers the target's block asks for, without objectives (those are each
/// scenario's: [`with_slo`]).
pub fn headers(c: Option<&LlmdConfig>) -> LlmdHeaders {
    c.map(|c| LlmdHeaders {
        objective: c.objective.clone(),
        fairness_id: c.fairness_id.clone(),
        slo_ttft_ms: None,
        slo_tpot_ms: None,
    })
    .unwrap_or_default()
}

/// `base` with a scenario's TTFT and TPOT objectives when `slo_headers` is on.
pub fn with_slo(base: &LlmdHeaders, slo_headers: bool, slo: &Slo) -> LlmdHeaders {
    let mut h = base.clone();
    if slo_headers {
        h.slo_ttft_ms = slo.limit(Latency::Ttft).map(ceil_ms);
        h.slo_tpot_ms = slo.limit(Latency::Tpot).map(ceil_ms);
    }
    h
}
