//! Prometheus exposition: turns probe records and daemon state into metric series.
//! `families` is where metric names, help texts and labels live (a scenario kind
//! declares its own beside its loop), `buckets` the
//! only place bucket bounds live; `registry` registers the families and removes their
//! series, `histograms` is the per-series-layout latency collector with its `exemplars`,
//! `openmetrics` the OpenMetrics text format, `metrics` binds the families to what sets
//! them (`fleet` those of discovered replicas and their sums, `self_check` the
//! self-check's; a scenario kind registers its own through `Metrics::kind_series`) and
//! `series` is the per-probe hot path; `router` the endpoint picker's series; `energy` sets the energy catalogue's gauges.
//! `cgroup` reads the process' CPU throttling at each scrape.
//! Nothing here serves HTTP, renders pages, probes or schedules.

pub mod buckets;
pub mod cgroup;
pub mod energy;
pub mod exemplars;
pub mod families;
pub mod fleet;
pub mod histograms;
pub mod metrics;
pub mod openmetrics;
pub mod registry;
pub mod router;
pub mod self_check;
pub mod series;

pub use buckets::Buckets;
pub use families::{Family, Scope};
pub use fleet::{FleetGauges, FleetSeries, ReplicaEngineGauges};
pub use metrics::{CapacityGauges, EngineGauges, Metrics, SkipReason};
pub use registry::Registered;
pub use router::RouterGauges;
pub use self_check::{SelfCheckSeries, SelfProbe};
pub use series::{CheckSeries, ScenarioSeries, TokenPrice};
