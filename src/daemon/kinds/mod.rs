//! Scenario kinds, daemon side: what each `kind:` runs. A kind is one file behind
//! [`ScenarioKind`] (its loop, its own series, its status rows, its retirement) and one
//! row of [`KINDS`]; its config is in `src/config/kinds/`. The target starts every
//! scenario through this list and the control task retires them through it: neither
//! knows a kind by name.

pub mod fingerprint;
pub mod model_list;
pub mod prefix_cache;
pub mod probe;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::engine_scrape::TtftWindow;
use super::failure_lines::{self, Activity, Attempt};
use super::failure_log::{FailureKey, FailureLog};
use super::pipeline::TargetContext;
use super::shared::Shared;
use crate::config::TargetPlan;
use crate::config::kinds::KindName;
use crate::exposition::{Family, Scope};

/// What a kind's scenarios start with on a target's front door.
pub struct FrontDoor<'a> {
    pub target: TargetContext<'a>,
    /// The target's stop: every task a kind starts ends when it fires.
    pub stop: &'a CancellationToken,
    /// The client TTFTs the engine scraper compares with the server's.
    pub ttft_window: &'a Arc<Mutex<TtftWindow>>,
    /// (position of the target's first runner, count of every target's runners), so
    /// first probes spread out instead of firing together.
    pub stagger: (usize, usize),
}

/// One kind of scenario, as the daemon drives it.
pub trait ScenarioKind: Sync {
    /// The `kind:` values it runs.
    fn runs(&self) -> &'static [KindName];

    /// Its own metric families (scope `Kind`; documented in docs/metrics.md after the
    /// shared ones, in the order of [`KINDS`]).
    fn families(&self) -> &'static [Family] {
        &[]
    }

    /// A scenario of this kind for the `--mock` demo's main target (a YAML flow
    /// mapping), so the demo fills its series; `None` when the demo needs no such
    /// scenario or builds its own.
    fn demo_scenario(&self) -> Option<&'static str> {
        None
    }

    /// Starts its scenarios of the target; each task ends when `at.stop` fires.
    fn start(&self, at: &FrontDoor<'_>) -> anyhow::Result<Vec<JoinHandle<()>>>;

    /// Deletes the series and status rows of its scenarios of `old` that `new` does not
    /// continue: `new` is the same target after a reload, `None` when it is gone or
    /// probes another model now.
    fn retire(&self, shared: &Shared, old: &TargetPlan, new: Option<&TargetPlan>);
}

/// Every scenario kind, once.
pub static KINDS: [&dyn ScenarioKind; 4] = [
    &probe::Probe,
    &fingerprint::Fingerprint,
    &model_list::ModelList,
    &prefix_cache::PrefixCache,
];

/// Starts every scenario of the target, kind by kind.
pub fn start_all(at: &FrontDoor<'_>) -> anyhow::Result<Vec<JoinHandle<()>>> {
    let mut tasks = Vec::new();
    for kind in KINDS {
        tasks.extend(kind.start(at)?);
    }
    Ok(tasks)
}

/// The `--mock` demo's scenarios of the kinds that offer one, as YAML list items under
/// a target's `scenarios:`.
pub fn demo_scenarios() -> String {
    KINDS
        .iter()
        .filter_map(|k| k.demo_scenario())
        .map(|s| format!("      - {s}\n"))
        .collect()
}

/// The failure log of a kind's runs: a failed run and the recovery are logged by state
/// change, as a target's probes are, in the kind's words.
pub struct RunLog {
    key: FailureKey,
    activity: Activity,
    /// The failure log's reason of a failed run (what failed is in its error).
    reason: &'static str,
    failures: FailureLog,
    summary_interval: watch::Receiver<Duration>,
}

impl RunLog {
    pub fn new(
        shared: &Shared,
        target: &str,
        scenario: &str,
        activity: Activity,
        reason: &'static str,
    ) -> RunLog {
        RunLog {
            key: FailureKey::scenario(target, scenario),
            activity,
            reason,
            failures: FailureLog::new(*shared.failure_summary_interval.borrow()),
            summary_interval: shared.failure_summary_interval.clone(),
        }
    }

    /// A run that worked: the recovery line, if failures were logged before it.
    pub fn succeeded(&mut self) {
        self.follow_interval();
        if let Some(line) = self.failures.success(&self.key, Instant::now()) {
            let attempt = Attempt {
                id: None,
                reason: "",
                error: "",
            };
            failure_lines::write(self.activity, &self.key, attempt, &line);
        }
    }

    /// A run that failed with `error` (secrets already scrubbed).
    pub fn failed(&mut self, error: &str) {
        self.follow_interval();
        let lines = self
            .failures
            .failure(&self.key, Instant::now(), self.reason, error);
        let attempt = Attempt {
            id: None,
            reason: self.reason,
            error,
        };
        failure_lines::failure(self.activity, &self.key, attempt, &lines);
    }

    fn follow_interval(&mut self) {
        self.failures
            .set_interval(*self.summary_interval.borrow_and_update());
    }
}

/// The `remove_row` of a kind whose scenarios have the generic status rows
/// (`status::kind_status`).
pub fn remove_kind_row(board: &crate::status::StatusBoard, target: &str, scenario: &str) {
    board.remove_kind(target, scenario);
}

/// Retires the scenarios `names(old)` that `names(new)` does not continue, for a kind
/// with a loop of its own: their series of `families` and, by `remove_row`, their
/// status rows.
pub fn retire_own(
    shared: &Shared,
    (old, new): (&TargetPlan, Option<&TargetPlan>),
    families: &'static [Family],
    names: fn(&TargetPlan) -> Vec<&str>,
    remove_row: fn(&crate::status::StatusBoard, &str, &str),
) {
    let kept = new.map(names).unwrap_or_default();
    for scenario in names(old).into_iter().filter(|s| !kept.contains(s)) {
        if let Ok(series) = shared.metrics.kind_series(families) {
            series.remove(Scope::Kind, &[&old.name, &old.model, scenario]);
        }
        remove_row(&shared.status, &old.name, scenario);
    }
}

/// Retires what `new` does not continue of every kind's scenarios of `old`.
pub fn retire_all(shared: &Shared, old: &TargetPlan, new: Option<&TargetPlan>) {
    let new = new.filter(|n| n.model == old.model);
    for kind in KINDS {
        kind.retire(shared, old, new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::families::FAMILIES;
    use crate::exposition::families::documented::{described, documented};

    #[test]
    fn every_kind_name_is_run_by_exactly_one_kind() {
        for name in KindName::ALL {
            let runners = KINDS.iter().filter(|k| k.runs().contains(&name)).count();
            assert_eq!(runners, 1, "{}", name.as_str());
        }
    }

    #[test]
    fn docs_list_the_kinds_families_after_the_shared_ones() {
        let all = FAMILIES
            .iter()
            .chain(KINDS.iter().flat_map(|k| k.families().iter()));
        assert_eq!(documented(), described(all));
    }

    #[test]
    fn kind_families_have_the_kind_scope_and_unique_names() {
        let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
        for f in KINDS.iter().flat_map(|k| k.families().iter()) {
            assert_eq!(f.scope, crate::exposition::Scope::Kind, "{}", f.name);
            assert!(f.name.starts_with("llmprobe_"), "{}", f.name);
            names.push(f.name);
        }
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
    }
}
