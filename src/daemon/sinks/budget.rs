//! The budget sink: a finished probe's real token use replaces the estimate its
//! admission took from the target's token budget.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::daemon::budget::TokenBudget;
use crate::record::RequestRecord;
use crate::sink::{RecordSink, Verdict};

pub struct BudgetSink {
    pub budget: Arc<Mutex<TokenBudget>>,
    /// What admission took for one arrival (input + output tokens of the scenario).
    pub estimate: u64,
}

impl RecordSink for BudgetSink {
    fn record(&mut self, r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        // A probe the server never answered cost nothing.
        let actual = if r.answered() {
            u64::from(r.prompt_tokens()) + u64::from(r.output_tokens())
        } else {
            0
        };
        let mut b = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        if r.is_later_turn() {
            // Admitted with its conversation's first turn: charged as spent.
            b.spend(Instant::now(), actual);
        } else {
            b.settle(Instant::now(), self.estimate, actual);
        }
        Ok(())
    }
}
