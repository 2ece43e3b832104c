//! Where a scenario's probe records go in the daemon: a list of sinks (metrics, token
//! budget, rate-limit pause and daily spend, TTFT window, logs, OTLP, status board), fed in that order by one consumer per
//! runner. The consumer files each probe's page first, so every sink knows its probe ID
//! (metrics exemplars name it); the status board comes last, so a probe it shows is
//! already in the metrics.

mod budget;
mod limits;
mod log;
mod metrics;
mod otlp;
mod status;
mod ttft;

pub use budget::BudgetSink;
pub use limits::LimitsSink;
pub use log::LogSink;
pub use metrics::MetricsSink;
pub use otlp::OtlpSink;
pub use status::{PageFiling, ReplicaStatusSink, StatusSink};
pub use ttft::TtftSink;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::latency::Slo;
use crate::record::{Outcome, RequestRecord};
use crate::runner::RunEvent;
use crate::secret::{self, Secret};
use crate::sink::{self, RecordSink, Verdict};

/// One runner's consumer: its events into its sinks.
pub struct Consumer {
    /// Where each probe's page is filed before the sinks see it.
    pub pages: PageFiling,
    pub sinks: Vec<Box<dyn RecordSink + Send>>,
    /// The scenario's objectives, which judge each probe once for every sink.
    pub slo: Slo,
    /// The target's stop: probes it cut off are dropped unseen.
    pub stop: CancellationToken,
}

/// Feeds every event of a runner into the sinks until the runner is done.
pub async fn consume(mut rx: mpsc::UnboundedReceiver<RunEvent>, mut c: Consumer) {
    while let Some(event) = rx.recv().await {
        // Probes cut off by our own stop (reload, shutdown) say nothing about the target.
        if let RunEvent::Record(r) = &event
            && r.outcome == Outcome::Cancelled
            && c.stop.is_cancelled()
        {
            continue;
        }
        let judge = |r: &RequestRecord| {
            let mut verdict = Verdict::of(r, &c.slo);
            verdict.probe_id = Some(c.pages.file(r, verdict.good));
            verdict
        };
        if let Err(e) = sink::feed_judged(c.sinks.iter_mut(), &event, judge) {
            // No daemon sink fails today; a future one must not stop the consumer.
            tracing::warn!(error = %format!("{e:#}"), "a probe record was not fully recorded");
        }
    }
}

/// A probe's error text as logs and the status page show it: with every secret of the
/// target scrubbed, including one cut short where the client truncated the text.
fn shown_error(r: &RequestRecord, secrets: &[Secret]) -> Option<String> {
    r.error
        .as_deref()
        .map(|e| secret::scrub(e, secrets.iter().map(Secret::expose)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn shown_errors_lose_whole_and_truncated_secrets() {
        let secrets = vec![Secret::new("sk-123456"), Secret::new("")];
        let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        assert_eq!(shown_error(&r, &secrets), None);
        r.error = Some("401: invalid key sk-123456 (sk-123456)".into());
        assert_eq!(
            shown_error(&r, &secrets).as_deref(),
            Some("401: invalid key <secret> (<secret>)")
        );
        r.error = Some("401: echo Bearer sk-1234…".into());
        assert_eq!(
            shown_error(&r, &secrets).as_deref(),
            Some("401: echo Bearer <secret>…")
        );
        r.error = Some("fine".into());
        assert_eq!(shown_error(&r, &secrets).as_deref(), Some("fine"));
    }
}
