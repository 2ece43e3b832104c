//! Exemplars of the latency histograms: per bucket, the newest probe that fell in it
//! (its trace ID and probe ID), served only in the OpenMetrics format
//! ([`super::openmetrics`]). The classic text format has no exemplars.

use std::sync::Mutex;

/// One probe's observation, as an exemplar names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exemplar {
    /// The observed value, in the histogram's unit (seconds).
    pub value: f64,
    /// The W3C trace ID the probe sent in `traceparent`.
    pub trace_id: Option<String>,
    /// The daemon's probe ID (`/probe/ID`).
    pub probe_id: Option<u64>,
    /// When it was observed, seconds since the Unix epoch.
    pub at: f64,
}

impl Exemplar {
    /// The exemplar's labels, in the order they are written.
    pub fn labels(&self) -> Vec<(&'static str, String)> {
        let mut l = Vec::with_capacity(2);
        if let Some(t) = &self.trace_id {
            l.push(("trace_id", t.clone()));
        }
        if let Some(p) = self.probe_id {
            l.push(("probe_id", p.to_string()));
        }
        l
    }
}

/// The newest exemplar of each bucket of one histogram series (its upper bounds, then
/// `+Inf`).
#[derive(Debug)]
pub struct BucketExemplars {
    bounds: Vec<f64>,
    newest: Mutex<Vec<Option<Exemplar>>>,
}

impl BucketExemplars {
    pub fn new(bounds: &[f64]) -> BucketExemplars {
        BucketExemplars {
            bounds: bounds.to_vec(),
            newest: Mutex::new(vec![None; bounds.len() + 1]),
        }
    }

    /// Keeps `e` as its bucket's exemplar (the bucket a histogram counts it in: the
    /// first upper bound at or above the value). One without labels names nothing and
    /// is dropped, as is a value that is not a number.
    pub fn observe(&self, e: Exemplar) {
        if e.value.is_nan() || (e.trace_id.is_none() && e.probe_id.is_none()) {
            return;
        }
        let i = self.bounds.partition_point(|b| *b < e.value);
        let mut newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = newest.get_mut(i) {
            *slot = Some(e);
        }
    }

    /// The exemplar of the bucket with upper bound `le` (`+Inf` for the last).
    pub fn of_bucket(&self, le: f64) -> Option<Exemplar> {
        let i = if le == f64::INFINITY {
            self.bounds.len()
        } else {
            self.bounds.iter().position(|b| *b == le)?
        };
        let newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        newest.get(i).cloned().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(value: f64, probe: u64) -> Exemplar {
        Exemplar {
            value,
            trace_id: Some(format!("{probe:032x}")),
            probe_id: Some(probe),
            at: 1.0,
        }
    }

    #[test]
    fn each_bucket_keeps_its_newest_probe() {
        let b = BucketExemplars::new(&[0.1, 0.5]);
        b.observe(ex(0.05, 1));
        b.observe(ex(0.1, 2)); // on the bound: counted in le=0.1, as the histogram does
        b.observe(ex(0.3, 3));
        b.observe(ex(7.0, 4));
        assert_eq!(b.of_bucket(0.1).unwrap().probe_id, Some(2));
        assert_eq!(b.of_bucket(0.5).unwrap().probe_id, Some(3));
        assert_eq!(b.of_bucket(f64::INFINITY).unwrap().probe_id, Some(4));
        assert_eq!(b.of_bucket(0.2), None, "not a bound");
    }

    #[test]
    fn nameless_and_nan_observations_are_dropped() {
        let b = BucketExemplars::new(&[1.0]);
        b.observe(Exemplar {
            value: 0.5,
            trace_id: None,
            probe_id: None,
            at: 1.0,
        });
        b.observe(ex(f64::NAN, 9));
        assert_eq!(b.of_bucket(1.0), None);
        assert_eq!(b.of_bucket(f64::INFINITY), None);
    }

    #[test]
    fn labels_name_trace_then_probe() {
        let e = ex(0.2, 12);
        assert_eq!(
            e.labels(),
            vec![
                ("trace_id", "0000000000000000000000000000000c".to_string()),
                ("probe_id", "12".to_string())
            ]
        );
    }
}
