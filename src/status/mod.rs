//! The status UI: what an on-call reads on `/`, `/target/NAME` and `/probe/ID`.
//! `board` is the per-target state behind the pages and `/-/ready` (with `history`, its
//! bounded memory of the last hour, `replica_status` a discovered replica's entry and
//! `fingerprint_status` a fingerprint scenario's, `kind_status` a scenario of a kind
//! without a table of its own), `probe_pages` the bounded store of
//! recent probes' pages; `page`, `replica_table`, `fingerprint_table`, `kind_table`, `probe_view`,
//! `html` and `sparkline` render the HTML.
//! Nothing here knows the metric families, serves HTTP, probes or schedules.

pub mod board;
pub mod fingerprint_status;
pub mod fingerprint_table;
pub mod history;
pub mod html;
pub mod kind_status;
pub mod kind_table;
pub mod page;
pub mod probe_pages;
pub mod probe_view;
pub mod replica_status;
pub mod replica_table;
pub mod sparkline;

pub use board::{EngineState, ScenarioStatus, StatusBoard};
pub use replica_status::{ReplicaEngine, ReplicaHandle, ReplicaStatus};
