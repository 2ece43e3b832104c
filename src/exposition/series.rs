//! The hot path: the pre-resolved child series of one target × scenario, fed one probe
//! record at a time (a handful of atomic adds, no label hashing).

use prometheus::{Gauge, IntCounter, IntGauge};

use super::exemplars::Exemplar;
use super::histograms::LatencyHistogram;
use crate::check::AccuracyWindow;
use crate::clock::unix_now;
use crate::latency::{Latency, Slo};
use crate::record::{CheckKind, GoldenVerdict, RequestRecord};
use crate::runner::SkipReason;

/// Most observations one probe may add to one latency histogram: the bound that matters
/// is per-token ITL's (far above any scenario's `max_output_tokens`, which the daemon
/// keeps at a few thousand).
pub const MAX_ITL_OBSERVATIONS_PER_PROBE: u64 = 1 << 16;

/// Pre-resolved child series of one target × scenario (or of one discovered replica ×
/// scenario, which has a slim set: no spend, in-flight, skip, objective or check
/// series, and only some latency histograms): the hot path.
pub struct ScenarioSeries {
    pub(super) requests: IntCounter,
    /// `llmprobe_request_failures_total` per `reason` value.
    pub(super) failures: Vec<(&'static str, IntCounter)>,
    pub(super) goodput: IntCounter,
    /// The probes' token use and cost (the front door's series only).
    pub(super) spend: Option<SpendSeries>,
    pub(super) inflight: Option<IntGauge>,
    pub(super) last_success: Gauge,
    /// `llmprobe_probes_skipped_total` per `reason` value.
    pub(super) skipped: Vec<(&'static str, IntCounter)>,
    /// `llmprobe_slo_met_requests_total` per SLI the scenario configures.
    pub(super) slo_met: Vec<(Latency, IntCounter)>,
    /// The histogram of each latency the daemon exports (the catalogue's).
    pub(super) latencies: Vec<(Latency, LatencyHistogram)>,
    /// The answer-check series of the checks the scenario configures.
    pub(super) checks: Vec<CheckSeries>,
    /// The golden-set series, when the scenario asks a golden set.
    pub(super) golden: Option<GoldenSeries>,
}

/// The golden-set series of one scenario and the rolling window behind its gauges.
pub struct GoldenSeries {
    pub(super) correct: IntCounter,
    pub(super) wrong: IntCounter,
    pub(super) answers: IntGauge,
    /// Accuracy, lower and upper bound: created at the first verdict, so no accuracy
    /// of 0 stands for "nothing judged yet".
    pub(super) figures: [(prometheus::GaugeVec, Vec<String>); 3],
    pub(super) window: std::sync::Mutex<AccuracyWindow>,
}

impl GoldenSeries {
    fn observe(&self, v: &GoldenVerdict) {
        let counter = if v.correct {
            &self.correct
        } else {
            &self.wrong
        };
        counter.inc();
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        w.push(v.correct);
        self.answers
            .set(i64::try_from(w.answers()).unwrap_or(i64::MAX));
        let (Some(acc), Some((lo, hi))) = (w.accuracy(), w.interval()) else {
            return;
        };
        for ((vec, labels), value) in self.figures.iter().zip([acc, lo, hi]) {
            let l: Vec<&str> = labels.iter().map(String::as_str).collect();
            vec.with_label_values(&l).set(value);
        }
    }
}

/// The token and cost counters of a scenario's probes.
pub struct SpendSeries {
    pub(super) prompt_tokens: IntCounter,
    pub(super) output_tokens: IntCounter,
    pub(super) reasoning_tokens: IntCounter,
    pub(super) cost: Option<(TokenPrice, prometheus::Counter)>,
}

/// The series of one answer check of one scenario.
pub struct CheckSeries {
    pub(super) kind: CheckKind,
    pub(super) runs: IntCounter,
    pub(super) failures: IntCounter,
    pub(super) last_passed: IntGauge,
}

impl ScenarioSeries {
    /// Feeds one finished probe into every metric, using the record's own derived
    /// figures (one definition of TTFT, TPOT, ITL, E2E and of meeting an objective:
    /// `record.rs`). `probe_id` is the daemon's ID of the probe, which the histograms'
    /// exemplars name with the record's trace ID. Returns whether the probe counted as
    /// good.
    pub fn observe(&self, r: &RequestRecord, slo: &Slo, probe_id: Option<u64>) -> bool {
        self.requests.inc();
        self.observe_latencies(r, true, probe_id);
        // Spend counts only probes the server answered: a connect or TLS failure sent
        // no prompt (the record's prompt count falls back to what it meant to send).
        if let Some(spend) = &self.spend
            && r.answered()
        {
            spend.prompt_tokens.inc_by(u64::from(r.prompt_tokens()));
            spend.output_tokens.inc_by(u64::from(r.output_tokens()));
            spend
                .reasoning_tokens
                .inc_by(u64::from(r.reasoning_tokens()));
            if let Some((price, c)) = &spend.cost {
                c.inc_by(price.cost(r.prompt_tokens(), r.output_tokens()));
            }
        }
        if !r.is_success() {
            let reason = r.outcome.as_str();
            if let Some((_, c)) = self.failures.iter().find(|(o, _)| *o == reason) {
                c.inc();
            }
            return false;
        }
        self.last_success.set(unix_now());
        self.observe_latencies(r, false, probe_id);
        // Per-SLI attainment against the scenario's own thresholds (the recording rules
        // use these instead of a fixed `le`).
        for (sli, c) in &self.slo_met {
            if slo.limit(*sli).is_some_and(|limit| r.meets(*sli, limit)) {
                c.inc();
            }
        }
        for verdict in &r.checks {
            if let Some(c) = self.checks.iter().find(|c| c.kind == verdict.check) {
                c.runs.inc();
                c.failures.inc_by(u64::from(!verdict.passed));
                c.last_passed.set(i64::from(verdict.passed));
            }
        }
        if let (Some(g), Some(v)) = (&self.golden, &r.golden) {
            g.observe(v);
        }
        let good = r.is_good(slo);
        if good {
            self.goodput.inc();
        }
        good
    }

    /// The same series, with the golden-set series (`None`: the scenario asks none).
    pub fn with_golden(mut self, golden: Option<GoldenSeries>) -> Self {
        self.golden = golden;
        self
    }

    /// The same series, with those of the scenario's answer checks.
    pub fn with_checks(mut self, checks: Vec<CheckSeries>) -> Self {
        self.checks = checks;
        self
    }

    /// Observes `r`'s values of the latencies measured on every dispatched request
    /// (`dispatched`), or of those measured on successful requests only. Per-token ITL
    /// comes weighted: each gap stands for `tokens` tokens, so it is observed that many
    /// times (a 4-token chunk after 10 ms is four 2.5 ms observations). The client
    /// rejects token counts above the scenario's `max_output_tokens`; the cap here keeps
    /// one absurd record from ever looping for long regardless. A latency with one value
    /// per probe also keeps the probe as its bucket's exemplar.
    fn observe_latencies(&self, r: &RequestRecord, dispatched: bool, probe_id: Option<u64>) {
        let mut at = None;
        for (l, h) in &self.latencies {
            if l.covers_failures() != dispatched {
                continue;
            }
            let mut left = MAX_ITL_OBSERVATIONS_PER_PROBE;
            r.samples(*l, |v, weight| {
                let n = u64::from(weight).min(left);
                left -= n;
                for _ in 0..n {
                    h.histogram.observe(v.as_secs_f64());
                }
                if l.exemplars() {
                    h.exemplars.observe(Exemplar {
                        value: v.as_secs_f64(),
                        trace_id: r.trace_id.clone(),
                        probe_id,
                        at: *at.get_or_insert_with(unix_now),
                    });
                }
            });
        }
    }

    /// Counts an arrival that was dropped without sending.
    pub fn skip(&self, reason: SkipReason) {
        if let Some((_, c)) = self.skipped.iter().find(|(r, _)| *r == reason.as_str()) {
            c.inc();
        }
    }

    /// The in-flight gauge (the daemon increments it around each probe); replicas have
    /// none.
    pub fn inflight(&self) -> Option<&IntGauge> {
        self.inflight.as_ref()
    }
}

/// Dollars per million tokens, for the probes' own spend.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TokenPrice {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl TokenPrice {
    pub fn cost(&self, prompt_tokens: u32, output_tokens: u32) -> f64 {
        (f64::from(prompt_tokens) * self.input_per_million
            + f64::from(output_tokens) * self.output_per_million)
            / 1e6
    }
}
