//! Multi-turn conversations over the shared measurement path, for bench and daemon.
//! A conversation starts at its arrival (turn 1 is the schedule's request); each later
//! turn is sent when the previous answer has fully arrived plus a drawn think time,
//! carrying the whole history (every earlier user message and the answer the server
//! actually gave) and a new user message. Each turn is one request with its own
//! record (`turn`, and the conversation's arrival number as `id`).
//!
//! A later turn is not an arrival of the schedule: its `t_sched` is its own due time
//! (previous `t_end` + think time), so its dispatch lag is measured against that, and
//! a slow answer delays only its own conversation, never another one's start (each
//! conversation runs in the runner's task of its arrival). A conversation ends after
//! its last turn, after a failed turn (there is no answer to carry on with), or when
//! the run is stopped (the turn in flight finishes; no new turn starts).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::record::RequestRecord;
use crate::runner::{Dispatch, Timer};
use crate::schedule::ThinkTime;
use crate::workload::{History, RequestSpec};

/// The shape of a run's conversations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Turns {
    /// Turns per conversation (at least 1; 1 is a single request).
    pub count: u32,
    pub think: ThinkTime,
}

/// One conversation's sending: the client, its clock, and where records go.
pub struct Conversation<'a> {
    pub client: &'a Client,
    pub turns: Turns,
    /// The run's seed: think times are drawn per conversation from it.
    pub seed: u64,
    pub timer: &'a Timer,
    /// Stops the conversation before its next turn.
    pub stop: &'a CancellationToken,
}

/// A turn's message could not be built.
#[derive(Debug, thiserror::Error)]
#[error("turn {turn}: {error:#}")]
pub struct BuildError {
    pub turn: u32,
    pub error: anyhow::Error,
}

impl Conversation<'_> {
    /// Runs the conversation of arrival `d`. `message(turn)` builds each turn's new
    /// user message (1-based; its `prompt_tokens` are the message's own); every turn's
    /// record but the last goes to `emit` just before the next turn is sent, and the
    /// last is returned (the runner reports it like a single request's).
    pub async fn run(
        &self,
        d: Dispatch,
        mut message: impl FnMut(u32) -> anyhow::Result<Option<RequestSpec>>,
        mut emit: impl FnMut(RequestRecord),
    ) -> Result<RequestRecord, BuildError> {
        let built = |turn, r: anyhow::Result<Option<RequestSpec>>| {
            r.map_err(|error| BuildError { turn, error })
        };
        let mut history = History::default();
        let mut think = self.turns.think.draws(self.seed, d.id);
        let Some(first) = built(1, message(1))? else {
            return Err(BuildError {
                turn: 1,
                error: anyhow::anyhow!("a conversation without a first message"),
            });
        };
        let mut spec = history.request(first);
        let mut t_sched = d.t_sched;
        let mut turn = 1;
        loop {
            let (mut rec, answer) = self
                .client
                .send_keeping_answer(&spec, d.id, t_sched, d.run_start)
                .await;
            rec.turn = Some(turn);
            if turn >= self.turns.count || !rec.is_success() || self.stop.is_cancelled() {
                return Ok(rec);
            }
            // What the server said back, without its reasoning, is what comes next.
            let answer_tokens = rec.output_tokens().saturating_sub(rec.reasoning_tokens());
            history.answered(spec, answer, answer_tokens);
            // Built before the think time, so building costs the next turn no lag.
            // A replayed conversation may end before `turns`.
            let Some(next) = built(turn + 1, message(turn + 1))? else {
                return Ok(rec);
            };
            spec = history.request(next);
            let answered = rec.t_end.unwrap_or(rec.t_send);
            t_sched = answered.saturating_add(think.next().unwrap_or(Duration::ZERO));
            let Some(due) = d.run_start.checked_add(t_sched) else {
                return Ok(rec);
            };
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return Ok(rec),
                () = self.timer.wait_until(due) => {}
            }
            emit(rec);
            turn += 1;
        }
    }
}
