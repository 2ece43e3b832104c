//! One page per recent probe (`/probe/ID`): what a probe's record says, kept for the
//! latest probes of every target × scenario (and discovered replica) within a bounded
//! total, so a latency spike on a dashboard leads to the probes behind it. A probe's ID
//! is the daemon's count of probes filed, from 1.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::record::{CheckResult, RequestRecord};

/// Pages kept in all unless configured (`probe_pages`).
pub const DEFAULT_KEEP: usize = 1000;

/// Characters of an error text a page keeps (it is already scrubbed of secrets).
const ERROR_CHARS: usize = 512;

/// One probe, as its page shows it. Times are milliseconds after the probe was
/// scheduled (`scheduled_at`, Unix seconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbePage {
    pub id: u64,
    pub target: String,
    pub model: String,
    pub scenario: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    pub scheduled_at: f64,
    pub sent_ms: f64,
    pub headers_ms: Option<f64>,
    pub first_token_ms: Option<f64>,
    pub first_answer_token_ms: Option<f64>,
    pub end_ms: Option<f64>,
    /// The figures the histograms hold, from the send (the record's definitions); TTFA
    /// only when the probe reasoned first.
    pub ttft_ms: Option<f64>,
    pub ttfa_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub reasoning_tokens: u32,
    pub cached_tokens: Option<u32>,
    pub max_tokens: u32,
    pub streamed: bool,
    pub http_status: Option<u16>,
    pub outcome: &'static str,
    /// Succeeded and met every SLO of its scenario.
    pub good: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
    /// The W3C trace ID the probe sent (`traceparent`), to find the engine's span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The endpoint a gateway says served the probe
    /// (`x-gateway-destination-endpoint-served`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_endpoint: Option<String>,
}

/// Where a probe was sent: the key its page is kept under.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProbeKey {
    pub target: String,
    pub scenario: String,
    pub replica: Option<String>,
}

impl ProbePage {
    /// The page of a finished probe, `completed_at` (Unix seconds) being now. `error`
    /// is the record's error text already scrubbed of the target's secrets.
    pub fn of(
        r: &RequestRecord,
        key: &ProbeKey,
        model: &str,
        good: bool,
        error: Option<String>,
        completed_at: f64,
    ) -> ProbePage {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let since_sched =
            |t: Option<std::time::Duration>| t.map(|t| ms(t.saturating_sub(r.t_sched)));
        let end = r.t_end.unwrap_or(r.t_send);
        ProbePage {
            id: 0,
            target: key.target.clone(),
            model: model.to_string(),
            scenario: key.scenario.clone(),
            replica: key.replica.clone(),
            scheduled_at: completed_at - end.saturating_sub(r.t_sched).as_secs_f64(),
            sent_ms: ms(r.t_send.saturating_sub(r.t_sched)),
            headers_ms: since_sched(r.t_headers),
            first_token_ms: since_sched(r.t_first),
            first_answer_token_ms: since_sched(r.t_first_answer),
            end_ms: since_sched(r.t_end),
            ttft_ms: r.ttft().map(ms),
            // As everywhere TTFA is shown: only when the probe reasoned first.
            ttfa_ms: r.ttfa().filter(|_| r.saw_reasoning()).map(ms),
            tpot_ms: r.tpot().map(ms),
            e2e_ms: r.e2e().map(ms),
            prompt_tokens: r.prompt_tokens(),
            output_tokens: r.output_tokens(),
            reasoning_tokens: r.reasoning_tokens(),
            cached_tokens: r.usage_cached_tokens,
            max_tokens: r.max_tokens,
            streamed: r.streamed,
            http_status: r.http_status,
            outcome: r.outcome.as_str(),
            good,
            error: error.map(|e| bounded(&e, ERROR_CHARS)),
            checks: r.checks.clone(),
            trace_id: r.trace_id.clone(),
            served_endpoint: r.served_endpoint.clone(),
        }
    }
}

fn bounded(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The kept pages: each key holds its share of `keep` (at least one), newest last; the
/// oldest page of a key goes first.
#[derive(Debug)]
pub struct ProbePages {
    inner: Mutex<Pages>,
}

#[derive(Debug)]
struct Pages {
    keep: usize,
    next_id: u64,
    by_id: BTreeMap<u64, ProbePage>,
    by_key: BTreeMap<ProbeKey, VecDeque<u64>>,
}

impl Default for ProbePages {
    fn default() -> Self {
        ProbePages::new(DEFAULT_KEEP)
    }
}

impl Pages {
    fn share(&self) -> usize {
        (self.keep / self.by_key.len().max(1)).max(1)
    }

    /// Drops the oldest pages of `ids` beyond `share`.
    fn trim_to(share: usize, ids: &mut VecDeque<u64>, by_id: &mut BTreeMap<u64, ProbePage>) {
        while ids.len() > share {
            if let Some(old) = ids.pop_front() {
                by_id.remove(&old);
            }
        }
    }

    /// Drops the oldest pages of every key beyond its share.
    fn trim(&mut self) {
        let share = self.share();
        for ids in self.by_key.values_mut() {
            Pages::trim_to(share, ids, &mut self.by_id);
        }
    }
}

impl ProbePages {
    pub fn new(keep: usize) -> ProbePages {
        ProbePages {
            inner: Mutex::new(Pages {
                keep: keep.max(1),
                next_id: 1,
                by_id: BTreeMap::new(),
                by_key: BTreeMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pages> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the total kept (a reload); pages beyond the new shares go at once.
    pub fn set_keep(&self, keep: usize) {
        let mut p = self.lock();
        p.keep = keep.max(1);
        p.trim();
    }

    /// Files a probe's page under `key`, returning its ID.
    pub fn file(&self, key: &ProbeKey, mut page: ProbePage) -> u64 {
        let mut p = self.lock();
        let id = p.next_id;
        p.next_id += 1;
        page.id = id;
        let new_key = !p.by_key.contains_key(key);
        p.by_key.entry(key.clone()).or_default().push_back(id);
        p.by_id.insert(id, page);
        if new_key {
            // Every share shrinks.
            p.trim();
        } else {
            let share = p.share();
            let Pages { by_key, by_id, .. } = &mut *p;
            if let Some(ids) = by_key.get_mut(key) {
                Pages::trim_to(share, ids, by_id);
            }
        }
        id
    }

    /// A page still kept.
    pub fn get(&self, id: u64) -> Option<ProbePage> {
        self.lock().by_id.get(&id).cloned()
    }

    /// Whether the page of `id` is still kept.
    pub fn has(&self, id: u64) -> bool {
        self.lock().by_id.contains_key(&id)
    }

    /// Pages kept in all.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `n` kept probes of `target` with the longest end-to-end latency (front door
    /// and replicas), slowest first.
    pub fn slowest(&self, target: &str, n: usize) -> Vec<ProbePage> {
        let p = self.lock();
        let mut pages: Vec<&ProbePage> = p.by_id.values().filter(|x| x.target == target).collect();
        pages.sort_by(|a, b| {
            b.e2e_ms
                .unwrap_or(0.0)
                .total_cmp(&a.e2e_ms.unwrap_or(0.0))
                .then(b.id.cmp(&a.id))
        });
        pages.into_iter().take(n).cloned().collect()
    }

    /// Forgets the pages filed under the keys `gone` selects (a target, scenario or
    /// replica that stopped); the others' shares grow on their next page.
    pub fn remove_where(&self, gone: impl Fn(&ProbeKey) -> bool) {
        let mut p = self.lock();
        let Pages { by_key, by_id, .. } = &mut *p;
        by_key.retain(|k, ids| {
            let keep = !gone(k);
            if !keep {
                for id in ids.iter() {
                    by_id.remove(id);
                }
            }
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::record::Outcome;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn key(target: &str, scenario: &str) -> ProbeKey {
        ProbeKey {
            target: target.into(),
            scenario: scenario.into(),
            replica: None,
        }
    }

    fn record(e2e: u64) -> RequestRecord {
        let mut r = RequestRecord::new(0, ms(1000), ms(1002));
        r.t_headers = Some(ms(1010));
        r.push_chunk(ms(1052), 5, Some(1));
        r.push_chunk(ms(1002 + e2e), 5, Some(1));
        r.t_end = Some(ms(1002 + e2e + 1));
        r.max_tokens = 2;
        r.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        r
    }

    #[test]
    fn a_page_holds_the_records_timestamps_from_the_schedule_and_its_figures_from_the_send() {
        let r = record(100);
        let p = ProbePage::of(&r, &key("t", "s"), "m", true, None, 5000.0);
        assert_eq!(p.sent_ms, 2.0);
        assert_eq!(p.headers_ms, Some(10.0));
        assert_eq!(p.first_token_ms, Some(52.0));
        assert_eq!(p.end_ms, Some(103.0));
        assert_eq!(p.ttft_ms, Some(50.0));
        assert_eq!(p.ttfa_ms, None, "no reasoning: no TTFA of its own");
        assert_eq!(p.e2e_ms, Some(100.0));
        assert_eq!(p.tpot_ms, Some(50.0));
        assert_eq!(p.output_tokens, 2);
        assert!((p.scheduled_at - (5000.0 - 0.103)).abs() < 1e-9);
        assert_eq!(
            p.trace_id.as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        let mut failed = RequestRecord::new(0, ms(0), ms(0));
        failed.outcome = Outcome::Http5xx;
        let long = "x".repeat(2000);
        let p = ProbePage::of(&failed, &key("t", "s"), "m", false, Some(long), 1.0);
        assert_eq!(
            p.error.as_ref().map(|e| e.chars().count()),
            Some(ERROR_CHARS + 1)
        );
        assert_eq!(p.outcome, "http_5xx");
        assert_eq!(p.served_endpoint, None);
        let mut routed = record(100);
        routed.served_endpoint = Some("10.0.0.7:8000".into());
        let p = ProbePage::of(&routed, &key("t", "s"), "m", true, None, 1.0);
        assert_eq!(p.served_endpoint.as_deref(), Some("10.0.0.7:8000"));
    }

    #[test]
    fn every_key_keeps_its_share_of_the_total_newest_last() {
        let pages = ProbePages::new(10);
        let a = key("a", "s");
        let ids: Vec<u64> = (0..25)
            .map(|i| pages.file(&a, ProbePage::of(&record(i), &a, "m", true, None, 1.0)))
            .collect();
        assert_eq!(ids[0], 1);
        assert_eq!(pages.len(), 10, "one key holds the whole total");
        assert!(!pages.has(ids[14]) && pages.has(ids[15]) && pages.has(ids[24]));
        // A second key halves every share at once.
        let b = key("b", "s");
        let first_b = pages.file(&b, ProbePage::of(&record(1), &b, "m", true, None, 1.0));
        assert_eq!(pages.len(), 6);
        assert!(!pages.has(ids[19]) && pages.has(ids[20]) && pages.has(first_b));
        // More keys than the total: each keeps its newest page.
        for i in 0..20 {
            let k = key("c", &format!("s{i}"));
            pages.file(&k, ProbePage::of(&record(1), &k, "m", true, None, 1.0));
        }
        assert_eq!(pages.len(), 22);
        pages.set_keep(44);
        assert_eq!(pages.len(), 22);
        pages.remove_where(|k| k.target == "c");
        assert_eq!(pages.len(), 2);
        assert_eq!(pages.get(first_b).map(|p| p.id), Some(first_b));
    }

    #[test]
    fn the_slowest_probes_of_a_target_come_first() {
        let pages = ProbePages::new(100);
        let (a, b) = (key("a", "s"), key("b", "s"));
        for e2e in [100, 900, 300] {
            pages.file(&a, ProbePage::of(&record(e2e), &a, "m", true, None, 1.0));
        }
        pages.file(&b, ProbePage::of(&record(5000), &b, "m", true, None, 1.0));
        let slow: Vec<Option<f64>> = pages.slowest("a", 2).iter().map(|p| p.e2e_ms).collect();
        assert_eq!(slow, vec![Some(900.0), Some(300.0)]);
    }
}
