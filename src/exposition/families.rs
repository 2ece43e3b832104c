//! Every metric family of `llmprobe daemon` as data: name, type, help text, labels, unit
//! and, for histograms, the bucket layout. This list drives registration
//! (`Metrics::new`) and the removal of a target's or scenario's series; the named
//! constants are how the code refers to one family, except the latency histograms and
//! objective gauges, which the latency catalogue generates (`latency_histogram`,
//! `objective_gauge`). docs/metrics.md documents the same list (a test below keeps the
//! two equal).

use std::sync::LazyLock;

use super::buckets::Layout;
use crate::energy::Figure;
use crate::latency::Latency;
use crate::record::{CheckKind, GoldenVerdict, Outcome};
use crate::runner::SkipReason;

/// The Prometheus type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Whether samples are integers (`IntCounter`, `IntGauge`) or floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    Int,
    Float,
}

/// Which series a family has, which decides when they are created and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One series per target × model × scenario (× `extra` label value), removed with
    /// the scenario.
    Scenario,
    /// Capacity-model gauges of a target, removed when its capacity block goes.
    Capacity,
    /// Engine-scrape series of a target (and what is derived from them), removed when
    /// its `engine_metrics_url` goes.
    Engine,
    /// Probe results of one discovered replica × scenario (labels + `replica`),
    /// removed when the replica leaves the set.
    Replica,
    /// Endpoint-picker series of a target (`target, model`), removed when its
    /// `router_metrics_url` goes.
    Router,
    /// Engine-scrape series of one discovered replica (`target, model, replica`).
    ReplicaEngine,
    /// A target's fleet sums and discovery state, removed with its `replicas_from`.
    Fleet,
    /// One series per discovered replica whose labels are `target, model, replica` and
    /// the SD labels the allow-list keeps (names vary per target); its own collector,
    /// no registered handle.
    ReplicaInfo,
    /// A scenario kind's own series (`target, model, scenario`), declared, registered
    /// and removed by its kind (`src/daemon/kinds/`), not in [`FAMILIES`].
    Kind,
    /// The daemon's own series, never removed.
    Daemon,
    /// `llmprobe_shard_info`: labels `index, count`, one series, replaced on reload.
    Shard,
    /// The daemon's own series read from the OS at each scrape (cgroup CPU throttling),
    /// absent where unreadable; no registered handle.
    Process,
}

/// The label after a family's scope labels (`target, model, scenario` for a scenario
/// family), and its values.
#[derive(Debug, Clone, Copy)]
pub struct Extra {
    pub label: &'static str,
    pub values: fn() -> Vec<&'static str>,
}

/// One metric family.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub value: Value,
    pub help: &'static str,
    pub scope: Scope,
    /// The label after the scope's own labels, if any.
    pub extra: Option<Extra>,
    /// The base unit the name ends with (before `_total`), if it has one.
    pub unit: Option<&'static str>,
    /// Histograms: the layout of [`super::Buckets`] each series starts from (vLLM's ∪
    /// configured extras ∪ the scenario's own SLO thresholds).
    pub buckets: Option<Layout>,
}

/// Labels of every probe-result series, in this order.
pub const PROBE_LABELS: [&str; 3] = ["target", "model", "scenario"];
/// Labels of capacity and engine gauges, in this order.
pub const TARGET_LABELS: [&str; 2] = ["target", "model"];
/// Labels of a discovered replica's probe results, in this order.
pub const REPLICA_PROBE_LABELS: [&str; 4] = ["target", "model", "scenario", "replica"];
/// Labels of `llmprobe_shard_info`.
pub const SHARD_LABELS: [&str; 2] = ["index", "count"];
/// Labels of a discovered replica's engine series, in this order.
pub const REPLICA_LABELS: [&str; 3] = ["target", "model", "replica"];

impl Family {
    /// Every label name, in order.
    pub fn labels(&self) -> Vec<&'static str> {
        let mut labels = match self.scope {
            Scope::Scenario | Scope::Kind => PROBE_LABELS.to_vec(),
            Scope::Capacity | Scope::Engine | Scope::Router | Scope::Fleet => {
                TARGET_LABELS.to_vec()
            }
            Scope::Replica => REPLICA_PROBE_LABELS.to_vec(),
            Scope::ReplicaEngine | Scope::ReplicaInfo => REPLICA_LABELS.to_vec(),
            Scope::Daemon | Scope::Process => Vec::new(),
            Scope::Shard => SHARD_LABELS.to_vec(),
        };
        labels.extend(self.extra.map(|e| e.label));
        labels
    }

    /// The label values of every series of this family that belongs to `base` (the
    /// scope's own label values): `base` itself, or `base` + each `extra` value.
    pub fn series_of<'a>(&self, base: &[&'a str]) -> Vec<Vec<&'a str>> {
        match self.extra {
            None => vec![base.to_vec()],
            Some(e) => (e.values)()
                .into_iter()
                .map(|v: &'a str| base.iter().copied().chain([v]).collect())
                .collect(),
        }
    }
}

/// Failure outcomes, the `reason` values of `llmprobe_request_failures_total`.
pub fn failure_reasons() -> Vec<&'static str> {
    Outcome::ALL
        .into_iter()
        .filter(|o| !o.is_ok())
        .map(Outcome::as_str)
        .collect()
}

/// Every skip reason, in a stable order. The reason itself is the runner's
/// ([`SkipReason`]), so it is defined once.
pub fn skip_reasons() -> Vec<&'static str> {
    SkipReason::ALL
        .into_iter()
        .map(SkipReason::as_str)
        .collect()
}

/// The `check` label values, in the order of [`CheckKind::ALL`].
pub fn checks() -> Vec<&'static str> {
    CheckKind::ALL.into_iter().map(CheckKind::as_str).collect()
}

/// The `verdict` label values of `llmprobe_golden_answers_total`.
pub fn golden_verdicts() -> Vec<&'static str> {
    GoldenVerdict::LABELS.to_vec()
}

/// The `version` label value of `llmprobe_build_info`.
pub fn version() -> Vec<&'static str> {
    vec![env!("CARGO_PKG_VERSION")]
}

/// The `sli` label values: the latencies an objective may bound.
pub fn slis() -> Vec<&'static str> {
    Latency::objectives().map(Latency::name).collect()
}

const fn family(name: &'static str, kind: Kind, value: Value, help: &'static str) -> Family {
    Family {
        name,
        kind,
        value,
        help,
        scope: Scope::Scenario,
        extra: None,
        unit: None,
        buckets: None,
    }
}

/// A counter family (integer, scenario scope until `scope` says otherwise).
pub const fn counter(name: &'static str, help: &'static str) -> Family {
    family(name, Kind::Counter, Value::Int, help)
}

/// A gauge family (float, scenario scope until `scope` says otherwise).
pub const fn gauge(name: &'static str, help: &'static str) -> Family {
    family(name, Kind::Gauge, Value::Float, help)
}

/// A histogram family in seconds with the bucket layout `layout`.
pub const fn histogram(name: &'static str, help: &'static str, layout: Layout) -> Family {
    Family {
        unit: Some("seconds"),
        buckets: Some(layout),
        ..family(name, Kind::Histogram, Value::Float, help)
    }
}

impl Family {
    pub const fn scope(self, scope: Scope) -> Self {
        Family { scope, ..self }
    }

    /// The family with one more label, whose values are `values()`.
    pub const fn extra(self, label: &'static str, values: fn() -> Vec<&'static str>) -> Self {
        Family {
            extra: Some(Extra { label, values }),
            ..self
        }
    }

    pub const fn unit(self, unit: &'static str) -> Self {
        Family {
            unit: Some(unit),
            ..self
        }
    }

    pub const fn float(self) -> Self {
        Family {
            value: Value::Float,
            ..self
        }
    }

    pub const fn int(self) -> Self {
        Family {
            value: Value::Int,
            ..self
        }
    }
}

// Probe results, per target × model × scenario.

pub const REQUESTS: Family = counter("llmprobe_requests_total", "Probes completed (any outcome).");
pub const FAILURES: Family = counter(
    "llmprobe_request_failures_total",
    "Probes that failed, by reason.",
)
.extra("reason", failure_reasons);
pub const GOODPUT: Family = counter(
    "llmprobe_goodput_requests_total",
    "Probes that succeeded and met every SLO of their scenario.",
);
pub const SLO_MET: Family = counter(
    "llmprobe_slo_met_requests_total",
    "Successful probes meeting the scenario's threshold for one SLI (ttft, tpot, e2e, ttfa; only configured SLIs).",
)
.extra("sli", slis);
pub const PROBE_RATE: Family = gauge(
    "llmprobe_probe_rate_per_second",
    "The scenario's configured probe rate (Poisson arrivals per second).",
);
pub const PROMPT_TOKENS: Family = counter(
    "llmprobe_prompt_tokens_total",
    "Prompt tokens sent by probes.",
)
.unit("tokens");
pub const OUTPUT_TOKENS: Family = counter(
    "llmprobe_output_tokens_total",
    "Output tokens received by probes.",
)
.unit("tokens");
pub const REASONING_TOKENS: Family = counter(
    "llmprobe_reasoning_tokens_total",
    "Output tokens that were reasoning (included in llmprobe_output_tokens_total).",
)
.unit("tokens");
pub const COST: Family = counter(
    "llmprobe_probe_cost_dollars_total",
    "The probes' own spend in dollars, when the target has a price.",
)
.float()
.unit("dollars");
pub const INFLIGHT: Family = gauge("llmprobe_inflight_requests", "Probes in flight now.").int();
pub const LAST_SUCCESS: Family = gauge(
    "llmprobe_last_success_timestamp_seconds",
    "Unix time of the last successful probe.",
)
.unit("seconds");
pub const CHECK_RUNS: Family = counter(
    "llmprobe_check_runs_total",
    "Successful probes whose answer this check judged (only checks the scenario configures).",
)
.extra("check", checks);
pub const CHECK_FAILURES: Family = counter(
    "llmprobe_check_failures_total",
    "Successful probes whose answer failed this check (not good, not a request failure).",
)
.extra("check", checks);
pub const CHECK_LAST_PASSED: Family = gauge(
    "llmprobe_check_last_passed",
    "1 when this check passed on the last judged answer, 0 when it failed.",
)
.int()
.extra("check", checks);
pub const GOLDEN_ANSWERS: Family = counter(
    "llmprobe_golden_answers_total",
    "Golden-set answers judged (successful probes only), by verdict.",
)
.extra("verdict", golden_verdicts);
pub const GOLDEN_WINDOW: Family = gauge(
    "llmprobe_golden_window_answers",
    "Judged golden-set answers in the rolling window (at most its size).",
)
.int();
pub const GOLDEN_ACCURACY: Family = gauge(
    "llmprobe_golden_accuracy_ratio",
    "Correct golden-set answers / judged answers, over the rolling window.",
)
.unit("ratio");
pub const GOLDEN_LOWER: Family = gauge(
    "llmprobe_golden_accuracy_lower_ratio",
    "Lower bound of the 95% Wilson score interval of the rolling golden-set accuracy.",
)
.unit("ratio");
pub const GOLDEN_UPPER: Family = gauge(
    "llmprobe_golden_accuracy_upper_ratio",
    "Upper bound of the 95% Wilson score interval of the rolling golden-set accuracy.",
)
.unit("ratio");
pub const GOLDEN_BASELINE: Family = gauge(
    "llmprobe_golden_baseline_ratio",
    "The validated model's golden-set accuracy, as configured (absent when unset).",
)
.unit("ratio");
pub const SKIPPED: Family = counter(
    "llmprobe_probes_skipped_total",
    "Arrivals dropped without sending, by reason.",
)
.extra("reason", skip_reasons);

// The capacity model, per target.

const fn capacity(name: &'static str, help: &'static str) -> Family {
    gauge(name, help).scope(Scope::Capacity)
}

pub const CAP_MAX_SEQS: Family = capacity(
    "llmprobe_capacity_max_concurrent_sequences",
    "Capacity model: max concurrent sequences per replica at the configured context (vLLM's definition).",
);
pub const CAP_KV_TOKENS: Family = capacity(
    "llmprobe_capacity_kv_cache_tokens",
    "Capacity model: KV cache pool in tokens per replica.",
)
.unit("tokens");
pub const CAP_KV_BYTES: Family = capacity(
    "llmprobe_capacity_kv_bytes_per_token",
    "Capacity model: KV cache bytes per token per GPU.",
);
pub const CAP_WEIGHT_BYTES: Family = capacity(
    "llmprobe_capacity_weight_bytes",
    "Capacity model: weight bytes per GPU.",
)
.unit("bytes");
pub const CAP_DECODE_TPS: Family = capacity(
    "llmprobe_capacity_decode_tokens_per_second",
    "Capacity model: aggregate decode tokens/s at the largest batch that fits, all replicas.",
);
pub const CAP_COST: Family = capacity(
    "llmprobe_capacity_cost_per_million_output_tokens_dollars",
    "Capacity model: dollars per million output tokens at full batch.",
)
.unit("dollars");

// The endpoint picker in front of a target's engines (llm-d, the Gateway API Inference
// Extension), per target.

const fn router(name: &'static str, help: &'static str) -> Family {
    gauge(name, help).scope(Scope::Router)
}

pub const ROUTER_SUCCESS: Family = router(
    "llmprobe_router_scrape_success",
    "Whether the last scrape of the endpoint picker's /metrics succeeded.",
);
pub const ROUTER_READY: Family = router(
    "llmprobe_router_ready_endpoints",
    "Ready endpoints in the picker's pool.",
);
pub const ROUTER_KV_USAGE: Family = router(
    "llmprobe_router_kv_cache_usage_ratio",
    "The pool's mean KV-cache utilisation as the picker sees it, 0..1.",
)
.unit("ratio");
pub const ROUTER_QUEUE: Family = router(
    "llmprobe_router_queue_size",
    "The pool's mean engine queue length per endpoint as the picker sees it.",
);
pub const ROUTER_SATURATION: Family = router(
    "llmprobe_router_flow_control_saturation",
    "Flow control's effective pool saturation (1 is the point where it holds requests back).",
);
pub const ROUTER_FLOW_QUEUE: Family = router(
    "llmprobe_router_flow_control_queue_size",
    "Requests held in the picker's flow-control queues.",
);
pub const ROUTER_PREFIX_HIT: Family = router(
    "llmprobe_router_prefix_hit_ratio",
    "Mean prefix-index hit ratio of the picker's lookups since the last scrape.",
)
.unit("ratio");
pub const ROUTER_SLO_VIOLATIONS: Family = counter(
    "llmprobe_router_slo_violations_total",
    "Requests the picker counted as violating their latency objective, by objective.",
)
.float()
.scope(Scope::Router)
.extra("sli", router_slis);

/// The `sli` values of `llmprobe_router_slo_violations_total`.
pub fn router_slis() -> Vec<&'static str> {
    vec!["ttft", "tpot"]
}

// The engine scrape, per target. Headroom is a capacity figure, but it is derived from
// the live engine numbers when there are any, so it goes with them.

const fn engine(name: &'static str, help: &'static str) -> Family {
    gauge(name, help).scope(Scope::Engine)
}

pub const HEADROOM: Family = engine(
    "llmprobe_capacity_headroom_ratio",
    "1 - running / max concurrent sequences (live engine numbers when scraped, else the model).",
)
.unit("ratio");
pub const ENG_SUCCESS: Family = engine(
    "llmprobe_engine_scrape_success",
    "Whether the last scrape of the engine's /metrics succeeded.",
);
pub const ENG_DURATION: Family = engine(
    "llmprobe_engine_scrape_duration_seconds",
    "Duration of the last engine scrape.",
)
.unit("seconds");
pub const ENG_RUNNING: Family = engine(
    "llmprobe_engine_running_requests",
    "Requests running in the engine.",
);
pub const ENG_WAITING: Family = engine(
    "llmprobe_engine_waiting_requests",
    "Requests waiting in the engine's queue.",
);
pub const ENG_KV_USAGE: Family = engine(
    "llmprobe_engine_kv_cache_usage_ratio",
    "Engine KV cache usage, 0..1.",
)
.unit("ratio");
pub const ENG_KV_TOKENS: Family = engine(
    "llmprobe_engine_kv_cache_tokens",
    "Live KV cache capacity in tokens, as the engine reports it.",
)
.unit("tokens");
pub const ENG_MAX_SEQS: Family = engine(
    "llmprobe_engine_max_concurrent_sequences",
    "Live max concurrent sequences: llama.cpp's slots, else live KV cache tokens divided by the context length.",
);
pub const ENG_GEN_TPS: Family = engine(
    "llmprobe_engine_generation_tokens_per_second",
    "Engine generation throughput over the last scrape interval.",
);
pub const ENG_COST: Family = engine(
    "llmprobe_engine_cost_per_million_output_tokens_dollars",
    "Live dollars per million output tokens from the observed rate and gpu_hourly.",
)
.unit("dollars");
pub const ENG_TTFT_MEAN: Family = engine(
    "llmprobe_engine_ttft_mean_seconds",
    "Server-side mean TTFT over the last scrape interval.",
)
.unit("seconds");
pub const ENG_TTFT_GAP: Family = engine(
    "llmprobe_ttft_client_server_gap_seconds",
    "Client mean TTFT minus server mean TTFT over the same interval.",
)
.unit("seconds");
pub const ENG_TTFT_SUM: Family = counter(
    "llmprobe_engine_ttft_observed_seconds_total",
    "Sum of the engine's own TTFT observations since scraping began (all traffic it serves).",
)
.float()
.scope(Scope::Engine)
.unit("seconds");
pub const ENG_TTFT_COUNT: Family = counter(
    "llmprobe_engine_ttft_observations_total",
    "Count of the engine's own TTFT observations since scraping began (all traffic it serves).",
)
.float()
.scope(Scope::Engine);

pub const ENG_PREFIX_HIT: Family = engine(
    "llmprobe_engine_prefix_cache_hit_ratio",
    "The engine's own prefix-cache hit ratio over the last scrape interval (vLLM: hits / queries; SGLang: its cache_hit_rate).",
)
.unit("ratio");
pub const ENG_GPU_SUCCESS: Family = engine(
    "llmprobe_engine_gpu_scrape_success",
    "Whether the last read of the engine's GPU telemetry (gpu_metrics) succeeded.",
);

// Discovered replicas: a slim set per replica × scenario (the latency histograms come
// from the catalogue, see `replica_histogram`), per replica engine gauges, and the
// target's fleet sums. Own names, so a `sum by (target)` over the front door's series
// never mixes replica probes in.

const fn replica(f: Family) -> Family {
    f.scope(Scope::Replica)
}

pub const REPLICA_REQUESTS: Family = replica(counter(
    "llmprobe_replica_requests_total",
    "Probes of one discovered replica completed (any outcome).",
));
pub const REPLICA_FAILURES: Family = replica(counter(
    "llmprobe_replica_request_failures_total",
    "Probes of one discovered replica that failed, by reason.",
))
.extra("reason", failure_reasons);
pub const REPLICA_GOODPUT: Family = replica(counter(
    "llmprobe_replica_goodput_requests_total",
    "Probes of one discovered replica that succeeded and met every SLO of their scenario.",
));
pub const REPLICA_LAST_SUCCESS: Family = replica(gauge(
    "llmprobe_replica_last_success_timestamp_seconds",
    "Unix time of the last successful probe of one discovered replica.",
))
.unit("seconds");

const fn replica_engine(name: &'static str, help: &'static str) -> Family {
    gauge(name, help).scope(Scope::ReplicaEngine)
}

pub const REPLICA_INFO: Family = gauge(
    "llmprobe_replica_info",
    "A discovered replica, value 1, with the SD labels the target's allow-list keeps (join on replica).",
)
.int()
.scope(Scope::ReplicaInfo);
pub const REPLICA_ENG_SUCCESS: Family = replica_engine(
    "llmprobe_replica_engine_scrape_success",
    "Whether the last scrape of this replica's engine /metrics succeeded.",
);
pub const REPLICA_ENG_RUNNING: Family = replica_engine(
    "llmprobe_replica_engine_running_requests",
    "Requests running in this replica's engine.",
);
pub const REPLICA_ENG_WAITING: Family = replica_engine(
    "llmprobe_replica_engine_waiting_requests",
    "Requests waiting in this replica's engine queue.",
);
pub const REPLICA_ENG_KV_USAGE: Family = replica_engine(
    "llmprobe_replica_engine_kv_cache_usage_ratio",
    "This replica's KV cache usage, 0..1.",
)
.unit("ratio");
pub const REPLICA_ENG_MAX_SEQS: Family = replica_engine(
    "llmprobe_replica_engine_max_concurrent_sequences",
    "This replica's live max concurrent sequences (as llmprobe_engine_max_concurrent_sequences).",
);
pub const REPLICA_ENG_GEN_TPS: Family = replica_engine(
    "llmprobe_replica_engine_generation_tokens_per_second",
    "This replica's generation throughput over the last scrape interval.",
);
pub const REPLICA_HEADROOM: Family = replica_engine(
    "llmprobe_replica_headroom_ratio",
    "This replica's headroom (as llmprobe_capacity_headroom_ratio).",
)
.unit("ratio");

const fn fleet(name: &'static str, help: &'static str) -> Family {
    gauge(name, help).scope(Scope::Fleet)
}

pub const FLEET_REPLICAS: Family = fleet(
    "llmprobe_fleet_replicas",
    "Replicas in the discovered set (at most max_replicas).",
);
pub const FLEET_SCRAPED: Family = fleet(
    "llmprobe_fleet_scraped_replicas",
    "Replicas whose engine scrape succeeded in the last round: the fleet sums are over these.",
);
pub const FLEET_RUNNING: Family = fleet(
    "llmprobe_fleet_running_requests",
    "Requests running, summed over the scraped replicas.",
);
pub const FLEET_WAITING: Family = fleet(
    "llmprobe_fleet_waiting_requests",
    "Requests waiting, summed over the scraped replicas.",
);
pub const FLEET_MAX_SEQS: Family = fleet(
    "llmprobe_fleet_max_concurrent_sequences",
    "Live max concurrent sequences, summed over the scraped replicas.",
);
pub const FLEET_QUEUEING: Family = fleet(
    "llmprobe_fleet_queueing_replicas",
    "Scraped replicas with requests waiting.",
);
pub const FLEET_HEADROOM: Family = fleet(
    "llmprobe_fleet_headroom_ratio",
    "Fleet headroom, 0..1: 0 when any replica queues, else the smaller of 1 - running / max sequences (sums) and 1 - mean KV usage.",
)
.unit("ratio");
pub const FLEET_GEN_TPS: Family = fleet(
    "llmprobe_fleet_generation_tokens_per_second",
    "Generation throughput summed over the scraped replicas.",
);
pub const FLEET_COST: Family = fleet(
    "llmprobe_fleet_cost_per_million_output_tokens_dollars",
    "Live dollars per million output tokens of the fleet: gpu_hourly of the scraped replicas over their summed generation rate.",
)
.unit("dollars");
pub const FLEET_GPU_SUCCESS: Family = fleet(
    "llmprobe_fleet_gpu_scrape_success",
    "Whether the last round's read of the fleet's GPU telemetry (gpu_metrics) succeeded.",
);
pub const DISCOVERY_ERRORS: Family = counter(
    "llmprobe_discovery_errors_total",
    "Replica discovery looks that failed (the last good set stays in force).",
)
.scope(Scope::Fleet);
pub const DISCOVERY_LAST_SUCCESS: Family = fleet(
    "llmprobe_discovery_last_success_timestamp_seconds",
    "Unix time of the last successful replica discovery look.",
)
.unit("seconds");
pub const DISCOVERY_REFUSED: Family = fleet(
    "llmprobe_discovery_refused_replicas",
    "Replicas found beyond max_replicas at the last look, left unprobed.",
);

// The daemon itself.

pub const BUILD_INFO: Family = gauge("llmprobe_build_info", "Build information; value 1.")
    .int()
    .scope(Scope::Daemon)
    .extra("version", version);
pub const RELOAD_OK: Family = gauge(
    "llmprobe_config_last_reload_successful",
    "Whether the last configuration reload succeeded.",
)
.int()
.scope(Scope::Daemon);
pub const RELOAD_TS: Family = gauge(
    "llmprobe_config_last_reload_success_timestamp_seconds",
    "Unix time of the last successful configuration reload.",
)
.scope(Scope::Daemon)
.unit("seconds");
pub const TARGETS: Family = gauge(
    "llmprobe_targets",
    "Targets this prober probes (its shard's share of the config's).",
)
.int()
.scope(Scope::Daemon);
pub const SHARD_INFO: Family = gauge(
    "llmprobe_shard_info",
    "This prober's shard (index of count); value 1.",
)
.int()
.scope(Scope::Shard);

// The prober's own error bar.

pub const SELF_CHECK_TTFT_ERROR: Family = histogram(
    "llmprobe_self_check_ttft_error_seconds",
    "Self-probes: measured TTFT minus the reference engine's (what this process adds).",
    Layout::SelfCheckError,
)
.scope(Scope::Daemon);
pub const SELF_CHECK_ITL_ERROR: Family = histogram(
    "llmprobe_self_check_itl_error_seconds",
    "Self-probes: distance of each per-token ITL from the reference engine's.",
    Layout::SelfCheckError,
)
.scope(Scope::Daemon);
pub const SELF_CHECK_DISPATCH_LAG: Family = histogram(
    "llmprobe_self_check_dispatch_lag_seconds",
    "Self-probes: actual send time minus scheduled send time.",
    Layout::Of(Latency::DispatchLag),
)
.scope(Scope::Daemon);
pub const SELF_CHECK_PROBES: Family = counter(
    "llmprobe_self_check_probes_total",
    "Self-probes completed (any outcome).",
)
.scope(Scope::Daemon);
pub const SELF_CHECK_FAILURES: Family = counter(
    "llmprobe_self_check_failures_total",
    "Self-probes that failed: the prober cannot even measure a loopback engine.",
)
.scope(Scope::Daemon);
pub const CGROUP_THROTTLED_SECONDS: Family = counter(
    "llmprobe_cgroup_cpu_throttled_seconds_total",
    "Time the process' cgroup was CPU-throttled (cpu.stat throttled_usec); absent where unreadable.",
)
.float()
.scope(Scope::Process)
.unit("seconds");
pub const CGROUP_THROTTLED_PERIODS: Family = counter(
    "llmprobe_cgroup_cpu_throttled_periods_total",
    "CFS periods in which the process' cgroup was throttled (cpu.stat nr_throttled).",
)
.scope(Scope::Process);
pub const CGROUP_PERIODS: Family = counter(
    "llmprobe_cgroup_cpu_periods_total",
    "CFS periods of the process' cgroup with a CPU limit in force (cpu.stat nr_periods).",
)
.scope(Scope::Process);

/// Every family but the scenario kinds' own, in the order of docs/metrics.md (the
/// kinds' follow, in the order of `daemon::kinds::KINDS`): the latency histograms and
/// objective gauges come from the latency catalogue (`crate::latency`).
pub static FAMILIES: LazyLock<Vec<Family>> = LazyLock::new(|| {
    let histograms = Latency::ALL.into_iter().filter_map(latency_histogram);
    let objectives = Latency::objectives().filter_map(objective_gauge);
    let replica_histograms = Latency::ALL.into_iter().filter_map(replica_histogram);
    [REQUESTS, FAILURES, GOODPUT, SLO_MET, PROBE_RATE]
        .into_iter()
        .chain(histograms)
        .chain([
            PROMPT_TOKENS,
            OUTPUT_TOKENS,
            REASONING_TOKENS,
            COST,
            INFLIGHT,
            LAST_SUCCESS,
        ])
        .chain(objectives)
        .chain([
            SKIPPED,
            CHECK_RUNS,
            CHECK_FAILURES,
            CHECK_LAST_PASSED,
            GOLDEN_ANSWERS,
            GOLDEN_WINDOW,
            GOLDEN_ACCURACY,
            GOLDEN_LOWER,
            GOLDEN_UPPER,
            GOLDEN_BASELINE,
            CAP_MAX_SEQS,
            CAP_KV_TOKENS,
            CAP_KV_BYTES,
            CAP_WEIGHT_BYTES,
            CAP_DECODE_TPS,
            CAP_COST,
            HEADROOM,
            ENG_SUCCESS,
            ENG_DURATION,
            ENG_RUNNING,
            ENG_WAITING,
            ENG_KV_USAGE,
            ENG_KV_TOKENS,
            ENG_MAX_SEQS,
            ENG_GEN_TPS,
            ENG_COST,
            ENG_TTFT_MEAN,
            ENG_TTFT_GAP,
            ENG_TTFT_SUM,
            ENG_TTFT_COUNT,
            ENG_PREFIX_HIT,
            ENG_GPU_SUCCESS,
        ])
        .chain(energy_families(Scope::Engine))
        .chain([
            ROUTER_SUCCESS,
            ROUTER_READY,
            ROUTER_KV_USAGE,
            ROUTER_QUEUE,
            ROUTER_SATURATION,
            ROUTER_FLOW_QUEUE,
            ROUTER_PREFIX_HIT,
            ROUTER_SLO_VIOLATIONS,
        ])
        .chain([
            REPLICA_REQUESTS,
            REPLICA_FAILURES,
            REPLICA_GOODPUT,
            REPLICA_LAST_SUCCESS,
        ])
        .chain(replica_histograms)
        .chain([
            REPLICA_INFO,
            REPLICA_ENG_SUCCESS,
            REPLICA_ENG_RUNNING,
            REPLICA_ENG_WAITING,
            REPLICA_ENG_KV_USAGE,
            REPLICA_ENG_MAX_SEQS,
            REPLICA_ENG_GEN_TPS,
            REPLICA_HEADROOM,
        ])
        .chain(energy_families(Scope::ReplicaEngine))
        .chain([
            FLEET_REPLICAS,
            FLEET_SCRAPED,
            FLEET_RUNNING,
            FLEET_WAITING,
            FLEET_MAX_SEQS,
            FLEET_QUEUEING,
            FLEET_HEADROOM,
            FLEET_GEN_TPS,
            FLEET_COST,
            FLEET_GPU_SUCCESS,
        ])
        .chain(energy_families(Scope::Fleet))
        .chain([
            DISCOVERY_ERRORS,
            DISCOVERY_LAST_SUCCESS,
            DISCOVERY_REFUSED,
            BUILD_INFO,
            RELOAD_OK,
            RELOAD_TS,
            TARGETS,
            SHARD_INFO,
            SELF_CHECK_TTFT_ERROR,
            SELF_CHECK_ITL_ERROR,
            SELF_CHECK_DISPATCH_LAG,
            SELF_CHECK_PROBES,
            SELF_CHECK_FAILURES,
            CGROUP_THROTTLED_SECONDS,
            CGROUP_THROTTLED_PERIODS,
            CGROUP_PERIODS,
        ])
        .collect()
});

/// The name prefix of the energy families of `scope`: a target's engine, a discovered
/// replica, or the fleet of a target's replicas.
fn energy_prefix(scope: Scope) -> &'static str {
    match scope {
        Scope::ReplicaEngine => "llmprobe_replica_",
        Scope::Fleet => "llmprobe_fleet_",
        _ => "llmprobe_engine_",
    }
}

/// The families of the energy catalogue (`crate::energy`) for `scope`, one per figure.
fn energy_families(scope: Scope) -> impl Iterator<Item = Family> {
    Figure::ALL.into_iter().map(move |fig| {
        // Built once per family for the process' life (FAMILIES is a LazyLock).
        let name: &'static str = format!("{}{}", energy_prefix(scope), fig.suffix()).leak();
        let f = gauge(name, fig.help()).scope(scope);
        match fig.unit() {
            Some(u) => f.unit(u),
            None => f,
        }
    })
}

/// The family of energy figure `fig` for `scope` (`Engine`, `ReplicaEngine` or `Fleet`).
pub fn energy_family_of(scope: Scope, fig: Figure) -> Option<&'static Family> {
    let prefix = energy_prefix(scope);
    FAMILIES.iter().find(|f| {
        f.scope == scope
            && f.name
                .strip_prefix(prefix)
                .is_some_and(|rest| rest == fig.suffix())
    })
}

/// The histogram family of latency `l`, if the daemon exports one.
pub fn latency_histogram(l: Latency) -> Option<Family> {
    l.histogram()
        .map(|h| histogram(h.family, h.help, Layout::Of(h.buckets)))
}

/// The histogram family of latency `l` for discovered replicas: the front door's
/// name with `llmprobe_replica_` in front, for each latency a replica's probes
/// measure (dispatch lag is the prober's own, measured once on the front door).
fn replica_histogram(l: Latency) -> Option<Family> {
    if l == Latency::DispatchLag {
        return None;
    }
    let f = latency_histogram(l)?;
    let rest = f.name.strip_prefix("llmprobe_")?;
    // Built once per family for the process' life (FAMILIES is a LazyLock).
    let name: &'static str = format!("llmprobe_replica_{rest}").leak();
    Some(Family { name, ..f }.scope(Scope::Replica))
}

/// The replicas' histogram family of latency `l`, if they have one.
pub fn replica_histogram_of(l: Latency) -> Option<&'static Family> {
    let own = latency_histogram(l)?;
    let rest = own.name.strip_prefix("llmprobe_")?;
    histograms(Scope::Replica).find(|f| f.name.strip_prefix("llmprobe_replica_") == Some(rest))
}

/// The gauge publishing a scenario's objective on latency `l`, if one may bound it.
pub fn objective_gauge(l: Latency) -> Option<Family> {
    l.objective()
        .map(|o| gauge(o.gauge, o.gauge_help).unit("seconds"))
}

/// The histogram families of `scope` (each series with its own layout), in list
/// order: the front door's (`Scope::Scenario`) or the replicas' (`Scope::Replica`).
pub fn histograms(scope: Scope) -> impl Iterator<Item = &'static Family> {
    FAMILIES
        .iter()
        .filter(move |f| f.kind == Kind::Histogram && f.scope == scope)
}

/// docs/metrics.md read back, for the tests that hold it to the families (these and the
/// scenario kinds').
#[cfg(test)]
pub mod documented {
    use super::Family;

    /// (name, type, labels) of every `llmprobe_*` row of the tables in docs/metrics.md:
    /// the labels are the section's (`## … (labels: target, model)`) plus the row's own
    /// (`llmprobe_x{reason}`).
    pub fn documented() -> Vec<(String, String, Vec<String>)> {
        const DOC: &str = include_str!("../../docs/metrics.md");
        let mut section: Vec<String> = Vec::new();
        let mut rows = Vec::new();
        for line in DOC.lines() {
            if let Some(heading) = line.strip_prefix("## ") {
                section = heading
                    .split_once("(labels: ")
                    .and_then(|(_, rest)| rest.split_once(')'))
                    .map(|(l, _)| l.split(", ").map(str::to_string).collect())
                    .unwrap_or_default();
                continue;
            }
            let Some(row) = line.strip_prefix("| `llmprobe_") else {
                continue;
            };
            let row = format!("`llmprobe_{row}");
            let cells: Vec<&str> = row.split(" | ").collect();
            let kind = cells[1]
                .split([' ', ':'])
                .next()
                .unwrap_or_default()
                .to_string();
            for name in cells[0].split('`').filter(|n| n.starts_with("llmprobe_")) {
                let (name, extra) = match name.split_once('{') {
                    Some((n, e)) => (n, e.strip_suffix('}').map(str::to_string)),
                    None => (name, None),
                };
                let labels = section.iter().cloned().chain(extra).collect();
                rows.push((name.to_string(), kind.clone(), labels));
            }
        }
        rows
    }

    /// (name, type, labels) of each family, as `documented` reads them.
    pub fn described<'a>(
        families: impl Iterator<Item = &'a Family>,
    ) -> Vec<(String, String, Vec<String>)> {
        families
            .map(|f| {
                (
                    f.name.to_string(),
                    f.kind.as_str().to_string(),
                    f.labels().iter().map(|l| (*l).to_string()).collect(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::documented::{described, documented};
    use super::*;
    use crate::exposition::buckets::{self, Buckets};

    #[test]
    fn docs_list_every_family_with_its_type_and_labels() {
        // The scenario kinds' families follow (daemon::kinds tests the whole list).
        let documented = documented();
        let listed = described(FAMILIES.iter());
        assert_eq!(documented[..listed.len().min(documented.len())], listed[..]);
    }

    #[test]
    fn docs_show_vllms_bucket_bounds() {
        const DOC: &str = include_str!("../../docs/metrics.md");
        let show = |b: &[f64]| b.iter().map(f64::to_string).collect::<Vec<_>>().join(" ");
        for (prefix, bounds) in [
            ("- TTFT: ", show(buckets::VLLM_TTFT)),
            ("- TPOT and ITL: ", show(buckets::VLLM_ITL)),
            (
                "  plus ",
                show(buckets::FAST_TOKEN_EXTRAS) + " (fast engines)",
            ),
            ("- E2E: ", show(buckets::VLLM_E2E)),
            ("- Dispatch lag: ", show(buckets::DISPATCH_LAG)),
            ("- Self-check errors: ", show(buckets::SELF_CHECK_ERROR)),
        ] {
            let line = DOC.lines().find(|l| l.starts_with(prefix));
            assert_eq!(line, Some(format!("{prefix}{bounds}").as_str()));
        }
    }

    #[test]
    fn names_are_unique_and_follow_the_conventions() {
        let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FAMILIES.len());
        for f in FAMILIES.iter() {
            assert!(f.name.starts_with("llmprobe_") && !f.name.contains(':'));
            assert_eq!(
                f.kind == Kind::Counter,
                f.name.ends_with("_total"),
                "{}",
                f.name
            );
            if let Some(unit) = f.unit {
                let base = f.name.trim_end_matches("_total");
                assert!(base.ends_with(&format!("_{unit}")), "{}", f.name);
            }
            assert_eq!(f.kind == Kind::Histogram, f.buckets.is_some(), "{}", f.name);
        }
        let layouts: Vec<_> = histograms(Scope::Scenario).map(|f| f.buckets).collect();
        assert_eq!(layouts.len(), 6);
        assert_eq!(histograms(Scope::Replica).count(), 5);
        let b = Buckets::vllm();
        assert!(
            histograms(Scope::Scenario).all(|f| f.buckets.is_some_and(|l| !l.of(&b).is_empty()))
        );
    }
}
