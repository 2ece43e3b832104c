//! `llmprobe bench`: one-shot open-loop load tests at one or several request rates
//! (`--sweep`), SLO gates, the max-rate search and sharded runs. It drives the shared
//! measurement core (workload → schedule → runner → client → records), aggregates each
//! rate's records and hands the summaries to `report`. It never defines a figure itself.

pub mod args;
mod energy;
pub mod golden;
pub mod options;
pub mod plan;
pub mod report_cmd;
pub mod run;
pub mod search;
pub mod sinks;
pub mod trace;
