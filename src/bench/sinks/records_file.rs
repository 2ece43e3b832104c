//! The `--records` sink: one JSON line per request, written as it arrives.

use crate::latency::Slo;
use crate::rate::Rate;
use crate::record::RequestRecord;
use crate::report::jsonl::{JsonlWriter, RecordLine};
use crate::schedule::Shard;
use crate::sink::{RecordSink, Verdict};

pub struct RecordsFile<'a> {
    pub out: &'a mut JsonlWriter,
    /// The whole run's rate (a shard's lines carry it too).
    pub rate: Rate,
    /// The run's `--prefix-hit-ratio`, with the rate the key of its lines.
    pub prefix_hit_ratio: Option<f64>,
    /// Tells this run's lines from another run's in `report merge`.
    pub run_id: &'a str,
    pub shard: Option<Shard>,
    /// Requests with a lower id are `--warmup` (flagged, left out of every figure).
    pub warmup: u64,
    pub slo: Slo,
}

impl RecordSink for RecordsFile<'_> {
    fn record(&mut self, r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        self.out.write(&RecordLine {
            prefix_hit_ratio: self.prefix_hit_ratio,
            ..RecordLine::new(
                r.clone(),
                self.rate,
                self.run_id,
                self.shard,
                r.id < self.warmup,
                &self.slo,
            )
        })
    }
}
