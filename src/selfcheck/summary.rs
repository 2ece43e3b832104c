//! A burst of self-probes in a few numbers, for `bench --self-check`.

use std::time::Duration;

use serde::Serialize;

use super::error::ProbeError;

/// Self-probes sent, failed, and their errors (milliseconds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub probes: u64,
    pub failed: u64,
    ttft: Vec<Duration>,
    itl: Vec<Duration>,
}

/// The errors' percentiles, as `--json-out` carries them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorFigures {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Summary {
    /// Adds one self-probe: its errors, or `None` when it failed.
    pub fn add(&mut self, error: Option<ProbeError>) {
        self.probes += 1;
        match error {
            Some(e) => {
                self.ttft.push(e.ttft);
                self.itl.extend(e.itl);
            }
            None => self.failed += 1,
        }
    }

    /// TTFT error figures; `None` when no self-probe succeeded.
    pub fn ttft_error(&self) -> Option<ErrorFigures> {
        figures(&self.ttft)
    }

    /// ITL error figures; `None` without a single token gap.
    pub fn itl_error(&self) -> Option<ErrorFigures> {
        figures(&self.itl)
    }

    /// Counts and figures as `--json-out` carries them (not the samples).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "probes": self.probes,
            "failed": self.failed,
            "ttft_error_ms": self.ttft_error(),
            "itl_error_ms": self.itl_error(),
        })
    }
}

/// Nearest-rank percentiles of `samples` in milliseconds.
fn figures(samples: &[Duration]) -> Option<ErrorFigures> {
    let mut sorted: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    sorted.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    };
    let max = *sorted.last()?;
    Some(ErrorFigures {
        p50_ms: at(50.0),
        p99_ms: at(99.0),
        max_ms: max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let f = figures(&samples).unwrap();
        assert_eq!((f.p50_ms, f.p99_ms, f.max_ms), (50.0, 99.0, 100.0));
        assert_eq!(figures(&[]), None);
        let one = figures(&[Duration::from_micros(250)]).unwrap();
        assert_eq!((one.p50_ms, one.p99_ms), (0.25, 0.25));
    }
}
