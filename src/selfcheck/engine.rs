//! The reference engine: the mock with known timing (no jitter, no batch slowdown, a
//! fixed answer length), served from a thread and a runtime of its own. Its own thread
//! keeps it out of the way of the runtime under test: a busy or blocked probing runtime
//! makes the client read late, not the reference send late. Both share the process, so
//! CPU throttling of the whole process delays both ends.
//!
//! The engine notes when each token really left it ([`EmissionLog`]): its own lateness
//! (its timer's wake-up, the hand-over to its HTTP layer, a throttled period) is then
//! part of the truth a self-probe is judged by, not of the client's error.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::oneshot;

use crate::mock::{Emission, EmissionLog, MockConfig, MockFlags};

/// What the reference engine is set to do; what it did for each request is in its
/// [`EmissionLog`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truth {
    /// From reading the request to writing the first token.
    pub ttft: Duration,
    /// Between consecutive tokens (one token per chunk).
    pub itl: Duration,
    /// Tokens of every answer.
    pub output_tokens: u32,
}

/// A running reference engine; stops when dropped.
pub struct ReferenceEngine {
    base_url: String,
    truth: Truth,
    emissions: Arc<EmissionLog>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ReferenceEngine {
    /// Starts the engine on 127.0.0.1:0 and returns once it listens.
    pub async fn start(truth: Truth) -> anyhow::Result<ReferenceEngine> {
        let config = MockConfig::from_flags(MockFlags {
            ttft: Some(truth.ttft),
            itl: Some(truth.itl),
            output_tokens: Some(truth.output_tokens),
            batch_slowdown: Some(0.0),
            ..MockFlags::default()
        })?;
        let (ready_tx, ready_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let emissions = EmissionLog::new();
        let log = emissions.clone();
        let thread = std::thread::Builder::new()
            .name("llmprobe-self-check".to_string())
            .spawn(move || serve(config, log, ready_tx, stop_rx))
            .context("starting the self-check's reference engine thread")?;
        let base_url = ready_rx
            .await
            .context("the self-check's reference engine thread ended")??;
        Ok(ReferenceEngine {
            base_url,
            truth,
            emissions,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn truth(&self) -> Truth {
        self.truth
    }

    /// What the engine did for the request whose body was `body`: taken, so each
    /// answer is judged once.
    pub fn emission(&self, body: &[u8]) -> Option<Emission> {
        self.emissions.take(body)
    }
}

impl Drop for ReferenceEngine {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Not joined: a drop inside async code must not block; the thread ends on its
        // own once the server has shut down.
        drop(self.thread.take());
    }
}

/// The engine thread: a current-thread runtime serving the mock until `stop`.
fn serve(
    config: MockConfig,
    log: Arc<EmissionLog>,
    ready: oneshot::Sender<anyhow::Result<String>>,
    stop: oneshot::Receiver<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(anyhow::Error::from(e).context("building its runtime")));
            return;
        }
    };
    runtime.block_on(async move {
        let listen = SocketAddr::from(([127, 0, 0, 1], 0));
        match crate::mock::start_with_emissions(config, listen, log).await {
            Ok(server) => {
                let _ = ready.send(Ok(server.base_url()));
                let _ = stop.await;
                server.shutdown().await;
            }
            Err(e) => {
                let _ = ready.send(Err(e));
            }
        }
    });
}
