//! A fingerprint scenario's series: the last run's divergence, agreement and verdict
//! against the baseline's noise, and its failures. The daemon runs the fingerprint
//! (src/daemon/fingerprint.rs); this only publishes what it found.

use prometheus::{GaugeVec, IntCounterVec};

use super::families as f;
use super::registry::Registered;
use crate::fingerprint::{Divergence, Noise};

/// The fingerprint families' vectors.
#[derive(Clone)]
pub struct FingerprintSeries {
    divergence: GaugeVec,
    agreement: GaugeVec,
    first: GaugeVec,
    noise: GaugeVec,
    threshold: GaugeVec,
    drift: GaugeVec,
    last_run: GaugeVec,
    failures: IntCounterVec,
}

impl FingerprintSeries {
    pub(super) fn new(r: &Registered) -> prometheus::Result<Self> {
        Ok(FingerprintSeries {
            divergence: r.gauge_vec(&f::FP_DIVERGENCE)?,
            agreement: r.gauge_vec(&f::FP_AGREEMENT)?,
            first: r.gauge_vec(&f::FP_FIRST_DIVERGENCE)?,
            noise: r.gauge_vec(&f::FP_NOISE)?,
            threshold: r.gauge_vec(&f::FP_THRESHOLD)?,
            drift: r.gauge_vec(&f::FP_DRIFT)?,
            last_run: r.gauge_vec(&f::FP_LAST_RUN)?,
            failures: r.int_counter_vec(&f::FP_FAILURES)?,
        })
    }

    /// Publishes one completed run of `labels` (target, model, scenario) at `now`
    /// (Unix seconds).
    pub fn publish(&self, labels: &[&str; 3], d: &Divergence, noise: &Noise, now: f64) {
        let t = noise.threshold();
        self.divergence.with_label_values(labels).set(d.divergence);
        self.agreement
            .with_label_values(labels)
            .set(d.token_agreement);
        // -1: no answer left its baseline (a series that comes and goes would read as
        // a gap in the data).
        let first = d.first_divergence.map_or(-1.0, |p| p as f64);
        self.first.with_label_values(labels).set(first);
        self.noise.with_label_values(labels).set(noise.divergence);
        self.threshold.with_label_values(labels).set(t.divergence);
        let drift = if t.drifted(d) { 1.0 } else { 0.0 };
        self.drift.with_label_values(labels).set(drift);
        self.last_run.with_label_values(labels).set(now);
        self.failures.with_label_values(labels);
    }

    /// Counts one failed run of `labels`.
    pub fn fail(&self, labels: &[&str; 3]) {
        self.failures.with_label_values(labels).inc();
    }
}
