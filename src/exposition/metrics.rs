//! The Prometheus registry of `llmprobe daemon`. Every metric name, help text, label
//! set and bucket rule is data in [`super::families`] (docs/metrics.md is the contract
//! with the dashboards and alert rules); this file binds those families to named
//! fields and says what sets each one.
//!
//! The hot path (one probe record) touches only pre-resolved children
//! ([`ScenarioSeries`]), so observing a record is a handful of atomic adds with no label
//! hashing. Gauges that change on a slow interval (capacity, engine scrape) are resolved
//! when they are set.

use std::collections::HashMap;
use std::sync::Arc;

use prometheus::core::Collector;
use prometheus::proto::LabelPair;
use prometheus::{
    CounterVec, Encoder, Gauge, GaugeVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Registry, TextEncoder,
};

use super::buckets::Buckets;
use super::cgroup::CgroupCollector;
use super::energy::EnergyVecs;
use super::families::{self as f, Scope};
use super::fleet::FleetSeries;
use super::histograms::{LatencyHistograms, SharedCollector};
use super::openmetrics;
use super::registry::{Registered, children, set_or_remove};
use super::router::{RouterGauges, RouterVecs};
use super::self_check::SelfCheckSeries;
use super::series::{CheckSeries, GoldenSeries, ScenarioSeries, SpendSeries, TokenPrice};
use crate::clock::unix_now;
use crate::energy::Figures;
use crate::latency::{Latency, Slo};
use crate::record::CheckKind;
pub use crate::runner::SkipReason;

/// Capacity-model gauges of one target (from `capacity::evaluate`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CapacityGauges {
    pub max_concurrent_sequences: f64,
    pub kv_cache_tokens: f64,
    pub kv_bytes_per_token: f64,
    pub weight_bytes: f64,
    pub decode_tokens_per_second: f64,
    pub cost_per_million_output_tokens: Option<f64>,
}

/// Gauges from one engine scrape. `None` removes the series (the engine did not say).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EngineGauges {
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_cache_usage_ratio: Option<f64>,
    pub kv_cache_tokens: Option<f64>,
    pub max_concurrent_sequences: Option<f64>,
    pub generation_tokens_per_second: Option<f64>,
    pub cost_per_million_output_tokens: Option<f64>,
    pub ttft_mean_seconds: Option<f64>,
    pub ttft_client_server_gap_seconds: Option<f64>,
    /// Increase of the engine's TTFT histogram sum and count since the previous scrape
    /// (0 on the first scrape or after an engine restart; `None` when the engine has no
    /// TTFT histogram). Added to counters, so the client/server gap can be computed in
    /// PromQL over any window.
    pub ttft_sum_delta: Option<f64>,
    pub ttft_count_delta: Option<f64>,
    /// The engine's own prefix-cache hit ratio over the interval.
    pub prefix_cache_hit_ratio: Option<f64>,
    /// LoRA adapters in the engine's running batch and queue, and the most it holds.
    pub lora_adapters_running: Option<f64>,
    pub lora_adapters_waiting: Option<f64>,
    pub lora_adapters_max: Option<f64>,
}

/// The per-scenario families (labels target, model, scenario[, reason | sli]).
struct ProbeVecs {
    requests: IntCounterVec,
    failures: IntCounterVec,
    goodput: IntCounterVec,
    slo_met: IntCounterVec,
    rate: GaugeVec,
    prompt_tokens: IntCounterVec,
    output_tokens: IntCounterVec,
    cost: CounterVec,
    inflight: IntGaugeVec,
    last_success: GaugeVec,
    /// `llmprobe_slo_*_seconds`, one gauge family per latency an objective may bound.
    objectives: Vec<(Latency, GaugeVec)>,
    reasoning_tokens: IntCounterVec,
    skipped: IntCounterVec,
    check_runs: IntCounterVec,
    check_failures: IntCounterVec,
    check_last_passed: IntGaugeVec,
    golden_answers: IntCounterVec,
    golden_window: IntGaugeVec,
    golden_accuracy: GaugeVec,
    golden_lower: GaugeVec,
    golden_upper: GaugeVec,
    golden_baseline: GaugeVec,
}

impl ProbeVecs {
    fn new(r: &Registered) -> prometheus::Result<Self> {
        Ok(ProbeVecs {
            requests: r.int_counter_vec(&f::REQUESTS)?,
            failures: r.int_counter_vec(&f::FAILURES)?,
            goodput: r.int_counter_vec(&f::GOODPUT)?,
            slo_met: r.int_counter_vec(&f::SLO_MET)?,
            rate: r.gauge_vec(&f::PROBE_RATE)?,
            prompt_tokens: r.int_counter_vec(&f::PROMPT_TOKENS)?,
            output_tokens: r.int_counter_vec(&f::OUTPUT_TOKENS)?,
            cost: r.counter_vec(&f::COST)?,
            inflight: r.int_gauge_vec(&f::INFLIGHT)?,
            last_success: r.gauge_vec(&f::LAST_SUCCESS)?,
            objectives: Latency::objectives()
                .filter_map(|l| f::objective_gauge(l).map(|g| (l, g)))
                .map(|(l, g)| Ok((l, r.gauge_vec(&g)?)))
                .collect::<prometheus::Result<_>>()?,
            reasoning_tokens: r.int_counter_vec(&f::REASONING_TOKENS)?,
            skipped: r.int_counter_vec(&f::SKIPPED)?,
            check_runs: r.int_counter_vec(&f::CHECK_RUNS)?,
            check_failures: r.int_counter_vec(&f::CHECK_FAILURES)?,
            check_last_passed: r.int_gauge_vec(&f::CHECK_LAST_PASSED)?,
            golden_answers: r.int_counter_vec(&f::GOLDEN_ANSWERS)?,
            golden_window: r.int_gauge_vec(&f::GOLDEN_WINDOW)?,
            golden_accuracy: r.gauge_vec(&f::GOLDEN_ACCURACY)?,
            golden_lower: r.gauge_vec(&f::GOLDEN_LOWER)?,
            golden_upper: r.gauge_vec(&f::GOLDEN_UPPER)?,
            golden_baseline: r.gauge_vec(&f::GOLDEN_BASELINE)?,
        })
    }
}

/// The capacity-model gauges of a target.
struct CapacityVecs {
    max_concurrent_sequences: GaugeVec,
    kv_cache_tokens: GaugeVec,
    kv_bytes_per_token: GaugeVec,
    weight_bytes: GaugeVec,
    decode_tokens_per_second: GaugeVec,
    cost_per_million_output_tokens: GaugeVec,
}

impl CapacityVecs {
    fn new(r: &Registered) -> prometheus::Result<Self> {
        Ok(CapacityVecs {
            max_concurrent_sequences: r.gauge_vec(&f::CAP_MAX_SEQS)?,
            kv_cache_tokens: r.gauge_vec(&f::CAP_KV_TOKENS)?,
            kv_bytes_per_token: r.gauge_vec(&f::CAP_KV_BYTES)?,
            weight_bytes: r.gauge_vec(&f::CAP_WEIGHT_BYTES)?,
            decode_tokens_per_second: r.gauge_vec(&f::CAP_DECODE_TPS)?,
            cost_per_million_output_tokens: r.gauge_vec(&f::CAP_COST)?,
        })
    }
}

/// The engine-scrape series of a target, and the headroom derived from them.
struct EngineVecs {
    headroom: GaugeVec,
    success: GaugeVec,
    duration: GaugeVec,
    running: GaugeVec,
    waiting: GaugeVec,
    kv_cache_usage_ratio: GaugeVec,
    kv_cache_tokens: GaugeVec,
    max_concurrent_sequences: GaugeVec,
    generation_tokens_per_second: GaugeVec,
    cost_per_million_output_tokens: GaugeVec,
    ttft_mean_seconds: GaugeVec,
    ttft_client_server_gap_seconds: GaugeVec,
    ttft_sum: CounterVec,
    ttft_count: CounterVec,
    prefix_cache_hit_ratio: GaugeVec,
    lora_running: GaugeVec,
    lora_waiting: GaugeVec,
    lora_max: GaugeVec,
    gpu_success: GaugeVec,
    energy: EnergyVecs,
}

impl EngineVecs {
    fn new(r: &Registered) -> prometheus::Result<Self> {
        Ok(EngineVecs {
            headroom: r.gauge_vec(&f::HEADROOM)?,
            success: r.gauge_vec(&f::ENG_SUCCESS)?,
            duration: r.gauge_vec(&f::ENG_DURATION)?,
            running: r.gauge_vec(&f::ENG_RUNNING)?,
            waiting: r.gauge_vec(&f::ENG_WAITING)?,
            kv_cache_usage_ratio: r.gauge_vec(&f::ENG_KV_USAGE)?,
            kv_cache_tokens: r.gauge_vec(&f::ENG_KV_TOKENS)?,
            max_concurrent_sequences: r.gauge_vec(&f::ENG_MAX_SEQS)?,
            generation_tokens_per_second: r.gauge_vec(&f::ENG_GEN_TPS)?,
            cost_per_million_output_tokens: r.gauge_vec(&f::ENG_COST)?,
            ttft_mean_seconds: r.gauge_vec(&f::ENG_TTFT_MEAN)?,
            ttft_client_server_gap_seconds: r.gauge_vec(&f::ENG_TTFT_GAP)?,
            ttft_sum: r.counter_vec(&f::ENG_TTFT_SUM)?,
            ttft_count: r.counter_vec(&f::ENG_TTFT_COUNT)?,
            prefix_cache_hit_ratio: r.gauge_vec(&f::ENG_PREFIX_HIT)?,
            lora_running: r.gauge_vec(&f::ENG_LORA_RUNNING)?,
            lora_waiting: r.gauge_vec(&f::ENG_LORA_WAITING)?,
            lora_max: r.gauge_vec(&f::ENG_LORA_MAX)?,
            gpu_success: r.gauge_vec(&f::ENG_GPU_SUCCESS)?,
            energy: EnergyVecs::new(r, Scope::Engine)?,
        })
    }
}

/// The daemon's own gauges.
struct DaemonGauges {
    reload_ok: IntGauge,
    reload_ts: Gauge,
    targets: IntGauge,
    shard: IntGaugeVec,
}

impl DaemonGauges {
    fn new(r: &Registered) -> prometheus::Result<Self> {
        let build_info = r.int_gauge_vec(&f::BUILD_INFO)?;
        for version in f::version() {
            build_info.with_label_values(&[version]).set(1);
        }
        Ok(DaemonGauges {
            reload_ok: r.int_gauge(&f::RELOAD_OK)?,
            reload_ts: r.gauge(&f::RELOAD_TS)?,
            targets: r.int_gauge(&f::TARGETS)?,
            shard: r.int_gauge_vec(&f::SHARD_INFO)?,
        })
    }
}

/// Every metric family of the daemon, registered in one registry.
pub struct Metrics {
    registry: Registry,
    registered: Registered,
    probe: ProbeVecs,
    capacity: CapacityVecs,
    engine: EngineVecs,
    router: RouterVecs,
    daemon: DaemonGauges,
    histograms: Arc<LatencyHistograms>,
    /// The replicas' latency histograms (the fleet's), for their exemplars.
    replica_histograms: Arc<LatencyHistograms>,
    fleet: FleetSeries,
    self_check: SelfCheckSeries,
    /// The scenario kinds' own families, registered by the first kind that asks, by
    /// the name of their first family.
    kinds: std::sync::Mutex<Vec<(&'static str, Registered)>>,
    /// Held (shared) while a scrape's gauges are published together and (exclusive)
    /// while `/metrics` is rendered: a scrape never shows half of one publication.
    batch: std::sync::RwLock<()>,
}

impl Metrics {
    /// Builds and registers every family of [`f::FAMILIES`]. Fails only on a
    /// programming error (a bad name or a duplicate). Histogram bucket layouts are per
    /// series, see [`Metrics::scenario`].
    pub fn new() -> anyhow::Result<Arc<Self>> {
        Self::at(None)
    }

    /// [`Metrics::new`] with a `location` label on every series it exports.
    pub fn at(location: Option<&str>) -> anyhow::Result<Arc<Self>> {
        let labels = location
            .map(|l| std::collections::HashMap::from([("location".to_string(), l.to_string())]));
        let registry = Registry::new_custom(None, labels)?;
        let registered = Registered::new(&registry)?;
        let histograms = Arc::new(LatencyHistograms::new(Scope::Scenario)?);
        registry.register(Box::new(SharedCollector(histograms.clone())))?;
        let replica_histograms = Arc::new(LatencyHistograms::new(Scope::Replica)?);
        registry.register(Box::new(SharedCollector(replica_histograms.clone())))?;
        let replica_info = Arc::new(super::fleet::ReplicaInfo::new()?);
        registry.register(Box::new(SharedCollector(replica_info.clone())))?;
        register_process_collector(&registry);
        registry.register(Box::new(CgroupCollector::for_self()?))?;
        Ok(Arc::new(Metrics {
            self_check: SelfCheckSeries::new(&registered)?,
            kinds: std::sync::Mutex::default(),
            probe: ProbeVecs::new(&registered)?,
            capacity: CapacityVecs::new(&registered)?,
            engine: EngineVecs::new(&registered)?,
            router: RouterVecs::new(&registered)?,
            fleet: FleetSeries::new(&registered, replica_histograms.clone(), replica_info)?,
            replica_histograms,
            daemon: DaemonGauges::new(&registered)?,
            registry,
            registered,
            histograms,
            batch: std::sync::RwLock::default(),
        }))
    }

    /// Resolves every child series of one target × scenario (creating them at zero, so
    /// `rate()` and `increase()` see the first probe), and publishes its SLO gauges.
    /// `buckets` is this series' histogram layout: histograms with the same layout
    /// continue, a changed layout restarts only this series' histograms.
    pub fn scenario(
        &self,
        target: &str,
        model: &str,
        scenario: &str,
        slo: &Slo,
        price: Option<TokenPrice>,
        buckets: &Buckets,
    ) -> anyhow::Result<ScenarioSeries> {
        let l = [target, model, scenario];
        let kept = f::histograms(Scope::Scenario).map(|f| f.name).collect();
        let h = self
            .histograms
            .resolve(&l, &buckets.clone().normalized(), kept)?;
        let p = &self.probe;
        self.publish_slo(&l, slo);
        Ok(ScenarioSeries {
            requests: p.requests.with_label_values(&l),
            failures: children(&p.failures, &f::FAILURES, &l),
            goodput: p.goodput.with_label_values(&l),
            spend: Some(SpendSeries {
                prompt_tokens: p.prompt_tokens.with_label_values(&l),
                output_tokens: p.output_tokens.with_label_values(&l),
                reasoning_tokens: p.reasoning_tokens.with_label_values(&l),
                cost: match price {
                    Some(price) => Some((price, p.cost.with_label_values(&l))),
                    None => {
                        // A price removed on reload: no frozen cost series stays behind.
                        let _ = p.cost.remove_label_values(&l);
                        None
                    }
                },
            }),
            inflight: Some(p.inflight.with_label_values(&l)),
            last_success: p.last_success.with_label_values(&l),
            skipped: children(&p.skipped, &f::SKIPPED, &l),
            slo_met: self.slo_met(&l, slo),
            latencies: Latency::ALL
                .into_iter()
                .filter_map(|l| f::latency_histogram(l).map(|fam| (l, fam)))
                .map(|(l, fam)| Ok((l, h.get(&fam)?)))
                .collect::<prometheus::Result<_>>()?,
            checks: Vec::new(),
            golden: None,
        })
    }

    /// Sets the SLO gauges of a scenario; an SLI it does not configure has none.
    fn publish_slo(&self, l: &[&str; 3], slo: &Slo) {
        for (latency, gauge) in &self.probe.objectives {
            let v = slo.limit(*latency).map(|v| v.as_secs_f64());
            set_or_remove(gauge, l, v);
        }
    }

    /// The `llmprobe_slo_met_requests_total` children of the SLIs the scenario
    /// configures; the others stop being exported.
    fn slo_met(&self, l: &[&str; 3], slo: &Slo) -> Vec<(Latency, IntCounter)> {
        let mut met = Vec::new();
        for latency in Latency::objectives() {
            let labels = [l[0], l[1], l[2], latency.name()];
            if slo.limit(latency).is_some() {
                met.push((latency, self.probe.slo_met.with_label_values(&labels)));
            } else {
                let _ = self.probe.slo_met.remove_label_values(&labels);
            }
        }
        met
    }

    /// The answer-check series of the checks a scenario configures (`kinds`); the
    /// others stop being exported.
    pub fn check_series(
        &self,
        target: &str,
        model: &str,
        scenario: &str,
        kinds: &[CheckKind],
    ) -> Vec<CheckSeries> {
        let p = &self.probe;
        let mut out = Vec::new();
        for kind in CheckKind::ALL {
            let labels = [target, model, scenario, kind.as_str()];
            if kinds.contains(&kind) {
                out.push(CheckSeries {
                    kind,
                    runs: p.check_runs.with_label_values(&labels),
                    failures: p.check_failures.with_label_values(&labels),
                    last_passed: p.check_last_passed.with_label_values(&labels),
                });
            } else {
                let _ = p.check_runs.remove_label_values(&labels);
                let _ = p.check_failures.remove_label_values(&labels);
                let _ = p.check_last_passed.remove_label_values(&labels);
            }
        }
        out
    }

    /// The golden-set series of a scenario that asks a golden set with this rolling
    /// `window` and `baseline` (a fresh window: its figures appear at the first
    /// verdict); `None` removes them.
    pub fn golden_series(
        &self,
        target: &str,
        model: &str,
        scenario: &str,
        golden: Option<(u32, Option<f64>)>,
    ) -> Option<GoldenSeries> {
        let p = &self.probe;
        let l = [target, model, scenario];
        for vec in [&p.golden_accuracy, &p.golden_lower, &p.golden_upper] {
            let _ = vec.remove_label_values(&l);
        }
        let Some((window, baseline)) = golden else {
            for verdict in f::golden_verdicts() {
                let _ = p
                    .golden_answers
                    .remove_label_values(&[target, model, scenario, verdict]);
            }
            let _ = p.golden_window.remove_label_values(&l);
            let _ = p.golden_baseline.remove_label_values(&l);
            return None;
        };
        set_or_remove(&p.golden_baseline, &l, baseline);
        let answers = p.golden_window.with_label_values(&l);
        answers.set(0);
        let [correct, wrong] = crate::record::GoldenVerdict::LABELS.map(|v| {
            p.golden_answers
                .with_label_values(&[target, model, scenario, v])
        });
        let owned = || l.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        Some(GoldenSeries {
            correct,
            wrong,
            answers,
            figures: [
                (p.golden_accuracy.clone(), owned()),
                (p.golden_lower.clone(), owned()),
                (p.golden_upper.clone(), owned()),
            ],
            window: std::sync::Mutex::new(crate::check::AccuracyWindow::new(window as usize)),
        })
    }

    /// Publishes a scenario's configured probe rate (per second).
    pub fn set_rate(&self, target: &str, model: &str, scenario: &str, rate_hz: f64) {
        set_or_remove(&self.probe.rate, &[target, model, scenario], Some(rate_hz));
    }

    /// Removes every series of one target × scenario (the target left the config).
    pub fn remove_scenario(&self, target: &str, model: &str, scenario: &str) {
        self.registered
            .remove(Scope::Scenario, &[target, model, scenario]);
        self.histograms.remove(&[target, model, scenario]);
    }

    /// Publishes the capacity model's gauges for a target.
    pub fn set_capacity(&self, target: &str, model: &str, c: &CapacityGauges) {
        let l = [target, model];
        let g = &self.capacity;
        set_or_remove(
            &g.max_concurrent_sequences,
            &l,
            Some(c.max_concurrent_sequences),
        );
        set_or_remove(&g.kv_cache_tokens, &l, Some(c.kv_cache_tokens));
        set_or_remove(&g.kv_bytes_per_token, &l, Some(c.kv_bytes_per_token));
        set_or_remove(&g.weight_bytes, &l, Some(c.weight_bytes));
        set_or_remove(
            &g.decode_tokens_per_second,
            &l,
            Some(c.decode_tokens_per_second),
        );
        set_or_remove(
            &g.cost_per_million_output_tokens,
            &l,
            c.cost_per_million_output_tokens,
        );
    }

    /// Publishes headroom (absent when nothing says how many sequences run).
    pub fn set_headroom(&self, target: &str, model: &str, ratio: Option<f64>) {
        set_or_remove(&self.engine.headroom, &[target, model], ratio);
    }

    /// Publishes one engine scrape. On failure only success and duration are set and
    /// the other gauges are removed, so stale numbers never look live.
    pub fn set_engine(
        &self,
        target: &str,
        model: &str,
        success: bool,
        duration_seconds: f64,
        g: &EngineGauges,
    ) {
        let l = [target, model];
        let e = &self.engine;
        e.success
            .with_label_values(&l)
            .set(if success { 1.0 } else { 0.0 });
        e.duration.with_label_values(&l).set(duration_seconds);
        set_or_remove(&e.running, &l, g.running);
        set_or_remove(&e.waiting, &l, g.waiting);
        set_or_remove(&e.kv_cache_usage_ratio, &l, g.kv_cache_usage_ratio);
        set_or_remove(&e.kv_cache_tokens, &l, g.kv_cache_tokens);
        set_or_remove(&e.max_concurrent_sequences, &l, g.max_concurrent_sequences);
        set_or_remove(
            &e.generation_tokens_per_second,
            &l,
            g.generation_tokens_per_second,
        );
        set_or_remove(
            &e.cost_per_million_output_tokens,
            &l,
            g.cost_per_million_output_tokens,
        );
        set_or_remove(&e.ttft_mean_seconds, &l, g.ttft_mean_seconds);
        set_or_remove(&e.prefix_cache_hit_ratio, &l, g.prefix_cache_hit_ratio);
        set_or_remove(&e.lora_running, &l, g.lora_adapters_running);
        set_or_remove(&e.lora_waiting, &l, g.lora_adapters_waiting);
        set_or_remove(&e.lora_max, &l, g.lora_adapters_max);
        set_or_remove(
            &e.ttft_client_server_gap_seconds,
            &l,
            g.ttft_client_server_gap_seconds,
        );
        for (c, delta) in [
            (&e.ttft_sum, g.ttft_sum_delta),
            (&e.ttft_count, g.ttft_count_delta),
        ] {
            // A counter only grows: negative or non-finite deltas never reach it.
            if let Some(d) = delta.filter(|d| d.is_finite() && *d >= 0.0) {
                c.with_label_values(&l).inc_by(d);
            }
        }
    }

    /// Publishes one read of the engine's GPU telemetry: its energy figures, or on a
    /// failed read only `gpu_scrape_success 0`.
    pub fn set_engine_energy(
        &self,
        target: &str,
        model: &str,
        success: bool,
        figures: Option<&Figures>,
    ) {
        let l = [target, model];
        self.engine
            .gpu_success
            .with_label_values(&l)
            .set(if success { 1.0 } else { 0.0 });
        self.engine.energy.set(&l, figures);
    }

    /// Publishes one scrape of the target's endpoint picker.
    pub fn set_router(&self, target: &str, model: &str, success: bool, g: &RouterGauges) {
        self.router.set(target, model, success, g);
    }

    /// Removes the endpoint-picker series of a target.
    pub fn remove_router(&self, target: &str, model: &str) {
        self.registered.remove(Scope::Router, &[target, model]);
    }

    /// Removes every capacity, engine and endpoint-picker series of a target.
    pub fn remove_target(&self, target: &str, model: &str) {
        self.remove_capacity(target, model);
        self.remove_engine(target, model);
        self.remove_router(target, model);
    }

    /// Removes the capacity-model gauges of a target (headroom stays: it may come from
    /// the engine).
    pub fn remove_capacity(&self, target: &str, model: &str) {
        self.registered.remove(Scope::Capacity, &[target, model]);
    }

    /// Removes the engine-scrape series of a target, and the headroom derived from them.
    pub fn remove_engine(&self, target: &str, model: &str) {
        self.registered.remove(Scope::Engine, &[target, model]);
    }

    /// The series of discovered replicas and of the fleet they make.
    pub fn fleet(&self) -> &FleetSeries {
        &self.fleet
    }

    /// The series self-probes move.
    pub fn self_check(&self) -> &SelfCheckSeries {
        &self.self_check
    }

    /// The collectors of a scenario kind's own `families` (scope `Kind`), registered
    /// on the first call and the same on every later one.
    pub fn kind_series(&self, families: &'static [f::Family]) -> prometheus::Result<Registered> {
        let key = families.first().map_or("", |f| f.name);
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, r)) = kinds.iter().find(|(k, _)| *k == key) {
            return Ok(r.clone());
        }
        let r = Registered::of(&self.registry, families)?;
        kinds.push((key, r.clone()));
        Ok(r)
    }

    /// Records the outcome of a configuration (re)load.
    pub fn set_reload(&self, ok: bool) {
        self.daemon.reload_ok.set(i64::from(ok));
        if ok {
            self.daemon.reload_ts.set(unix_now());
        }
    }

    /// Publishes this prober's shard (the previous one's series goes).
    pub fn set_shard(&self, index: u32, count: u32) {
        self.daemon.shard.reset();
        self.daemon
            .shard
            .with_label_values(&[&index.to_string(), &count.to_string()])
            .set(1);
    }

    pub fn set_targets(&self, n: usize) {
        self.daemon
            .targets
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Publishes a batch of gauges that belong together (one engine scrape, one fleet
    /// round) while the guard lives; `/metrics` shows all of it or none.
    pub fn batch(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.batch.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The exposition text (`text/plain; version=0.0.4`).
    pub fn render(&self) -> anyhow::Result<String> {
        let mut buf = Vec::with_capacity(16 * 1024);
        TextEncoder::new().encode(&self.gather(), &mut buf)?;
        Ok(String::from_utf8(buf)?)
    }

    /// The exposition in the OpenMetrics text format: the same series as [`Self::render`]
    /// and, on the latency histograms' buckets, the newest probe of each as an exemplar.
    pub fn render_openmetrics(&self) -> String {
        let families = self.gather();
        let mut index = HashMap::new();
        for h in [&self.histograms, &self.replica_histograms] {
            for (name, values, exemplars) in h.exemplars() {
                index.insert((name, values), exemplars);
            }
        }
        // A series is found by the values of its family's own labels (the registry-wide
        // `location` is not one).
        let label_names: HashMap<&'static str, Vec<&'static str>> =
            [Scope::Scenario, Scope::Replica]
                .into_iter()
                .flat_map(f::histograms)
                .map(|fam| (fam.name, fam.labels()))
                .collect();
        let lookup = |name: &str, pairs: &[LabelPair]| {
            let (name, names) = label_names.get_key_value(name)?;
            let values = names
                .iter()
                .map(|n| {
                    let pair = pairs.iter().find(|p| p.name() == *n)?;
                    Some(pair.value().to_string())
                })
                .collect::<Option<Vec<_>>>()?;
            index.get(&(*name, values)).cloned()
        };
        openmetrics::encode(&families, &lookup)
    }

    /// Every family, gathered while no batch of gauges is half published.
    fn gather(&self) -> Vec<prometheus::proto::MetricFamily> {
        let _whole = self.batch.write().unwrap_or_else(|e| e.into_inner());
        self.registry.gather()
    }
}

/// The process collector exists on Linux only; elsewhere the self metrics simply lack
/// `process_*`.
fn register_process_collector(r: &Registry) {
    #[cfg(target_os = "linux")]
    {
        let pc = prometheus::process_collector::ProcessCollector::for_self();
        if pc.desc().is_empty() {
            return;
        }
        if let Err(e) = r.register(Box::new(pc)) {
            tracing::warn!("process metrics unavailable: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::series::MAX_ITL_OBSERVATIONS_PER_PROBE;
    use crate::record::{Outcome, RequestRecord, TokenSource};
    use std::time::Duration;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Sent at 0, first token at 50 ms, then 4 chunks of 4 tokens every 10 ms.
    fn record() -> RequestRecord {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.http_status = Some(200);
        r.push_chunk(ms(50), 4, Some(1));
        for i in 1..=4 {
            r.push_chunk(ms(50 + 10 * i), 16, Some(4));
        }
        r.usage_completion_tokens = Some(17);
        r.usage_prompt_tokens = Some(100);
        r.t_end = Some(ms(91));
        r.resolve_tokens(Some(TokenSource::ContinuousUsage));
        r
    }

    fn sample(text: &str, line_prefix: &str) -> f64 {
        text.lines()
            .find(|l| l.starts_with(line_prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no sample {line_prefix} in\n{text}"))
    }

    /// The OpenMetrics exposition has exactly the classic one's series and values, and
    /// names the probe on the bucket its TTFT fell in, for the front door's and the
    /// replicas' histograms alike (under a registry-wide `location`).
    #[test]
    fn openmetrics_has_the_classic_series_and_the_probes_as_exemplars() {
        let m = Metrics::at(Some("eu")).unwrap();
        let s = m
            .scenario(
                "prod",
                "llama",
                "short",
                &Slo::default(),
                None,
                &Buckets::vllm(),
            )
            .unwrap();
        let replica = m
            .fleet()
            .replica_scenario(
                ["prod", "llama", "short"],
                "10.0.0.1:8000",
                &Buckets::vllm(),
                true,
            )
            .unwrap();
        let mut r = record();
        r.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        s.observe(&r, &Slo::default(), Some(41));
        replica.observe(&r, &Slo::default(), Some(42));
        // The process's own gauges move between two gathers.
        let samples = |t: &str| {
            let mut v: Vec<String> = t
                .lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with("process_"))
                .map(|l| {
                    let l = l.split(" # ").next().unwrap();
                    let (k, v) = l.rsplit_once(' ').unwrap();
                    let v: f64 = v.replace("+Inf", "inf").parse().unwrap();
                    format!("{k} {v}")
                })
                .collect();
            v.sort();
            v
        };
        let om = m.render_openmetrics();
        assert_eq!(samples(&m.render().unwrap()), samples(&om));
        // TTFT 50 ms: vLLM's layout has 0.04 and 0.06, so le=0.06.
        let front = "llmprobe_ttft_seconds_bucket{model=\"llama\",scenario=\"short\",target=\"prod\",location=\"eu\",le=\"0.06\"} 1 # {trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\",probe_id=\"41\"} 0.05 ";
        assert!(om.lines().any(|l| l.starts_with(front)), "{om}");
        let exemplars = om.lines().filter(|l| l.contains(" # {")).count();
        let named_42 = om.lines().filter(|l| l.contains("probe_id=\"42\"")).count();
        assert!(named_42 >= 1 && exemplars > named_42, "{om}");
        assert!(
            om.lines()
                .filter(|l| l.starts_with("llmprobe_inter_token_latency_seconds_bucket"))
                .all(|l| !l.contains(" # {")),
            "ITL has no exemplars"
        );
    }

    #[test]
    fn observe_feeds_every_family_from_the_record() {
        let m = Metrics::new().unwrap();
        let price = TokenPrice {
            input_per_million: 1.0,
            output_per_million: 2.0,
        };
        let s = m
            .scenario(
                "prod",
                "llama",
                "short",
                &Slo::default(),
                Some(price),
                &Buckets::vllm(),
            )
            .unwrap();
        assert!(s.observe(&record(), &Slo::default(), None));
        let slo = Slo::of([(Latency::Ttft, ms(40))]).unwrap();
        assert!(!s.observe(&record(), &slo, None));
        let mut failed = record();
        failed.outcome = Outcome::Http429;
        s.observe(&failed, &Slo::default(), None);
        s.skip(SkipReason::TokenBudget);

        let text = m.render().unwrap();
        let l = r#"{model="llama",scenario="short",target="prod"}"#;
        assert_eq!(sample(&text, &format!("llmprobe_requests_total{l}")), 3.0);
        assert_eq!(
            sample(&text, &format!("llmprobe_goodput_requests_total{l}")),
            1.0
        );
        assert_eq!(
            sample(
                &text,
                r#"llmprobe_request_failures_total{model="llama",reason="http_429",scenario="short",target="prod"}"#
            ),
            1.0
        );
        assert_eq!(
            sample(
                &text,
                r#"llmprobe_probes_skipped_total{model="llama",reason="token_budget",scenario="short",target="prod"}"#
            ),
            1.0
        );
        assert_eq!(
            sample(&text, &format!("llmprobe_output_tokens_total{l}")),
            51.0
        );
        assert_eq!(
            sample(&text, &format!("llmprobe_prompt_tokens_total{l}")),
            300.0
        );
        // 3 × (100 × $1 + 17 × $2) / 1e6
        let cost = sample(&text, &format!("llmprobe_probe_cost_dollars_total{l}"));
        assert!((cost - 3.0 * 134.0 / 1e6).abs() < 1e-12);
        // TTFT 50 ms lands in (0.04, 0.06] for the two successes only.
        let ttft = |le: &str| {
            sample(
                &text,
                &format!(
                    r#"llmprobe_ttft_seconds_bucket{{model="llama",scenario="short",target="prod",le="{le}"}}"#
                ),
            )
        };
        assert_eq!(ttft("0.04"), 0.0);
        assert_eq!(ttft("0.06"), 2.0);
        // Per-token ITL: 16 observations of 2.5 ms per record.
        assert_eq!(
            sample(
                &text,
                &format!("llmprobe_inter_token_latency_seconds_count{l}")
            ),
            32.0
        );
        assert_eq!(
            sample(
                &text,
                r#"llmprobe_inter_token_latency_seconds_bucket{model="llama",scenario="short",target="prod",le="0.0025"}"#
            ),
            32.0
        );
        assert_eq!(
            sample(&text, &format!("llmprobe_tpot_seconds_count{l}")),
            2.0
        );
        assert_eq!(
            sample(&text, &format!("llmprobe_dispatch_lag_seconds_count{l}")),
            3.0
        );
        assert!(
            sample(
                &text,
                &format!("llmprobe_last_success_timestamp_seconds{l}")
            ) > 1e9
        );
        assert!(text.contains("llmprobe_build_info{version="));
    }

    #[test]
    fn absurd_token_counts_cannot_loop_for_long() {
        let mut r = RequestRecord::new(0, ms(0), ms(0));
        r.push_chunk(ms(50), 4, Some(1));
        r.push_chunk(ms(60), 16, Some(4_000_000_001));
        r.usage_completion_tokens = Some(4_000_000_001);
        r.t_end = Some(ms(61));
        r.resolve_tokens(Some(TokenSource::ContinuousUsage));
        assert!(r.itl().map(|(_, n)| u64::from(n)).sum::<u64>() > 1 << 30);
        let m = Metrics::new().unwrap();
        let s = m
            .scenario("t", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        s.observe(&r, &Slo::default(), None);
        let text = m.render().unwrap();
        assert_eq!(
            sample(
                &text,
                r#"llmprobe_inter_token_latency_seconds_count{model="m",scenario="s",target="t"}"#
            ),
            MAX_ITL_OBSERVATIONS_PER_PROBE as f64
        );
    }

    #[test]
    fn slo_met_counts_each_configured_sli_against_its_threshold() {
        let m = Metrics::new().unwrap();
        let slo = Slo::of([(Latency::Ttft, ms(40)), (Latency::Tpot, ms(10))]).unwrap();
        let s = m
            .scenario("t", "m", "s", &slo, None, &Buckets::vllm())
            .unwrap();
        m.set_rate("t", "m", "s", 0.25);
        let met = |text: &str, sli: &str| {
            sample(
                text,
                &format!(
                    r#"llmprobe_slo_met_requests_total{{model="m",scenario="s",sli="{sli}",target="t"}}"#
                ),
            )
        };
        let text = m.render().unwrap();
        assert_eq!((met(&text, "ttft"), met(&text, "tpot")), (0.0, 0.0));
        // TTFT 50 ms misses 40 ms; TPOT 2.6 ms meets 10 ms.
        s.observe(&record(), &slo, None);
        // One output token: no TPOT, so TPOT is met; TTFT 30 ms meets 40 ms.
        let mut one = RequestRecord::new(1, ms(0), ms(0));
        one.push_chunk(ms(30), 4, Some(1));
        one.usage_completion_tokens = Some(1);
        one.usage_prompt_tokens = Some(10);
        one.t_end = Some(ms(31));
        one.resolve_tokens(Some(TokenSource::Usage));
        s.observe(&one, &slo, None);
        // A failure meets nothing.
        let mut failed = one.clone();
        failed.outcome = Outcome::Http5xx;
        s.observe(&failed, &slo, None);
        let text = m.render().unwrap();
        assert_eq!(met(&text, "ttft"), 1.0);
        assert_eq!(met(&text, "tpot"), 2.0);
        assert!(!text.contains(r#"sli="e2e""#), "{text}");
        assert!(
            text.contains(
                r#"llmprobe_probe_rate_per_second{model="m",scenario="s",target="t"} 0.25"#
            )
        );
        m.remove_scenario("t", "m", "s");
        let text = m.render().unwrap();
        assert!(!text.contains("llmprobe_slo_met_requests_total{"));
        assert!(!text.contains("llmprobe_probe_rate_per_second{"));
    }

    #[test]
    fn engine_ttft_deltas_accumulate_in_counters() {
        let m = Metrics::new().unwrap();
        let g = |s: f64, c: f64| EngineGauges {
            ttft_sum_delta: Some(s),
            ttft_count_delta: Some(c),
            ..EngineGauges::default()
        };
        m.set_engine("t", "m", true, 0.01, &g(0.0, 0.0));
        m.set_engine("t", "m", true, 0.01, &g(1.5, 10.0));
        m.set_engine("t", "m", false, 0.01, &EngineGauges::default());
        m.set_engine("t", "m", true, 0.01, &g(0.5, 5.0));
        let text = m.render().unwrap();
        let l = r#"{model="m",target="t"}"#;
        assert_eq!(
            sample(
                &text,
                &format!("llmprobe_engine_ttft_observed_seconds_total{l}")
            ),
            2.0
        );
        assert_eq!(
            sample(
                &text,
                &format!("llmprobe_engine_ttft_observations_total{l}")
            ),
            15.0
        );
        m.remove_engine("t", "m");
        assert!(!m.render().unwrap().contains("llmprobe_engine_ttft_observ"));
    }

    #[test]
    fn spend_counts_only_answered_probes_and_follows_the_price() {
        let m = Metrics::new().unwrap();
        let price = TokenPrice {
            input_per_million: 1.0,
            output_per_million: 2.0,
        };
        let s = m
            .scenario(
                "t",
                "m",
                "s",
                &Slo::default(),
                Some(price),
                &Buckets::vllm(),
            )
            .unwrap();
        let mut refused = RequestRecord::new(0, ms(0), ms(0));
        refused.outcome = Outcome::Connect;
        refused.prompt_tokens_sent = 100;
        assert!(refused.http_status.is_none() && refused.prompt_tokens() > 0);
        s.observe(&refused, &Slo::default(), None);
        let text = m.render().unwrap();
        let l = r#"{model="m",scenario="s",target="t"}"#;
        assert_eq!(sample(&text, &format!("llmprobe_requests_total{l}")), 1.0);
        assert_eq!(
            sample(&text, &format!("llmprobe_prompt_tokens_total{l}")),
            0.0
        );
        assert_eq!(
            sample(&text, &format!("llmprobe_probe_cost_dollars_total{l}")),
            0.0
        );
        // The price goes away on reload: so does the cost series.
        let _s = m
            .scenario("t", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        assert!(
            !m.render()
                .unwrap()
                .contains("llmprobe_probe_cost_dollars_total{")
        );
    }

    #[test]
    fn slo_gauges_exist_only_when_configured() {
        let m = Metrics::new().unwrap();
        let slo = Slo::of([(Latency::Ttft, ms(250))]).unwrap();
        let _s = m
            .scenario("t", "m", "s", &slo, None, &Buckets::vllm())
            .unwrap();
        let text = m.render().unwrap();
        assert!(
            text.contains(r#"llmprobe_slo_ttft_seconds{model="m",scenario="s",target="t"} 0.25"#)
        );
        assert!(!text.contains("llmprobe_slo_tpot_seconds{"));
        assert!(!text.contains("llmprobe_probe_cost_dollars_total{"));
    }

    #[test]
    fn removed_scenarios_leave_no_series() {
        let m = Metrics::new().unwrap();
        let s = m
            .scenario("gone", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        s.observe(&record(), &Slo::default(), None);
        let keep = m
            .scenario("kept", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        keep.observe(&record(), &Slo::default(), None);
        m.set_capacity("gone", "m", &CapacityGauges::default());
        m.remove_scenario("gone", "m", "s");
        m.remove_target("gone", "m");
        let text = m.render().unwrap();
        assert!(!text.contains("target=\"gone\""), "{text}");
        assert!(text.contains("target=\"kept\""));
    }

    #[test]
    fn each_series_has_its_own_bucket_layout() {
        let m = Metrics::new().unwrap();
        let slo = Slo::of([(Latency::Ttft, ms(123))]).unwrap();
        let plain = m
            .scenario("a", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        plain.observe(&record(), &Slo::default(), None);
        let own = Buckets::vllm().with_slos([&slo]);
        let s = m.scenario("b", "m", "s", &slo, None, &own).unwrap();
        s.observe(&record(), &slo, None);
        let text = m.render().unwrap();
        // The threshold is a bound of b's series only, and one family holds both.
        assert!(text.contains(
            r#"llmprobe_ttft_seconds_bucket{model="m",scenario="s",target="b",le="0.123"} 1"#
        ));
        assert!(!text.contains(r#"target="a",le="0.123""#), "{text}");
        assert_eq!(
            text.matches("# TYPE llmprobe_ttft_seconds histogram")
                .count(),
            1
        );
        // Resolving a with the same layout again continues its histograms...
        let again = m
            .scenario("a", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        again.observe(&record(), &Slo::default(), None);
        let l = r#"{model="m",scenario="s",target="a"}"#;
        let text = m.render().unwrap();
        assert_eq!(
            sample(&text, &format!("llmprobe_ttft_seconds_count{l}")),
            2.0
        );
        // ...a new layout restarts them, with the new bound.
        let _moved = m.scenario("a", "m", "s", &slo, None, &own).unwrap();
        let text = m.render().unwrap();
        assert_eq!(
            sample(&text, &format!("llmprobe_ttft_seconds_count{l}")),
            0.0
        );
        assert!(text.contains(r#"target="a",le="0.123""#));
        m.remove_scenario("a", "m", "s");
        assert!(!m.render().unwrap().contains(r#"target="a""#));
    }

    #[test]
    fn engine_failure_removes_stale_values() {
        let m = Metrics::new().unwrap();
        let g = EngineGauges {
            running: Some(3.0),
            ..EngineGauges::default()
        };
        m.set_engine("t", "m", true, 0.01, &g);
        assert!(
            m.render()
                .unwrap()
                .contains("llmprobe_engine_running_requests{")
        );
        m.set_engine("t", "m", false, 0.5, &EngineGauges::default());
        let text = m.render().unwrap();
        assert!(!text.contains("llmprobe_engine_running_requests{"));
        assert!(text.contains(r#"llmprobe_engine_scrape_success{model="m",target="t"} 0"#));
    }
}
