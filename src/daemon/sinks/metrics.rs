//! The metrics sink: a scenario's probes into its Prometheus series, a conversation's
//! later turns into the series of their own (`NAME:later`).

use std::sync::Arc;

use crate::exposition::ScenarioSeries;
use crate::latency::Slo;
use crate::record::RequestRecord;
use crate::sink::{RecordSink, Skip, Verdict};

pub struct MetricsSink {
    pub series: Arc<ScenarioSeries>,
    /// Conversations: the series of their later turns.
    pub later_series: Option<Arc<ScenarioSeries>>,
    pub slo: Slo,
}

impl RecordSink for MetricsSink {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        let series = match &self.later_series {
            Some(later) if r.is_later_turn() => later,
            _ => &self.series,
        };
        let good = series.observe(r, &self.slo, verdict.probe_id);
        debug_assert_eq!(good, verdict.good, "one definition of a good probe");
        Ok(())
    }

    fn skipped(&mut self, skip: Skip) -> anyhow::Result<()> {
        self.series.skip(skip.reason);
        Ok(())
    }
}
