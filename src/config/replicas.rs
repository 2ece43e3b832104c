//! A target's `replicas_from:` checked (each error at its key) and turned into the
//! [`ReplicaPlan`] that builds its [`discovery::Source`] and [`SetRules`].

use std::time::Duration;

use super::locate::Path;
use super::replicas_from::{
    DEFAULT_ENGINE_METRICS_PATH, DEFAULT_HTTP_SD_INTERVAL, DEFAULT_LOOKUP_INTERVAL, FileSdFrom,
    ReplicasFrom, SrvFrom,
};
use super::schema::{Config, Target};
use crate::discovery::{
    self, DiscoveryError, FileSd, HttpSd, LabelAllowList, Resolver, SetRules, Source, StaticList,
};

/// The rules of `replicas_from` that need no discovery code: one source, the keys that
/// go with it, the ranges, and that a target counts or discovers its replicas.
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
    let kind = match from.kinds().as_slice() {
        [] => {
            return Err((
                fp,
                "needs one source: dns, srv, file_sd, http_sd or static".into(),
            ));
        }
        [kind] => *kind,
        [first, second, ..] => {
            return Err((
                fp.key(second),
                format!("one source per target, and {first} is set too"),
            ));
        }
    };
    if from.resolver.is_some() && !matches!(kind, "dns" | "srv") {
        return Err((
            fp.key("resolver"),
            format!("applies to dns and srv lookups, not to {kind}"),
        ));
    }
    if from.interval().is_some_and(|i| i.is_zero()) {
        return Err((
            fp.key(kind).key("interval"),
            "must be greater than zero".into(),
        ));
    }
    if from.static_urls.as_ref().is_some_and(Vec::is_empty) {
        return Err((fp.key("static"), "needs at least one URL".into()));
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
    pub source: SourceSpec,
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

/// A checked source without its runtime parts (a resolver, an HTTP client), so that a
/// plan can be compared and printed; [`ReplicaPlan::source`] adds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    Static(StaticList),
    FileSd(FileSd),
    HttpSd(HttpSd),
    Dns {
        name: String,
        port: u16,
        resolver: Option<String>,
    },
    Srv {
        name: String,
        resolver: Option<String>,
    },
}

impl ReplicaPlan {
    /// The source to refresh; `http` serves `http_sd`. A DNS source builds its resolver
    /// here (the system's configuration is read now, not when the config loads).
    pub fn source(&self, http: &reqwest::Client) -> Result<Source, DiscoveryError> {
        Ok(match &self.source {
            SourceSpec::Static(list) => Source::Static(list.clone()),
            SourceSpec::FileSd(files) => Source::FileSd(files.clone()),
            SourceSpec::HttpSd(sd) => Source::HttpSd {
                sd: sd.clone(),
                http: http.clone(),
            },
            SourceSpec::Dns {
                name,
                port,
                resolver,
            } => Source::Dns(discovery::DnsName::new(
                name,
                *port,
                Resolver::new(resolver.as_deref())?,
            )?),
            SourceSpec::Srv { name, resolver } => Source::Srv(discovery::SrvName::new(
                name,
                Resolver::new(resolver.as_deref())?,
            )?),
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
    let (source, interval) = source_spec(from, &scheme, &fp)?;
    let lp = fp.key("labels");
    for (i, name) in from.labels.iter().enumerate() {
        LabelAllowList::new([name.as_str()]).map_err(at(lp.index(i)))?;
    }
    let allow = LabelAllowList::new(from.labels.iter().map(String::as_str)).map_err(at(lp))?;
    let max = usize::try_from(from.max_replicas).unwrap_or(usize::MAX);
    let rules = SetRules::new(&scheme, allow, max).map_err(at(fp.key("max_replicas")))?;
    Ok(Some(ReplicaPlan {
        source,
        interval,
        rules,
        rate_hz: t.replica_rate.unwrap_or(cfg.defaults.rate).hz(),
        engine_metrics_path: t
            .engine_metrics_path
            .clone()
            .unwrap_or_else(|| DEFAULT_ENGINE_METRICS_PATH.to_string()),
        full_series: t.replica_series == Some(crate::config::schema::ReplicaSeries::Full),
    }))
}

/// The one source `check` found, built, and its interval.
fn source_spec(
    from: &ReplicasFrom,
    scheme: &str,
    fp: &Path,
) -> Result<(SourceSpec, Duration), (Path, String)> {
    let at = |p: Path| move |e: DiscoveryError| (p, e.to_string());
    let resolver = match &from.resolver {
        Some(r) => {
            discovery::parse_server(r).map_err(at(fp.key("resolver")))?;
            Some(r.clone())
        }
        None => None,
    };
    let lookup = |i: Option<Duration>| i.unwrap_or(DEFAULT_LOOKUP_INTERVAL);
    if let Some(d) = &from.dns {
        let p = fp.key("dns");
        let name = discovery::check_dns_name(&d.name, "dns").map_err(at(p.key("name")))?;
        if d.port == 0 {
            return Err((p.key("port"), "must be 1..65535".into()));
        }
        let spec = SourceSpec::Dns {
            name,
            port: d.port,
            resolver,
        };
        return Ok((spec, lookup(d.interval)));
    }
    if let Some(s) = &from.srv {
        let (name, interval, p) = match s {
            SrvFrom::Name(n) => (n, None, fp.key("srv")),
            SrvFrom::Full(f) => (&f.name, f.interval, fp.key("srv").key("name")),
        };
        let name = discovery::check_dns_name(name, "srv").map_err(at(p))?;
        return Ok((SourceSpec::Srv { name, resolver }, lookup(interval)));
    }
    if let Some(f) = &from.file_sd {
        let (pattern, interval, p) = match f {
            FileSdFrom::Pattern(pt) => (pt, None, fp.key("file_sd")),
            FileSdFrom::Full(f) => (&f.files, f.interval, fp.key("file_sd").key("files")),
        };
        let files = FileSd::new(pattern).map_err(at(p))?;
        return Ok((SourceSpec::FileSd(files), lookup(interval)));
    }
    if let Some(h) = &from.http_sd {
        let sd = HttpSd::new(&h.url).map_err(at(fp.key("http_sd").key("url")))?;
        let interval = h.interval.unwrap_or(DEFAULT_HTTP_SD_INTERVAL);
        return Ok((SourceSpec::HttpSd(sd), interval));
    }
    let urls = from.static_urls.as_deref().unwrap_or_default();
    let sp = fp.key("static");
    for (i, u) in urls.iter().enumerate() {
        StaticList::new(&[u], scheme).map_err(at(sp.index(i)))?;
    }
    let list = StaticList::new(urls, scheme).map_err(at(sp))?;
    // A fixed list never changes; the interval only paces a refresher that finds so.
    Ok((SourceSpec::Static(list), DEFAULT_LOOKUP_INTERVAL))
}
