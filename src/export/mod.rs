//! Export: turns probe records and daemon state into Prometheus metrics and serves them
//! over HTTP. `families` is the only place metric names, help texts and labels live,
//! `buckets` the only place bucket bounds live; `registry` registers the families and
//! removes their series, `histograms` is the per-series-layout latency collector,
//! `metrics` binds the families to what sets them (`fleet` those of discovered
//! replicas and their sums) and `series` is the per-probe hot path. `server` owns the endpoints (`/metrics`, `/-/healthy`, `/-/ready`, `/-/reload`,
//! `/config`, `/`, `/target/NAME`, `/probe/ID`); `status` is the per-target board behind `/` and
//! `/-/ready`, `probe_pages` the bounded store of recent probes' pages, `history` its bounded memory of the last hour, `replica_status` a
//! discovered replica's entry on it, `page`, `replica_table`, `html` and `sparkline`
//! the HTML; `self_check` the prober's own error series and `cgroup` its CPU throttling.
//! `otlp` is the OpenTelemetry export of every probe (`otlp_names` its names,
//! `otlp_span` a probe's span, `otlp_metrics` its points).
//! Nothing here probes or schedules.

pub mod buckets;
pub mod cgroup;
pub mod exemplars;
pub mod families;
pub mod fingerprint;
pub mod fingerprint_status;
pub mod fingerprint_table;
pub mod fleet;
pub mod histograms;
pub mod history;
pub mod html;
pub mod metrics;
pub mod openmetrics;
pub mod otlp;
pub mod otlp_metrics;
pub mod otlp_names;
pub mod otlp_span;
pub mod page;
pub mod probe_pages;
pub mod probe_view;
pub mod registry;
pub mod replica_status;
pub mod replica_table;
pub mod self_check;
pub mod series;
pub mod server;
pub mod sparkline;
pub mod status;

pub use buckets::Buckets;
pub use fleet::{FleetGauges, FleetSeries, ReplicaEngineGauges};
pub use metrics::{CapacityGauges, EngineGauges, EngineState, Metrics, SkipReason};
pub use replica_status::{ReplicaEngine, ReplicaHandle, ReplicaStatus};
pub use self_check::{SelfCheckSeries, SelfProbe};
pub use series::{CheckSeries, ScenarioSeries, TokenPrice, unix_now};
pub use server::{ReloadRequest, ServerState, serve};
pub use status::{ScenarioStatus, StatusBoard};
