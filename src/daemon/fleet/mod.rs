//! A target's discovered replicas (`replicas_from`): one task per target follows the
//! refresher's sets, starts and stops each replica's probes (`probes`), scrapes every
//! replica's engine in one round per interval and publishes each replica's gauges with
//! the fleet's sums (`sums`). A failed look keeps the last good set; a replica that
//! leaves loses its series at once and its in-flight probes end on their own.

pub mod probes;
pub mod scrape;
pub mod sums;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::failure_lines::{self, Activity, Attempt};
use super::failure_log::{FailureKey, FailureLog};
use super::pipeline::Budget;
use super::scrape_ticks::{Ticks, scrape_client};
use super::shared::Shared;
use crate::config::{ReplicaPlan, TargetPlan};
use crate::discovery::{Refresh, Refresher, ReplicaSet};
use crate::engine_metrics::gpu::GpuMatch;
use probes::RunningReplica;
use scrape::ReplicaScrapes;

/// The longest one discovery look may take: a look must end before the next is due.
const MAX_LOOK: Duration = Duration::from_secs(10);

/// The replicas whose series exist now, shared with the control task so that a
/// stopped target's replica series can be removed without waiting for this task.
pub type Members = Arc<Mutex<BTreeSet<String>>>;

/// What a target's fleet task works with.
pub struct FleetContext {
    pub plan: TargetPlan,
    pub replicas: ReplicaPlan,
    pub shared: Shared,
    pub budget: Budget,
    pub stop: CancellationToken,
    /// Held while publishing (see `RunningTarget::publish`).
    pub publish: Arc<Mutex<()>>,
    pub members: Members,
}

impl FleetContext {
    fn labels(&self) -> [&str; 2] {
        [&self.plan.name, &self.plan.model]
    }

    /// Removes every series of `replica` (under the publish lock, held by the caller).
    fn remove_series(&self, replica: &str) {
        let scenarios: Vec<&str> = self
            .plan
            .scenarios
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        self.shared
            .metrics
            .fleet()
            .remove_replica(self.labels(), &scenarios, replica);
        self.shared.status.remove_replica(&self.plan.name, replica);
        self.members
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(replica);
    }
}

/// Removes the series of every replica and of the fleet of a stopped target. The
/// caller holds the target's publish lock after cancelling it, so nothing comes back.
pub fn remove_all(shared: &Shared, plan: &TargetPlan, members: &Members) {
    let metrics = &shared.metrics;
    shared.status.remove_replicas(&plan.name);
    shared.status.remove_fleet(&plan.name);
    let scenarios: Vec<&str> = plan.scenarios.iter().map(|s| s.name.as_str()).collect();
    let labels = [plan.name.as_str(), plan.model.as_str()];
    let gone = std::mem::take(&mut *members.lock().unwrap_or_else(|e| e.into_inner()));
    for replica in gone {
        metrics.fleet().remove_replica(labels, &scenarios, &replica);
    }
    metrics.fleet().remove_fleet(labels);
}

/// Builds the fleet task of a target.
pub fn run(ctx: FleetContext) -> anyhow::Result<impl std::future::Future<Output = ()> + Send> {
    let http = scrape_client(&ctx.plan.client.tls)?;
    let source = ctx.replicas.source(&http)?;
    let look = ctx.replicas.interval.min(MAX_LOOK);
    let refresher = Refresher::new(source, ctx.replicas.rules.clone(), look);
    ctx.shared.metrics.fleet().start_discovery(ctx.labels());
    ctx.shared.status.start_fleet(&ctx.plan.name);
    let failures = FailureLog::new(*ctx.shared.failure_summary_interval.borrow());
    Ok(Fleet {
        scrapes: ReplicaScrapes::new(http),
        running: BTreeMap::new(),
        current: None,
        failures,
        ctx,
    }
    .run(refresher))
}

struct Fleet {
    ctx: FleetContext,
    running: BTreeMap<String, RunningReplica>,
    /// The set in force (the last good one).
    current: Option<ReplicaSet>,
    scrapes: ReplicaScrapes,
    /// Discovery failures, logged by state change.
    failures: FailureLog,
}

impl Fleet {
    async fn run(mut self, refresher: Refresher) {
        let (tx, mut looks) = mpsc::channel(4);
        // Dropping the set when this task ends (or is aborted) stops the refresher.
        let mut refresher_task = JoinSet::new();
        refresher_task.spawn(refresher.run(self.ctx.replicas.interval, tx));
        let mut ticks = Ticks::new(self.ctx.shared.engine_scrape_interval.clone());
        loop {
            tokio::select! {
                biased;
                () = self.ctx.stop.cancelled() => break,
                look = looks.recv() => match look {
                    Some(look) => {
                        if self.on_look(look) {
                            // A changed set is scraped at once: new replicas show
                            // their gauges and the fleet its new sums.
                            ticks.reset_immediately();
                        }
                    }
                    None => break,
                },
                () = ticks.tick() => self.scrape_round().await,
            }
        }
        self.wait_for_replicas().await;
    }

    /// Applies one look's outcome; true when the set changed.
    fn on_look(&mut self, look: Refresh) -> bool {
        let publish = self.ctx.publish.clone();
        let _publishing = publish.lock().unwrap_or_else(|e| e.into_inner());
        if self.ctx.stop.is_cancelled() {
            return false;
        }
        let metrics = self.ctx.shared.metrics.clone();
        let fleet = metrics.fleet();
        let key = FailureKey::target(&self.ctx.plan.name);
        match look {
            Refresh::Changed(set) => {
                fleet.discovery_succeeded(self.ctx.labels(), set.refused);
                self.log_recovery(&key);
                if set.refused > 0 && self.current.as_ref().map(|c| c.refused) != Some(set.refused)
                {
                    tracing::warn!(
                        target = %self.ctx.plan.name,
                        found = set.len() + set.refused,
                        max_replicas = self.ctx.replicas.rules.max_replicas,
                        refused = set.refused,
                        "more replicas than max_replicas: the rest are not probed"
                    );
                }
                self.apply(set);
                true
            }
            Refresh::Unchanged => {
                let refused = self.current.as_ref().map_or(0, |c| c.refused);
                fleet.discovery_succeeded(self.ctx.labels(), refused);
                self.log_recovery(&key);
                false
            }
            Refresh::Failed(e) => {
                fleet.discovery_failed(self.ctx.labels());
                let error = format!("{e:#}");
                let lines = self
                    .failures
                    .failure(&key, Instant::now(), e.reason(), &error);
                let attempt = Attempt {
                    id: None,
                    reason: e.reason(),
                    error: &error,
                };
                failure_lines::failure(Activity::Discovery, &key, attempt, &lines);
                false
            }
        }
    }

    fn log_recovery(&mut self, key: &FailureKey) {
        if let Some(line) = self.failures.success(key, Instant::now()) {
            let attempt = Attempt {
                id: None,
                reason: "",
                error: "",
            };
            failure_lines::write(Activity::Discovery, key, attempt, &line);
        }
    }

    /// Makes the running replicas match `set`: those of this prober's shard (under
    /// the publish lock).
    fn apply(&mut self, mut set: ReplicaSet) {
        let (shard, name) = (self.ctx.plan.shard, &self.ctx.plan.name);
        set.replicas
            .retain(|r| shard.owns_replica(name, &r.host_port));
        let wanted: BTreeSet<&str> = set.replicas.iter().map(|r| r.host_port.as_str()).collect();
        let gone: Vec<String> = self
            .running
            .keys()
            .filter(|k| !wanted.contains(k.as_str()))
            .cloned()
            .collect();
        for host_port in gone {
            if let Some(r) = self.running.remove(&host_port) {
                tracing::info!(target = %self.ctx.plan.name, replica = %host_port, "replica left the set");
                self.retire(r);
            }
            self.ctx.remove_series(&host_port);
            self.scrapes.forget(&host_port);
        }
        let count = set.len();
        for (position, replica) in set.replicas.iter().enumerate() {
            if self.running.contains_key(&replica.host_port) {
                continue;
            }
            match probes::start(&self.ctx, &set.scheme, replica, position, count) {
                Ok(r) => {
                    tracing::info!(target = %self.ctx.plan.name, replica = %replica.host_port, url = %r.base_url, "replica joined the set");
                    self.ctx
                        .members
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(replica.host_port.clone());
                    self.running.insert(replica.host_port.clone(), r);
                }
                Err(e) => tracing::error!(
                    target = %self.ctx.plan.name,
                    replica = %replica.host_port,
                    error = %format!("{e:#}"),
                    "cannot probe this replica"
                ),
            }
        }
        // Every running replica's SD labels (they may change while it stays).
        for replica in set
            .replicas
            .iter()
            .filter(|r| self.running.contains_key(&r.host_port))
        {
            self.ctx.shared.metrics.fleet().set_replica_info(
                self.ctx.labels(),
                &replica.host_port,
                &replica.labels,
            );
        }
        self.current = Some(set);
    }

    /// Stops a replica that left: no new probes; in-flight ones may end within their
    /// own total timeout, then they are aborted.
    fn retire(&self, r: RunningReplica) {
        r.stop.cancel();
        let grace = self.ctx.plan.client.timeouts.total + Duration::from_secs(1);
        let mut tasks = r.tasks;
        tokio::spawn(async move {
            let all = async { while tasks.join_next().await.is_some() {} };
            // Dropping the set at the end aborts whatever is left.
            let _ = tokio::time::timeout(grace, all).await;
        });
    }

    /// Scrapes every replica's engine at once and publishes them with the fleet sums.
    async fn scrape_round(&mut self) {
        let targets: Vec<(String, String)> = self
            .running
            .iter()
            .map(|(k, r)| (k.clone(), r.engine_url.clone()))
            .collect();
        let every = *self.ctx.shared.engine_scrape_interval.borrow();
        let timeout = every.min(MAX_LOOK);
        let gpu_urls = self.ctx.plan.gpu.as_ref().map(|g| g.urls.clone());
        let at = Instant::now();
        let both = async {
            tokio::join!(
                self.scrapes.round(&targets, timeout),
                self.scrapes.read_gpus(gpu_urls.as_deref(), timeout)
            )
        };
        let (results, gpus) = tokio::select! {
            biased;
            () = self.ctx.stop.cancelled() => return,
            r = both => r,
        };
        let gpu_matches = self.gpu_matches();
        let publish = self.ctx.publish.clone();
        let _publishing = publish.lock().unwrap_or_else(|e| e.into_inner());
        if self.ctx.stop.is_cancelled() {
            return;
        }
        self.scrapes.publish(&self.ctx, results, self.running.len());
        if let Some(gpus) = gpus {
            self.scrapes
                .publish_energy(&self.ctx, gpus, at, &gpu_matches);
        }
    }

    /// Each running replica's GPUs (by the target's `gpu_metrics`); a replica without
    /// the label its match needs has none.
    fn gpu_matches(&self) -> BTreeMap<String, GpuMatch> {
        let (Some(gpu), Some(set)) = (&self.ctx.plan.gpu, &self.current) else {
            return BTreeMap::new();
        };
        set.replicas
            .iter()
            .filter(|r| self.running.contains_key(&r.host_port))
            .filter_map(|r| Some((r.host_port.clone(), gpu.replica(&r.host_port, &r.labels)?)))
            .collect()
    }

    /// After the target's stop: the replicas' runners end once their in-flight probes
    /// do (the target's grace period aborts this task, and with it them, if not).
    async fn wait_for_replicas(&mut self) {
        for (_, mut r) in std::mem::take(&mut self.running) {
            while r.tasks.join_next().await.is_some() {}
        }
    }
}
