//! The prefix-cache kind's config: a scenario's `prefix_cache:` block (its type is the
//! schema's) planned and checked.

use std::time::Duration;

use reqwest::header::HeaderName;

use crate::config::schema::Scenario;
use crate::yaml_locate::Path;

/// The fewest prefix tokens worth a session: one KV block of the engines that cache by
/// blocks of 16 tokens, so a hit is possible at all.
pub const MIN_PREFIX_TOKENS: u32 = 16;
/// The most prefix tokens: a bigger prompt is a load test, not a probe.
pub const MAX_PREFIX_TOKENS: u32 = 128 * 1024;
/// The most warm probes per session.
pub const MAX_WARM_PROBES: u32 = 16;

/// How a session asks the router to keep it on one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Affinity {
    /// A header whose value is the session's token.
    Header(HeaderName),
    /// A cookie of this name whose value is the session's token.
    Cookie(String),
}

/// A prefix-cache scenario, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixCachePlan {
    pub scenario: String,
    pub every: Duration,
    pub prefix_tokens: u32,
    pub question_tokens: u32,
    pub output_tokens: u32,
    pub warm_probes: u32,
    /// Sessions the ratios cover.
    pub window: u32,
    pub affinity: Option<Affinity>,
    pub min_hit_ratio: f64,
    pub max_ttft_ratio: f64,
}

/// Plans prefix-cache scenario `s` at `sp`.
pub fn plan(s: &Scenario, sp: &Path) -> Result<PrefixCachePlan, (Path, String)> {
    let at = sp.key("prefix_cache");
    let Some(c) = &s.prefix_cache else {
        return Err((at, "kind: prefix_cache needs a prefix_cache: block".into()));
    };
    let only = Scenario {
        name: s.name.clone(),
        kind: s.kind,
        prefix_cache: s.prefix_cache.clone(),
        ..Scenario::default()
    };
    if *s != only {
        return Err((
            at,
            "a prefix_cache scenario builds its own prompts and sessions: it takes only name, \
             kind and prefix_cache"
                .into(),
        ));
    }
    let range = |key: &str, v: u32, lo: u32, hi: u32| {
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err((at.key(key), format!("{v} must be between {lo} and {hi}")))
        }
    };
    range(
        "prefix_tokens",
        c.prefix_tokens,
        MIN_PREFIX_TOKENS,
        MAX_PREFIX_TOKENS,
    )?;
    range("question_tokens", c.question_tokens, 1, 4096)?;
    range("output_tokens", c.output_tokens, 1, 4096)?;
    range("warm_probes", c.warm_probes, 1, MAX_WARM_PROBES)?;
    range("window", c.window, 1, 1000)?;
    if c.every.is_zero() {
        return Err((at.key("every"), "every must be greater than 0".into()));
    }
    if !(c.min_hit_ratio.is_finite() && (0.0..=1.0).contains(&c.min_hit_ratio)) {
        return Err((
            at.key("min_hit_ratio"),
            format!("{} must be between 0 and 1", c.min_hit_ratio),
        ));
    }
    if !(c.max_ttft_ratio.is_finite() && c.max_ttft_ratio > 0.0) {
        return Err((
            at.key("max_ttft_ratio"),
            format!("{} must be a number greater than 0", c.max_ttft_ratio),
        ));
    }
    let affinity = match &c.affinity {
        None => None,
        Some(a) => {
            let ap = at.key("affinity");
            match (&a.header, &a.cookie) {
                (Some(h), None) => Some(Affinity::Header(
                    HeaderName::try_from(h.as_str()).map_err(|_| {
                        (
                            ap.key("header"),
                            format!("{h:?} is not a valid HTTP header name"),
                        )
                    })?,
                )),
                (None, Some(name)) => {
                    let token = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    if !token {
                        return Err((
                            ap.key("cookie"),
                            format!("{name:?} is not a valid cookie name"),
                        ));
                    }
                    Some(Affinity::Cookie(name.clone()))
                }
                _ => {
                    return Err((
                        ap,
                        "needs exactly one of header or cookie: how the router keeps a session \
                         on its replica"
                            .into(),
                    ));
                }
            }
        }
    };
    Ok(PrefixCachePlan {
        scenario: s.name.clone(),
        every: c.every,
        prefix_tokens: c.prefix_tokens,
        question_tokens: c.question_tokens,
        output_tokens: c.output_tokens,
        warm_probes: c.warm_probes,
        window: c.window,
        affinity,
        min_hit_ratio: c.min_hit_ratio,
        max_ttft_ratio: c.max_ttft_ratio,
    })
}
