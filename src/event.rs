//! What a run reports besides its records' contents: a finished request, or an arrival
//! that was not sent and why. At the record layer so the runner that emits these
//! events and the aggregation that reads them share one definition without depending
//! on each other.

use std::time::Duration;

use serde::Serialize;

use crate::record::RequestRecord;

/// Why an arrival was not sent. Stable snake_case names (the `reason` label of
/// `llmprobe_probes_skipped_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The concurrency cap was reached and the policy is `CapPolicy::Skip` (the runner's).
    MaxInflight,
    /// The admission hook refused it (the daemon's token budget).
    TokenBudget,
    /// The target answered 429 with a retry delay that has not passed (the daemon's
    /// rate-limit pause).
    RateLimited,
    /// The target's probes spent its `budget_per_day` dollars this UTC day.
    CostBudget,
}

impl SkipReason {
    /// Every reason, in the order of the `reason` label values.
    pub const ALL: [SkipReason; 4] = [
        SkipReason::MaxInflight,
        SkipReason::TokenBudget,
        SkipReason::RateLimited,
        SkipReason::CostBudget,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::MaxInflight => "max_inflight",
            SkipReason::TokenBudget => "token_budget",
            SkipReason::RateLimited => "rate_limited",
            SkipReason::CostBudget => "cost_budget",
        }
    }
}

/// What the runner reports, in completion order.
// Records are nearly every event and move through a channel once; boxing them would
// add an allocation per request to save bytes on the rare skip.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// A request finished (or was cancelled at the end of the run).
    Record(RequestRecord),
    /// An arrival was dropped at its scheduled time.
    Skipped {
        id: u64,
        t_sched: Duration,
        reason: SkipReason,
    },
}
