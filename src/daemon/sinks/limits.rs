//! The limits sink: a probe the server refused with 429 and a retry delay pauses its
//! target (`daemon/limits.rs`); an answered probe's dollars count toward the day's
//! spend. Both are shown on the status page.

use std::sync::Arc;

use tokio::time::Instant;

use crate::daemon::limits::{TargetLimits, WallClock};
use crate::exposition::TokenPrice;
use crate::record::{Outcome, RequestRecord};
use crate::sink::{RecordSink, Verdict};
use crate::status::StatusBoard;

pub struct LimitsSink {
    pub target: String,
    pub limits: Arc<TargetLimits>,
    /// The target's price, which the day's spend is counted at (the same figure as
    /// `llmprobe_probe_cost_dollars_total`).
    pub price: Option<TokenPrice>,
    pub board: Arc<StatusBoard>,
    /// Whose day the spend is counted in (the admission's).
    pub clock: WallClock,
}

impl RecordSink for LimitsSink {
    fn record(&mut self, r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        if let Some(price) = &self.price
            && r.answered()
        {
            let dollars = price.cost(r.prompt_tokens(), r.output_tokens());
            self.limits.spend((self.clock)(), dollars);
        }
        // Only a 429 pauses: a 503's delay is an outage, which the probes must keep
        // measuring. A 429 without a (readable) delay is counted and probing goes on.
        if let (Outcome::Http429, Some(delay)) = (r.outcome, r.retry_after) {
            let now = Instant::now();
            let until = self.limits.pause(now, delay);
            let unix_until = (self.clock)() + (until - now).as_secs_f64();
            self.board
                .update_hold(&self.target, |h| h.rate_limited_until = Some(unix_until));
            tracing::info!(
                target = %self.target,
                asked = ?delay,
                pause = ?(until - now),
                "rate-limited (429 with a retry delay); skipping the target's arrivals until then"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn refused(status: u16, retry_after: Option<Duration>) -> RequestRecord {
        let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.http_status = Some(status);
        r.outcome = Outcome::from_http_status(status);
        r.retry_after = retry_after;
        r
    }

    #[tokio::test(start_paused = true)]
    async fn only_a_429_with_a_delay_pauses() {
        let limits = Arc::new(TargetLimits::default());
        let board = StatusBoard::new();
        let mut sink = LimitsSink {
            target: "t".into(),
            limits: limits.clone(),
            price: None,
            board: board.clone(),
            clock: Arc::new(|| 1000.0),
        };
        let verdict = Verdict {
            good: false,
            probe_id: None,
        };
        let now = Instant::now();
        // A 503's delay is an outage to keep measuring; a 429 without one goes on.
        sink.record(&refused(503, Some(Duration::from_secs(5))), verdict)
            .unwrap();
        sink.record(&refused(429, None), verdict).unwrap();
        assert!(!limits.paused(now));
        assert_eq!(board.hold("t"), None);
        sink.record(&refused(429, Some(Duration::from_secs(5))), verdict)
            .unwrap();
        assert!(limits.paused(now + Duration::from_millis(4999)));
        assert!(!limits.paused(now + Duration::from_secs(5)));
        assert_eq!(board.hold("t").unwrap().rate_limited_until, Some(1005.0));
    }
}
