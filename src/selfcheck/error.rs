//! A self-probe's error against the reference engine's truth.
//!
//! TTFT error: measured TTFT minus the engine's. The engine starts its clock only once
//! it has read the request, which the client sends after its own send timestamp, so the
//! error is everything the client adds (building and writing the request, loopback,
//! waking up, reading, parsing, timestamping) and is never negative.
//! ITL error: each per-token ITL sample's distance from the engine's gap. A token read
//! late makes its gap longer and the next one shorter, so both count.

use std::time::Duration;

use super::engine::Truth;
use crate::record::RequestRecord;

/// The errors of one self-probe.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProbeError {
    pub ttft: Duration,
    /// One per output token after the first.
    pub itl: Vec<Duration>,
}

impl ProbeError {
    /// The errors of a successful, streamed self-probe; `None` for one that failed or
    /// did not stream a first token (it says nothing about timing).
    pub fn of(record: &RequestRecord, truth: Truth) -> Option<ProbeError> {
        if !record.is_success() {
            return None;
        }
        let ttft = record.ttft()?.saturating_sub(truth.ttft);
        let itl = record
            .itl()
            .flat_map(|(gap, tokens)| std::iter::repeat_n(gap.abs_diff(truth.itl), tokens as usize))
            .collect();
        Some(ProbeError { ttft, itl })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1e3)
    }

    const TRUTH: Truth = Truth {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(5),
        output_tokens: 4,
    };

    fn record(chunks: &[f64]) -> RequestRecord {
        let mut r = RequestRecord::new(0, Duration::ZERO, ms(10.0));
        r.outcome = Outcome::Ok;
        for &at in chunks {
            r.push_chunk(ms(at), 4, Some(1));
        }
        r
    }

    #[test]
    fn errors_are_distances_from_the_truth() {
        // Sent at 10 ms; first token at 60.3 ms: 50.3 ms against 50 ms.
        let e = ProbeError::of(&record(&[60.3, 65.3, 71.3, 75.3]), TRUTH).unwrap();
        assert_eq!(e.ttft.as_micros(), 300);
        let itl: Vec<u128> = e.itl.iter().map(Duration::as_micros).collect();
        // 5.0, 6.0 and 4.0 ms gaps: the late token is counted on both sides.
        assert_eq!(itl, [0, 1000, 1000]);
    }

    #[test]
    fn a_first_token_can_only_be_late() {
        let e = ProbeError::of(&record(&[55.0]), TRUTH).unwrap();
        assert_eq!(e.ttft, Duration::ZERO);
        assert!(e.itl.is_empty());
    }

    #[test]
    fn failed_probes_say_nothing_about_timing() {
        let mut r = record(&[60.0, 65.0]);
        r.outcome = Outcome::Timeout;
        assert_eq!(ProbeError::of(&r, TRUTH), None);
    }
}
