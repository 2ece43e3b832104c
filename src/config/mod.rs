//! The daemon's YAML configuration: types with their defaults (`schema`; they are the
//! schema, `docs/config.schema.json` is generated from them), parsing with positions,
//! validation with errors that name file, line, column and field, and resolution into
//! the checked [`plan::Plan`] the daemon runs (secrets read, capacity evaluated).
//!
//! Nothing here starts a task or opens a socket; the daemon owns reloads.

pub mod adapters;
mod checks;
pub mod cost_budget;
pub mod error;
pub mod golden;
pub mod gpu;
pub mod kinds;
pub mod llm_d;
mod messages;
pub mod otlp;
pub mod plan;
pub(crate) mod probe;
pub mod rate;
pub mod replicas;
pub mod replicas_from;
pub mod schema;
pub mod shard;
pub mod slo;
pub mod validate;

pub use error::ConfigError;
pub use otlp::OtlpPlan;
pub use plan::{Plan, ScenarioPlan, TargetPlan};
pub use rate::ProbeRate;
pub use replicas::ReplicaPlan;
pub use schema::{
    BucketsConfig, Config, DEFAULT_LISTEN, Defaults, HeaderSource, HeaderValue, PriceConfig,
    Scenario, Target, json_schema,
};
pub use shard::{Overrides, Shard};
pub use slo::SloConfig;
