//! The wall clock as the daemon's outputs write it: seconds since the Unix epoch, for
//! `*_timestamp_seconds` gauges and the status pages' times. Measurement never reads
//! it: latencies come from the monotonic clock (`src/record.rs`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 on a clock set before it).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
