//! The progress sink: the bar advances by one per finished request.

use indicatif::ProgressBar;

use crate::record::RequestRecord;
use crate::sink::{RecordSink, Verdict};

pub struct Progress<'a>(pub &'a ProgressBar);

impl RecordSink for Progress<'_> {
    fn record(&mut self, _r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        self.0.inc(1);
        Ok(())
    }
}
