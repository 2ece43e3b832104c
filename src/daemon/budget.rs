//! The hourly token budget of a target: a token bucket holding at most one hour's
//! budget, refilled continuously at budget / 3600 tokens per second. An arrival takes
//! its scenario's estimate (input + output tokens) up front; when the probe ends the
//! estimate is replaced by what it really used, so the budget tracks actual spend.

use std::time::Duration;

use tokio::time::Instant;

#[derive(Debug, Clone)]
pub struct TokenBudget {
    per_hour: f64,
    level: f64,
    last: Instant,
}

impl TokenBudget {
    /// A full budget of `per_hour` tokens at `now`.
    pub fn new(per_hour: u64, now: Instant) -> Self {
        TokenBudget {
            per_hour: per_hour as f64,
            level: per_hour as f64,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.level = (self.level + dt * self.per_hour / 3600.0).min(self.per_hour);
        self.last = now;
    }

    /// Takes `tokens` if the budget holds them; `false` means skip this arrival.
    pub fn try_take(&mut self, now: Instant, tokens: u64) -> bool {
        self.refill(now);
        let t = tokens as f64;
        if self.level >= t {
            self.level -= t;
            true
        } else {
            false
        }
    }

    /// Replaces an arrival's estimate by the tokens it actually used. Spending more than
    /// estimated leaves the bucket in debt, which later refills pay off. The actual
    /// spend counts at most twice the estimate: a server reporting absurd usage (4e9
    /// tokens) must not put the budget in debt forever.
    pub fn settle(&mut self, now: Instant, estimated: u64, actual: u64) {
        self.refill(now);
        let actual = actual.min(estimated.saturating_mul(2));
        self.level = (self.level + estimated as f64 - actual as f64).min(self.per_hour);
    }

    /// Charges `tokens` spent without a reservation (a conversation's later turn).
    pub fn spend(&mut self, now: Instant, tokens: u64) {
        self.refill(now);
        self.level -= tokens as f64;
    }

    /// Tokens available now.
    pub fn available(&mut self, now: Instant) -> f64 {
        self.refill(now);
        self.level
    }

    /// How long until `tokens` are available (for logs).
    pub fn wait_for(&mut self, now: Instant, tokens: u64) -> Duration {
        self.refill(now);
        let missing = (tokens as f64 - self.level).max(0.0);
        Duration::from_secs_f64(missing * 3600.0 / self.per_hour.max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn spends_then_refills_at_the_hourly_rate() {
        let t0 = Instant::now();
        let mut b = TokenBudget::new(3600, t0);
        assert!(b.try_take(t0, 2000));
        assert!(b.try_take(t0, 1600));
        assert!(!b.try_take(t0, 1));
        // One token per second comes back.
        let t1 = t0 + Duration::from_secs(10);
        assert!((b.available(t1) - 10.0).abs() < 1e-9);
        assert_eq!(b.wait_for(t1, 15), Duration::from_secs(5));
        assert!(b.try_take(t1, 10));
        // Never more than one hour's worth.
        let t2 = t1 + Duration::from_secs(100 * 3600);
        assert!((b.available(t2) - 3600.0).abs() < 1e-9);
    }

    #[tokio::test(start_paused = true)]
    async fn settle_replaces_the_estimate_by_the_actual_spend() {
        let t0 = Instant::now();
        let mut b = TokenBudget::new(1000, t0);
        assert!(b.try_take(t0, 400));
        b.settle(t0, 400, 100); // the probe used far less
        assert!((b.available(t0) - 900.0).abs() < 1e-9);
        b.settle(t0, 500, 1500); // more than estimated: debt, up to 2× the estimate
        assert!((b.available(t0) - 400.0).abs() < 1e-9);
        b.settle(t0, 300, 4_000_000_000); // absurd usage counts as 600
        assert!((b.available(t0) - 100.0).abs() < 1e-9);
        assert!(b.try_take(t0, 100));
        b.settle(t0, 100, 200);
        assert!(!b.try_take(t0, 1));
        assert!(b.available(t0) < 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_turn_is_charged_what_it_spent() {
        let t0 = Instant::now();
        let mut b = TokenBudget::new(1000, t0);
        b.spend(t0, 300);
        assert!((b.available(t0) - 700.0).abs() < 1e-9);
    }
}
