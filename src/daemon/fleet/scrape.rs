//! One scrape round over a target's replicas: every engine read at the same time, then
//! each replica's gauges and the fleet's sums published together, so the sums are the
//! sums of what is shown. A replica whose scrape fails shows `scrape_success 0`, is
//! left out of the sums and is logged by state change.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use tokio::time::Instant;

use super::FleetContext;
use super::sums::{ReplicaLoad, fleet_gauges};
use crate::daemon::energy::{self, EnergyTracker};
use crate::daemon::engine_scrape::gauges;
use crate::daemon::failure_lines::{self, Activity, Attempt};
use crate::daemon::failure_log::{FailureKey, FailureLog};
use crate::energy::{Window, figures};
use crate::engine_metrics::gpu::{self, GpuMatch, GpuReading};
use crate::engine_metrics::{self, EngineSnapshot, Scrape, ScrapeError};
use crate::exposition::ReplicaEngineGauges;
use crate::secret::{Secret, scrub};
use crate::status::ReplicaEngine;
use crate::status::board::FleetState;

/// One replica's outcome in a round.
pub struct Scraped {
    pub replica: String,
    pub started: Instant,
    pub result: Result<Scrape, ScrapeError>,
}

/// What the rounds of one target keep: the HTTP client, each replica's last snapshot
/// (for rates) and the failure log of its scrapes.
pub struct ReplicaScrapes {
    http: reqwest::Client,
    prev: BTreeMap<String, (EngineSnapshot, Instant)>,
    failures: Option<FailureLog>,
    /// The replicas whose engine answered in the last round, with their generation
    /// rate: the engines of its energy round.
    answered: BTreeMap<String, (EngineSnapshot, Option<f64>)>,
    energy: EnergyTracker,
}

impl ReplicaScrapes {
    pub fn new(http: reqwest::Client) -> Self {
        ReplicaScrapes {
            http,
            prev: BTreeMap::new(),
            failures: None,
            answered: BTreeMap::new(),
            energy: EnergyTracker::default(),
        }
    }

    /// Reads every `(replica, url)` at once, each within `timeout`.
    pub async fn round(&self, targets: &[(String, String)], timeout: Duration) -> Vec<Scraped> {
        join_all(targets.iter().map(|(replica, url)| async move {
            let started = Instant::now();
            let result = engine_metrics::scrape(&self.http, url, timeout).await;
            Scraped {
                replica: replica.clone(),
                started,
                result,
            }
        }))
        .await
    }

    /// Reads the fleet's GPU telemetry at `urls`, if the target has any.
    pub async fn read_gpus(
        &self,
        urls: Option<&[String]>,
        timeout: Duration,
    ) -> Option<Result<GpuReading, ScrapeError>> {
        Some(gpu::scrape(&self.http, urls?, timeout).await)
    }

    /// Publishes the energy figures of a round whose GPU read started at `at`: each
    /// replica's (its GPUs by `matches`) and the fleet's, the sum of the same windows.
    pub fn publish_energy(
        &mut self,
        ctx: &FleetContext,
        gpus: Result<GpuReading, ScrapeError>,
        at: Instant,
        matches: &BTreeMap<String, GpuMatch>,
    ) {
        let _batch = ctx.shared.metrics.batch();
        let fleet = ctx.shared.metrics.fleet();
        let labels = ctx.labels();
        match gpus {
            Ok(reading) => {
                let engines: Vec<energy::Engine<'_>> = self
                    .answered
                    .iter()
                    .filter_map(|(replica, (snapshot, tps))| {
                        Some(energy::Engine {
                            key: replica,
                            gpus: matches.get(replica)?.clone(),
                            snapshot,
                            generation_tokens_per_second: *tps,
                        })
                    })
                    .collect();
                let keys: Vec<String> = engines.iter().map(|e| e.key.to_string()).collect();
                let windows = self.energy.round(&ctx.plan, reading, at, &engines);
                let prices = energy::prices(&ctx.plan);
                for replica in matches.keys().filter(|r| !keys.contains(r)) {
                    fleet.set_replica_energy(labels, replica, None);
                }
                for (replica, w) in keys.iter().zip(&windows) {
                    fleet.set_replica_energy(labels, replica, Some(&figures(w, &prices)));
                }
                let sum = Window::sum(&windows);
                fleet.set_fleet_energy(labels, true, Some(&figures(&sum, &prices)));
            }
            Err(e) => {
                self.energy.failed(&ctx.plan, &e);
                for replica in matches.keys() {
                    fleet.set_replica_energy(labels, replica, None);
                }
                fleet.set_fleet_energy(labels, false, None);
            }
        }
    }

    /// A replica that left: its rates start over if it comes back.
    pub fn forget(&mut self, replica: &str) {
        self.prev.remove(replica);
    }

    /// Publishes a round: each replica's gauges, then the fleet of `replicas`.
    pub fn publish(&mut self, ctx: &FleetContext, round: Vec<Scraped>, replicas: usize) {
        let _batch = ctx.shared.metrics.batch();
        let fleet = ctx.shared.metrics.fleet();
        let labels = ctx.labels();
        let mut loads: Vec<ReplicaLoad> = Vec::with_capacity(round.len());
        self.answered.clear();
        for s in round {
            match s.result {
                Ok(scrape) => {
                    let snapshot = scrape.snapshot.clone();
                    let load = self.load(ctx, &s.replica, scrape.snapshot, s.started);
                    self.answered.insert(
                        s.replica.clone(),
                        (snapshot, load.generation_tokens_per_second),
                    );
                    fleet.set_replica_engine(labels, &s.replica, true, &load);
                    show(ctx, &s.replica, true, &load);
                    loads.push(load);
                    self.log_success(ctx, &s.replica);
                }
                Err(e) => {
                    fleet.set_replica_engine(labels, &s.replica, false, &ReplicaLoad::default());
                    show(ctx, &s.replica, false, &ReplicaLoad::default());
                    self.log_failure(ctx, &s.replica, &e);
                }
            }
        }
        let sums = fleet_gauges(&ctx.plan, replicas, &loads);
        fleet.set_fleet(labels, &sums);
        // The page shows the same round's sums as the series.
        ctx.shared.status.set_fleet(
            &ctx.plan.name,
            FleetState {
                replicas: sums.replicas,
                scraped: sums.scraped,
                running: sums.running,
                waiting: sums.waiting,
                kv_cache_usage_ratio: sums.kv_cache_usage_ratio,
                headroom: sums.headroom,
            },
        );
    }

    /// A replica's gauges from its snapshot (rates against its previous one).
    fn load(
        &mut self,
        ctx: &FleetContext,
        replica: &str,
        snap: EngineSnapshot,
        started: Instant,
    ) -> ReplicaLoad {
        let prev = self
            .prev
            .get(replica)
            .map(|(s, at)| (s, started.saturating_duration_since(*at)));
        let (g, headroom) = gauges(&ctx.plan, prev, &snap, None);
        let model_max = ctx
            .plan
            .capacity
            .as_ref()
            .map(|c| c.gauges.max_concurrent_sequences);
        let load = ReplicaEngineGauges {
            running: g.running,
            waiting: g.waiting,
            kv_cache_usage_ratio: g.kv_cache_usage_ratio,
            max_concurrent_sequences: g.max_concurrent_sequences.or(model_max),
            generation_tokens_per_second: g.generation_tokens_per_second,
            headroom,
        };
        self.prev.insert(replica.to_string(), (snap, started));
        load
    }

    fn failures(&mut self, ctx: &FleetContext) -> &mut FailureLog {
        let every = *ctx.shared.failure_summary_interval.borrow();
        let log = self.failures.get_or_insert_with(|| FailureLog::new(every));
        log.set_interval(every);
        log
    }

    fn log_success(&mut self, ctx: &FleetContext, replica: &str) {
        let key = FailureKey::target(&ctx.plan.name).with_replica(replica);
        if let Some(line) = self.failures(ctx).success(&key, Instant::now()) {
            let attempt = Attempt {
                id: None,
                reason: "",
                error: "",
            };
            failure_lines::write(Activity::EngineScrape, &key, attempt, &line);
        }
    }

    fn log_failure(&mut self, ctx: &FleetContext, replica: &str, e: &ScrapeError) {
        let key = FailureKey::target(&ctx.plan.name).with_replica(replica);
        let error = scrub(
            &format!("{e:#}"),
            ctx.plan.secrets.iter().map(Secret::expose),
        );
        let reason = e.reason.as_str();
        let lines = self
            .failures(ctx)
            .failure(&key, Instant::now(), reason, &error);
        let attempt = Attempt {
            id: None,
            reason,
            error: &error,
        };
        failure_lines::failure(Activity::EngineScrape, &key, attempt, &lines);
    }
}

/// A replica's engine onto its row of the status page.
fn show(ctx: &FleetContext, replica: &str, scrape_ok: bool, g: &ReplicaLoad) {
    ctx.shared
        .status
        .replica(&ctx.plan.name, &ctx.plan.model, replica)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .set_engine(ReplicaEngine {
            scrape_ok,
            running: g.running,
            waiting: g.waiting,
            kv_cache_usage_ratio: g.kv_cache_usage_ratio,
            headroom: g.headroom,
        });
}
