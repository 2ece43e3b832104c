//! The series of discovered replicas and of the fleet they make: a slim probe set per
//! replica × scenario, engine gauges per replica, and per target the fleet sums and the
//! state of discovery. What sets them is `daemon::fleet`; the names are in
//! [`super::families`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use prometheus::core::{Collector, Desc};
use prometheus::proto::{Gauge, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{GaugeVec, IntCounterVec};

use super::buckets::Buckets;
use super::energy::EnergyVecs;
use super::families::{self as f, Scope};
use super::histograms::LatencyHistograms;
use super::registry::{Registered, children, set_or_remove};
use super::series::ScenarioSeries;
use crate::clock::unix_now;
use crate::energy::Figures;
use crate::latency::Latency;

/// The latencies a replica exports by default: enough to tell a slow replica and a
/// failing one, at a fraction of the front door's series.
pub const SLIM_LATENCIES: [Latency; 2] = [Latency::Ttft, Latency::E2e];

/// One replica's engine gauges from one scrape (`None` removes a series).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ReplicaEngineGauges {
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_cache_usage_ratio: Option<f64>,
    pub max_concurrent_sequences: Option<f64>,
    pub generation_tokens_per_second: Option<f64>,
    pub headroom: Option<f64>,
}

/// A target's fleet figures from one scrape round (`None` removes a series).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FleetGauges {
    pub replicas: usize,
    pub scraped: usize,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub max_concurrent_sequences: Option<f64>,
    /// The scraped replicas' mean KV cache use: for the status page, no series of its
    /// own (each replica's is one).
    pub kv_cache_usage_ratio: Option<f64>,
    pub queueing: usize,
    pub headroom: Option<f64>,
    pub generation_tokens_per_second: Option<f64>,
    pub cost_per_million_output_tokens: Option<f64>,
}

/// A replica's engine gauge families, by what each says.
struct ReplicaEngineVecs {
    scrape_success: GaugeVec,
    running: GaugeVec,
    waiting: GaugeVec,
    kv_cache_usage_ratio: GaugeVec,
    max_concurrent_sequences: GaugeVec,
    generation_tokens_per_second: GaugeVec,
    headroom: GaugeVec,
}

/// A target's fleet sum families, by what each says.
struct FleetVecs {
    replicas: GaugeVec,
    scraped: GaugeVec,
    running: GaugeVec,
    waiting: GaugeVec,
    max_concurrent_sequences: GaugeVec,
    queueing: GaugeVec,
    headroom: GaugeVec,
    generation_tokens_per_second: GaugeVec,
    cost_per_million_output_tokens: GaugeVec,
}

/// The registered replica and fleet families.
pub struct FleetSeries {
    requests: IntCounterVec,
    failures: IntCounterVec,
    goodput: IntCounterVec,
    last_success: GaugeVec,
    histograms: Arc<LatencyHistograms>,
    engine: ReplicaEngineVecs,
    fleet: FleetVecs,
    replica_energy: EnergyVecs,
    fleet_energy: EnergyVecs,
    fleet_gpu_success: GaugeVec,
    discovery_errors: IntCounterVec,
    discovery_last_success: GaugeVec,
    discovery_refused: GaugeVec,
    info: Arc<ReplicaInfo>,
    registered: Registered,
}

impl FleetSeries {
    pub(super) fn new(
        r: &Registered,
        histograms: Arc<LatencyHistograms>,
        info: Arc<ReplicaInfo>,
    ) -> prometheus::Result<Self> {
        let g = |fam| r.gauge_vec(fam);
        Ok(FleetSeries {
            requests: r.int_counter_vec(&f::REPLICA_REQUESTS)?,
            failures: r.int_counter_vec(&f::REPLICA_FAILURES)?,
            goodput: r.int_counter_vec(&f::REPLICA_GOODPUT)?,
            last_success: g(&f::REPLICA_LAST_SUCCESS)?,
            histograms,
            engine: ReplicaEngineVecs {
                scrape_success: g(&f::REPLICA_ENG_SUCCESS)?,
                running: g(&f::REPLICA_ENG_RUNNING)?,
                waiting: g(&f::REPLICA_ENG_WAITING)?,
                kv_cache_usage_ratio: g(&f::REPLICA_ENG_KV_USAGE)?,
                max_concurrent_sequences: g(&f::REPLICA_ENG_MAX_SEQS)?,
                generation_tokens_per_second: g(&f::REPLICA_ENG_GEN_TPS)?,
                headroom: g(&f::REPLICA_HEADROOM)?,
            },
            fleet: FleetVecs {
                replicas: g(&f::FLEET_REPLICAS)?,
                scraped: g(&f::FLEET_SCRAPED)?,
                running: g(&f::FLEET_RUNNING)?,
                waiting: g(&f::FLEET_WAITING)?,
                max_concurrent_sequences: g(&f::FLEET_MAX_SEQS)?,
                queueing: g(&f::FLEET_QUEUEING)?,
                headroom: g(&f::FLEET_HEADROOM)?,
                generation_tokens_per_second: g(&f::FLEET_GEN_TPS)?,
                cost_per_million_output_tokens: g(&f::FLEET_COST)?,
            },
            replica_energy: EnergyVecs::new(r, Scope::ReplicaEngine)?,
            fleet_energy: EnergyVecs::new(r, Scope::Fleet)?,
            fleet_gpu_success: g(&f::FLEET_GPU_SUCCESS)?,
            discovery_errors: r.int_counter_vec(&f::DISCOVERY_ERRORS)?,
            discovery_last_success: g(&f::DISCOVERY_LAST_SUCCESS)?,
            discovery_refused: g(&f::DISCOVERY_REFUSED)?,
            info,
            registered: r.clone(),
        })
    }

    /// Resolves the slim series of one replica × scenario (at zero, so `rate()` sees the
    /// first probe). `full` adds every latency histogram a replica has.
    pub fn replica_scenario(
        &self,
        base: [&str; 3],
        replica: &str,
        buckets: &Buckets,
        full: bool,
    ) -> anyhow::Result<ScenarioSeries> {
        let l = [base[0], base[1], base[2], replica];
        let latencies: Vec<(Latency, &'static f::Family)> = Latency::ALL
            .into_iter()
            .filter(|l| full || SLIM_LATENCIES.contains(l))
            .filter_map(|l| f::replica_histogram_of(l).map(|fam| (l, fam)))
            .collect();
        let kept = latencies.iter().map(|(_, fam)| fam.name).collect();
        let h = self
            .histograms
            .resolve(&l, &buckets.clone().normalized(), kept)?;
        Ok(ScenarioSeries {
            requests: self.requests.with_label_values(&l),
            failures: children(&self.failures, &f::REPLICA_FAILURES, &l),
            goodput: self.goodput.with_label_values(&l),
            spend: None,
            inflight: None,
            last_success: self.last_success.with_label_values(&l),
            skipped: Vec::new(),
            slo_met: Vec::new(),
            latencies: latencies
                .into_iter()
                .map(|(l, fam)| Ok((l, h.get(fam)?)))
                .collect::<prometheus::Result<_>>()?,
            checks: Vec::new(),
            golden: None,
        })
    }

    /// Publishes a replica's `llmprobe_replica_info` with the SD labels it kept.
    pub fn set_replica_info(
        &self,
        target: [&str; 2],
        replica: &str,
        labels: &BTreeMap<String, String>,
    ) {
        self.info.set(target, replica, labels.clone());
    }

    /// Publishes one scrape of a replica's engine; a failed one keeps only
    /// `scrape_success 0`, so stale numbers never look live.
    pub fn set_replica_engine(
        &self,
        target: [&str; 2],
        replica: &str,
        success: bool,
        g: &ReplicaEngineGauges,
    ) {
        let l = [target[0], target[1], replica];
        let e = &self.engine;
        e.scrape_success
            .with_label_values(&l)
            .set(if success { 1.0 } else { 0.0 });
        set_or_remove(&e.running, &l, g.running);
        set_or_remove(&e.waiting, &l, g.waiting);
        set_or_remove(&e.kv_cache_usage_ratio, &l, g.kv_cache_usage_ratio);
        set_or_remove(&e.max_concurrent_sequences, &l, g.max_concurrent_sequences);
        set_or_remove(
            &e.generation_tokens_per_second,
            &l,
            g.generation_tokens_per_second,
        );
        set_or_remove(&e.headroom, &l, g.headroom);
    }

    /// Publishes a target's fleet figures.
    pub fn set_fleet(&self, target: [&str; 2], g: &FleetGauges) {
        let v = &self.fleet;
        v.replicas.with_label_values(&target).set(g.replicas as f64);
        v.scraped.with_label_values(&target).set(g.scraped as f64);
        v.queueing.with_label_values(&target).set(g.queueing as f64);
        set_or_remove(&v.running, &target, g.running);
        set_or_remove(&v.waiting, &target, g.waiting);
        set_or_remove(
            &v.max_concurrent_sequences,
            &target,
            g.max_concurrent_sequences,
        );
        set_or_remove(&v.headroom, &target, g.headroom);
        set_or_remove(
            &v.generation_tokens_per_second,
            &target,
            g.generation_tokens_per_second,
        );
        set_or_remove(
            &v.cost_per_million_output_tokens,
            &target,
            g.cost_per_million_output_tokens,
        );
    }

    /// Publishes a replica's energy figures of one round (`None` removes them).
    pub fn set_replica_energy(&self, target: [&str; 2], replica: &str, figures: Option<&Figures>) {
        self.replica_energy
            .set(&[target[0], target[1], replica], figures);
    }

    /// Publishes the fleet's energy figures of one round, or on a failed read of the
    /// GPU telemetry only `gpu_scrape_success 0`.
    pub fn set_fleet_energy(&self, target: [&str; 2], success: bool, figures: Option<&Figures>) {
        self.fleet_gpu_success
            .with_label_values(&target)
            .set(if success { 1.0 } else { 0.0 });
        self.fleet_energy.set(&target, figures);
    }

    /// Creates the discovery series of a target at zero (before its first look).
    pub fn start_discovery(&self, target: [&str; 2]) {
        self.discovery_errors.with_label_values(&target);
    }

    /// A look succeeded now; `refused` replicas were found beyond `max_replicas`.
    pub fn discovery_succeeded(&self, target: [&str; 2], refused: usize) {
        self.discovery_last_success
            .with_label_values(&target)
            .set(unix_now());
        self.discovery_refused
            .with_label_values(&target)
            .set(refused as f64);
    }

    /// A look failed (the last good set stays in force).
    pub fn discovery_failed(&self, target: [&str; 2]) {
        self.discovery_errors.with_label_values(&target).inc();
    }

    /// Removes every series of one replica (it left the set, or its target stopped).
    pub fn remove_replica(&self, target: [&str; 2], scenarios: &[&str], replica: &str) {
        for s in scenarios {
            let l = [target[0], target[1], s, replica];
            self.registered.remove(Scope::Replica, &l);
            self.histograms.remove(&l);
        }
        self.registered
            .remove(Scope::ReplicaEngine, &[target[0], target[1], replica]);
        self.info.remove(target, replica);
    }

    /// Removes the fleet and discovery series of a target.
    pub fn remove_fleet(&self, target: [&str; 2]) {
        self.registered.remove(Scope::Fleet, &target);
    }
}

/// `llmprobe_replica_info`: one series per replica whose label names depend on the
/// target's allow-list, which a fixed-label vector cannot hold.
pub struct ReplicaInfo {
    desc: Desc,
    series: Mutex<BTreeMap<[String; 3], BTreeMap<String, String>>>,
}

impl ReplicaInfo {
    pub fn new() -> prometheus::Result<Self> {
        let f = &f::REPLICA_INFO;
        let labels = f.labels().iter().map(|l| (*l).to_string()).collect();
        Ok(ReplicaInfo {
            desc: Desc::new(f.name.into(), f.help.into(), labels, Default::default())?,
            series: Mutex::default(),
        })
    }

    fn key(target: [&str; 2], replica: &str) -> [String; 3] {
        [target[0].into(), target[1].into(), replica.into()]
    }

    fn set(&self, target: [&str; 2], replica: &str, labels: BTreeMap<String, String>) {
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series.insert(Self::key(target, replica), labels);
    }

    fn remove(&self, target: [&str; 2], replica: &str) {
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series.remove(&Self::key(target, replica));
    }
}

impl Collector for ReplicaInfo {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        if series.is_empty() {
            return Vec::new();
        }
        let mut family = MetricFamily::default();
        family.set_name(f::REPLICA_INFO.name.into());
        family.set_help(f::REPLICA_INFO.help.into());
        family.set_field_type(MetricType::GAUGE);
        for (own, sd) in series.iter() {
            let own_labels = f::REPLICA_LABELS
                .iter()
                .zip(own)
                .map(|(k, v)| (*k, v.as_str()));
            let sd_labels = sd.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            let mut pairs: Vec<(&str, &str)> = own_labels.chain(sd_labels).collect();
            // The text format wants label names in order, like the vectors write them.
            pairs.sort_unstable();
            let mut m = Metric::default();
            m.set_label(
                pairs
                    .into_iter()
                    .map(|(k, v)| {
                        let mut p = LabelPair::default();
                        p.set_name(k.into());
                        p.set_value(v.into());
                        p
                    })
                    .collect(),
            );
            let mut g = Gauge::default();
            g.set_value(1.0);
            m.set_gauge(g);
            family.mut_metric().push(m);
        }
        vec![family]
    }
}
