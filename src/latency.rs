//! The latencies measured on every request, named once: which value of a
//! [`RequestRecord`] each one is ([`Latency::extract`]), and how it is spelled in the
//! aggregation and in the reports. `aggregate` and `report` iterate [`Latency::ALL`]
//! instead of repeating the list; [`LatencyMetric`] is the subset users name on the
//! command line (vLLM's `--percentile-metrics`, `--goodput`, the latency gates).
//! Definitions: docs/measurement.md.

use std::str::FromStr;
use std::time::Duration;

use crate::record::RequestRecord;

/// One latency distribution of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Latency {
    /// Time to first token, t_first − t_send.
    Ttft,
    /// Time to first answer token, t_first_answer − t_send (equals TTFT when the model
    /// does not reason).
    Ttfa,
    /// Time per output token after the first, vLLM's definition.
    Tpot,
    /// Per-token inter-token latency (a gap shared among the tokens of its chunk),
    /// weighted by tokens.
    Itl,
    /// Gaps between content chunks (what vLLM calls ITL).
    ChunkGap,
    /// End-to-end latency, t_last − t_send.
    E2e,
    /// t_first − t_sched.
    TtftFromSched,
    /// t_last − t_sched.
    E2eFromSched,
    /// t_send − t_sched, over every dispatched request whatever its outcome.
    DispatchLag,
}

impl Latency {
    /// Every latency, in the order the summaries list them.
    pub const ALL: [Latency; 9] = [
        Latency::Ttft,
        Latency::Ttfa,
        Latency::Tpot,
        Latency::Itl,
        Latency::ChunkGap,
        Latency::E2e,
        Latency::TtftFromSched,
        Latency::E2eFromSched,
        Latency::DispatchLag,
    ];

    /// Number of latencies (the length of [`Latency::ALL`]).
    pub const COUNT: usize = Latency::ALL.len();

    /// Position in [`Latency::ALL`], for arrays indexed by latency.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name of its field in the aggregation summary (`ttft`, `chunk_gap`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Ttfa => "ttfa",
            Latency::Tpot => "tpot",
            Latency::Itl => "itl",
            Latency::ChunkGap => "chunk_gap",
            Latency::E2e => "e2e",
            Latency::TtftFromSched => "ttft_from_sched",
            Latency::E2eFromSched => "e2e_from_sched",
            Latency::DispatchLag => "dispatch_lag",
        }
    }

    /// Whether it is measured on every dispatched request (dispatch lag), rather than
    /// on successful requests only (every other latency).
    pub const fn covers_failures(self) -> bool {
        matches!(self, Latency::DispatchLag)
    }

    /// Calls `sample(value, weight)` for each value this latency takes in `r`: none,
    /// one (weight 1), or, for ITL and chunk gaps, one per gap (ITL weighted by the
    /// tokens that share it).
    pub fn extract(self, r: &RequestRecord, mut sample: impl FnMut(Duration, u32)) {
        let mut one = |v: Option<Duration>| {
            if let Some(v) = v {
                sample(v, 1);
            }
        };
        match self {
            Latency::Ttft => one(r.ttft()),
            Latency::Ttfa => one(r.ttfa()),
            Latency::Tpot => one(r.tpot()),
            Latency::E2e => one(r.e2e()),
            Latency::TtftFromSched => one(r.ttft_from_sched()),
            Latency::E2eFromSched => one(r.e2e_from_sched()),
            Latency::DispatchLag => one(Some(r.dispatch_lag())),
            Latency::Itl => r.itl().for_each(|(d, tokens)| sample(d, tokens)),
            Latency::ChunkGap => r.chunk_gaps().for_each(|d| sample(d, 1)),
        }
    }
}

/// A latency users name: vLLM's `--percentile-metrics` and `--goodput` names, and the
/// latency part of a gate (`ttft-p99<=500ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LatencyMetric {
    Ttft,
    Tpot,
    Itl,
    E2el,
    /// Time to first answer token (not a vLLM metric).
    Ttfa,
}

impl LatencyMetric {
    /// vLLM's `--percentile-metrics` names (TTFA is llmprobe's own).
    pub const ALL: [LatencyMetric; 4] = [
        LatencyMetric::Ttft,
        LatencyMetric::Tpot,
        LatencyMetric::Itl,
        LatencyMetric::E2el,
    ];

    /// vLLM's short name (`--percentile-metrics`, `--goodput`, `*_ms` keys).
    pub fn as_str(self) -> &'static str {
        match self {
            LatencyMetric::Ttft => "ttft",
            LatencyMetric::Tpot => "tpot",
            LatencyMetric::Itl => "itl",
            LatencyMetric::E2el => "e2el",
            LatencyMetric::Ttfa => "ttfa",
        }
    }

    /// The latency it names.
    pub fn latency(self) -> Latency {
        match self {
            LatencyMetric::Ttft => Latency::Ttft,
            LatencyMetric::Tpot => Latency::Tpot,
            LatencyMetric::Itl => Latency::Itl,
            LatencyMetric::E2el => Latency::E2e,
            LatencyMetric::Ttfa => Latency::Ttfa,
        }
    }
}

impl FromStr for LatencyMetric {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<LatencyMetric, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ttft" => Ok(LatencyMetric::Ttft),
            "tpot" => Ok(LatencyMetric::Tpot),
            "itl" => Ok(LatencyMetric::Itl),
            "e2el" | "e2e" => Ok(LatencyMetric::E2el),
            "ttfa" => Ok(LatencyMetric::Ttfa),
            _ => Err(format!(
                "unknown metric {s:?}: expected ttft, tpot, itl, e2el or ttfa"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_index_order() {
        for (i, l) in Latency::ALL.iter().enumerate() {
            assert_eq!(l.index(), i);
        }
        assert_eq!(Latency::COUNT, 9);
    }

    #[test]
    fn metrics_name_their_latency() {
        let names: Vec<&str> = LatencyMetric::ALL
            .iter()
            .map(|m| m.latency().name())
            .collect();
        assert_eq!(names, ["ttft", "tpot", "itl", "e2e"]);
        assert_eq!("E2E".parse::<LatencyMetric>(), Ok(LatencyMetric::E2el));
    }
}
