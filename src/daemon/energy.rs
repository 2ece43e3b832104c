//! The energy figures of a target's engine, or of each replica of its fleet, from one
//! round: the GPU telemetry read beside the engine scrapes, each engine's GPUs picked by
//! their labels, and the window since the previous round. GPU energy and engine tokens
//! come from the same two rounds, so energy per token never divides one window's energy
//! by another window's tokens.

use std::collections::BTreeMap;

use tokio::time::Instant;

use crate::config::TargetPlan;
use crate::energy::{Prices, Window};
use crate::engine_metrics::gpu::{self, GpuMatch, GpuReading};
use crate::engine_metrics::{EngineSnapshot, ScrapeError};
use crate::secret::{Secret, scrub};

/// One engine of a round: its key (a replica's `host:port`, or `""` for a target's own
/// engine), its GPUs' match, its scrape and its generation rate.
pub struct Engine<'a> {
    pub key: &'a str,
    pub gpus: GpuMatch,
    pub snapshot: &'a EngineSnapshot,
    pub generation_tokens_per_second: Option<f64>,
}

/// What the next round needs of the last: the GPU reading, each engine's token counter
/// then, and when; and the last GPU telemetry problem logged (logged again only when it
/// changes, and its end once).
#[derive(Default)]
pub struct EnergyTracker {
    prev: Option<(GpuReading, Instant)>,
    tokens: BTreeMap<String, f64>,
    warned: Option<String>,
}

impl EnergyTracker {
    /// The window of each engine of a round whose GPU telemetry, `reading`, was read
    /// starting `at`; the round becomes the next one's previous.
    pub fn round(
        &mut self,
        plan: &TargetPlan,
        reading: GpuReading,
        at: Instant,
        engines: &[Engine<'_>],
    ) -> Vec<Window> {
        if self.warned.take().is_some() {
            tracing::info!(target = %plan.name, "GPU telemetry readable again");
        }
        let prev = self
            .prev
            .as_ref()
            .map(|(r, then)| (r, at.saturating_duration_since(*then)));
        let windows = engines
            .iter()
            .map(|e| {
                let mut w = gpu::window(prev, &reading.select(&e.gpus));
                w.output_tokens = prev.and_then(|_| {
                    increase(
                        self.tokens.get(e.key).copied(),
                        e.snapshot.generation_tokens_total,
                    )
                });
                w.generation_tokens_per_second = e.generation_tokens_per_second;
                w.roofline_tokens_per_second = plan
                    .capacity
                    .as_ref()
                    .map(|c| c.roofline_tokens_per_second(e.snapshot.running.unwrap_or(0.0)));
                w
            })
            .collect();
        // Only the engines of this round count next time: one that failed now has no
        // counter reading aligned with this round's energy.
        self.tokens = engines
            .iter()
            .filter_map(|e| Some((e.key.to_string(), e.snapshot.generation_tokens_total?)))
            .collect();
        self.prev = Some((reading, at));
        windows
    }

    /// The GPU telemetry of `plan` could not be read: the next round starts a new
    /// window, and the problem is logged when it is a new one.
    pub fn failed(&mut self, plan: &TargetPlan, e: &ScrapeError) {
        self.prev = None;
        self.tokens.clear();
        let error = scrub(&format!("{e:#}"), plan.secrets.iter().map(Secret::expose));
        if self.warned.as_deref() != Some(error.as_str()) {
            tracing::warn!(
                target = %plan.name,
                reason = e.reason.as_str(),
                error = %error,
                "GPU telemetry unreadable: no energy figures until it answers"
            );
            self.warned = Some(error);
        }
    }
}

/// A counter's increase; one that went down (the engine restarted) counts from zero.
fn increase(before: Option<f64>, now: Option<f64>) -> Option<f64> {
    match (before?, now?) {
        (b, n) if n >= b => Some(n - b),
        (_, n) => Some(n),
    }
}

/// What the target's config says GPUs and electricity cost.
pub fn prices(plan: &TargetPlan) -> Prices {
    Prices {
        gpu_hourly: plan.capacity.as_ref().and_then(|c| c.gpu_hourly),
        energy_per_kwh: plan.gpu.as_ref().and_then(|g| g.energy_price_per_kwh),
        co2_grams_per_kwh: plan.gpu.as_ref().and_then(|g| g.grams_co2_per_kwh),
    }
}
