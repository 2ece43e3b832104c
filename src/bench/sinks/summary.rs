//! The summary sink: the rate's [`Collector`], from which its report row is built.

use crate::aggregate::Collector;
use crate::record::RequestRecord;
use crate::sink::{RecordSink, Skip, Verdict};

impl RecordSink for Collector {
    fn record(&mut self, r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        self.push(r);
        Ok(())
    }

    fn skipped(&mut self, skip: Skip) -> anyhow::Result<()> {
        self.push_skip(skip.id, skip.t_sched, skip.reason);
        Ok(())
    }
}
