//! Scenario kinds, config side: which kind a scenario is (its `kind:`, whose values are
//! the schema's `KindName`, or its blocks), and the plans of the kinds that do not run
//! through the probe runner (one file each, planned here in one place). The probe and golden kinds are planned as `ScenarioPlan`s by
//! `plan.rs`: they share the probe pipeline. The daemon's side of each kind is in
//! `src/daemon/kinds/`.

pub mod fingerprint;
pub mod model_list;
pub mod prefix_cache;

pub use super::schema::KindName;
use super::schema::{Scenario, Target};
use crate::yaml_locate::Path;

/// The kind of scenario `s` at `at`: its `kind:`, which must agree with its blocks, or
/// the one its blocks name.
pub fn kind_of(s: &Scenario, at: &Path) -> Result<KindName, (Path, String)> {
    let blocks = [
        (KindName::Golden, s.golden.is_some()),
        (KindName::Fingerprint, s.fingerprint.is_some()),
        (KindName::ModelList, s.model_list.is_some()),
        (KindName::PrefixCache, s.prefix_cache.is_some()),
    ];
    let mut named = blocks
        .iter()
        .filter(|(_, present)| *present)
        .map(|(k, _)| *k);
    let by_block = named.next();
    if let Some(second) = named.next() {
        return Err((
            at.key(second.as_str()),
            format!(
                "a scenario has one kind: {} and {} cannot go together",
                by_block.map_or("", KindName::as_str),
                second.as_str()
            ),
        ));
    }
    match (s.kind, by_block) {
        (None, b) => Ok(b.unwrap_or(KindName::Probe)),
        (Some(k), None) if k == KindName::Probe => Ok(k),
        (Some(k), None) => Err((
            at.key("kind"),
            format!("kind: {} needs a {}: block", k.as_str(), k.as_str()),
        )),
        (Some(k), Some(b)) if k == b => Ok(k),
        (Some(k), Some(b)) => Err((
            at.key("kind"),
            format!(
                "kind: {} does not take a {}: block (that is kind: {})",
                k.as_str(),
                b.as_str(),
                b.as_str()
            ),
        )),
    }
}

/// A target's scenarios of the kinds that run on their own (not through the probe
/// runner), each planned and checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KindPlans {
    pub fingerprints: Vec<fingerprint::FingerprintPlan>,
    pub model_lists: Vec<model_list::ModelListPlan>,
    pub prefix_caches: Vec<prefix_cache::PrefixCachePlan>,
}

impl KindPlans {
    /// Plans every scenario of `t` whose kind runs on its own; `scenarios` is the
    /// path of `t`'s scenario list.
    pub fn plan(t: &Target, scenarios: &Path) -> Result<KindPlans, (Path, String)> {
        let mut plans = KindPlans::default();
        for (i, s) in t.scenarios.iter().enumerate() {
            let at = scenarios.index(i);
            match kind_of(s, &at)? {
                KindName::Probe | KindName::Golden => {}
                KindName::Fingerprint => plans.fingerprints.push(fingerprint::plan(t, s, &at)?),
                KindName::ModelList => plans.model_lists.push(model_list::plan(s, &at)?),
                KindName::PrefixCache => plans.prefix_caches.push(prefix_cache::plan(s, &at)?),
            }
        }
        Ok(plans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Path {
        Path::default().key("scenarios").index(0)
    }

    #[test]
    fn a_kind_comes_from_its_blocks_or_agrees_with_them() {
        let mut s = Scenario::default();
        assert_eq!(kind_of(&s, &at()), Ok(KindName::Probe));
        s.golden = Some(crate::config::schema::GoldenConfig {
            file: "builtin".into(),
            window: 10,
            baseline: None,
        });
        assert_eq!(kind_of(&s, &at()), Ok(KindName::Golden));
        s.kind = Some(KindName::Golden);
        assert_eq!(kind_of(&s, &at()), Ok(KindName::Golden));
        s.kind = Some(KindName::Probe);
        let (path, msg) = kind_of(&s, &at()).unwrap_err();
        assert_eq!(path.to_string(), "scenarios[0].kind");
        assert_eq!(
            msg,
            "kind: probe does not take a golden: block (that is kind: golden)"
        );
        s.golden = None;
        s.kind = Some(KindName::Fingerprint);
        let (_, msg) = kind_of(&s, &at()).unwrap_err();
        assert_eq!(msg, "kind: fingerprint needs a fingerprint: block");
    }
}
