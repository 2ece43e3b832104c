//! One discovered replica's probes: a runner per scenario of the target at
//! `replica_rate`, sent to the replica's own address (the front door's path kept),
//! through the same prober and into the replica's slim series, the token budget and the
//! log. Its tasks stop with the replica's token, a child of the target's.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::FleetContext;
use crate::client::Client;
use crate::config::ScenarioPlan;
use crate::daemon::failure_log::{FailureKey, FailureLog};
use crate::daemon::scenario::{
    ScenarioProber, budget_admission, run_config, scenario_client, scenario_workload,
    stagger_offset,
};
use crate::daemon::sinks::{
    BudgetSink, Consumer, LogSink, MetricsSink, OtlpSink, PageFiling, ReplicaStatusSink, consume,
};
use crate::discovery::Replica;
use crate::export::probe_pages::ProbeKey;
use crate::probe::{Conversations, Prober};
use crate::runner::{self, Dispatch};
use crate::schedule::Schedule;
use crate::sink::RecordSink;

/// A replica being probed.
pub struct RunningReplica {
    /// `http://host:port` plus the front door's path.
    pub base_url: String,
    /// Its engine's metrics URL.
    pub engine_url: String,
    pub stop: CancellationToken,
    /// Its runners and consumers; dropping the set aborts them.
    pub tasks: JoinSet<()>,
}

/// The base URL of `replica`: the front door's, with the replica's `host:port`.
pub fn replica_base_url(
    front_door: &str,
    scheme: &str,
    replica: &Replica,
) -> anyhow::Result<String> {
    let mut url = reqwest::Url::parse(front_door)?;
    let replica_url = reqwest::Url::parse(&format!("{scheme}://{}", replica.host_port))?;
    url.set_host(replica_url.host_str())?;
    url.set_port(replica_url.port_or_known_default())
        .map_err(|()| anyhow::anyhow!("{} cannot take a port", front_door))?;
    Ok(url.to_string().trim_end_matches('/').to_string())
}

/// A seed of its own per replica, so replicas of one target do not get their probes
/// at the same instants (the shards' stable hash: the same on every run).
fn replica_seed(seed: u64, replica: &str) -> u64 {
    seed ^ crate::config::shard::stable_hash(&[replica])
}

/// Starts every scenario's runner on `replica`, the `position`-th of `count`.
pub fn start(
    ctx: &FleetContext,
    scheme: &str,
    replica: &Replica,
    position: usize,
    count: usize,
) -> anyhow::Result<RunningReplica> {
    let plan = &ctx.plan;
    let base_url = replica_base_url(&plan.client.base_url, scheme, replica)?;
    let engine_url = format!(
        "{scheme}://{}{}",
        replica.host_port, ctx.replicas.engine_metrics_path
    );
    let stop = ctx.stop.child_token();
    let mut tasks = JoinSet::new();
    for scenario in &plan.scenarios {
        start_scenario(
            ctx,
            scenario,
            replica,
            &base_url,
            &stop,
            (position, count),
            &mut tasks,
        )?;
    }
    Ok(RunningReplica {
        base_url,
        engine_url,
        stop,
        tasks,
    })
}

fn start_scenario(
    ctx: &FleetContext,
    scenario: &ScenarioPlan,
    replica: &Replica,
    base_url: &str,
    stop: &CancellationToken,
    stagger: (usize, usize),
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<()> {
    let plan = &ctx.plan;
    let mut config = scenario_client(plan, scenario);
    config.base_url = base_url.to_string();
    let client = Arc::new(Client::new(config, None)?.with_checks(scenario.checks.compiled.clone()));
    let series = Arc::new(ctx.shared.metrics.fleet().replica_scenario(
        [&plan.name, &plan.model, &scenario.name],
        &replica.host_port,
        &scenario.buckets,
        ctx.replicas.full_series,
    )?);
    let rate = ctx.replicas.rate_hz;
    let seed = replica_seed(scenario.seed, &replica.host_port);
    let offset = stagger_offset(rate, stagger.0, stagger.1);
    let arrivals = std::iter::once(offset).chain(
        Schedule::poisson(rate)?
            .arrivals(seed)
            .map(move |t| t + offset),
    );
    let workload = scenario_workload(scenario)?.with_run_nonce(ctx.shared.run_nonce);
    let (tx, rx) = mpsc::unbounded_channel();
    let estimate = u64::from(scenario.input_tokens) + u64::from(scenario.output_tokens);
    let admission = ctx
        .budget
        .clone()
        .map(|b| budget_admission(b, plan.name.clone(), estimate));
    let prober = ScenarioProber {
        prober: Arc::new(Prober {
            client,
            workload: Arc::new(workload),
            conversations: scenario.turns.map(|turns| Conversations {
                turns,
                seed,
                timer: runner::Timer::Tokio,
                stop: stop.clone(),
                events: tx.clone(),
            }),
        }),
        series: series.clone(),
        status: None,
    };
    let config = run_config(plan, stop);
    tasks.spawn(async move {
        runner::run(
            arrivals,
            config,
            admission,
            move |d: Dispatch| prober.probe(d),
            tx,
        )
        .await;
    });
    let sinks = replica_sinks(ctx, scenario, replica, base_url, series, estimate);
    tasks.spawn(consume(
        rx,
        Consumer {
            pages: PageFiling {
                board: ctx.shared.status.clone(),
                key: ProbeKey {
                    target: plan.name.clone(),
                    scenario: scenario.name.clone(),
                    replica: Some(replica.host_port.clone()),
                },
                model: plan.model.clone(),
                secrets: plan.secrets.clone(),
            },
            sinks,
            slo: scenario.slo,
            stop: stop.clone(),
        },
    ));
    Ok(())
}

/// Where a replica's scenario records go, in the order they are fed: its slim series,
/// the token budget, the log, OTLP, and last its row of the replica table.
fn replica_sinks(
    ctx: &FleetContext,
    scenario: &ScenarioPlan,
    replica: &Replica,
    base_url: &str,
    series: Arc<crate::export::ScenarioSeries>,
    estimate: u64,
) -> Vec<Box<dyn RecordSink + Send>> {
    let plan = &ctx.plan;
    let summary_interval = ctx.shared.failure_summary_interval.clone();
    let failures = FailureLog::new(*summary_interval.borrow());
    let mut sinks: Vec<Box<dyn RecordSink + Send>> = vec![Box::new(MetricsSink {
        series,
        later_series: None,
        slo: scenario.slo,
    })];
    if let Some(budget) = ctx.budget.clone() {
        sinks.push(Box::new(BudgetSink { budget, estimate }));
    }
    sinks.push(Box::new(LogSink {
        key: FailureKey::scenario(&plan.name, &scenario.name).with_replica(&replica.host_port),
        failures,
        summary_interval,
        target: plan.name.clone(),
        scenario: scenario.name.clone(),
        secrets: plan.secrets.clone(),
    }));
    if let Some(export) = ctx.shared.otlp.clone() {
        sinks.push(Box::new(OtlpSink::new(
            export,
            plan,
            scenario,
            base_url,
            Some(&replica.host_port),
        )));
    }
    sinks.push(Box::new(ReplicaStatusSink {
        status: ctx
            .shared
            .status
            .replica(&plan.name, &plan.model, &replica.host_port),
        secrets: plan.secrets.clone(),
    }));
    sinks
}

/// Shared by the fleet and its replicas' probes.
pub type Budget = Option<Arc<Mutex<crate::daemon::budget::TokenBudget>>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn replica(host_port: &str) -> Replica {
        Replica {
            host_port: host_port.into(),
            labels: BTreeMap::new(),
        }
    }

    #[test]
    fn a_replica_keeps_the_front_doors_path() {
        let url = |front, scheme, r| replica_base_url(front, scheme, &replica(r)).unwrap();
        assert_eq!(
            url("https://llm.example/v1", "https", "10.0.0.5:8000"),
            "https://10.0.0.5:8000/v1"
        );
        assert_eq!(
            url("http://gw:80", "http", "127.0.0.2:9000"),
            "http://127.0.0.2:9000"
        );
        assert_eq!(url("http://gw/", "http", "[::1]:8000"), "http://[::1]:8000");
    }

    #[test]
    fn replicas_get_seeds_of_their_own() {
        assert_ne!(replica_seed(7, "a:1"), replica_seed(7, "b:1"));
        assert_eq!(replica_seed(7, "a:1"), replica_seed(7, "a:1"));
    }
}
