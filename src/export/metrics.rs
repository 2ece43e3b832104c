//! The Prometheus registry of `llmprobe daemon`: every metric name, help text, label
//! set and histogram bucket layout lives here and nowhere else (docs/metrics.md is the
//! contract with the dashboards and alert rules).
//!
//! The hot path (one probe record) touches only pre-resolved children
//! ([`ScenarioSeries`]), so observing a record is a handful of atomic adds with no label
//! hashing. Gauges that change on a slow interval (capacity, engine scrape) are resolved
//! when they are set.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{
    CounterVec, Encoder, Gauge, GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::record::{Outcome, RequestRecord, Slo};
pub use crate::runner::SkipReason;

/// Labels of every probe-result series, in this order.
pub const PROBE_LABELS: [&str; 3] = ["target", "model", "scenario"];
/// Labels of `llmprobe_slo_met_requests_total`, in this order.
pub const SLI_LABELS: [&str; 4] = ["target", "model", "scenario", "sli"];
/// The `sli` label values, in the order of `ScenarioSeries::slo_met`.
const SLIS: [&str; 3] = ["ttft", "tpot", "e2e"];
/// Labels of capacity and engine gauges, in this order.
pub const TARGET_LABELS: [&str; 2] = ["target", "model"];

/// Every skip reason, in a stable order (for pre-registering label values). The reason
/// itself is the runner's ([`SkipReason`]), so it is defined once.
const SKIP_REASONS: [SkipReason; 2] = [SkipReason::MaxInflight, SkipReason::TokenBudget];

/// Failure outcomes, the `reason` values of `llmprobe_request_failures_total`.
fn failure_outcomes() -> impl Iterator<Item = Outcome> {
    Outcome::ALL.into_iter().filter(|o| !o.is_ok())
}

/// Histogram bucket upper bounds (seconds) per latency metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    pub ttft: Vec<f64>,
    pub tpot: Vec<f64>,
    pub itl: Vec<f64>,
    pub e2e: Vec<f64>,
    pub dispatch_lag: Vec<f64>,
}

impl Buckets {
    /// vLLM's own buckets for the same metrics (vllm/v1/metrics/loggers.py:
    /// `vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds` /
    /// `vllm:time_per_output_token_seconds`, `vllm:e2e_request_latency_seconds`), so
    /// client-side and server-side histograms line up bucket for bucket. TPOT/ITL add
    /// 1, 2.5 and 5 ms for fast engines; dispatch lag is llmprobe's own.
    pub fn vllm() -> Self {
        Buckets {
            ttft: vec![
                0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
            ],
            tpot: Self::vllm_tpot(),
            itl: Self::vllm_tpot(),
            e2e: vec![
                0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
                120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
            ],
            dispatch_lag: vec![
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
            ],
        }
    }

    fn vllm_tpot() -> Vec<f64> {
        vec![
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
            1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
        ]
    }

    /// Adds every SLO threshold as a bucket boundary, so `le="<threshold>"` is exact:
    /// TTFT thresholds to TTFT, TPOT thresholds to TPOT and per-token ITL (the same
    /// per-token budget), E2E thresholds to E2E.
    pub fn with_slos<'a>(mut self, slos: impl IntoIterator<Item = &'a Slo>) -> Self {
        for slo in slos {
            if let Some(t) = slo.ttft {
                self.ttft.push(t.as_secs_f64());
            }
            if let Some(t) = slo.tpot {
                self.tpot.push(t.as_secs_f64());
                self.itl.push(t.as_secs_f64());
            }
            if let Some(t) = slo.e2e {
                self.e2e.push(t.as_secs_f64());
            }
        }
        self.normalized()
    }

    /// Sorted, finite, positive, without duplicates (Prometheus requires strictly
    /// increasing bounds).
    pub fn normalized(mut self) -> Self {
        for b in [
            &mut self.ttft,
            &mut self.tpot,
            &mut self.itl,
            &mut self.e2e,
            &mut self.dispatch_lag,
        ] {
            b.retain(|v| v.is_finite() && *v > 0.0);
            b.sort_by(f64::total_cmp);
            // Thresholds parsed from "50ms" and a literal 0.05 may differ in the last bit.
            b.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * b.abs().max(1e-9));
        }
        self
    }
}

/// The five latency histogram families (name, help), in the order of
/// `SeriesHistograms::h`.
const HISTOGRAM_FAMILIES: [(&str, &str); 5] = [
    (
        "llmprobe_ttft_seconds",
        "Time to first content token, from the actual send.",
    ),
    (
        "llmprobe_tpot_seconds",
        "Time per output token after the first (vLLM's TPOT).",
    ),
    (
        "llmprobe_inter_token_latency_seconds",
        "Per-token inter-token latency (a chunk gap shared among its tokens).",
    ),
    (
        "llmprobe_request_duration_seconds",
        "End-to-end probe latency, send to last token.",
    ),
    (
        "llmprobe_dispatch_lag_seconds",
        "Actual send time minus scheduled send time (client health).",
    ),
];

/// The latency histograms of one target × scenario, all built with this series' own
/// bucket layout (vLLM's ∪ configured extras ∪ the scenario's own SLO thresholds).
#[derive(Clone)]
struct SeriesHistograms {
    buckets: Buckets,
    h: [Histogram; 5],
}

impl SeriesHistograms {
    fn new(labels: [&str; 3], buckets: Buckets) -> prometheus::Result<Self> {
        let layouts = [
            &buckets.ttft,
            &buckets.tpot,
            &buckets.itl,
            &buckets.e2e,
            &buckets.dispatch_lag,
        ];
        let mut hs = Vec::with_capacity(HISTOGRAM_FAMILIES.len());
        for ((name, help), bounds) in HISTOGRAM_FAMILIES.iter().zip(layouts) {
            let mut opts = HistogramOpts::new(*name, *help).buckets(bounds.clone());
            for (k, v) in PROBE_LABELS.iter().zip(labels) {
                opts = opts.const_label(*k, v);
            }
            hs.push(Histogram::with_opts(opts)?);
        }
        let h: [Histogram; 5] = hs
            .try_into()
            .map_err(|_| prometheus::Error::Msg("expected five histograms".into()))?;
        Ok(SeriesHistograms { buckets, h })
    }
}

/// The latency histogram families as one collector. Each target × scenario keeps its
/// own bucket layout, so a new SLO threshold on one scenario resets nothing else: the
/// collector emits one MetricFamily per name made of per-series histograms with
/// different `le` sets, which the text format and Prometheus accept (every series is a
/// histogram of its own; `promtool check metrics` agrees, see tests/daemon_mock.rs).
struct LatencyHistograms {
    descs: Vec<Desc>,
    series: Mutex<BTreeMap<[String; 3], SeriesHistograms>>,
}

impl LatencyHistograms {
    fn new() -> prometheus::Result<Self> {
        let descs = HISTOGRAM_FAMILIES
            .iter()
            .map(|(name, help)| {
                Desc::new(
                    (*name).to_string(),
                    (*help).to_string(),
                    PROBE_LABELS.iter().map(|l| (*l).to_string()).collect(),
                    HashMap::new(),
                )
            })
            .collect::<prometheus::Result<Vec<_>>>()?;
        Ok(LatencyHistograms {
            descs,
            series: Mutex::new(BTreeMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<[String; 3], SeriesHistograms>> {
        // Every change under the lock is one map operation: a poisoned map is consistent.
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The histograms of one series with `buckets`: the existing ones when their layout
    /// is the same (they continue), fresh ones otherwise (they restart from zero).
    fn resolve(
        &self,
        labels: [&str; 3],
        buckets: &Buckets,
    ) -> prometheus::Result<SeriesHistograms> {
        let key = labels.map(str::to_string);
        let mut map = self.lock();
        if let Some(existing) = map.get(&key)
            && existing.buckets == *buckets
        {
            return Ok(existing.clone());
        }
        let fresh = SeriesHistograms::new(labels, buckets.clone())?;
        map.insert(key, fresh.clone());
        Ok(fresh)
    }

    fn remove(&self, labels: [&str; 3]) {
        self.lock().remove(&labels.map(str::to_string));
    }
}

impl Collector for LatencyHistograms {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let map = self.lock();
        let mut out = Vec::with_capacity(HISTOGRAM_FAMILIES.len());
        for i in 0..HISTOGRAM_FAMILIES.len() {
            let mut family: Option<MetricFamily> = None;
            for s in map.values() {
                for mut mf in s.h[i].collect() {
                    match &mut family {
                        None => family = Some(mf),
                        Some(f) => f.mut_metric().extend(mf.take_metric()),
                    }
                }
            }
            out.extend(family);
        }
        out
    }
}

/// Dollars per million tokens, for the probes' own spend.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TokenPrice {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl TokenPrice {
    pub fn cost(&self, prompt_tokens: u32, output_tokens: u32) -> f64 {
        (f64::from(prompt_tokens) * self.input_per_million
            + f64::from(output_tokens) * self.output_per_million)
            / 1e6
    }
}

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
}

/// Every metric family of the daemon, registered in one registry.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    failures: IntCounterVec,
    goodput: IntCounterVec,
    prompt_tokens: IntCounterVec,
    output_tokens: IntCounterVec,
    cost: CounterVec,
    inflight: IntGaugeVec,
    last_success: GaugeVec,
    slo_ttft: GaugeVec,
    slo_tpot: GaugeVec,
    slo_e2e: GaugeVec,
    skipped: IntCounterVec,
    slo_met: IntCounterVec,
    rate: GaugeVec,
    engine_ttft_sum: CounterVec,
    engine_ttft_count: CounterVec,
    histograms: Arc<LatencyHistograms>,
    capacity: [GaugeVec; 7],
    engine: [GaugeVec; 11],
    reload_ok: IntGauge,
    reload_ts: Gauge,
    targets: IntGauge,
}

// Index names for the `capacity` and `engine` gauge arrays (one place for their order).
const CAP_MAX_SEQS: usize = 0;
const CAP_KV_TOKENS: usize = 1;
const CAP_KV_BYTES: usize = 2;
const CAP_WEIGHT_BYTES: usize = 3;
const CAP_DECODE_TPS: usize = 4;
const CAP_COST: usize = 5;
const CAP_HEADROOM: usize = 6;
const ENG_SUCCESS: usize = 0;
const ENG_DURATION: usize = 1;
const ENG_RUNNING: usize = 2;
const ENG_WAITING: usize = 3;
const ENG_KV_USAGE: usize = 4;
const ENG_KV_TOKENS: usize = 5;
const ENG_MAX_SEQS: usize = 6;
const ENG_GEN_TPS: usize = 7;
const ENG_COST: usize = 8;
const ENG_TTFT_MEAN: usize = 9;
const ENG_TTFT_GAP: usize = 10;

fn counter(name: &str, help: &str, labels: &[&str]) -> prometheus::Result<IntCounterVec> {
    IntCounterVec::new(Opts::new(name, help), labels)
}

fn gauge(name: &str, help: &str, labels: &[&str]) -> prometheus::Result<GaugeVec> {
    GaugeVec::new(Opts::new(name, help), labels)
}

impl Metrics {
    /// Builds and registers every family. Fails only on a programming error (a bad
    /// name or a duplicate). Histogram bucket layouts are per series, see
    /// [`Metrics::scenario`].
    pub fn new() -> anyhow::Result<Arc<Self>> {
        let registry = Registry::new();
        let failure_labels = ["target", "model", "scenario", "reason"];
        let m = Metrics {
            requests: counter(
                "llmprobe_requests_total",
                "Probes completed (any outcome).",
                &PROBE_LABELS,
            )?,
            failures: counter(
                "llmprobe_request_failures_total",
                "Probes that failed, by reason.",
                &failure_labels,
            )?,
            goodput: counter(
                "llmprobe_goodput_requests_total",
                "Probes that succeeded and met every SLO of their scenario.",
                &PROBE_LABELS,
            )?,
            prompt_tokens: counter(
                "llmprobe_prompt_tokens_total",
                "Prompt tokens sent by probes.",
                &PROBE_LABELS,
            )?,
            output_tokens: counter(
                "llmprobe_output_tokens_total",
                "Output tokens received by probes.",
                &PROBE_LABELS,
            )?,
            cost: CounterVec::new(
                Opts::new(
                    "llmprobe_probe_cost_dollars_total",
                    "The probes' own spend in dollars, when the target has a price.",
                ),
                &PROBE_LABELS,
            )?,
            inflight: IntGaugeVec::new(
                Opts::new("llmprobe_inflight_requests", "Probes in flight now."),
                &PROBE_LABELS,
            )?,
            last_success: gauge(
                "llmprobe_last_success_timestamp_seconds",
                "Unix time of the last successful probe.",
                &PROBE_LABELS,
            )?,
            slo_ttft: gauge(
                "llmprobe_slo_ttft_seconds",
                "The scenario's configured TTFT objective.",
                &PROBE_LABELS,
            )?,
            slo_tpot: gauge(
                "llmprobe_slo_tpot_seconds",
                "The scenario's configured TPOT objective.",
                &PROBE_LABELS,
            )?,
            slo_e2e: gauge(
                "llmprobe_slo_e2e_seconds",
                "The scenario's configured end-to-end latency objective.",
                &PROBE_LABELS,
            )?,
            skipped: counter(
                "llmprobe_probes_skipped_total",
                "Arrivals dropped without sending, by reason.",
                &failure_labels,
            )?,
            slo_met: counter(
                "llmprobe_slo_met_requests_total",
                "Successful probes meeting the scenario's threshold for one SLI (ttft, tpot, e2e; only configured SLIs).",
                &SLI_LABELS,
            )?,
            rate: gauge(
                "llmprobe_probe_rate_per_second",
                "The scenario's configured probe rate (Poisson arrivals per second).",
                &PROBE_LABELS,
            )?,
            engine_ttft_sum: CounterVec::new(
                Opts::new(
                    "llmprobe_engine_ttft_observed_seconds_total",
                    "Sum of the engine's own TTFT observations since scraping began (all traffic it serves).",
                ),
                &TARGET_LABELS,
            )?,
            engine_ttft_count: CounterVec::new(
                Opts::new(
                    "llmprobe_engine_ttft_observations_total",
                    "Count of the engine's own TTFT observations since scraping began (all traffic it serves).",
                ),
                &TARGET_LABELS,
            )?,
            histograms: Arc::new(LatencyHistograms::new()?),
            capacity: [
                gauge(
                    "llmprobe_capacity_max_concurrent_sequences",
                    "Capacity model: max concurrent sequences per replica at the configured context (vLLM's definition).",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_capacity_kv_cache_tokens",
                    "Capacity model: KV cache pool in tokens per replica.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_capacity_kv_bytes_per_token",
                    "Capacity model: KV cache bytes per token per GPU.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_capacity_weight_bytes",
                    "Capacity model: weight bytes per GPU.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_capacity_decode_tokens_per_second",
                    "Capacity model: aggregate decode tokens/s at the largest batch that fits, all replicas.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_capacity_cost_per_million_output_tokens_dollars",
                    "Capacity model: dollars per million output tokens at full batch.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_capacity_headroom_ratio",
                    "1 - running / max concurrent sequences (live engine numbers when scraped, else the model).",
                    &TARGET_LABELS,
                )?,
            ],
            engine: [
                gauge(
                    "llmprobe_engine_scrape_success",
                    "Whether the last scrape of the engine's /metrics succeeded.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_scrape_duration_seconds",
                    "Duration of the last engine scrape.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_running_requests",
                    "Requests running in the engine.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_waiting_requests",
                    "Requests waiting in the engine's queue.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_kv_cache_usage_ratio",
                    "Engine KV cache usage, 0..1.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_kv_cache_tokens",
                    "Live KV cache capacity in tokens, as the engine reports it.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_max_concurrent_sequences",
                    "Live KV cache tokens divided by the context length.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_generation_tokens_per_second",
                    "Engine generation throughput over the last scrape interval.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_cost_per_million_output_tokens_dollars",
                    "Live dollars per million output tokens from the observed rate and gpu_hourly.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_engine_ttft_mean_seconds",
                    "Server-side mean TTFT over the last scrape interval.",
                    &TARGET_LABELS,
                )?,
                gauge(
                    "llmprobe_ttft_client_server_gap_seconds",
                    "Client mean TTFT minus server mean TTFT over the same interval.",
                    &TARGET_LABELS,
                )?,
            ],
            reload_ok: IntGauge::new(
                "llmprobe_config_last_reload_successful",
                "Whether the last configuration reload succeeded.",
            )?,
            reload_ts: Gauge::new(
                "llmprobe_config_last_reload_success_timestamp_seconds",
                "Unix time of the last successful configuration reload.",
            )?,
            targets: IntGauge::new("llmprobe_targets", "Targets configured.")?,
            registry,
        };
        let build_info = IntGaugeVec::new(
            Opts::new("llmprobe_build_info", "Build information; value 1."),
            &["version"],
        )?;
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let r = &m.registry;
        r.register(Box::new(build_info))?;
        for c in [
            &m.requests,
            &m.failures,
            &m.goodput,
            &m.prompt_tokens,
            &m.output_tokens,
            &m.skipped,
        ] {
            r.register(Box::new(c.clone()))?;
        }
        r.register(Box::new(m.cost.clone()))?;
        r.register(Box::new(m.slo_met.clone()))?;
        r.register(Box::new(m.engine_ttft_sum.clone()))?;
        r.register(Box::new(m.engine_ttft_count.clone()))?;
        r.register(Box::new(m.inflight.clone()))?;
        for g in [
            &m.last_success,
            &m.slo_ttft,
            &m.slo_tpot,
            &m.slo_e2e,
            &m.rate,
        ]
        .into_iter()
        .chain(m.capacity.iter())
        .chain(m.engine.iter())
        {
            r.register(Box::new(g.clone()))?;
        }
        r.register(Box::new(m.reload_ok.clone()))?;
        r.register(Box::new(m.reload_ts.clone()))?;
        r.register(Box::new(m.targets.clone()))?;
        r.register(Box::new(SharedCollector(m.histograms.clone())))?;
        register_process_collector(r);
        Ok(Arc::new(m))
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
        let h = self.histograms.resolve(l, &buckets.clone().normalized())?;
        let failures = failure_outcomes()
            .map(|o| {
                (
                    o,
                    self.failures
                        .with_label_values(&[target, model, scenario, o.as_str()]),
                )
            })
            .collect();
        let skipped = SKIP_REASONS.map(|r| {
            self.skipped
                .with_label_values(&[target, model, scenario, r.as_str()])
        });
        for (gauge, value) in [
            (&self.slo_ttft, slo.ttft),
            (&self.slo_tpot, slo.tpot),
            (&self.slo_e2e, slo.e2e),
        ] {
            match value {
                Some(v) => gauge.with_label_values(&l).set(v.as_secs_f64()),
                None => {
                    let _ = gauge.remove_label_values(&l);
                }
            }
        }
        let slo_met = [slo.ttft, slo.tpot, slo.e2e]
            .iter()
            .zip(SLIS)
            .map(|(limit, sli)| {
                let labels = [target, model, scenario, sli];
                match limit {
                    Some(_) => Some(self.slo_met.with_label_values(&labels)),
                    None => {
                        // An SLI the scenario no longer configures stops being exported.
                        let _ = self.slo_met.remove_label_values(&labels);
                        None
                    }
                }
            })
            .collect::<Vec<_>>();
        let slo_met: [Option<IntCounter>; 3] = slo_met
            .try_into()
            .map_err(|_| anyhow::anyhow!("expected three SLIs"))?;
        let [ttft, tpot, itl, e2e, dispatch_lag] = h.h;
        Ok(ScenarioSeries {
            requests: self.requests.with_label_values(&l),
            failures,
            goodput: self.goodput.with_label_values(&l),
            prompt_tokens: self.prompt_tokens.with_label_values(&l),
            output_tokens: self.output_tokens.with_label_values(&l),
            cost: match price {
                Some(p) => Some((p, self.cost.with_label_values(&l))),
                None => {
                    // A price removed on reload: no frozen cost series stays behind.
                    let _ = self.cost.remove_label_values(&l);
                    None
                }
            },
            inflight: self.inflight.with_label_values(&l),
            last_success: self.last_success.with_label_values(&l),
            skipped,
            slo_met,
            ttft,
            tpot,
            itl,
            e2e,
            dispatch_lag,
        })
    }

    /// Publishes a scenario's configured probe rate (per second).
    pub fn set_rate(&self, target: &str, model: &str, scenario: &str, rate_hz: f64) {
        set_or_remove(&self.rate, &[target, model, scenario], Some(rate_hz));
    }

    /// Removes every series of one target × scenario (the target left the config).
    pub fn remove_scenario(&self, target: &str, model: &str, scenario: &str) {
        let l = [target, model, scenario];
        // `remove_label_values` fails only when the series does not exist: nothing to do.
        for c in [
            &self.requests,
            &self.goodput,
            &self.prompt_tokens,
            &self.output_tokens,
        ] {
            let _ = c.remove_label_values(&l);
        }
        let _ = self.cost.remove_label_values(&l);
        let _ = self.inflight.remove_label_values(&l);
        for sli in SLIS {
            let _ = self
                .slo_met
                .remove_label_values(&[target, model, scenario, sli]);
        }
        for g in [
            &self.last_success,
            &self.slo_ttft,
            &self.slo_tpot,
            &self.slo_e2e,
            &self.rate,
        ] {
            let _ = g.remove_label_values(&l);
        }
        for o in failure_outcomes() {
            let _ = self
                .failures
                .remove_label_values(&[target, model, scenario, o.as_str()]);
        }
        for r in SKIP_REASONS {
            let _ = self
                .skipped
                .remove_label_values(&[target, model, scenario, r.as_str()]);
        }
        self.histograms.remove(l);
    }

    /// Publishes the capacity model's gauges for a target.
    pub fn set_capacity(&self, target: &str, model: &str, c: &CapacityGauges) {
        let l = [target, model];
        let set = |i: usize, v: Option<f64>| set_or_remove(&self.capacity[i], &l, v);
        set(CAP_MAX_SEQS, Some(c.max_concurrent_sequences));
        set(CAP_KV_TOKENS, Some(c.kv_cache_tokens));
        set(CAP_KV_BYTES, Some(c.kv_bytes_per_token));
        set(CAP_WEIGHT_BYTES, Some(c.weight_bytes));
        set(CAP_DECODE_TPS, Some(c.decode_tokens_per_second));
        set(CAP_COST, c.cost_per_million_output_tokens);
    }

    /// Publishes headroom (absent when nothing says how many sequences run).
    pub fn set_headroom(&self, target: &str, model: &str, ratio: Option<f64>) {
        set_or_remove(&self.capacity[CAP_HEADROOM], &[target, model], ratio);
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
        self.engine[ENG_SUCCESS]
            .with_label_values(&l)
            .set(if success { 1.0 } else { 0.0 });
        self.engine[ENG_DURATION]
            .with_label_values(&l)
            .set(duration_seconds);
        let set = |i: usize, v: Option<f64>| set_or_remove(&self.engine[i], &l, v);
        set(ENG_RUNNING, g.running);
        set(ENG_WAITING, g.waiting);
        set(ENG_KV_USAGE, g.kv_cache_usage_ratio);
        set(ENG_KV_TOKENS, g.kv_cache_tokens);
        set(ENG_MAX_SEQS, g.max_concurrent_sequences);
        set(ENG_GEN_TPS, g.generation_tokens_per_second);
        set(ENG_COST, g.cost_per_million_output_tokens);
        set(ENG_TTFT_MEAN, g.ttft_mean_seconds);
        set(ENG_TTFT_GAP, g.ttft_client_server_gap_seconds);
        for (c, delta) in [
            (&self.engine_ttft_sum, g.ttft_sum_delta),
            (&self.engine_ttft_count, g.ttft_count_delta),
        ] {
            // A counter only grows: negative or non-finite deltas never reach it.
            if let Some(d) = delta.filter(|d| d.is_finite() && *d >= 0.0) {
                c.with_label_values(&l).inc_by(d);
            }
        }
    }

    /// Removes every capacity and engine gauge of a target.
    pub fn remove_target(&self, target: &str, model: &str) {
        self.remove_capacity(target, model);
        self.remove_engine(target, model);
    }

    /// Removes the capacity-model gauges of a target (headroom stays: it may come from
    /// the engine).
    pub fn remove_capacity(&self, target: &str, model: &str) {
        for g in &self.capacity[..CAP_HEADROOM] {
            let _ = g.remove_label_values(&[target, model]);
        }
    }

    /// Removes the engine-scrape gauges of a target, and the headroom derived from them.
    pub fn remove_engine(&self, target: &str, model: &str) {
        for g in self.engine.iter().chain([&self.capacity[CAP_HEADROOM]]) {
            let _ = g.remove_label_values(&[target, model]);
        }
        let _ = self.engine_ttft_sum.remove_label_values(&[target, model]);
        let _ = self.engine_ttft_count.remove_label_values(&[target, model]);
    }

    /// Records the outcome of a configuration (re)load.
    pub fn set_reload(&self, ok: bool) {
        self.reload_ok.set(i64::from(ok));
        if ok {
            self.reload_ts.set(unix_now());
        }
    }

    pub fn set_targets(&self, n: usize) {
        self.targets.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// The exposition text (`text/plain; version=0.0.4`).
    pub fn render(&self) -> anyhow::Result<String> {
        let families = self.registry.gather();
        let mut buf = Vec::with_capacity(16 * 1024);
        TextEncoder::new().encode(&families, &mut buf)?;
        Ok(String::from_utf8(buf)?)
    }
}

fn set_or_remove(g: &GaugeVec, labels: &[&str], v: Option<f64>) {
    match v {
        Some(v) if v.is_finite() => g.with_label_values(labels).set(v),
        _ => {
            let _ = g.remove_label_values(labels);
        }
    }
}

/// Registers an `Arc`-shared collector (the registry wants to own a box).
struct SharedCollector<C>(Arc<C>);

impl<C: Collector> Collector for SharedCollector<C> {
    fn desc(&self) -> Vec<&Desc> {
        self.0.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.0.collect()
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

/// Seconds since the Unix epoch (wall clock, for `*_timestamp_seconds` gauges).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Most per-token ITL observations one probe may add (far above any scenario's
/// `max_output_tokens`, which the daemon keeps at a few thousand).
pub const MAX_ITL_OBSERVATIONS_PER_PROBE: u64 = 1 << 16;

/// Pre-resolved child series of one target × scenario: the hot path.
pub struct ScenarioSeries {
    requests: IntCounter,
    failures: Vec<(Outcome, IntCounter)>,
    goodput: IntCounter,
    prompt_tokens: IntCounter,
    output_tokens: IntCounter,
    cost: Option<(TokenPrice, prometheus::Counter)>,
    inflight: IntGauge,
    last_success: Gauge,
    skipped: [IntCounter; 2],
    /// `llmprobe_slo_met_requests_total` per SLI (ttft, tpot, e2e), when configured.
    slo_met: [Option<IntCounter>; 3],
    ttft: Histogram,
    tpot: Histogram,
    itl: Histogram,
    e2e: Histogram,
    dispatch_lag: Histogram,
}

impl ScenarioSeries {
    /// Feeds one finished probe into every metric, using the record's own derived
    /// figures (one definition of TTFT, TPOT, ITL, E2E: `record.rs`). Returns whether
    /// the probe counted as good.
    pub fn observe(&self, r: &RequestRecord, slo: &Slo) -> bool {
        self.requests.inc();
        self.dispatch_lag.observe(r.dispatch_lag().as_secs_f64());
        // Spend counts only probes the server answered: a connect or TLS failure sent
        // no prompt (the record's prompt count falls back to what it meant to send).
        if r.http_status.is_some() {
            self.prompt_tokens.inc_by(u64::from(r.prompt_tokens()));
            self.output_tokens.inc_by(u64::from(r.output_tokens()));
            if let Some((price, c)) = &self.cost {
                c.inc_by(price.cost(r.prompt_tokens(), r.output_tokens()));
            }
        }
        if !r.is_success() {
            if let Some((_, c)) = self.failures.iter().find(|(o, _)| *o == r.outcome) {
                c.inc();
            }
            return false;
        }
        self.last_success.set(unix_now());
        if let Some(t) = r.ttft() {
            self.ttft.observe(t.as_secs_f64());
        }
        if let Some(t) = r.tpot() {
            self.tpot.observe(t.as_secs_f64());
        }
        // Per-token ITL: each sample stands for `tokens` tokens, so it is observed that
        // many times (a 4-token chunk after 10 ms is four 2.5 ms observations). The
        // client rejects token counts above the scenario's `max_output_tokens`; the cap
        // here keeps one absurd record from ever looping for long regardless.
        let mut left = MAX_ITL_OBSERVATIONS_PER_PROBE;
        for (gap, tokens) in r.itl() {
            let n = u64::from(tokens).min(left);
            left -= n;
            let v = gap.as_secs_f64();
            for _ in 0..n {
                self.itl.observe(v);
            }
            if left == 0 {
                break;
            }
        }
        if let Some(t) = r.e2e() {
            self.e2e.observe(t.as_secs_f64());
        }
        // Per-SLI attainment against the scenario's own thresholds (the recording rules
        // use these instead of a fixed `le`). TPOT is met without a TPOT (one output
        // token), as in `is_good`.
        let met = [
            slo.ttft.map(|l| r.ttft().is_some_and(|v| v <= l)),
            slo.tpot.map(|l| r.tpot().is_none_or(|v| v <= l)),
            slo.e2e.map(|l| r.e2e().is_some_and(|v| v <= l)),
        ];
        for (counter, met) in self.slo_met.iter().zip(met) {
            if let (Some(c), Some(true)) = (counter, met) {
                c.inc();
            }
        }
        let good = r.is_good(slo);
        if good {
            self.goodput.inc();
        }
        good
    }

    /// Counts an arrival that was dropped without sending.
    pub fn skip(&self, reason: SkipReason) {
        let i = match reason {
            SkipReason::MaxInflight => 0,
            SkipReason::TokenBudget => 1,
        };
        self.skipped[i].inc();
    }

    /// The in-flight gauge (the daemon increments it around each probe).
    pub fn inflight(&self) -> &IntGauge {
        &self.inflight
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TokenSource;
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

    #[test]
    fn buckets_are_vllm_plus_every_slo_threshold() {
        let slo = Slo {
            ttft: Some(ms(300)),
            tpot: Some(ms(40)),
            e2e: Some(ms(2000)),
        };
        let b = Buckets::vllm().with_slos([&slo]);
        assert!(b.ttft.contains(&0.3) && b.ttft.contains(&0.25) && b.ttft.contains(&2560.0));
        assert!(b.tpot.contains(&0.04) && b.itl.contains(&0.04));
        // 2 s is already a vLLM E2E bucket: no duplicate.
        assert_eq!(b.e2e.iter().filter(|v| **v == 2.0).count(), 1);
        for v in [&b.ttft, &b.tpot, &b.itl, &b.e2e, &b.dispatch_lag] {
            assert!(v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
        }
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
        assert!(s.observe(&record(), &Slo::default()));
        let slo = Slo {
            ttft: Some(ms(40)),
            ..Slo::default()
        };
        assert!(!s.observe(&record(), &slo));
        let mut failed = record();
        failed.outcome = Outcome::Http429;
        s.observe(&failed, &Slo::default());
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
        s.observe(&r, &Slo::default());
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
        let slo = Slo {
            ttft: Some(ms(40)),
            tpot: Some(ms(10)),
            e2e: None,
        };
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
        s.observe(&record(), &slo);
        // One output token: no TPOT, so TPOT is met; TTFT 30 ms meets 40 ms.
        let mut one = RequestRecord::new(1, ms(0), ms(0));
        one.push_chunk(ms(30), 4, Some(1));
        one.usage_completion_tokens = Some(1);
        one.usage_prompt_tokens = Some(10);
        one.t_end = Some(ms(31));
        one.resolve_tokens(Some(TokenSource::Usage));
        s.observe(&one, &slo);
        // A failure meets nothing.
        let mut failed = one.clone();
        failed.outcome = Outcome::Http5xx;
        s.observe(&failed, &slo);
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
        s.observe(&refused, &Slo::default());
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
        let slo = Slo {
            ttft: Some(ms(250)),
            ..Slo::default()
        };
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
        s.observe(&record(), &Slo::default());
        let keep = m
            .scenario("kept", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        keep.observe(&record(), &Slo::default());
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
        let slo = Slo {
            ttft: Some(ms(123)),
            ..Slo::default()
        };
        let plain = m
            .scenario("a", "m", "s", &Slo::default(), None, &Buckets::vllm())
            .unwrap();
        plain.observe(&record(), &Slo::default());
        let own = Buckets::vllm().with_slos([&slo]);
        let s = m.scenario("b", "m", "s", &slo, None, &own).unwrap();
        s.observe(&record(), &slo);
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
        again.observe(&record(), &Slo::default());
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
