//! What every running target shares: the metrics, the status board, the intervals a
//! reload changes in place, the run nonce and the OTLP export.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::exposition::Metrics;
use crate::otlp::OtlpExport;
use crate::status::StatusBoard;

/// What every target shares.
#[derive(Clone)]
pub struct Shared {
    pub metrics: Arc<Metrics>,
    pub status: Arc<StatusBoard>,
    /// The engine scrape interval; a reload changes it without restarting targets.
    pub engine_scrape_interval: watch::Receiver<Duration>,
    /// How often the log summarises a repeating failure; a reload changes it in place.
    pub failure_summary_interval: watch::Receiver<Duration>,
    /// Part of every prompt nonce: fresh per daemon start, so a restarted daemon does
    /// not send the prompts of its previous life into a warm prefix cache.
    pub run_nonce: u32,
    /// The OTLP export every probe goes to, when `otlp:` is configured (set at start:
    /// a reload does not change it).
    pub otlp: Option<Arc<OtlpExport>>,
    /// Each target's rate-limit pause and daily spend, by name: a reload that restarts
    /// a target keeps them.
    pub limits: Arc<super::limits::LimitStore>,
}
