//! The kept-records sink: the run's records past `--warmup`, kept when `--save-result`
//! lists every request or `--warmup auto` reads them all.

use crate::record::RequestRecord;
use crate::sink::{RecordSink, Verdict};

pub struct Kept {
    /// Requests with a lower id are `--warmup`: not kept.
    pub warmup: u64,
    pub records: Vec<RequestRecord>,
}

impl RecordSink for Kept {
    fn record(&mut self, r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        if r.id >= self.warmup {
            self.records.push(r.clone());
        }
        Ok(())
    }
}
