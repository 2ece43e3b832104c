//! The TTFT-window sink: successful probes' TTFTs, which the engine scraper compares
//! with the engine's own at its next scrape.

use std::sync::{Arc, Mutex};

use crate::daemon::engine_scrape::TtftWindow;
use crate::record::RequestRecord;
use crate::sink::{RecordSink, Verdict};

pub struct TtftSink(pub Arc<Mutex<TtftWindow>>);

impl RecordSink for TtftSink {
    fn record(&mut self, r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        if r.is_success()
            && let Some(t) = r.ttft()
        {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(t.as_secs_f64());
        }
        Ok(())
    }
}
