//! `--max-error-rate` around the summary sink: after each record the summary counts,
//! its counted requests and failures (the report's own) are held to the bound, and the
//! run's stop is cancelled the first time they pass it.

use tokio_util::sync::CancellationToken;

use crate::aggregate::Collector;
use crate::record::RequestRecord;
use crate::report::stop::{MaxErrorRate, StoppedEarly};
use crate::sink::{RecordSink, Skip, Verdict};

pub struct ErrorStop<'a> {
    pub summary: &'a mut Collector,
    pub rule: Option<(MaxErrorRate, CancellationToken)>,
    /// Set when the bound was passed (once).
    pub stopped: Option<StoppedEarly>,
}

impl RecordSink for ErrorStop<'_> {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        self.summary.record(r, verdict)?;
        if let (None, Some((max, stop))) = (&self.stopped, &self.rule) {
            let (requests, failed) = self.summary.counted();
            if let Some(s) = max.check(requests, failed) {
                eprintln!("{}; finishing the requests in flight", s.describe());
                stop.cancel();
                self.stopped = Some(s);
            }
        }
        Ok(())
    }

    fn skipped(&mut self, skip: Skip) -> anyhow::Result<()> {
        self.summary.skipped(skip)
    }
}
