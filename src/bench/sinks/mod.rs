//! Where a bench run's events go: the rate's summary (its [`Collector`]), `--records`,
//! the progress bar and the kept records, fed in that order by one loop, which also stops
//! the run when `--max-error-rate` is passed.

mod error_stop;
mod kept;
mod progress;
mod records_file;
mod summary;

use error_stop::ErrorStop;
pub use kept::Kept;
pub use progress::Progress;
pub use records_file::RecordsFile;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::aggregate::Collector;
use crate::latency::Slo;
use crate::record::RequestRecord;
use crate::report::stop::{MaxErrorRate, StoppedEarly};

use crate::runner::RunEvent;
use crate::sink::{self, RecordSink};

/// What a run's events left: the summary, the kept records, and what the GPU energy and
/// the warm-cache check need of every record.
pub struct Collected {
    pub summary: Collector,
    pub records: Vec<RequestRecord>,
    /// Every answer's output tokens, warmup and failures included: the GPUs did that
    /// work too (`--gpu-metrics-url`'s energy per token).
    pub output_tokens: u64,
    /// The first successful request's (cached, prompt) tokens as the server reported
    /// them: a cache that already held it was warm before the run.
    pub first_cached: Option<(u32, u32)>,
    /// `--max-error-rate` stopped the run.
    pub stopped_early: Option<StoppedEarly>,
}

/// The sinks of one run.
pub struct RunSinks<'a> {
    pub summary: Collector,
    /// `--records`, when given.
    pub records_file: Option<RecordsFile<'a>>,
    pub progress: Progress<'a>,
    /// `None` when no output needs every record.
    pub kept: Option<Kept>,
    /// The run's objectives, which judge each request once for every sink.
    pub slo: Slo,
    /// `--max-error-rate`, and the run's stop it cancels when the summary's counts
    /// pass it.
    pub max_error_rate: Option<(MaxErrorRate, CancellationToken)>,
}

impl RunSinks<'_> {
    /// Takes every event until the runner is done, leaving out the records of requests
    /// that were never sent (`unsent`); returns the summary and the kept records.
    pub async fn collect(
        mut self,
        mut rx: mpsc::UnboundedReceiver<RunEvent>,
        unsent: impl Fn(u64) -> bool,
    ) -> anyhow::Result<Collected> {
        let mut output_tokens = 0_u64;
        let mut first: Option<(u64, Option<(u32, u32)>)> = None;
        let mut summary = ErrorStop {
            summary: &mut self.summary,
            rule: self.max_error_rate.take(),
            stopped: None,
        };
        let mut sinks: Vec<&mut (dyn RecordSink + Send)> = vec![&mut summary];
        if let Some(f) = self.records_file.as_mut() {
            sinks.push(f);
        }
        sinks.push(&mut self.progress);
        if let Some(k) = self.kept.as_mut() {
            sinks.push(k);
        }
        while let Some(ev) = rx.recv().await {
            if let RunEvent::Record(r) = &ev
                && unsent(r.id)
            {
                continue;
            }
            if let RunEvent::Record(r) = &ev {
                output_tokens += u64::from(r.output_tokens());
                if r.is_success() && first.is_none_or(|(id, _)| r.id < id) {
                    first = Some((r.id, r.usage_cached_tokens.zip(r.usage_prompt_tokens)));
                }
            }
            sink::feed(sinks.iter_mut(), &ev, &self.slo)?;
        }
        drop(sinks);
        let stopped_early = summary.stopped;
        Ok(Collected {
            summary: self.summary,
            records: self.kept.map_or_else(Vec::new, |k| k.records),
            output_tokens,
            first_cached: first.and_then(|(_, c)| c),
            stopped_early,
        })
    }
}
