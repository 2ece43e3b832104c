//! The prefix-cache kind: every `every` a session through the target's front door, as
//! production traffic reaches the engine. Its cold probe's prompt starts with a fresh
//! nonce and then the session's prefix, so no cache can hold it; its warm probes send
//! the same prefix with new questions. With `affinity`, every probe of a session carries
//! the session's token in the router's header or cookie. The engine's usage says how many
//! prompt tokens it read from its cache, the TTFTs say what that saved, and a gateway's
//! served-endpoint header says whether the warm probes reached the cold probe's replica:
//! together they tell a cache that is off (or a prefix that changes) from a router that
//! spreads sessions. Series `llmprobe_prefix_cache_*` (declared here), status rows, and
//! failed sessions through the failure log.

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use reqwest::header::{self, HeaderName, HeaderValue};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{FrontDoor, ScenarioKind};
use crate::client::Client;
use crate::clock::unix_now;
use crate::config::TargetPlan;
use crate::config::kinds::KindName;
use crate::config::kinds::prefix_cache::{Affinity, PrefixCachePlan};
use crate::daemon::failure_lines::Activity;
use crate::daemon::shared::Shared;
use crate::exposition::buckets::Layout;
use crate::exposition::families::{counter, gauge, histogram};
use crate::exposition::{Family, Registered, Scope};
use crate::record::RequestRecord;
use crate::secret::{Secret, scrub};
use crate::status::kind_status::{KindRun, KindStatus};
use crate::workload::RequestSpec;
use crate::workload::prompt::{NONCE_WORDS, Nonce, random_words};

/// The prefix-cache kind.
pub struct PrefixCache;

impl ScenarioKind for PrefixCache {
    fn runs(&self) -> &'static [KindName] {
        &[KindName::PrefixCache]
    }

    fn families(&self) -> &'static [Family] {
        &FAMILIES
    }

    // The demo builds its own: through its gateway, which keeps a session on one
    // replica by its `x-session-token` (src/daemon/demo.rs).

    fn start(&self, at: &FrontDoor<'_>) -> anyhow::Result<Vec<JoinHandle<()>>> {
        let plan = at.target.plan;
        let mut tasks = Vec::new();
        for p in &plan.kinds.prefix_caches {
            tasks.push(start(plan, p, at.target.shared, at.stop.clone())?);
        }
        Ok(tasks)
    }

    fn retire(&self, shared: &Shared, old: &TargetPlan, new: Option<&TargetPlan>) {
        fn names(p: &TargetPlan) -> Vec<&str> {
            let plans = p.kinds.prefix_caches.iter();
            plans.map(|f| f.scenario.as_str()).collect()
        }
        super::retire_own(shared, (old, new), &FAMILIES, names, super::remove_kind_row);
    }
}

/// A probe's place in its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Cold,
    Warm,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Phase::Cold => "cold",
            Phase::Warm => "warm",
        }
    }
}

fn phases() -> Vec<&'static str> {
    vec![Phase::Cold.as_str(), Phase::Warm.as_str()]
}

const PROBES: Family = counter(
    "llmprobe_prefix_cache_probes_total",
    "Probes of prefix-cache sessions: cold (a prefix no cache can hold) and warm (the same prefix, a new question).",
)
.scope(Scope::Kind)
.extra("phase", phases);
const FAILURES: Family = counter(
    "llmprobe_prefix_cache_failures_total",
    "Prefix-cache probes that failed (a failed cold probe ends its session).",
)
.scope(Scope::Kind)
.extra("phase", phases);
const TTFT: Family = histogram(
    "llmprobe_prefix_cache_ttft_seconds",
    "Time to first token of successful prefix-cache probes, cold and warm.",
    Layout::Of(crate::latency::Latency::Ttft),
)
.scope(Scope::Kind)
.extra("phase", phases);
const PROMPT_TOKENS: Family = counter(
    "llmprobe_prefix_cache_prompt_tokens_total",
    "Prompt tokens the server reported for successful prefix-cache probes that reported cached tokens.",
)
.scope(Scope::Kind)
.extra("phase", phases);
const CACHED_TOKENS: Family = counter(
    "llmprobe_prefix_cache_cached_tokens_total",
    "Of those, the tokens the server reported reading from its prefix cache.",
)
.scope(Scope::Kind)
.extra("phase", phases);
const HIT_RATIO: Family = gauge(
    "llmprobe_prefix_cache_hit_ratio",
    "Warm probes' cached share of their prompt tokens over the last window of sessions.",
)
.scope(Scope::Kind)
.unit("ratio");
const TTFT_RATIO: Family = gauge(
    "llmprobe_prefix_cache_ttft_ratio",
    "Warm probes' mean TTFT / cold probes' mean TTFT over the last window of sessions.",
)
.scope(Scope::Kind)
.unit("ratio");
const SAME_ENDPOINT: Family = gauge(
    "llmprobe_prefix_cache_same_endpoint_ratio",
    "Share of warm probes the gateway says its session's cold probe's endpoint served, over the last window of sessions.",
)
.scope(Scope::Kind)
.unit("ratio");
const OBJECTIVE_HIT: Family = gauge(
    "llmprobe_prefix_cache_objective_hit_ratio",
    "The scenario's objective: the least warm hit ratio (min_hit_ratio).",
)
.scope(Scope::Kind)
.unit("ratio");
const OBJECTIVE_TTFT: Family = gauge(
    "llmprobe_prefix_cache_objective_ttft_ratio",
    "The scenario's objective: the most warm/cold TTFT ratio (max_ttft_ratio).",
)
.scope(Scope::Kind)
.unit("ratio");
const LAST_SESSION: Family = gauge(
    "llmprobe_prefix_cache_last_session_timestamp_seconds",
    "When the last session whose cold probe succeeded completed (Unix time).",
)
.scope(Scope::Kind)
.unit("seconds");

/// The prefix-cache kind's families, in the order of docs/metrics.md.
static FAMILIES: [Family; 11] = [
    PROBES,
    FAILURES,
    TTFT,
    PROMPT_TOKENS,
    CACHED_TOKENS,
    HIT_RATIO,
    TTFT_RATIO,
    SAME_ENDPOINT,
    OBJECTIVE_HIT,
    OBJECTIVE_TTFT,
    LAST_SESSION,
];

/// Its runs, as the failure log words them.
const ACTIVITY: Activity = Activity::Kind {
    noun: "prefix-cache session",
    nouns: "prefix-cache sessions",
    failed: "prefix-cache session failed",
};

/// What one successful probe said.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Probe {
    pub ttft: Option<f64>,
    /// Server-reported prompt and cached tokens (both, or neither).
    pub tokens: Option<(u32, u32)>,
    pub endpoint: Option<String>,
}

impl Probe {
    fn of(r: &RequestRecord) -> Probe {
        Probe {
            ttft: r.ttft().map(|d| d.as_secs_f64()),
            tokens: r.usage_prompt_tokens.zip(r.usage_cached_tokens),
            endpoint: r.served_endpoint.clone(),
        }
    }
}

/// A session whose cold probe succeeded, with its successful warm probes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Session {
    pub cold: Probe,
    pub warm: Vec<Probe>,
}

/// What the last window of sessions says.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Ratios {
    /// Warm Σ cached / Σ prompt tokens (None: no warm probe reported cached tokens).
    pub hit: Option<f64>,
    /// Warm mean TTFT / cold mean TTFT.
    pub ttft: Option<f64>,
    /// Warm probes served where their cold probe was, of those the gateway named both.
    pub same_endpoint: Option<f64>,
}

/// The ratios of `sessions`.
pub fn ratios<'a>(sessions: impl Iterator<Item = &'a Session> + Clone) -> Ratios {
    let warm = || sessions.clone().flat_map(|s| s.warm.iter());
    let (prompt, cached) = warm()
        .filter_map(|p| p.tokens)
        .fold((0u64, 0u64), |(p, c), (pt, ct)| {
            (p + u64::from(pt), c + u64::from(ct))
        });
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let cold_ttft = mean(sessions.clone().filter_map(|s| s.cold.ttft).collect());
    let warm_ttft = mean(warm().filter_map(|p| p.ttft).collect());
    let pairs: Vec<bool> = sessions
        .clone()
        .flat_map(|s| {
            s.warm.iter().filter_map(|w| {
                let (cold, warm) = (s.cold.endpoint.as_ref()?, w.endpoint.as_ref()?);
                Some(cold == warm)
            })
        })
        .collect();
    Ratios {
        hit: (prompt > 0).then(|| cached as f64 / prompt as f64),
        ttft: match (warm_ttft, cold_ttft) {
            (Some(w), Some(c)) if c > 0.0 => Some(w / c),
            _ => None,
        },
        same_endpoint: (!pairs.is_empty())
            .then(|| pairs.iter().filter(|same| **same).count() as f64 / pairs.len() as f64),
    }
}

/// What the ratios say against the objectives, in words a runbook can start from.
pub fn verdict(r: &Ratios, p: &PrefixCachePlan) -> (&'static str, bool) {
    let hit_ok = r.hit.is_none_or(|h| h >= p.min_hit_ratio);
    let ttft_ok = r.ttft.is_none_or(|t| t <= p.max_ttft_ratio);
    if hit_ok && ttft_ok {
        return match r.hit {
            Some(_) => ("cache effective", true),
            None => (
                "effective by TTFT (the server reports no cached tokens)",
                true,
            ),
        };
    }
    // Warm probes landing elsewhere than their cold probe: the router, not the cache.
    if r.same_endpoint.is_some_and(|s| s < 0.9) {
        ("ineffective: the router spreads sessions", false)
    } else {
        ("ineffective: the cache is off or the prefix changes", false)
    }
}

/// The body of one probe: the session's prefix, then a question of its own.
fn spec(prefix: &str, question: &str, p: &PrefixCachePlan) -> RequestSpec {
    RequestSpec {
        prompt: format!("{prefix} {question}"),
        prompt_tokens: p.prefix_tokens + p.question_tokens,
        max_tokens: p.output_tokens,
        history: Vec::new(),
        system: None,
        model: None,
    }
}

/// The affinity header of a session with `token`.
fn affinity_headers(a: Option<&Affinity>, token: &str) -> Vec<(HeaderName, HeaderValue)> {
    let Some(a) = a else {
        return Vec::new();
    };
    let (name, value) = match a {
        Affinity::Header(name) => (name.clone(), token.to_string()),
        Affinity::Cookie(cookie) => (header::COOKIE, format!("{cookie}={token}")),
    };
    // The token is hex and the cookie name a checked token: always a valid value.
    HeaderValue::from_str(&value).map_or_else(|_| Vec::new(), |v| vec![(name, v)])
}

/// The series one scenario sets.
struct Series {
    registered: Registered,
    labels: [String; 3],
}

impl Series {
    fn with(&self, phase: Option<Phase>) -> Vec<&str> {
        let l = &self.labels;
        let mut v = vec![l[0].as_str(), l[1].as_str(), l[2].as_str()];
        v.extend(phase.map(Phase::as_str));
        v
    }

    fn count(&self, family: &Family, phase: Phase, n: u64) {
        if let Ok(c) = self.registered.int_counter_vec(family) {
            c.with_label_values(&self.with(Some(phase))).inc_by(n);
        }
    }

    fn set(&self, family: &Family, value: Option<f64>) {
        if let Ok(g) = self.registered.gauge_vec(family) {
            crate::exposition::registry::set_or_remove(&g, &self.with(None), value);
        }
    }

    /// One probe's outcome.
    fn probe(&self, phase: Phase, r: &RequestRecord) {
        self.count(&PROBES, phase, 1);
        if !r.is_success() {
            self.count(&FAILURES, phase, 1);
            return;
        }
        let p = Probe::of(r);
        if let (Some(t), Ok(h)) = (p.ttft, self.registered.histogram_vec(&TTFT)) {
            h.with_label_values(&self.with(Some(phase))).observe(t);
        }
        if let Some((prompt, cached)) = p.tokens {
            self.count(&PROMPT_TOKENS, phase, u64::from(prompt));
            self.count(&CACHED_TOKENS, phase, u64::from(cached));
        }
    }
}

/// Starts the loop of prefix-cache scenario `p` of `plan`; it ends when `stop` fires.
fn start(
    plan: &TargetPlan,
    p: &PrefixCachePlan,
    shared: &Shared,
    stop: tokio_util::sync::CancellationToken,
) -> anyhow::Result<JoinHandle<()>> {
    let client = Client::new(plan.client.clone(), None)?;
    let series = Series {
        registered: shared.metrics.kind_series(&FAMILIES)?,
        labels: [plan.name.clone(), plan.model.clone(), p.scenario.clone()],
    };
    let status = shared.status.kind(KindStatus::new(
        &plan.name,
        &plan.model,
        &p.scenario,
        KindName::PrefixCache.as_str(),
        p.every.as_secs_f64(),
    ));
    let mut log = super::RunLog::new(shared, &plan.name, &p.scenario, ACTIVITY, "session_failed");
    let secrets: Vec<Secret> = plan.secrets.clone();
    let p = p.clone();
    Ok(tokio::spawn(async move {
        for phase in [Phase::Cold, Phase::Warm] {
            for f in [&PROBES, &FAILURES, &PROMPT_TOKENS, &CACHED_TOKENS] {
                series.count(f, phase, 0);
            }
        }
        series.set(&OBJECTIVE_HIT, Some(p.min_hit_ratio));
        series.set(&OBJECTIVE_TTFT, Some(p.max_ttft_ratio));
        // A fresh stream per process: a restarted prober's prefixes are new ones too.
        let mut rng = rand::rngs::StdRng::from_rng(&mut rand::rng());
        let run: u32 = rng.random();
        let start = Instant::now();
        let mut window: VecDeque<Session> = VecDeque::new();
        let mut ticks = tokio::time::interval(p.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for session in 0u64.. {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let nonce = Nonce {
                run,
                request: session,
            };
            let prefix = format!(
                "{} {}",
                nonce.text(),
                random_words(&mut rng, p.prefix_tokens.saturating_sub(NONCE_WORDS).max(1))
            );
            let token = format!("{:016x}", rng.random::<u64>());
            let headers = affinity_headers(p.affinity.as_ref(), &token);
            let mut probes = Vec::with_capacity(1 + p.warm_probes as usize);
            for k in 0..=p.warm_probes {
                let question = random_words(&mut rng, p.question_tokens);
                let id = session * 64 + u64::from(k);
                let body = spec(&prefix, &question, &p);
                let send = client.send_with_headers(&body, id, start, &headers);
                let r = tokio::select! {
                    _ = stop.cancelled() => return,
                    r = send => r,
                };
                let phase = if k == 0 { Phase::Cold } else { Phase::Warm };
                series.probe(phase, &r);
                // No cold probe, no session: a warm probe would have nothing to be warm from.
                if k == 0 && !r.is_success() {
                    let error = scrub(
                        r.error.as_deref().unwrap_or("the cold probe failed"),
                        secrets.iter().map(Secret::expose),
                    );
                    log.failed(&error);
                    status
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record_failure(unix_now(), error);
                    break;
                }
                probes.push(r);
            }
            let Some((cold, warm)) = probes.split_first() else {
                continue;
            };
            window.push_back(Session {
                cold: Probe::of(cold),
                warm: warm
                    .iter()
                    .filter(|r| r.is_success())
                    .map(Probe::of)
                    .collect(),
            });
            while window.len() > p.window as usize {
                window.pop_front();
            }
            let r = ratios(window.iter());
            series.set(&HIT_RATIO, r.hit);
            series.set(&TTFT_RATIO, r.ttft);
            series.set(&SAME_ENDPOINT, r.same_endpoint);
            let now = unix_now();
            series.set(&LAST_SESSION, Some(now));
            status
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record_run(run_of(&r, &p, window.len(), now));
            log.succeeded();
        }
    }))
}

/// A window's figures on the board.
fn run_of(r: &Ratios, p: &PrefixCachePlan, sessions: usize, at: f64) -> KindRun {
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.0} %", v * 100.0));
    let (verdict, ok) = verdict(r, p);
    KindRun {
        at,
        verdict: verdict.to_string(),
        ok,
        findings: vec![
            (
                "warm hit ratio".to_string(),
                format!(
                    "{} (objective ≥ {})",
                    pct(r.hit),
                    pct(Some(p.min_hit_ratio))
                ),
            ),
            (
                "warm/cold TTFT".to_string(),
                format!(
                    "{} (objective ≤ {})",
                    pct(r.ttft),
                    pct(Some(p.max_ttft_ratio))
                ),
            ),
            ("same endpoint".to_string(), pct(r.same_endpoint)),
            ("sessions".to_string(), sessions.to_string()),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> PrefixCachePlan {
        PrefixCachePlan {
            scenario: "cache".into(),
            every: std::time::Duration::from_secs(30),
            prefix_tokens: 1024,
            question_tokens: 32,
            output_tokens: 8,
            warm_probes: 1,
            window: 10,
            affinity: None,
            min_hit_ratio: 0.8,
            max_ttft_ratio: 0.3,
        }
    }

    fn probe(ttft: f64, tokens: Option<(u32, u32)>, endpoint: Option<&str>) -> Probe {
        Probe {
            ttft: Some(ttft),
            tokens,
            endpoint: endpoint.map(str::to_string),
        }
    }

    #[test]
    fn ratios_are_warm_sums_and_means_over_the_window() {
        let sessions = [
            Session {
                cold: probe(1.0, Some((1000, 0)), Some("a")),
                warm: vec![probe(0.1, Some((1000, 960)), Some("a"))],
            },
            Session {
                cold: probe(3.0, Some((1000, 0)), Some("b")),
                warm: vec![probe(0.3, Some((1000, 0)), Some("a"))],
            },
        ];
        let r = ratios(sessions.iter());
        assert_eq!(r.hit, Some(0.48));
        // Warm mean 0.2 s over cold mean 2 s.
        assert!((r.ttft.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(r.same_endpoint, Some(0.5));
        let (words, ok) = verdict(&r, &plan());
        assert!(!ok);
        assert_eq!(words, "ineffective: the router spreads sessions");
        // Same endpoint, no hits: the cache itself.
        let off = Ratios {
            hit: Some(0.0),
            ttft: Some(1.0),
            same_endpoint: Some(1.0),
        };
        assert_eq!(
            verdict(&off, &plan()).0,
            "ineffective: the cache is off or the prefix changes"
        );
        // No gateway header and no usage: TTFT alone judges.
        let quiet = [Session {
            cold: probe(1.0, None, None),
            warm: vec![probe(0.2, None, None)],
        }];
        let r = ratios(quiet.iter());
        assert_eq!((r.hit, r.same_endpoint), (None, None));
        assert_eq!(
            verdict(&r, &plan()),
            (
                "effective by TTFT (the server reports no cached tokens)",
                true
            )
        );
    }

    #[test]
    fn affinity_goes_in_its_header_or_cookie() {
        let h = affinity_headers(
            Some(&Affinity::Header(HeaderName::from_static(
                "x-session-token",
            ))),
            "00ff",
        );
        assert_eq!(h[0].0.as_str(), "x-session-token");
        assert_eq!(h[0].1, "00ff");
        let c = affinity_headers(Some(&Affinity::Cookie("route".into())), "00ff");
        assert_eq!(
            (c[0].0.as_str(), c[0].1.to_str().unwrap()),
            ("cookie", "route=00ff")
        );
        assert!(affinity_headers(None, "00ff").is_empty());
    }
}
