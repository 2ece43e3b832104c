//! A target's `adapters:` (LoRA adapters on its model): the YAML a user writes, checked
//! at its keys (FILE:LINE:COL) into the [`AdapterPlan`] the daemon runs. The split's
//! rules and its arithmetic are `workload::lora`'s, shared with bench.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::locate::Path;
use super::schema::Target;
use crate::workload::lora::{Adapter, ModelSplit, check_weight};

/// How often `/v1/models` is read for adapters unless `interval` says.
pub const DEFAULT_DISCOVERY_INTERVAL: Duration = Duration::from_secs(30);

/// `adapters:` as written: a list, or a discovery block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AdaptersConfig {
    /// Adapters named here, each with its share of the probes.
    List(Vec<AdapterConfig>),
    /// Adapters found in the target's `/v1/models`.
    Discover(DiscoverAdapters),
}

/// One adapter and its share of each scenario's probes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdapterConfig {
    /// The adapter's name: the `model` field of its requests and its `model` label.
    pub name: String,
    /// Its share of the probes, in (0, 1]; the adapters' weights add up to at most 1.
    pub weight: f64,
}

/// Adapters discovered from `/v1/models`: every model whose `parent` is the target's
/// `model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverAdapters {
    /// Must be true.
    pub discover: bool,
    /// Each discovered adapter's share, in (0, 1]; when they are too many for it
    /// (count × weight > 1) each gets 1/count and the base model none. Unset: the base
    /// model and every adapter get equal shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// How often `/v1/models` is read again (default 30s).
    #[serde(
        default = "default_interval",
        with = "crate::duration::human",
        skip_serializing_if = "is_default_interval"
    )]
    #[schemars(with = "String")]
    pub interval: Duration,
}

fn default_interval() -> Duration {
    DEFAULT_DISCOVERY_INTERVAL
}

fn is_default_interval(d: &Duration) -> bool {
    *d == DEFAULT_DISCOVERY_INTERVAL
}

/// A target's adapters, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum AdapterPlan {
    /// The configured split.
    Fixed(ModelSplit),
    /// Discovered every `interval`, each with `weight` (see [`ModelSplit::discovered`]).
    Discover {
        weight: Option<f64>,
        interval: Duration,
    },
}

/// Plans target `t`'s `adapters:` at `path` (the target's).
pub fn plan(t: &Target, path: &Path) -> Result<Option<AdapterPlan>, (Path, String)> {
    let Some(cfg) = &t.adapters else {
        return Ok(None);
    };
    let at = path.key("adapters");
    match cfg {
        AdaptersConfig::List(list) => {
            if list.is_empty() {
                return Err((
                    at,
                    "lists no adapter: name some, or remove the block".into(),
                ));
            }
            let adapters = list
                .iter()
                .map(|a| Adapter {
                    name: a.name.clone(),
                    weight: a.weight,
                })
                .collect();
            ModelSplit::new(&t.model, adapters)
                .map(|s| Some(AdapterPlan::Fixed(s)))
                .map_err(|e| {
                    let place = match e.index {
                        Some(i) if e.reason.contains("weight") && !e.reason.contains("add up") => {
                            at.index(i).key("weight")
                        }
                        Some(i) => at.index(i).key("name"),
                        None => at,
                    };
                    (place, e.reason)
                })
        }
        AdaptersConfig::Discover(d) => {
            if !d.discover {
                return Err((
                    at.key("discover"),
                    "must be true: list the adapters instead to name them".into(),
                ));
            }
            if let Some(w) = d.weight {
                check_weight(w).map_err(|r| (at.key("weight"), r))?;
            }
            if d.interval.is_zero() {
                return Err((at.key("interval"), "must be greater than zero".into()));
            }
            Ok(Some(AdapterPlan::Discover {
                weight: d.weight,
                interval: d.interval,
            }))
        }
    }
}
