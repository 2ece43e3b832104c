//! The self-check's series: each self-probe's error and dispatch lag, and the count of
//! self-probes and of those that failed. The daemon's self-check computes the errors
//! (src/selfcheck/); this only observes them.

use std::time::Duration;

use prometheus::{Histogram, IntCounter};

use super::families as f;
use super::registry::Registered;

/// The series a self-probe moves.
#[derive(Clone)]
pub struct SelfCheckSeries {
    ttft_error: Histogram,
    itl_error: Histogram,
    dispatch_lag: Histogram,
    probes: IntCounter,
    failures: IntCounter,
}

/// One self-probe as the series see it.
pub struct SelfProbe<'a> {
    pub dispatch_lag: Duration,
    /// `None`: the self-probe failed (no timing to judge).
    pub ttft_error: Option<Duration>,
    pub itl_errors: &'a [Duration],
}

impl SelfCheckSeries {
    pub(super) fn new(r: &Registered) -> prometheus::Result<Self> {
        Ok(SelfCheckSeries {
            ttft_error: r.histogram(&f::SELF_CHECK_TTFT_ERROR)?,
            itl_error: r.histogram(&f::SELF_CHECK_ITL_ERROR)?,
            dispatch_lag: r.histogram(&f::SELF_CHECK_DISPATCH_LAG)?,
            probes: r.int_counter(&f::SELF_CHECK_PROBES)?,
            failures: r.int_counter(&f::SELF_CHECK_FAILURES)?,
        })
    }

    pub fn observe(&self, p: &SelfProbe<'_>) {
        self.probes.inc();
        self.dispatch_lag.observe(p.dispatch_lag.as_secs_f64());
        match p.ttft_error {
            Some(e) => self.ttft_error.observe(e.as_secs_f64()),
            None => self.failures.inc(),
        }
        for e in p.itl_errors {
            self.itl_error.observe(e.as_secs_f64());
        }
    }
}
