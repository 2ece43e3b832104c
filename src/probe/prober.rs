//! [`Prober`]: one arrival of the schedule turned into its record — a single request,
//! or a conversation whose earlier turns are reported as they finish. Bench, daemon
//! and self-check send through it; the client's own retry of a stale pooled
//! connection happens below it, in every case. A golden question's answer is judged
//! here, by its own expected answer, into the record's golden verdict.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::conversation::{Conversation, Turns};
use crate::event::RunEvent;
use crate::record::RequestRecord;
use crate::runner::{Dispatch, Timer};
use crate::workload::{RequestSpec, Workload};

/// Sends arrivals of one probe definition.
pub struct Prober {
    pub client: Arc<Client>,
    pub workload: Arc<Workload>,
    /// Each arrival is a conversation (`turns > 1`).
    pub conversations: Option<Conversations>,
}

/// What a conversation needs besides the client.
pub struct Conversations {
    pub turns: Turns,
    /// The run's seed: think times are drawn per conversation from it.
    pub seed: u64,
    /// The clock later turns wait on.
    pub timer: Timer,
    /// Stops a conversation before its next turn.
    pub stop: CancellationToken,
    /// Where a conversation's earlier turns go (its last is the arrival's record).
    pub events: mpsc::UnboundedSender<RunEvent>,
}

impl Prober {
    /// The record of arrival `d`. Its first message is `first` when it was built
    /// ahead (a trace's request, a prebuilt spec), else built now from the workload.
    /// An error means a message could not be built: nothing was sent for it.
    pub async fn send(
        &self,
        d: Dispatch,
        first: Option<&RequestSpec>,
    ) -> anyhow::Result<RequestRecord> {
        let Some(c) = &self.conversations else {
            let built;
            let spec = match first {
                Some(spec) => spec,
                None => {
                    built = self.workload.spec(d.id)?;
                    &built
                }
            };
            let Some(asked) = self.workload.golden_question(d.id) else {
                return Ok(self.client.send(spec, d.id, d.t_sched, d.run_start).await);
            };
            let (mut rec, answer) = self
                .client
                .send_keeping_answer(spec, d.id, d.t_sched, d.run_start)
                .await;
            rec.golden = rec
                .is_success()
                .then(|| golden_verdict(&asked, &answer, &self.client));
            return Ok(rec);
        };
        let per = c.turns.count;
        let mut first = first.cloned();
        let message = |turn: u32| match (turn, first.take()) {
            (1, Some(spec)) => Ok(Some(spec)),
            (1, None) => self.workload.first_turn(d.id, per).map(Some),
            _ => self.workload.later_turn(d.id, per, turn),
        };
        let conversation = Conversation {
            client: &self.client,
            turns: c.turns,
            seed: c.seed,
            timer: &c.timer,
            stop: &c.stop,
        };
        let emit = |r| {
            let _ = c.events.send(RunEvent::Record(r));
        };
        Ok(conversation.run(d, message, emit).await?)
    }
}

/// The verdict on a golden question's answer; a wrong answer's reason has the
/// client's secrets scrubbed out.
fn golden_verdict(
    asked: &crate::check::Asked,
    answer: &str,
    client: &Client,
) -> crate::record::GoldenVerdict {
    let verdict = asked.judge(answer);
    crate::record::GoldenVerdict {
        line: asked.question().line,
        correct: verdict.is_ok(),
        reason: verdict
            .err()
            .map(|r| crate::secret::scrub(&r, client.secrets())),
    }
}
