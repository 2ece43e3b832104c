//! The model-list kind: every `every` (the first run at once) the endpoint's model list
//! (`GET /v1/models`, which OpenAI-compatible servers, vLLM, llama.cpp's server and
//! Anthropic's API serve) is read, and whether it names the target's model is published
//! in the `llmprobe_model_list_*` series (declared here) and on the status board. It
//! catches a model or adapter that is no longer served before a probe of it fails. A
//! failed read is counted and goes through the failure log.

use tokio::task::JoinHandle;

use super::{FrontDoor, ScenarioKind};
use crate::client::Client;
use crate::clock::unix_now;
use crate::config::TargetPlan;
use crate::config::kinds::KindName;
use crate::config::kinds::model_list::ModelListPlan;
use crate::daemon::failure_lines::Activity;
use crate::daemon::shared::Shared;
use crate::exposition::families::{counter, gauge};
use crate::exposition::{Family, Scope};
use crate::status::kind_status::{KindRun, KindStatus};

/// The model-list kind.
pub struct ModelList;

impl ScenarioKind for ModelList {
    fn runs(&self) -> &'static [KindName] {
        &[KindName::ModelList]
    }

    fn families(&self) -> &'static [Family] {
        &FAMILIES
    }

    fn demo_scenario(&self) -> Option<&'static str> {
        Some("{name: served, model_list: {every: 10s}}")
    }

    fn start(&self, at: &FrontDoor<'_>) -> anyhow::Result<Vec<JoinHandle<()>>> {
        let plan = at.target.plan;
        let mut tasks = Vec::new();
        for m in &plan.kinds.model_lists {
            tasks.push(start(plan, m, at.target.shared, at.stop.clone())?);
        }
        Ok(tasks)
    }

    fn retire(&self, shared: &Shared, old: &TargetPlan, new: Option<&TargetPlan>) {
        fn names(p: &TargetPlan) -> Vec<&str> {
            let plans = p.kinds.model_lists.iter();
            plans.map(|f| f.scenario.as_str()).collect()
        }
        super::retire_own(shared, (old, new), &FAMILIES, names, super::remove_kind_row);
    }
}

const LISTED: Family = gauge(
    "llmprobe_model_listed",
    "1 when the endpoint's model list (GET /v1/models) named the target's model in the last read, else 0.",
)
.scope(Scope::Kind);
const MODELS: Family = gauge(
    "llmprobe_model_list_models",
    "Models the endpoint's model list named in the last read.",
)
.scope(Scope::Kind);
const LAST_RUN: Family = gauge(
    "llmprobe_model_list_last_run_timestamp_seconds",
    "When the last read of the model list completed (Unix time).",
)
.scope(Scope::Kind)
.unit("seconds");
const FAILURES: Family = counter(
    "llmprobe_model_list_failures_total",
    "Reads of the model list that failed (no answer, an error status, or no list in it).",
)
.scope(Scope::Kind);

/// The model-list kind's families, in the order of docs/metrics.md.
static FAMILIES: [Family; 4] = [LISTED, MODELS, LAST_RUN, FAILURES];

/// Its runs, as the failure log words them.
const ACTIVITY: Activity = Activity::Kind {
    noun: "model list read",
    nouns: "model list reads",
    failed: "model list read failed",
};

/// The model ids of a model list: `data[].id`, the shape OpenAI's, vLLM's, llama.cpp's
/// and Anthropic's lists share.
pub fn listed_ids(body: &serde_json::Value) -> anyhow::Result<Vec<String>> {
    let Some(data) = body.get("data").and_then(|d| d.as_array()) else {
        anyhow::bail!("the answer has no data list of models");
    };
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").and_then(|id| id.as_str()).map(str::to_string))
        .collect())
}

/// What one read found, on the board: the verdict and a few of the ids.
fn run_of(model: &str, ids: &[String], at: f64) -> KindRun {
    let ok = ids.iter().any(|id| id == model);
    let mut sample: Vec<&str> = ids.iter().take(3).map(String::as_str).collect();
    if ids.len() > sample.len() {
        sample.push("…");
    }
    KindRun {
        at,
        verdict: if ok { "model listed" } else { "model missing" }.to_string(),
        ok,
        findings: vec![
            ("models".to_string(), ids.len().to_string()),
            ("listed".to_string(), sample.join(", ")),
        ],
    }
}

/// Starts the loop of model-list scenario `m` of `plan`; it ends when `stop` fires.
fn start(
    plan: &TargetPlan,
    m: &ModelListPlan,
    shared: &Shared,
    stop: tokio_util::sync::CancellationToken,
) -> anyhow::Result<JoinHandle<()>> {
    let client = Client::new(plan.client.clone(), None)?;
    let series = shared.metrics.kind_series(&FAMILIES)?;
    let labels = [plan.name.clone(), plan.model.clone(), m.scenario.clone()];
    let status = shared.status.kind(KindStatus::new(
        &plan.name,
        &plan.model,
        &m.scenario,
        KindName::ModelList.as_str(),
        m.every.as_secs_f64(),
    ));
    let mut log = super::RunLog::new(shared, &plan.name, &m.scenario, ACTIVITY, "read_failed");
    let (model, every) = (plan.model.clone(), m.every);
    Ok(tokio::spawn(async move {
        let l = [labels[0].as_str(), labels[1].as_str(), labels[2].as_str()];
        let set = |family: &Family, value: f64| {
            if let Ok(v) = series.gauge_vec(family) {
                v.with_label_values(&l).set(value);
            }
        };
        let failed = |n: u64| {
            if let Ok(v) = series.int_counter_vec(&FAILURES) {
                v.with_label_values(&l).inc_by(n);
            }
        };
        failed(0);
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let result = tokio::select! {
                _ = stop.cancelled() => return,
                r = client.get_json("/v1/models") => r.and_then(|body| listed_ids(&body)),
            };
            let now = unix_now();
            match result {
                Ok(ids) => {
                    let run = run_of(&model, &ids, now);
                    set(&LISTED, if run.ok { 1.0 } else { 0.0 });
                    set(&MODELS, ids.len() as f64);
                    set(&LAST_RUN, now);
                    status
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record_run(run);
                    log.succeeded();
                }
                Err(e) => {
                    // `get_json` scrubbed the target's secrets from its error.
                    let error = format!("{e:#}");
                    log.failed(&error);
                    status
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record_failure(now, error);
                    failed(1);
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_come_from_the_data_list_of_every_api() {
        let openai = json!({"object": "list", "data": [
            {"id": "llama", "object": "model"}, {"id": "ad1", "parent": "llama"}]});
        assert_eq!(listed_ids(&openai).unwrap(), ["llama", "ad1"]);
        let anthropic = json!({"data": [{"type": "model", "id": "claude-x"}], "has_more": false});
        assert_eq!(listed_ids(&anthropic).unwrap(), ["claude-x"]);
        let err = listed_ids(&json!({"models": []})).unwrap_err();
        assert_eq!(err.to_string(), "the answer has no data list of models");
    }

    #[test]
    fn a_run_names_the_model_listed_or_missing() {
        let ids: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let run = run_of("c", &ids, 5.0);
        assert!(run.ok);
        assert_eq!(run.verdict, "model listed");
        assert_eq!(run.findings[0], ("models".into(), "4".into()));
        assert_eq!(run.findings[1], ("listed".into(), "a, b, c, …".into()));
        let run = run_of("z", &ids[..1], 5.0);
        assert!(!run.ok);
        assert_eq!(run.verdict, "model missing");
        assert_eq!(run.findings[1], ("listed".into(), "a".into()));
    }
}
