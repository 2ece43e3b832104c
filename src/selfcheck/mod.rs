//! The prober measuring itself: self-probes of a reference engine whose timing is
//! known ([`ReferenceEngine`]), sent through the same client, runner and record as
//! real probes, and judged against what the engine did for each ([`ProbeError`]). The
//! daemon runs them continuously and exports the errors; `bench --self-check` runs a
//! short burst before and after its run ([`measure`]). [`SelfProbes`] is what both
//! send and how both judge.
//!
//! What it covers: everything between the runner's send timestamp and the client's read
//! timestamps in this process (waking up, writing, reading, parsing, timestamping) plus
//! loopback. What it does not: the network path to a real target, TLS, and the target's
//! own variability.

pub mod engine;
pub mod error;
pub mod summary;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

pub use engine::{ReferenceEngine, Truth};
pub use error::ProbeError;
pub use summary::Summary;

use crate::client::{Client, ClientConfig, request};
use crate::event::RunEvent;
use crate::probe::Prober;
use crate::record::RequestRecord;
use crate::runner::{self, Dispatch, RunConfig, Stop};
use crate::schedule::Schedule;
use crate::workload::Workload;
use crate::workload::lengths::Lengths;
use crate::workload::prompt::PromptGenerator;

/// Prompt tokens of a self-probe: a short question, like a prober's.
const PROMPT_TOKENS: u32 = 16;

/// The model name self-probes send (the reference engine echoes it).
pub const MODEL: &str = "llmprobe-self-check";

/// Self-probes of one reference engine: what they send, and how each is judged.
pub struct SelfProbes {
    engine: Arc<ReferenceEngine>,
    /// The shared prober: single requests, like a probe's.
    prober: Prober,
}

impl SelfProbes {
    /// The client is chat, streamed, with every other setting the default a target
    /// gets, so its cost is a probe's; the workload is synthetic prompts (with the
    /// unique nonce, like a probe's) asking for the engine's answer length.
    pub fn new(engine: Arc<ReferenceEngine>, seed: u64) -> anyhow::Result<SelfProbes> {
        let client = Client::new(
            ClientConfig {
                base_url: engine.base_url().to_string(),
                model: MODEL.to_string(),
                ..ClientConfig::default()
            },
            None,
        )?;
        let workload = Workload::synthetic(
            Lengths::fixed(PROMPT_TOKENS)?,
            Lengths::fixed(engine.truth().output_tokens)?,
            PromptGenerator::approximate(0),
            seed,
        )?;
        Ok(SelfProbes {
            engine,
            prober: Prober {
                client: Arc::new(client),
                workload: Arc::new(workload),
                conversations: None,
            },
        })
    }

    /// Sends one self-probe, like any probe.
    pub async fn send(&self, d: Dispatch) -> RequestRecord {
        self.prober
            .send(d, None)
            .await
            .unwrap_or_else(|e| d.unbuilt(&e))
    }

    /// The error of a self-probe's record against what the engine did for it (found
    /// by the body the probe sent, rebuilt from its id).
    pub fn error(&self, record: &RequestRecord) -> Option<ProbeError> {
        let emission = self
            .prober
            .workload
            .spec(record.id)
            .ok()
            .and_then(|spec| request::body(self.prober.client.config(), &spec).ok())
            .and_then(|body| self.engine.emission(&body));
        ProbeError::of(record, self.engine.truth(), emission.as_ref())
    }
}

/// Sends `count` self-probes at Poisson `rate_hz` through the shared runner and
/// summarises their errors.
pub async fn measure(
    engine: Arc<ReferenceEngine>,
    count: u64,
    rate_hz: f64,
) -> anyhow::Result<Summary> {
    let probes = Arc::new(SelfProbes::new(engine, 0)?);
    let arrivals = Schedule::poisson(rate_hz)?.arrivals(0);
    let config = RunConfig {
        cap: None,
        stop: Stop {
            max_requests: Some(count),
            ..Stop::default()
        },
        drain: None,
        cancel_grace: Duration::from_secs(5),
        timer: runner::Timer::Tokio,
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sender = probes.clone();
    let probe = move |d: Dispatch| {
        let probes = sender.clone();
        async move { probes.send(d).await }
    };
    let run = runner::run(arrivals, config, None, probe, tx);
    let collect = async {
        let mut summary = Summary::default();
        while let Some(event) = rx.recv().await {
            if let RunEvent::Record(r) = event {
                summary.add(probes.error(&r));
            }
        }
        summary
    };
    let (_, summary) = tokio::join!(run, collect);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRUTH: Truth = Truth {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(2),
        output_tokens: 4,
    };

    /// A self-probe is judged by what the engine did for that very request, found by
    /// the body it sent.
    #[tokio::test]
    async fn a_self_probe_is_judged_by_what_the_engine_did_for_it() {
        let engine = Arc::new(ReferenceEngine::start(TRUTH).await.unwrap());
        let probes = SelfProbes::new(engine.clone(), 7).unwrap();
        let dispatch = |id| Dispatch {
            id,
            t_sched: Duration::ZERO,
            run_start: tokio::time::Instant::now(),
        };
        let first = probes.send(dispatch(0)).await;
        let second = probes.send(dispatch(1)).await;
        assert!(first.is_success() && second.is_success(), "{first:?}");
        // The second probe's note, taken by rebuilding its body.
        let spec = probes.prober.workload.spec(1).unwrap();
        let body = request::body(probes.prober.client.config(), &spec).unwrap();
        let emission = engine.emission(&body).unwrap();
        assert_eq!(emission.chunks.len(), 4);
        let engine_ttft = emission.ttft().unwrap();
        assert!(engine_ttft >= TRUTH.ttft, "{engine_ttft:?}");
        assert!(second.ttft().unwrap() >= engine_ttft);
        let judged = ProbeError::of(&second, TRUTH, Some(&emission)).unwrap();
        assert_eq!(judged.ttft, second.ttft().unwrap() - engine_ttft);
        // Taken once: judged again, only the configured timing is left.
        assert_eq!(probes.error(&second), ProbeError::of(&second, TRUTH, None));
        // The first probe's note is still there, and `error` finds it.
        let spec = probes.prober.workload.spec(0).unwrap();
        let body = request::body(probes.prober.client.config(), &spec).unwrap();
        let error = probes.error(&first).unwrap();
        assert_eq!(engine.emission(&body), None, "error() took the note");
        assert!(error.ttft <= ProbeError::of(&first, TRUTH, None).unwrap().ttft);
        assert_eq!(error.itl.len(), 3);
    }
}
