//! The prober measuring itself: self-probes of a reference engine whose timing is
//! known ([`ReferenceEngine`]), sent through the same client, runner and record as
//! real probes, and judged against that truth ([`ProbeError`]). The daemon runs them
//! continuously and exports the errors; `bench --self-check` runs a short burst before
//! and after its run ([`measure`]).
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

use crate::client::{Client, ClientConfig};
use crate::event::RunEvent;
use crate::runner::{self, Dispatch, RunConfig, Stop};
use crate::schedule::Schedule;
use crate::workload::Workload;
use crate::workload::lengths::Lengths;
use crate::workload::prompt::PromptGenerator;

/// Prompt tokens of a self-probe: a short question, like a prober's.
const PROMPT_TOKENS: u32 = 16;

/// The model name self-probes send (the reference engine echoes it).
pub const MODEL: &str = "llmprobe-self-check";

/// The client of self-probes: chat, streamed, every other setting the default a target
/// gets, so its cost is a probe's.
pub fn client(engine: &ReferenceEngine) -> anyhow::Result<Client> {
    Client::new(
        ClientConfig {
            base_url: engine.base_url().to_string(),
            model: MODEL.to_string(),
            ..ClientConfig::default()
        },
        None,
    )
}

/// What self-probes send: synthetic prompts (with the unique nonce, like a probe's),
/// asking for the engine's answer length.
pub fn workload(truth: Truth, seed: u64) -> anyhow::Result<Workload> {
    Ok(Workload::synthetic(
        Lengths::fixed(PROMPT_TOKENS)?,
        Lengths::fixed(truth.output_tokens)?,
        PromptGenerator::approximate(0),
        seed,
    )?)
}

/// Sends `count` self-probes at Poisson `rate_hz` through the shared runner and
/// summarises their errors.
pub async fn measure(
    engine: &ReferenceEngine,
    count: u64,
    rate_hz: f64,
) -> anyhow::Result<Summary> {
    let client = Arc::new(client(engine)?);
    let workload = Arc::new(workload(engine.truth(), 0)?);
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
    let probe = move |d: Dispatch| {
        let client = client.clone();
        let workload = workload.clone();
        async move {
            match workload.spec(d.id) {
                Ok(spec) => client.send(&spec, d.id, d.t_sched, d.run_start).await,
                Err(e) => d.unbuilt(&e),
            }
        }
    };
    let run = runner::run(arrivals, config, None, probe, tx);
    let truth = engine.truth();
    let collect = async {
        let mut summary = Summary::default();
        while let Some(event) = rx.recv().await {
            if let RunEvent::Record(r) = event {
                summary.add(&r, truth);
            }
        }
        summary
    };
    let (_, summary) = tokio::join!(run, collect);
    Ok(summary)
}
