//! A target's `replicas_from:` checked (each error at its key) and turned into the
//! [`ReplicaPlan`] that builds its [`Discoverer`] and [`SetRules`].

use std::time::Duration;

use super::replicas_from::{DEFAULT_ENGINE_METRICS_PATH, ReplicasFrom, kind_list};
use super::schema::{Config, Target};
use crate::discovery::{
    self, BlockError, Discoverer, DiscoveryError, LabelAllowList, Needs, SetRules, SourceBlock,
    Step,
};
use crate::yaml_locate::Path;

/// The rules between the keys of `replicas_from`: one source, the keys that go with it,
/// the ranges, and that a target counts or discovers its replicas. The source's own
/// values are its kind's to check, in [`plan`].
pub fn check(t: &Target, path: &Path) -> Result<(), (Path, String)> {
    let Some(from) = &t.replicas_from else {
        for (key, set) in [
            ("replica_rate", t.replica_rate.is_some()),
            ("engine_metrics_path", t.engine_metrics_path.is_some()),
            ("replica_series", t.replica_series.is_some()),
        ] {
            if set {
                return Err((
                    path.key(key),
                    "applies to discovered replicas: it needs replicas_from".into(),
                ));
            }
        }
        return Ok(());
    };
    if t.replicas.is_some() {
        return Err((
            path.key("replicas"),
            "a target either counts its replicas (replicas: N) or discovers them \
             (replicas_from), not both: remove one"
                .into(),
        ));
    }
    let fp = path.key("replicas_from");
    let source = match from.sources.as_slice() {
        [] => {
            let kinds = kind_list(|_| true, str::to_string, " or ");
            return Err((fp, format!("needs one source: {kinds}")));
        }
        [source] => source,
        [first, second, ..] => {
            return Err((
                fp.key(second.name()),
                format!("one source per target, and {} is set too", first.name()),
            ));
        }
    };
    let kind = source.name();
    if from.resolver.is_some() && !source.resolves() {
        let resolving = kind_list(|k| k.resolves, str::to_string, " and ");
        return Err((
            fp.key("resolver"),
            format!("applies to {resolving} lookups, not to {kind}"),
        ));
    }
    if source.own_interval().is_some_and(|i| i.is_zero()) {
        return Err((
            fp.key(kind).key("interval"),
            "must be greater than zero".into(),
        ));
    }
    if from.max_replicas == 0 {
        return Err((fp.key("max_replicas"), "must be at least 1".into()));
    }
    if let Some(p) = &t.engine_metrics_path
        && !p.starts_with('/')
    {
        return Err((
            path.key("engine_metrics_path"),
            format!("{p:?} must be a path starting with /"),
        ));
    }
    Ok(())
}

/// A target's discovery, checked and resolved. Two plans compare equal exactly when the
/// same replicas would be found the same way and probed the same way.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaPlan {
    /// The source's checked block; [`ReplicaPlan::source`] builds its finder.
    pub source: SourceBlock,
    /// The checked `IP:PORT` of the DNS server a resolving source asks.
    pub resolver: Option<String>,
    /// How often the source is read again.
    pub interval: Duration,
    pub rules: SetRules,
    /// Poisson probes per second to each replica.
    pub rate_hz: f64,
    /// Scraped on every replica.
    pub engine_metrics_path: String,
    /// Every latency histogram per replica (`replica_series: full`), else the slim set.
    pub full_series: bool,
}

impl ReplicaPlan {
    /// The source to refresh; `http` serves the kinds that ask over HTTP. A DNS source
    /// builds its resolver here (the system's configuration is read now, not when the
    /// config loads).
    pub fn source(&self, http: &reqwest::Client) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        self.source.build(Needs {
            scheme: &self.rules.scheme,
            resolver: self.resolver.as_deref(),
            http,
        })
    }
}

/// The plan of a checked target's `replicas_from`, with the discovery code's own input
/// errors at their keys; `None` without `replicas_from`.
pub fn plan(cfg: &Config, t: &Target, path: &Path) -> Result<Option<ReplicaPlan>, (Path, String)> {
    let Some(from) = &t.replicas_from else {
        return Ok(None);
    };
    let fp = path.key("replicas_from");
    let at = |p: Path| move |e: DiscoveryError| (p, e.to_string());
    // `validate` has checked base_url: an http(s) URL.
    let scheme = reqwest::Url::parse(&t.base_url)
        .map(|u| u.scheme().to_string())
        .map_err(|e| (path.key("base_url"), e.to_string()))?;
    let (source, resolver) = checked_source(from, &scheme, &fp)?;
    let lp = fp.key("labels");
    for (i, name) in from.labels.iter().enumerate() {
        LabelAllowList::new([name.as_str()]).map_err(at(lp.index(i)))?;
    }
    let allow = LabelAllowList::new(from.labels.iter().map(String::as_str)).map_err(at(lp))?;
    let max = usize::try_from(from.max_replicas).unwrap_or(usize::MAX);
    let rules = SetRules::new(&scheme, allow, max).map_err(at(fp.key("max_replicas")))?;
    Ok(Some(ReplicaPlan {
        interval: source.interval(),
        source,
        resolver,
        rules,
        rate_hz: t.replica_rate.unwrap_or(cfg.defaults.rate).hz(),
        engine_metrics_path: t
            .engine_metrics_path
            .clone()
            .unwrap_or_else(|| DEFAULT_ENGINE_METRICS_PATH.to_string()),
        full_series: t.replica_series == Some(crate::config::schema::ReplicaSeries::Full),
    }))
}

/// The one source `check` found, with its block's values checked at their keys, and the
/// checked resolver.
fn checked_source(
    from: &ReplicasFrom,
    scheme: &str,
    fp: &Path,
) -> Result<(SourceBlock, Option<String>), (Path, String)> {
    if let Some(r) = &from.resolver {
        discovery::parse_server(r).map_err(|e| (fp.key("resolver"), e.to_string()))?;
    }
    let source = from
        .sources
        .first()
        .ok_or_else(|| (fp.clone(), "no source".into()))?;
    source
        .check(scheme)
        .map_err(|e| at_block(fp.key(source.name()), e))?;
    Ok((source.clone(), from.resolver.clone()))
}

/// A block's error at its place under the block's key.
fn at_block(block: Path, e: BlockError) -> (Path, String) {
    let path = e.at.iter().fold(block, |p, step| match step {
        Step::Key(k) => p.key(k),
        Step::Index(i) => p.index(*i),
    });
    (path, e.message)
}
