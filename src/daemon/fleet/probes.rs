//! One discovered replica's probes: a runner per scenario of the target at
//! `replica_rate`, sent to the replica's own address (the front door's path kept),
//! through the one probe pipeline (`super::super::pipeline`) into the replica's slim
//! series, the token budget, the log and its row of the replica table. Its tasks stop with the replica's token, a child of the target's.

use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::FleetContext;
use crate::config::ScenarioPlan;
use crate::daemon::pipeline::{Pipeline, TargetContext};
use crate::discovery::Replica;

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
    let series = Arc::new(ctx.shared.metrics.fleet().replica_scenario(
        [&plan.name, &plan.model, &scenario.name],
        &replica.host_port,
        &scenario.buckets,
        ctx.replicas.full_series,
    )?);
    let started = Pipeline {
        target: TargetContext {
            plan,
            shared: &ctx.shared,
            budget: &ctx.budget,
        },
        scenario,
        stop,
        base_url,
        replica: Some(&replica.host_port),
        rate_hz: ctx.replicas.rate_hz,
        seed: replica_seed(scenario.seed, &replica.host_port),
        stagger,
        series,
        later_series: None,
        status: None,
        ttft_window: None,
    }
    .build()?;
    tasks.spawn(started.runner);
    tasks.spawn(started.consumer);
    Ok(())
}

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
