//! Where a run's events go: the `RecordSink` trait that bench's outputs (summary,
//! `--records`, progress, kept records) and the daemon's (metrics, status page, token
//! budget, TTFT window, logs) implement, and the one loop that feeds a list of them.

use std::time::Duration;

use crate::event::{RunEvent, SkipReason};
use crate::latency::Slo;
use crate::record::RequestRecord;

/// What a finished request was judged, once, before any sink sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Succeeded, passed every answer check and met every objective of the SLO.
    pub good: bool,
    /// The daemon's ID of the probe (its page, `/probe/ID`), when it keeps pages: filed
    /// before any sink sees the record, so metrics exemplars and exports can name it.
    pub probe_id: Option<u64>,
}

impl Verdict {
    /// Judges `r` under `slo`.
    pub fn of(r: &RequestRecord, slo: &Slo) -> Verdict {
        Verdict {
            good: r.is_good(slo),
            probe_id: None,
        }
    }
}

/// An arrival that was not sent (the runner's `RunEvent::Skipped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skip {
    pub id: u64,
    pub t_sched: Duration,
    pub reason: SkipReason,
}

/// One consumer of a run's events. Sinks are fed in a fixed order, one event at a time;
/// a sink that fails stops the feeding (only a file can fail).
pub trait RecordSink {
    /// A finished request and its verdict.
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()>;

    /// An arrival that was not sent; most sinks ignore it.
    fn skipped(&mut self, _skip: Skip) -> anyhow::Result<()> {
        Ok(())
    }
}

impl<T: RecordSink + ?Sized> RecordSink for &mut T {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        (**self).record(r, verdict)
    }

    fn skipped(&mut self, skip: Skip) -> anyhow::Result<()> {
        (**self).skipped(skip)
    }
}

impl<T: RecordSink + ?Sized> RecordSink for Box<T> {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        (**self).record(r, verdict)
    }

    fn skipped(&mut self, skip: Skip) -> anyhow::Result<()> {
        (**self).skipped(skip)
    }
}

/// Feeds one event to every sink in order, judging a record once under `slo`; stops at
/// the first sink that fails.
pub fn feed<'a, S: RecordSink + ?Sized + 'a>(
    sinks: impl IntoIterator<Item = &'a mut S>,
    event: &RunEvent,
    slo: &Slo,
) -> anyhow::Result<()> {
    feed_judged(sinks, event, |r| Verdict::of(r, slo))
}

/// [`feed`] with the judging step given: it runs once per record, before any sink.
pub fn feed_judged<'a, S: RecordSink + ?Sized + 'a>(
    sinks: impl IntoIterator<Item = &'a mut S>,
    event: &RunEvent,
    judge: impl FnOnce(&RequestRecord) -> Verdict,
) -> anyhow::Result<()> {
    match event {
        RunEvent::Record(r) => {
            let verdict = judge(r);
            for s in sinks {
                s.record(r, verdict)?;
            }
        }
        &RunEvent::Skipped {
            id,
            t_sched,
            reason,
        } => {
            let skip = Skip {
                id,
                t_sched,
                reason,
            };
            for s in sinks {
                s.skipped(skip)?;
            }
        }
    }
    Ok(())
}
