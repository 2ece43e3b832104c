//! The status sinks: each probe and skipped arrival onto the scenario's row of the
//! status board (`/`, `/-/ready`), and a discovered replica's probes onto its row of
//! the target's replica table; and where each probe's page (`/probe/ID`) is filed.

use std::sync::Arc;

use crate::record::RequestRecord;
use crate::secret::Secret;
use crate::sink::{RecordSink, Skip, Verdict};
use crate::status::board::ScenarioHandle;
use crate::status::probe_pages::{ProbeKey, ProbePage};
use crate::status::{ReplicaHandle, StatusBoard};

use super::shown_error;

/// Where a probe's page is filed.
pub struct PageFiling {
    pub board: Arc<StatusBoard>,
    pub key: ProbeKey,
    pub model: String,
    /// The target's secrets, scrubbed from the error shown.
    pub secrets: Vec<Secret>,
}

impl PageFiling {
    /// Files `r`'s page; returns its probe ID.
    pub fn file(&self, r: &RequestRecord, good: bool) -> u64 {
        let error = shown_error(r, &self.secrets);
        let at = crate::clock::unix_now();
        let page = ProbePage::of(r, &self.key, &self.model, good, error, at);
        self.board.pages().file(&self.key, page)
    }
}

pub struct StatusSink {
    pub status: ScenarioHandle,
    /// The target's secrets, scrubbed from the errors shown.
    pub secrets: Vec<Secret>,
}

impl RecordSink for StatusSink {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        let error = shown_error(r, &self.secrets);
        let at = crate::clock::unix_now();
        let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
        status.record_probe(r, verdict.good, error, at, verdict.probe_id);
        status.record_checks(&r.checks);
        if let (Some(g), Some(v)) = (status.golden.as_mut(), &r.golden) {
            g.record(v);
        }
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
        let at = crate::clock::unix_now();
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record_probe(r, verdict.good, error, at);
        Ok(())
    }
}
