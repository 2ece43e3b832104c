//! A target's `adapters:` (LoRA adapters on its model; the YAML types are `schema`'s),
//! checked at its keys (FILE:LINE:COL) into the [`AdapterPlan`] the daemon runs. The split's
//! rules and its arithmetic are `workload::lora`'s, shared with bench.

use std::time::Duration;

use super::schema::{AdaptersConfig, Target};
use crate::workload::lora::{Adapter, ModelSplit, check_weight};
use crate::yaml_locate::Path;

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
    if let Some(p) = t.provider {
        return Err((
            at,
            format!(
                "adapters are an engine's (vLLM, SGLang) beside its base model: not with \
                 provider: {}",
                p.as_str()
            ),
        ));
    }
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
