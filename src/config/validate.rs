//! Checks that need more than one field or more than a type: unique names, conflicting
//! settings, ranges. Pure (no files, no environment: those are read by `plan`). Each
//! rule returns the path of the offending node so the error carries its position.

use std::collections::BTreeSet;
use std::time::Duration;

use super::schema::{
    BucketsConfig, Config, HeaderValue, LATER_SUFFIX, Scenario, SelfCheckConfig, Target,
};
use super::slo::SloConfig;
use crate::yaml_locate::Path;

/// A rule violation: where and what.
pub type Violation = (Path, String);

/// The first violation in document order, like a compiler's first error.
pub fn validate(cfg: &Config) -> Result<(), Violation> {
    let root = Path::root();
    if cfg.listen.parse::<std::net::SocketAddr>().is_err() {
        return Err((
            root.key("listen"),
            format!(
                "{:?} is not an address such as 0.0.0.0:9464 or 127.0.0.1:0",
                cfg.listen
            ),
        ));
    }
    if let Some(location) = &cfg.location {
        super::shard::check_location(location).map_err(|e| (root.key("location"), e))?;
    }
    if let Some(s) = cfg.shard {
        super::shard::Shard::new(s.index, s.count).map_err(|e| (root.key("shard"), e))?;
    }
    if cfg.grace_period.is_zero() {
        return Err((root.key("grace_period"), "must be greater than zero".into()));
    }
    if !(1..=1_000_000).contains(&cfg.probe_pages) {
        return Err((
            root.key("probe_pages"),
            "must be between 1 and 1000000 (pages of the latest probes kept in all)".into(),
        ));
    }
    if cfg.engine_scrape_interval.is_zero() {
        return Err((
            root.key("engine_scrape_interval"),
            "must be greater than zero".into(),
        ));
    }
    if cfg.failure_summary_interval.is_zero() {
        return Err((
            root.key("failure_summary_interval"),
            "must be greater than zero".into(),
        ));
    }
    if let Some(otlp) = &cfg.otlp {
        super::otlp::validate(otlp, &root.key("otlp"))?;
        headers(&otlp.headers, &root.key("otlp").key("headers"))?;
    }
    buckets(&cfg.buckets, &root.key("buckets"))?;
    self_check(&cfg.self_check, &root.key("self_check"))?;
    let defaults = root.key("defaults");
    if cfg.defaults.max_inflight == 0 {
        return Err((defaults.key("max_inflight"), "must be at least 1".into()));
    }
    slo(&cfg.defaults.slo, &defaults.key("slo"))?;
    let targets = root.key("targets");
    if cfg.targets.is_empty() {
        return Err((targets, "at least one target is required".into()));
    }
    let mut names = BTreeSet::new();
    for (i, t) in cfg.targets.iter().enumerate() {
        let path = targets.index(i);
        if !names.insert(t.name.as_str()) {
            return Err((
                path.key("name"),
                format!("duplicate target name {:?} (names must be unique)", t.name),
            ));
        }
        target(t, &path)?;
    }
    Ok(())
}

/// The reference engine must be one the mock can be and a self-probe must have a
/// token gap to judge.
fn self_check(c: &SelfCheckConfig, path: &Path) -> Result<(), Violation> {
    if !(2..=1024).contains(&c.output_tokens) {
        return Err((
            path.key("output_tokens"),
            "must be between 2 and 1024 (the ITL error needs a gap between tokens)".into(),
        ));
    }
    if c.itl.is_zero() || c.itl > Duration::from_secs(1) {
        return Err((
            path.key("itl"),
            "must be greater than zero and at most 1s".into(),
        ));
    }
    if c.ttft > Duration::from_secs(10) {
        return Err((path.key("ttft"), "must be at most 10s".into()));
    }
    Ok(())
}

fn target(t: &Target, path: &Path) -> Result<(), Violation> {
    if t.name.trim().is_empty() {
        return Err((path.key("name"), "must not be empty".into()));
    }
    if t.model.trim().is_empty() {
        return Err((path.key("model"), "must not be empty".into()));
    }
    url(&t.base_url, &path.key("base_url"))?;
    if t.api_key_file.is_some() && t.api_key_env.is_some() {
        return Err((
            path.key("api_key_env"),
            "set api_key_file or api_key_env, not both".into(),
        ));
    }
    headers(&t.headers, &path.key("headers"))?;
    match (&t.tls.client_cert_file, &t.tls.client_key_file) {
        (Some(_), None) => {
            return Err((
                path.key("tls").key("client_cert_file"),
                "is set but tls.client_key_file is not (mutual TLS needs both)".into(),
            ));
        }
        (None, Some(_)) => {
            return Err((
                path.key("tls").key("client_key_file"),
                "is set but tls.client_cert_file is not (mutual TLS needs both)".into(),
            ));
        }
        _ => {}
    }
    for (name, d) in [
        ("connect", t.timeouts.connect),
        ("first_token", t.timeouts.first_token),
        ("idle", t.timeouts.idle),
        ("total", t.timeouts.total),
    ] {
        if d.is_zero() {
            return Err((
                path.key("timeouts").key(name),
                "must be greater than zero".into(),
            ));
        }
    }
    if t.max_inflight == Some(0) {
        return Err((path.key("max_inflight"), "must be at least 1".into()));
    }
    if t.replicas == Some(0) {
        return Err((path.key("replicas"), "must be at least 1".into()));
    }
    super::replicas::check(t, path)?;
    if let Some(p) = &t.price {
        for (name, v) in [
            ("input_per_million", p.input_per_million),
            ("output_per_million", p.output_per_million),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err((
                    path.key("price").key(name),
                    format!("must be a number >= 0, got {v}"),
                ));
            }
        }
    }
    if let Some(b) = t.budget_per_day {
        if !b.is_finite() || b <= 0.0 {
            return Err((
                path.key("budget_per_day"),
                format!("must be a number of dollars > 0, got {b}"),
            ));
        }
        if t.price.is_none() {
            return Err((
                path.key("budget_per_day"),
                "needs the target's price: (input_per_million, output_per_million) to \
                 count what its probes spend"
                    .into(),
            ));
        }
    }
    if let Some(u) = &t.engine_metrics_url {
        url(u, &path.key("engine_metrics_url"))?;
    }
    if let Some(u) = &t.router_metrics_url {
        url(u, &path.key("router_metrics_url"))?;
    }
    if let Some(l) = &t.llm_d {
        super::llm_d::check(l, &path.key("llm_d"))?;
    }
    scenarios(t, path)
}

/// Most turns a scenario's conversation may have: each resends the whole history.
pub const MAX_TURNS: u32 = 100;

/// `turns`, `think_time` and `think_time_dist` in range (what a conversation needs of its
/// API is the probe's rule, `config/probe.rs`), and `NAME:later` is where its later turns
/// are observed.
fn conversation(s: &Scenario, sp: &Path) -> Result<(), Violation> {
    if s.turns == 0 {
        return Err((sp.key("turns"), "must be at least 1".into()));
    }
    if s.turns > MAX_TURNS {
        return Err((
            sp.key("turns"),
            format!("must be at most {MAX_TURNS}, got {}", s.turns),
        ));
    }
    // Think times come between turns: a single request has none to shape.
    let think = [
        ("think_time", s.think_time.is_some()),
        ("think_time_dist", s.think_time_dist.is_some()),
    ];
    if let Some((key, _)) = think.into_iter().find(|(_, set)| *set && s.turns < 2) {
        return Err((
            sp.key(key),
            format!(
                "shapes a conversation's later turns, and scenario {:?} has none: set turns \
                 to 2 or more",
                s.name
            ),
        ));
    }
    if s.name.ends_with(LATER_SUFFIX) {
        return Err((
            sp.key("name"),
            format!(
                "must not end in {LATER_SUFFIX:?}: the later turns of a conversation are observed under that name"
            ),
        ));
    }
    Ok(())
}

/// The scenarios of a target, and that its token budget pays for the largest probe.
fn scenarios(t: &Target, path: &Path) -> Result<(), Violation> {
    if t.scenarios.is_empty() {
        return Err((
            path.key("scenarios"),
            "at least one scenario is required (omit the field for the default one)".into(),
        ));
    }
    let mut names = BTreeSet::new();
    // The largest probe (input + output tokens) and its scenario: a budget that cannot
    // pay for it would skip that scenario forever.
    let mut largest_probe: Option<(u64, &str)> = None;
    for (i, s) in t.scenarios.iter().enumerate() {
        let sp = path.key("scenarios").index(i);
        if s.name.trim().is_empty() {
            return Err((sp.key("name"), "must not be empty".into()));
        }
        if !names.insert(s.name.as_str()) {
            return Err((
                sp.key("name"),
                format!(
                    "duplicate scenario name {:?} in target {:?}",
                    s.name, t.name
                ),
            ));
        }
        if let Some(temp) = s.temperature
            && !(0.0..=2.0).contains(&temp)
        {
            return Err((
                sp.key("temperature"),
                format!("must be in [0, 2], got {temp}"),
            ));
        }
        conversation(s, &sp)?;
        slo(&s.slo, &sp.key("slo"))?;
        let size = u64::from(s.input_tokens) + u64::from(s.output_tokens);
        if largest_probe.is_none_or(|(l, _)| size > l) {
            largest_probe = Some((size, s.name.as_str()));
        }
    }
    if let Some(budget) = t.token_budget_per_hour
        && let Some((size, name)) = largest_probe
        && budget < size
    {
        return Err((
            path.key("token_budget_per_hour"),
            format!(
                "{budget} tokens cannot pay for one probe of scenario {name:?} (it needs \
                 {size}: input_tokens + output_tokens); every scenario must fit"
            ),
        ));
    }
    Ok(())
}

fn url(u: &str, path: &Path) -> Result<(), Violation> {
    match reqwest::Url::parse(u) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some() => {
            Ok(())
        }
        Ok(_) => Err((
            path.clone(),
            format!("{u:?} must be an http:// or https:// URL with a host"),
        )),
        Err(e) => Err((path.clone(), format!("{u:?} is not a URL: {e}"))),
    }
}

fn slo(s: &SloConfig, path: &Path) -> Result<(), Violation> {
    match s.0.iter().find(|(_, limit)| limit.is_zero()) {
        Some((l, _)) => Err((path.key(l.name()), "must be greater than zero".into())),
        None => Ok(()),
    }
}

fn buckets(b: &BucketsConfig, path: &Path) -> Result<(), Violation> {
    for (name, v) in [
        ("ttft", &b.ttft),
        ("tpot", &b.tpot),
        ("itl", &b.itl),
        ("e2e", &b.e2e),
        ("dispatch_lag", &b.dispatch_lag),
    ] {
        let Some(v) = v else { continue };
        if v.is_empty() {
            return Err((path.key(name), "needs at least one bucket".into()));
        }
        if let Some(bad) = v.iter().find(|x| !x.is_finite() || **x <= 0.0) {
            return Err((
                path.key(name),
                format!("bucket bounds must be positive seconds, got {bad}"),
            ));
        }
        if v.windows(2).any(|w| w[0] >= w[1]) {
            return Err((
                path.key(name),
                "bucket bounds must be strictly increasing".into(),
            ));
        }
    }
    Ok(())
}

/// Header names and literal values (a target's, the OTLP exporter's).
pub fn headers(
    headers: &std::collections::BTreeMap<String, HeaderValue>,
    path: &Path,
) -> Result<(), Violation> {
    for (name, value) in headers {
        let hp = path.key(name);
        if !crate::client::valid_header_name(name) {
            return Err((hp, format!("{name:?} is not a valid HTTP header name")));
        }
        if let HeaderValue::Literal(v) = value
            && reqwest::header::HeaderValue::from_str(v.expose()).is_err()
        {
            // The value is a secret: name the header, never print the value.
            return Err((hp, "the value is not a valid HTTP header value".into()));
        }
    }
    Ok(())
}
