//! The status board: what `/` shows and what `/-/ready` decides on. One entry per
//! target × scenario with its last result, last error (already scrubbed of secrets by
//! the daemon) and SLO attainment since it started. Plus the running config as
//! redacted YAML for `/config`. Each entry keeps the last hour in bounded ring buffers
//! (`history`) for the status page. Beside the front door's scenarios, one entry per
//! discovered replica of a target (`replica_status`) and per fingerprint scenario
//! (`fingerprint_status`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use super::fingerprint_status::{FingerprintHandle, FingerprintStatus};
use super::history::{History, ProbeRow};
use super::kind_status::{KindHandle, KindStatus};
use super::replica_status::{ReplicaHandle, ReplicaStatus};
use crate::check::AccuracyWindow;
use crate::record::{CheckKind, CheckResult, GoldenVerdict, Outcome, RequestRecord};

/// Live state of one target × scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScenarioStatus {
    pub target: String,
    pub model: String,
    pub scenario: String,
    /// Probes completed since this scenario started.
    pub requests: u64,
    /// Probes that succeeded and met every SLO.
    pub good: u64,
    /// Probes that failed.
    pub failures: u64,
    /// Arrivals skipped (max in-flight, token budget).
    pub skipped: u64,
    /// Probes sent (admitted), finished or not.
    pub sent: u64,
    /// Outcome of the last probe (`ok`, or a failure reason).
    pub last_outcome: Option<&'static str>,
    /// Error text of the last failed probe.
    pub last_error: Option<String>,
    /// Unix time of the last probe's completion.
    pub last_at: Option<f64>,
    /// Failed probes by reason since this scenario started.
    pub reasons: BTreeMap<&'static str, u64>,
    /// The last hour and the last probes.
    pub history: History,
    /// The last failure of each answer check: (check, reason and excerpt), in check
    /// order. The client bounded and scrubbed both.
    pub last_check_failures: Vec<(CheckKind, String)>,
    /// The golden set's rolling accuracy, when the scenario asks one.
    pub golden: Option<GoldenStatus>,
}

/// A scenario's golden-set figures as the page shows them: the same window as the
/// `llmprobe_golden_*` gauges, fed the same verdicts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoldenStatus {
    pub window: AccuracyWindow,
    pub baseline: Option<f64>,
    /// The last wrong answer's reason (question, rule, excerpt; secrets scrubbed).
    pub last_wrong: Option<String>,
}

impl GoldenStatus {
    pub fn new(window: u32, baseline: Option<f64>) -> Self {
        GoldenStatus {
            window: AccuracyWindow::new(window as usize),
            baseline,
            last_wrong: None,
        }
    }

    pub fn record(&mut self, v: &GoldenVerdict) {
        self.window.push(v.correct);
        if let Some(reason) = &v.reason {
            self.last_wrong = Some(reason.clone());
        }
    }
}

impl ScenarioStatus {
    /// Good probes / all probes, when any completed.
    pub fn attainment(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.good as f64 / self.requests as f64)
    }

    /// Whether an arrival of this scenario went through admission (sent or skipped) or a
    /// probe finished: the scenario has been tried.
    pub fn tried(&self) -> bool {
        self.sent > 0 || self.skipped > 0 || self.requests > 0
    }

    /// Keeps the last failure of each check among `verdicts`.
    pub fn record_checks(&mut self, verdicts: &[CheckResult]) {
        for v in verdicts.iter().filter(|v| !v.passed) {
            let text = format!(
                "{}: {} «{}»",
                v.check,
                v.reason.as_deref().unwrap_or(""),
                v.excerpt.as_deref().unwrap_or("")
            );
            match self
                .last_check_failures
                .iter_mut()
                .find(|(k, _)| *k == v.check)
            {
                Some(slot) => slot.1 = text,
                None => {
                    self.last_check_failures.push((v.check, text));
                    self.last_check_failures.sort_by_key(|(k, _)| *k);
                }
            }
        }
    }

    /// Records one finished probe.
    pub fn record(&mut self, outcome: Outcome, good: bool, error: Option<String>, at: f64) {
        self.requests += 1;
        if good {
            self.good += 1;
        }
        if !outcome.is_ok() {
            self.failures += 1;
            self.last_error = error;
            *self.reasons.entry(outcome.as_str()).or_default() += 1;
        }
        self.last_outcome = Some(outcome.as_str());
        self.last_at = Some(at);
    }
}

impl ScenarioStatus {
    /// Records one finished probe with its timings for the status page's history.
    /// `error` is the probe's error text, already scrubbed of secrets.
    pub fn record_probe(
        &mut self,
        r: &RequestRecord,
        good: bool,
        error: Option<String>,
        at: f64,
        page: Option<u64>,
    ) {
        self.record(r.outcome, good, error, at);
        let secs = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64());
        self.history.add(ProbeRow {
            at,
            page,
            outcome: r.outcome.as_str(),
            good,
            ttft: secs(r.ttft()),
            ttfa: secs(r.ttfa().filter(|_| r.saw_reasoning())),
            tpot: secs(r.tpot()),
            e2e: secs(r.e2e()),
            input_tokens: r.prompt_tokens(),
            output_tokens: r.output_tokens(),
        });
    }
}

/// A handle to one scenario's entry; the daemon's record consumer holds it.
pub type ScenarioHandle = Arc<Mutex<ScenarioStatus>>;

#[derive(Default)]
struct Board {
    config_yaml: String,
    loaded: bool,
    scenarios: BTreeMap<(String, String), ScenarioHandle>,
    /// By (target, replica).
    replicas: BTreeMap<(String, String), ReplicaHandle>,
    /// By (target, scenario).
    fingerprints: BTreeMap<(String, String), FingerprintHandle>,
    /// By (target, scenario): scenarios of kinds without a table of their own.
    kinds: BTreeMap<(String, String), KindHandle>,
    /// By target: what its engine scrape last said.
    engines: BTreeMap<String, EngineState>,
    /// By fleet target: its last scrape round's sums (`None` before the first).
    fleets: BTreeMap<String, Option<FleetState>>,
    /// By target: what holds its probes back (a rate-limit pause, the day's budget).
    holds: BTreeMap<String, TargetHold>,
}

/// What holds a target's probes back, as the page shows it (Unix times; a hold whose
/// time has passed is over and not shown).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TargetHold {
    /// When the pause a 429's retry delay asked for ends.
    pub rate_limited_until: Option<f64>,
    /// The day's cost budget, spent: probing resumes at the next UTC midnight.
    pub budget_spent: Option<BudgetHold>,
}

/// A spent daily budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetHold {
    pub spent: f64,
    pub budget: f64,
    pub resumes_at: f64,
}

/// A target's engine as the status page shows it: the last scrape and the headroom.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EngineState {
    /// The last scrape of the engine's `/metrics` worked (`None`: no scrape configured).
    pub scrape_ok: Option<bool>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_cache_usage_ratio: Option<f64>,
    pub headroom: Option<f64>,
}

/// A fleet's engines as the page shows them: one scrape round's sums over the
/// discovered replicas (the `llmprobe_fleet_*` figures; KV cache the scraped replicas'
/// mean).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FleetState {
    pub replicas: usize,
    pub scraped: usize,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_cache_usage_ratio: Option<f64>,
    pub headroom: Option<f64>,
}

/// Shared between the daemon (writer) and the HTTP server (reader).
#[derive(Default)]
pub struct StatusBoard {
    inner: RwLock<Board>,
    /// The pages of the latest probes (`/probe/ID`).
    pages: super::probe_pages::ProbePages,
}

impl StatusBoard {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Board> {
        // Writers only assign whole fields, so a poisoned lock still holds a consistent
        // board.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Board> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The pages of the latest probes.
    pub fn pages(&self) -> &super::probe_pages::ProbePages {
        &self.pages
    }

    /// Sets the redacted YAML of the running config and marks the config as loaded.
    pub fn set_config(&self, yaml: String) {
        let mut b = self.write();
        b.config_yaml = yaml;
        b.loaded = true;
    }

    pub fn config_yaml(&self) -> String {
        self.read().config_yaml.clone()
    }

    /// The entry of a target × scenario, created empty when new (an unchanged target
    /// keeps its entry across reloads). A new entry's windows start now.
    pub fn scenario(&self, target: &str, model: &str, scenario: &str) -> ScenarioHandle {
        let mut b = self.write();
        b.scenarios
            .entry((target.to_string(), scenario.to_string()))
            .or_insert_with(|| {
                Arc::new(Mutex::new(ScenarioStatus {
                    target: target.to_string(),
                    model: model.to_string(),
                    scenario: scenario.to_string(),
                    history: History::started_at(crate::clock::unix_now()),
                    ..ScenarioStatus::default()
                }))
            })
            .clone()
    }

    /// The entry of a target's replica, created empty when new (first seen now); later
    /// calls return the same entry.
    pub fn replica(&self, target: &str, model: &str, replica: &str) -> ReplicaHandle {
        let mut b = self.write();
        b.replicas
            .entry((target.to_string(), replica.to_string()))
            .or_insert_with(|| {
                Arc::new(Mutex::new(ReplicaStatus::new(
                    target,
                    model,
                    replica,
                    Some(crate::clock::unix_now()),
                )))
            })
            .clone()
    }

    /// Drops a replica that left the target's discovered set.
    pub fn remove_replica(&self, target: &str, replica: &str) {
        self.write()
            .replicas
            .remove(&(target.to_string(), replica.to_string()));
        self.pages
            .remove_where(|k| k.target == target && k.replica.as_deref() == Some(replica));
    }

    /// Drops every replica of a target (the target left the config or its discovery).
    pub fn remove_replicas(&self, target: &str) {
        self.write().replicas.retain(|(t, _), _| t != target);
        self.pages
            .remove_where(|k| k.target == target && k.replica.is_some());
    }

    /// Snapshot of a target's replicas, ordered by name.
    pub fn replicas(&self, target: &str) -> Vec<ReplicaStatus> {
        // A range of the ordered map, not a scan: `/` asks once per target.
        self.read()
            .replicas
            .range((target.to_string(), String::new())..)
            .take_while(|((t, _), _)| t == target)
            .map(|(_, h)| h.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    /// The entry of a fingerprint scenario: `new` when there is none, or when the one
    /// there holds other limits (a reload changed its baseline); otherwise the same
    /// entry, its runs kept.
    pub fn fingerprint(&self, new: FingerprintStatus) -> FingerprintHandle {
        let mut b = self.write();
        let key = (new.target.clone(), new.scenario.clone());
        if let Some(h) = b.fingerprints.get(&key) {
            let same = {
                let old = h.lock().unwrap_or_else(|e| e.into_inner());
                old.model == new.model && old.threshold == new.threshold && old.every == new.every
            };
            if same {
                return h.clone();
            }
        }
        let h = Arc::new(Mutex::new(new));
        b.fingerprints.insert(key, h.clone());
        h
    }

    /// Drops a fingerprint scenario that left the config.
    pub fn remove_fingerprint(&self, target: &str, scenario: &str) {
        self.write()
            .fingerprints
            .remove(&(target.to_string(), scenario.to_string()));
    }

    /// Snapshot of a target's fingerprint scenarios, ordered by name.
    pub fn fingerprints(&self, target: &str) -> Vec<FingerprintStatus> {
        self.read()
            .fingerprints
            .range((target.to_string(), String::new())..)
            .take_while(|((t, _), _)| t == target)
            .map(|(_, h)| h.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    /// The entry of a scenario of a kind without a table of its own: `new` when there
    /// is none or the one there runs another model, kind or interval; otherwise the
    /// same entry, its runs kept.
    pub fn kind(&self, new: KindStatus) -> KindHandle {
        let mut b = self.write();
        let key = (new.target.clone(), new.scenario.clone());
        if let Some(h) = b.kinds.get(&key) {
            let same = {
                let old = h.lock().unwrap_or_else(|e| e.into_inner());
                old.model == new.model && old.kind == new.kind && old.every == new.every
            };
            if same {
                return h.clone();
            }
        }
        let h = Arc::new(Mutex::new(new));
        b.kinds.insert(key, h.clone());
        h
    }

    /// Drops such a scenario that left the config.
    pub fn remove_kind(&self, target: &str, scenario: &str) {
        self.write()
            .kinds
            .remove(&(target.to_string(), scenario.to_string()));
    }

    /// Snapshot of a target's such scenarios, ordered by name.
    pub fn kinds(&self, target: &str) -> Vec<KindStatus> {
        self.read()
            .kinds
            .range((target.to_string(), String::new())..)
            .take_while(|((t, _), _)| t == target)
            .map(|(_, h)| h.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    /// Every target with a scenario or a fingerprint scenario, with its model, in name
    /// order.
    pub fn targets(&self) -> Vec<(String, String)> {
        let b = self.read();
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        for h in b.scenarios.values() {
            let s = h.lock().unwrap_or_else(|e| e.into_inner());
            out.entry(s.target.clone())
                .or_insert_with(|| s.model.clone());
        }
        for h in b.fingerprints.values() {
            let f = h.lock().unwrap_or_else(|e| e.into_inner());
            out.entry(f.target.clone())
                .or_insert_with(|| f.model.clone());
        }
        for h in b.kinds.values() {
            let k = h.lock().unwrap_or_else(|e| e.into_inner());
            out.entry(k.target.clone())
                .or_insert_with(|| k.model.clone());
        }
        out.into_iter().collect()
    }

    /// Drops the entries of a target × scenario that left the config.
    /// Updates what the page shows of `target`'s engine.
    pub fn update_engine(&self, target: &str, f: impl FnOnce(&mut EngineState)) {
        f(self.write().engines.entry(target.to_string()).or_default());
    }

    /// What `target`'s engine scrape last said (`None`: no scrape configured).
    pub fn engine(&self, target: &str) -> Option<EngineState> {
        self.read().engines.get(target).copied()
    }

    /// `target` discovers replicas: the page says so before its first scrape round.
    pub fn start_fleet(&self, target: &str) {
        self.write().fleets.insert(target.to_string(), None);
    }

    /// One scrape round of `target`'s fleet.
    pub fn set_fleet(&self, target: &str, state: FleetState) {
        self.write().fleets.insert(target.to_string(), Some(state));
    }

    /// Forgets `target`'s fleet (its `replicas_from` is gone).
    pub fn remove_fleet(&self, target: &str) {
        self.write().fleets.remove(target);
    }

    /// `target`'s fleet: `None` for a target without discovered replicas, `Some(None)`
    /// before its first scrape round.
    pub fn fleet(&self, target: &str) -> Option<Option<FleetState>> {
        self.read().fleets.get(target).copied()
    }

    /// Updates what holds `target`'s probes back.
    pub fn update_hold(&self, target: &str, f: impl FnOnce(&mut TargetHold)) {
        f(self.write().holds.entry(target.to_string()).or_default());
    }

    /// What holds `target`'s probes back, if anything ever did.
    pub fn hold(&self, target: &str) -> Option<TargetHold> {
        self.read().holds.get(target).copied()
    }

    /// Forgets `target`'s holds (it left the config).
    pub fn remove_hold(&self, target: &str) {
        self.write().holds.remove(target);
    }

    /// Forgets `target`'s engine (its scrape is gone).
    pub fn remove_engine(&self, target: &str) {
        self.write().engines.remove(target);
    }

    pub fn remove(&self, target: &str, scenario: &str) {
        self.write()
            .scenarios
            .remove(&(target.to_string(), scenario.to_string()));
        self.pages
            .remove_where(|k| k.target == target && k.scenario == scenario && k.replica.is_none());
    }

    /// Snapshot of every entry, ordered by target then scenario.
    /// The scenarios of one target, in scenario order (a range, not a copy of all).
    pub fn scenarios_of(&self, target: &str) -> Vec<ScenarioStatus> {
        self.read()
            .scenarios
            .range((target.to_string(), String::new())..)
            .take_while(|((t, _), _)| t == target)
            .map(|(_, h)| h.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    pub fn snapshot(&self) -> Vec<ScenarioStatus> {
        self.read()
            .scenarios
            .values()
            .map(|h| h.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    /// Ready: a config is loaded and every scenario has been tried: its first arrival
    /// was admitted (sent) or skipped. Waiting for a finished probe would keep a pod
    /// unready for as long as one slow or budget-starved scenario takes.
    pub fn ready(&self) -> bool {
        let b = self.read();
        b.loaded
            && b.scenarios
                .values()
                .all(|h| h.lock().unwrap_or_else(|e| e.into_inner()).tried())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_needs_a_config_and_one_result_per_scenario() {
        let board = StatusBoard::new();
        assert!(!board.ready());
        let a = board.scenario("a", "m", "short");
        let b = board.scenario("b", "m", "short");
        board.set_config("targets: []".into());
        assert!(!board.ready());
        a.lock().unwrap().record(Outcome::Ok, true, None, 1.0);
        assert!(!board.ready());
        b.lock()
            .unwrap()
            .record(Outcome::Http5xx, false, Some("boom".into()), 2.0);
        assert!(board.ready());
        board.remove("b", "short");
        assert_eq!(board.snapshot().len(), 1);
    }

    #[test]
    fn an_admission_decision_counts_as_tried() {
        let board = StatusBoard::new();
        let sent = board.scenario("a", "m", "sent");
        let skipped = board.scenario("a", "m", "skipped");
        board.set_config("targets: []".into());
        sent.lock().unwrap().sent += 1;
        assert!(!board.ready());
        skipped.lock().unwrap().skipped += 1;
        assert!(board.ready());
    }

    #[test]
    fn attainment_counts_good_over_all() {
        let mut s = ScenarioStatus::default();
        assert_eq!(s.attainment(), None);
        s.record(Outcome::Ok, true, None, 1.0);
        s.record(Outcome::Ok, false, None, 2.0);
        s.record(Outcome::Timeout, false, Some("first token".into()), 3.0);
        assert_eq!(s.attainment(), Some(1.0 / 3.0));
        assert_eq!(s.failures, 1);
        assert_eq!(s.last_outcome, Some("timeout"));
        assert_eq!(s.last_error.as_deref(), Some("first token"));
    }

    #[test]
    fn an_unchanged_scenario_keeps_its_entry() {
        let board = StatusBoard::new();
        let a = board.scenario("a", "m", "s");
        a.lock().unwrap().record(Outcome::Ok, true, None, 1.0);
        let again = board.scenario("a", "m", "s");
        assert_eq!(again.lock().unwrap().requests, 1);
    }

    #[test]
    fn a_replica_entry_is_created_once_and_removed_by_name_or_target() {
        let board = StatusBoard::new();
        let a = board.replica("t", "m", "10.0.0.1:8000");
        a.lock().unwrap().probes = 3;
        assert_eq!(
            board
                .replica("t", "m", "10.0.0.1:8000")
                .lock()
                .unwrap()
                .probes,
            3
        );
        assert!(Arc::ptr_eq(&a, &board.replica("t", "m", "10.0.0.1:8000")));
        board.replica("t", "m", "10.0.0.2:8000");
        board.replica("u", "m", "10.0.0.1:8000");
        let names =
            |t: &str| -> Vec<String> { board.replicas(t).into_iter().map(|r| r.replica).collect() };
        assert_eq!(names("t"), ["10.0.0.1:8000", "10.0.0.2:8000"]);
        board.remove_replica("t", "10.0.0.1:8000");
        assert_eq!(names("t"), ["10.0.0.2:8000"]);
        board.remove_replicas("t");
        assert!(names("t").is_empty());
        assert_eq!(names("u"), ["10.0.0.1:8000"]);
        // Replicas do not hold readiness back.
        board.scenario("t", "m", "s").lock().unwrap().sent += 1;
        board.set_config("targets: []".into());
        assert!(board.ready());
    }

    #[test]
    fn a_fingerprint_entry_keeps_its_runs_until_its_limits_change() {
        use crate::fingerprint::{Divergence, Threshold};
        let limits = |divergence| Threshold {
            divergence,
            token_agreement: 0.9,
        };
        let entry = |t: &str, d| FingerprintStatus::new(t, "m", "fp", limits(d), 600.0);
        let board = StatusBoard::new();
        let first = board.fingerprint(entry("t", 0.02));
        first.lock().unwrap().record_run(
            1.0,
            Divergence {
                divergence: 0.0,
                token_agreement: 1.0,
                first_divergence: None,
                positions: 8,
            },
        );
        // A restarted loop with the same baseline limits finds its runs.
        let again = board.fingerprint(entry("t", 0.02));
        assert!(Arc::ptr_eq(&first, &again));
        // Another baseline (other limits) starts afresh.
        let other = board.fingerprint(entry("t", 0.05));
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(board.fingerprints("t")[0].runs, 0);
        // A target with only fingerprints is a target of the page.
        board.scenario("a", "m", "s");
        assert_eq!(
            board.targets(),
            [("a".to_string(), "m".to_string()), ("t".into(), "m".into())]
        );
        board.remove_fingerprint("t", "fp");
        assert!(board.fingerprints("t").is_empty());
        assert_eq!(board.targets().len(), 1);
        // Fingerprints do not hold readiness back.
        board.scenario("a", "m", "s").lock().unwrap().sent += 1;
        board.fingerprint(entry("u", 0.02));
        board.set_config("targets: []".into());
        assert!(board.ready());
    }

    #[test]
    fn a_targets_entries_are_its_own_and_not_a_neighbours_by_name() {
        let board = StatusBoard::new();
        for t in ["s", "t", "t-1", "t1", "u"] {
            board.scenario(t, "m", "b");
            board.scenario(t, "m", "a");
            board.replica(t, "m", &format!("{t}:1"));
        }
        let scenarios: Vec<(String, String)> = board
            .scenarios_of("t")
            .into_iter()
            .map(|s| (s.target, s.scenario))
            .collect();
        assert_eq!(
            scenarios,
            [("t".into(), "a".into()), ("t".into(), "b".into())]
        );
        let replicas: Vec<String> = board.replicas("t").into_iter().map(|r| r.replica).collect();
        assert_eq!(replicas, ["t:1"]);
        assert!(board.scenarios_of("none").is_empty() && board.replicas("none").is_empty());
    }
}
