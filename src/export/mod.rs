//! Export: turns probe records and daemon state into Prometheus metrics and serves them
//! over HTTP. `metrics` is the only place metric names and buckets live; `server` owns
//! the endpoints (`/metrics`, `/-/healthy`, `/-/ready`, `/-/reload`, `/config`, `/`);
//! `status` is the per-target board behind `/` and `/-/ready`. Nothing here probes or
//! schedules.

pub mod metrics;
pub mod server;
pub mod status;

pub use metrics::{
    Buckets, CapacityGauges, EngineGauges, Metrics, ScenarioSeries, SkipReason, TokenPrice,
};
pub use server::{ReloadRequest, ServerState, serve};
pub use status::{ScenarioStatus, StatusBoard};
