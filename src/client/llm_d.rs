//! What llmprobe says to and reads from an llm-d / Gateway API Inference Extension
//! gateway: the request headers its endpoint picker reads (latency objectives, the
//! objective, the fairness ID), sent only when a target opts in, and the response
//! header that says why the gateway dropped a request, which becomes the failure
//! reason.
//!
//! Names from llm-d's router: the request headers in `pkg/epp/metadata/consts.go`,
//! the dropped-reason header and its values in `pkg/common/error/error.go`.

use crate::record::Outcome;

/// The time-to-first-token objective of the request, in milliseconds.
pub const SLO_TTFT_HEADER: &str = "x-llm-d-slo-ttft-ms";
/// The time-per-output-token objective of the request, in milliseconds.
pub const SLO_TPOT_HEADER: &str = "x-llm-d-slo-tpot-ms";
/// The `InferenceObjective` the request belongs to.
pub const OBJECTIVE_HEADER: &str = "x-llm-d-inference-objective";
/// The flow-control fairness ID (the queue the request is fair-shared in).
pub const FAIRNESS_ID_HEADER: &str = "x-llm-d-inference-fairness-id";
/// The response header naming why the gateway dropped the request.
pub const DROPPED_REASON_HEADER: &str = "x-llm-d-request-dropped-reason";

/// Every dropped reason the router defines, each with the failure reason it becomes.
pub const DROPPED_REASONS: [(&str, Outcome); 9] = [
    ("rejected-saturated", Outcome::GatewayRejected),
    ("rejected-no-endpoints", Outcome::GatewayRejected),
    ("rejected-ttl-expired", Outcome::GatewayRejected),
    ("rejected-context-cancelled", Outcome::GatewayRejected),
    ("rejected-shutting-down", Outcome::GatewayRejected),
    ("rejected-internal", Outcome::GatewayRejected),
    ("evicted", Outcome::GatewayEvicted),
    ("evicted-queue-pressure", Outcome::GatewayEvicted),
    ("evicted-priority", Outcome::GatewayEvicted),
];

/// The failure reason of a dropped-reason header value: a known value's, else by its
/// prefix (`rejected…`, `evicted…`: a newer router's reason still lands in its family),
/// else `None` (the HTTP status decides).
pub fn dropped_outcome(value: &str) -> Option<Outcome> {
    let value = value.trim().to_ascii_lowercase();
    if let Some((_, o)) = DROPPED_REASONS.iter().find(|(v, _)| *v == value) {
        return Some(*o);
    }
    if value.starts_with("rejected") {
        Some(Outcome::GatewayRejected)
    } else if value.starts_with("evicted") {
        Some(Outcome::GatewayEvicted)
    } else {
        None
    }
}

/// The llm-d request headers of one scenario's client; empty (nothing sent) unless
/// the target's `llm_d:` block asks for them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LlmdHeaders {
    pub objective: Option<String>,
    pub fairness_id: Option<String>,
    /// The scenario's TTFT objective in whole milliseconds (rounded up, so the gateway
    /// is never told a tighter objective than the scenario's).
    pub slo_ttft_ms: Option<u64>,
    pub slo_tpot_ms: Option<u64>,
}

impl LlmdHeaders {
    /// The headers to send, name and value.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(ms) = self.slo_ttft_ms {
            out.push((SLO_TTFT_HEADER, ms.to_string()));
        }
        if let Some(ms) = self.slo_tpot_ms {
            out.push((SLO_TPOT_HEADER, ms.to_string()));
        }
        if let Some(o) = &self.objective {
            out.push((OBJECTIVE_HEADER, o.clone()));
        }
        if let Some(f) = &self.fairness_id {
            out.push((FAIRNESS_ID_HEADER, f.clone()));
        }
        out
    }
}

/// A duration in whole milliseconds, rounded up (at least 1).
pub fn ceil_ms(d: std::time::Duration) -> u64 {
    let ms = d.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dropped_reason_of_the_router_maps_to_its_family() {
        for (value, outcome) in DROPPED_REASONS {
            assert_eq!(dropped_outcome(value), Some(outcome), "{value}");
            let family = if value.starts_with("rejected") {
                "gateway_rejected"
            } else {
                "gateway_evicted"
            };
            assert_eq!(outcome.as_str(), family, "{value}");
        }
        assert_eq!(
            dropped_outcome(" Rejected-Saturated "),
            Some(Outcome::GatewayRejected)
        );
    }

    #[test]
    fn unknown_values_map_by_prefix_or_not_at_all() {
        assert_eq!(
            dropped_outcome("rejected-budget"),
            Some(Outcome::GatewayRejected)
        );
        assert_eq!(
            dropped_outcome("evicted-preempted"),
            Some(Outcome::GatewayEvicted)
        );
        assert_eq!(dropped_outcome("throttled"), None);
        assert_eq!(dropped_outcome(""), None);
    }

    #[test]
    fn headers_are_sent_only_when_set() {
        assert!(LlmdHeaders::default().pairs().is_empty());
        let h = LlmdHeaders {
            objective: Some("chat-premium".into()),
            fairness_id: Some("probe".into()),
            slo_ttft_ms: Some(250),
            slo_tpot_ms: None,
        };
        assert_eq!(
            h.pairs(),
            [
                ("x-llm-d-slo-ttft-ms", "250".to_string()),
                ("x-llm-d-inference-objective", "chat-premium".to_string()),
                ("x-llm-d-inference-fairness-id", "probe".to_string()),
            ]
        );
    }

    #[test]
    fn objectives_round_up_to_whole_milliseconds() {
        use std::time::Duration;
        assert_eq!(ceil_ms(Duration::from_millis(200)), 200);
        assert_eq!(ceil_ms(Duration::from_micros(2500)), 3);
        assert_eq!(ceil_ms(Duration::from_micros(10)), 1);
    }
}
