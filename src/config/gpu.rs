//! A target's `gpu_metrics:` block: where its GPUs' telemetry is read (NVIDIA
//! dcgm-exporter), which GPUs are its engine's, and what electricity costs; checked
//! into the [`GpuPlan`] the daemon's engine scrapes use.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine_metrics::gpu::GpuMatch;
use crate::yaml_locate::Path;

/// The label of a replica's own `host:port` in `replica_match`.
pub const REPLICA: &str = "replica";

/// `gpu_metrics:` as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuMetricsConfig {
    /// The dcgm-exporter `/metrics` URL, or a list of them (one per GPU node); read with
    /// every engine scrape.
    pub url: OneOrMore,
    /// Exporter labels every GPU of this target has (e.g. `{namespace: inference}`);
    /// empty: every GPU the exporters show.
    #[serde(default, rename = "match", skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// With `replicas_from`: which of the GPUs are each replica's, as exporter label:
    /// replica label (an SD label kept by `replicas_from.labels`, or `replica` for its
    /// `host:port`), e.g. `{pod: pod}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replica_match: BTreeMap<String, String>,
    /// Dollars per kWh, for the energy part of the cost per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_price_per_kwh: Option<f64>,
    /// Grams CO2e per kWh of the grid the GPUs run on, for the emissions per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grams_co2_per_kwh: Option<f64>,
}

/// One URL or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMore {
    One(String),
    More(Vec<String>),
}

impl OneOrMore {
    pub fn list(&self) -> Vec<String> {
        match self {
            OneOrMore::One(u) => vec![u.clone()],
            OneOrMore::More(us) => us.clone(),
        }
    }
}

/// The checked block.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuPlan {
    pub urls: Vec<String>,
    /// The target's GPUs.
    pub target_match: GpuMatch,
    /// Exporter label → the replica label whose value it must have.
    pub replica_match: Vec<(String, String)>,
    pub energy_price_per_kwh: Option<f64>,
    pub grams_co2_per_kwh: Option<f64>,
}

impl GpuPlan {
    /// The GPUs of the replica `host_port` with SD labels `labels`: the target's match
    /// and the replica's own. `None` when the replica lacks a label the match needs.
    pub fn replica(&self, host_port: &str, labels: &BTreeMap<String, String>) -> Option<GpuMatch> {
        let mut m = self.target_match.clone();
        for (exporter, replica) in &self.replica_match {
            let value = if replica == REPLICA {
                host_port.to_string()
            } else {
                labels.get(replica)?.clone()
            };
            m.0.push((exporter.clone(), value));
        }
        Some(m)
    }
}

/// The block `g` at `p`, checked at its keys, of a target that scrapes its engine or
/// not and discovers its replicas (keeping the SD labels `replica_labels`) or not.
pub fn plan(
    g: &GpuMetricsConfig,
    scrapes_engine: bool,
    replica_labels: Option<&[String]>,
    p: Path,
) -> Result<GpuPlan, (Path, String)> {
    let urls = g.url.list();
    if urls.is_empty() {
        return Err((p.key("url"), "needs at least one URL".into()));
    }
    for (i, u) in urls.iter().enumerate() {
        let at = match g.url {
            OneOrMore::One(_) => p.key("url"),
            OneOrMore::More(_) => p.key("url").index(i),
        };
        match reqwest::Url::parse(u) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            Ok(url) => {
                return Err((
                    at,
                    format!("scheme {:?}: must be http or https", url.scheme()),
                ));
            }
            Err(e) => {
                return Err((
                    at,
                    format!(
                        "{:?} is not a URL such as http://dcgm-exporter:9400/metrics ({e})",
                        crate::secret::redact_url(u)
                    ),
                ));
            }
        }
    }
    if !scrapes_engine && replica_labels.is_none() {
        return Err((
            p,
            "needs engine_metrics_url or replicas_from: energy per token divides the GPUs' \
             energy by the engine's own generated-token counter"
                .into(),
        ));
    }
    if g.replica_match.is_empty() && replica_labels.is_some() {
        return Err((
            p.key("replica_match"),
            "with replicas_from, say which GPUs are each replica's (e.g. {pod: pod}, an \
             exporter label and the replica label it must equal): without it every replica \
             would count every GPU"
                .into(),
        ));
    }
    if !g.replica_match.is_empty() {
        let Some(labels) = replica_labels else {
            return Err((
                p.key("replica_match"),
                "applies to discovered replicas: it needs replicas_from".into(),
            ));
        };
        for (exporter, replica) in &g.replica_match {
            if replica != REPLICA && !labels.iter().any(|l| l == replica) {
                return Err((
                    p.key("replica_match").key(exporter),
                    format!(
                        "{replica:?} is no label of the replicas: use `replica` (their host:port) \
                         or a label listed in replicas_from.labels"
                    ),
                ));
            }
        }
    }
    for (key, v) in [
        ("energy_price_per_kwh", g.energy_price_per_kwh),
        ("grams_co2_per_kwh", g.grams_co2_per_kwh),
    ] {
        if let Some(v) = v
            && !(v.is_finite() && v >= 0.0)
        {
            return Err((p.key(key), format!("{v} must be a number of at least 0")));
        }
    }
    Ok(GpuPlan {
        urls,
        target_match: GpuMatch(
            g.match_labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        replica_match: g
            .replica_match
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        energy_price_per_kwh: g.energy_price_per_kwh,
        grams_co2_per_kwh: g.grams_co2_per_kwh,
    })
}
