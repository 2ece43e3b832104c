//! The status sinks: each probe and skipped arrival onto the scenario's row of the
//! status board (`/`, `/-/ready`), and a discovered replica's probes onto its row of
//! the target's replica table.

use crate::export::ReplicaHandle;
use crate::export::status::ScenarioHandle;
use crate::record::RequestRecord;
use crate::secret::Secret;
use crate::sink::{RecordSink, Skip, Verdict};

use super::shown_error;

pub struct StatusSink {
    pub status: ScenarioHandle,
    /// The target's secrets, scrubbed from the errors shown.
    pub secrets: Vec<Secret>,
}

impl RecordSink for StatusSink {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        let error = shown_error(r, &self.secrets);
        let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
        status.record_probe(r, verdict.good, error, crate::export::unix_now());
        status.record_checks(&r.checks);
        Ok(())
    }

    fn skipped(&mut self, _skip: Skip) -> anyhow::Result<()> {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .skipped += 1;
        Ok(())
    }
}

/// A discovered replica's probes, onto its row of the replica table.
pub struct ReplicaStatusSink {
    pub status: ReplicaHandle,
    /// The target's secrets, scrubbed from the errors shown.
    pub secrets: Vec<Secret>,
}

impl RecordSink for ReplicaStatusSink {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        let error = shown_error(r, &self.secrets);
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record_probe(r, verdict.good, error, crate::export::unix_now());
        Ok(())
    }
}
