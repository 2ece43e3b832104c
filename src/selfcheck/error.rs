//! A self-probe's error against what the reference engine did.
//!
//! The truth is the engine's actual timing for that request ([`Emission`]: when it
//! read the request, when each token left it), so a token the engine itself sent late
//! is not counted as the client's error; without that note (it was lost) the truth is
//! the engine's configured timing.
//! TTFT error: measured TTFT minus the engine's. The engine starts its clock only once
//! it has read the request, which the client sends after its own send timestamp, and
//! the client reads a token only after the engine handed it over, so the error is
//! everything the client adds (building and writing the request, loopback, the
//! engine's reading of the request, waking up, reading, parsing, timestamping) and is
//! never negative.
//! ITL error: each per-token ITL sample's distance from the engine's gap between the
//! same two tokens. A token read late makes its gap longer and the next one shorter,
//! so both count.

use std::time::Duration;

use super::engine::Truth;
use crate::mock::Emission;
use crate::record::RequestRecord;

/// The errors of one self-probe.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProbeError {
    pub ttft: Duration,
    /// One per output token after the first.
    pub itl: Vec<Duration>,
}

impl ProbeError {
    /// The errors of a successful, streamed self-probe against what the engine did
    /// (`emission`; else its configured `truth`); `None` for one that failed or did not
    /// stream a first token (it says nothing about timing).
    pub fn of(
        record: &RequestRecord,
        truth: Truth,
        emission: Option<&Emission>,
    ) -> Option<ProbeError> {
        if !record.is_success() {
            return None;
        }
        let engine_ttft = emission.and_then(Emission::ttft).unwrap_or(truth.ttft);
        let ttft = record.ttft()?.saturating_sub(engine_ttft);
        let engine_gaps = emission
            .into_iter()
            .flat_map(Emission::gaps)
            .chain(std::iter::repeat(truth.itl));
        let itl = record
            .itl()
            .flat_map(|(gap, tokens)| std::iter::repeat_n(gap, tokens as usize))
            .zip(engine_gaps)
            .map(|(measured, engine)| measured.abs_diff(engine))
            .collect();
        Some(ProbeError { ttft, itl })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::EmittedChunk;
    use crate::record::Outcome;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1e3)
    }

    const TRUTH: Truth = Truth {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(5),
        output_tokens: 4,
    };

    fn micros(errors: &[Duration]) -> Vec<u128> {
        errors.iter().map(Duration::as_micros).collect()
    }

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
        let e = ProbeError::of(&record(&[60.3, 65.3, 71.3, 75.3]), TRUTH, None).unwrap();
        assert_eq!(e.ttft.as_micros(), 300);
        // 5.0, 6.0 and 4.0 ms gaps: the late token is counted on both sides.
        assert_eq!(micros(&e.itl), [0, 1000, 1000]);
    }

    /// A one-token chunk that left `at_ms` after `arrival` (its due time plays no part
    /// in the error).
    fn chunk(arrival: tokio::time::Instant, at_ms: f64) -> EmittedChunk {
        EmittedChunk {
            due: arrival,
            out: arrival + ms(at_ms),
            tokens: 1,
        }
    }

    #[test]
    fn the_engines_own_lateness_is_not_the_clients() {
        // The engine handed its first token over 0.2 ms late and its third 1 ms late;
        // the client read each 0.3 ms after it left.
        let arrival = tokio::time::Instant::now();
        let at = |v: f64| chunk(arrival, v);
        let emission = Emission {
            arrival,
            chunks: vec![at(50.2), at(55.2), at(61.2), at(65.2)],
        };
        // Sent at 10 ms, so read at 60.5, 65.5, 71.5 and 75.5 ms.
        let r = record(&[60.5, 65.5, 71.5, 75.5]);
        let e = ProbeError::of(&r, TRUTH, Some(&emission)).unwrap();
        assert_eq!(e.ttft.as_micros(), 300);
        assert_eq!(micros(&e.itl), [0, 0, 0]);
        // Judged by the configured timing instead, the engine's lateness is charged.
        let e = ProbeError::of(&r, TRUTH, None).unwrap();
        assert_eq!(e.ttft.as_micros(), 500);
        assert_eq!(micros(&e.itl), [0, 1000, 1000]);
    }

    #[test]
    fn missing_gaps_fall_back_to_the_configured_ones() {
        let arrival = tokio::time::Instant::now();
        let emission = Emission {
            arrival,
            chunks: vec![chunk(arrival, 50.0), chunk(arrival, 56.0)],
        };
        let e = ProbeError::of(&record(&[60.0, 66.0, 72.0]), TRUTH, Some(&emission)).unwrap();
        assert_eq!(micros(&e.itl), [0, 1000]);
    }

    #[test]
    fn a_first_token_can_only_be_late() {
        let e = ProbeError::of(&record(&[55.0]), TRUTH, None).unwrap();
        assert_eq!(e.ttft, Duration::ZERO);
        assert!(e.itl.is_empty());
    }

    #[test]
    fn failed_probes_say_nothing_about_timing() {
        let mut r = record(&[60.0, 65.0]);
        r.outcome = Outcome::Timeout;
        assert_eq!(ProbeError::of(&r, TRUTH, None), None);
    }
}
