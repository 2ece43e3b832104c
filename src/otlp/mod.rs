//! The OpenTelemetry export of every probe over OTLP/HTTP: `exposition` the pipeline (the
//! SDK's batch span processor and periodic reader on our reqwest client), `names` every
//! OTLP name (the GenAI conventions' where one exists), `semconv` which conventions'
//! names are emitted (`OTEL_SEMCONV_STABILITY_OPT_IN`), `span` a probe's client span and
//! `metrics` its instruments and points.
//! Nothing here probes, schedules or serves.

pub mod export;
pub mod metrics;
pub mod names;
pub mod semconv;
pub mod span;

pub use export::{OtlpExport, OtlpOptions};
pub use semconv::Semconv;
