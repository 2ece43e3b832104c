//! The engine scraper of a target: reads the engine's own `/metrics` (vLLM, SGLang,
//! llama.cpp or TGI, parsed by `crate::engine_metrics`) every interval and publishes live load,
//! live KV capacity, headroom, live cost per million tokens and the client/server TTFT
//! gap. A failed scrape sets `llmprobe_engine_scrape_success 0` and is logged by state
//! change (the failure log); it never stops the target. With `gpu_metrics`, the GPU
//! telemetry is read at the same time and gives the energy figures (`super::energy`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::energy::{self as energy_round, EnergyTracker};
use super::failure_lines::{self, Activity, Attempt};
use super::failure_log::{FailureKey, FailureLog};
use super::scrape_ticks::{Ticks, scrape_client};
use crate::config::TargetPlan;
use crate::engine_metrics::gpu::{self, GpuReading};
use crate::engine_metrics::{self, EngineSnapshot, ScrapeError};
use crate::exposition::{EngineGauges, Metrics};
use crate::secret::{Secret, scrub};
use crate::status::{EngineState, StatusBoard};

/// Client-side TTFTs of successful probes since the last scrape.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct TtftWindow {
    sum: f64,
    count: u64,
}

impl TtftWindow {
    pub fn add(&mut self, seconds: f64) {
        self.sum += seconds;
        self.count += 1;
    }

    /// The mean since the last call, and a fresh window.
    pub fn take_mean(&mut self) -> Option<f64> {
        let mean = (self.count > 0).then(|| self.sum / self.count as f64);
        *self = TtftWindow::default();
        mean
    }
}

/// The gauges one scrape yields, given the previous one (for rates) and what the
/// config knows. Pure, so every formula is unit-tested.
pub fn gauges(
    plan: &TargetPlan,
    prev: Option<(&EngineSnapshot, Duration)>,
    cur: &EngineSnapshot,
    client_ttft_mean: Option<f64>,
) -> (EngineGauges, Option<f64>) {
    let rates = prev.map(|(p, elapsed)| engine_metrics::rates(p, cur, elapsed));
    let gen_tps = rates
        .and_then(|r| r.generation_tokens_per_second)
        .or(cur.gen_throughput);
    let server_ttft = rates.and_then(|r| r.ttft_mean_seconds);
    let live_max_seqs = live_max_sequences(plan, cur);
    // Live cost of one engine (one replica of `tp` GPUs) at the rate it generates now:
    // $/h × GPUs / 3600 / (tok/s) × 1e6 (the cost rule of docs/capacity.md).
    let cost = plan.capacity.as_ref().and_then(|c| {
        let hourly = c.gpu_hourly?;
        let tps = gen_tps.filter(|v| *v > 0.0)?;
        Some(hourly * f64::from(c.gpus_per_replica) / 3600.0 / tps * 1e6)
    });
    let max_seqs = live_max_seqs.or_else(|| {
        plan.capacity
            .as_ref()
            .map(|c| c.gauges.max_concurrent_sequences)
    });
    let headroom = headroom(cur, max_seqs);
    // Engine TTFT histogram deltas for the counters: 0 on the first scrape, and 0 when
    // a sum or count went down (the engine restarted; its new totals are not an
    // increase since the last scrape).
    let (ttft_sum_delta, ttft_count_delta) = match (cur.ttft_sum, cur.ttft_count) {
        (Some(sum), Some(count)) => {
            let d = prev.and_then(|(p, _)| {
                let ds = sum - p.ttft_sum?;
                let dc = count - p.ttft_count?;
                (ds >= 0.0 && dc >= 0.0).then_some((ds, dc))
            });
            let (ds, dc) = d.unwrap_or((0.0, 0.0));
            (Some(ds), Some(dc))
        }
        _ => (None, None),
    };
    let gap = match (client_ttft_mean, server_ttft) {
        (Some(c), Some(s)) => Some(c - s),
        _ => None,
    };
    (
        EngineGauges {
            running: cur.running,
            waiting: cur.waiting,
            kv_cache_usage_ratio: cur.kv_usage_ratio,
            kv_cache_tokens: cur.kv_cache_tokens,
            max_concurrent_sequences: live_max_seqs,
            generation_tokens_per_second: gen_tps,
            cost_per_million_output_tokens: cost,
            ttft_mean_seconds: server_ttft,
            ttft_client_server_gap_seconds: gap,
            ttft_sum_delta,
            ttft_count_delta,
            prefix_cache_hit_ratio: rates
                .and_then(|r| r.prefix_cache_hit_ratio)
                .or(cur.prefix_cache_hit_rate),
            lora_adapters_running: cur.lora.as_ref().map(|l| l.running.len() as f64),
            lora_adapters_waiting: cur.lora.as_ref().map(|l| l.waiting.len() as f64),
            lora_adapters_max: cur.lora.as_ref().and_then(|l| l.max),
        },
        headroom,
    )
}

/// The most sequences the engine runs at once, from what it says now: its KV room in
/// sequences (vLLM's own `kv_cache_max_concurrency`, else live KV tokens over the
/// capacity block's context) or its scheduler's own limit (llama.cpp's slots), the
/// smaller when both; then capped by the capacity block's `max_num_seqs` — a KV cache
/// with room for 512 sequences runs no more than `--max-num-seqs`. `None` when the
/// engine says neither: the config alone is no live figure.
pub fn live_max_sequences(plan: &TargetPlan, cur: &EngineSnapshot) -> Option<f64> {
    let kv_room = cur
        .kv_max_concurrency
        .or(match (cur.kv_cache_tokens, plan.context_tokens) {
            (Some(t), Some(context)) => Some(t / f64::from(context.max(1))),
            _ => None,
        });
    let live = match (kv_room, cur.total_slots) {
        (Some(kv), Some(slots)) => kv.min(slots),
        (kv, slots) => kv.or(slots)?,
    };
    Some(match plan.capacity {
        Some(c) => live.min(f64::from(c.max_num_seqs)),
        None => live,
    })
}

/// How much more load the engine takes, 0..1: 0 as soon as requests queue (vLLM's
/// scheduler leaves a request waiting only when it cannot admit it this step: no
/// sequence slot, no KV blocks or no token budget left, vllm/v1/core/sched/scheduler.py;
/// llama.cpp defers a request only when no slot is free),
/// else the smaller of the free sequence share
/// (1 − running / max sequences) and the free KV share (1 − KV usage). `None` when
/// the engine says neither.
pub fn headroom(cur: &EngineSnapshot, max_seqs: Option<f64>) -> Option<f64> {
    if cur.waiting.is_some_and(|w| w > 0.0) {
        return Some(0.0);
    }
    let seqs = match (cur.running, max_seqs) {
        (Some(running), Some(max)) if max > 0.0 => Some(1.0 - running / max),
        _ => None,
    };
    let kv = cur.kv_usage_ratio.map(|u| 1.0 - u);
    let free = match (seqs, kv) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    free.map(|f| f.clamp(0.0, 1.0))
}

/// What a target's scrape loop works with.
pub struct Scraper {
    pub plan: TargetPlan,
    pub url: String,
    pub metrics: Arc<Metrics>,
    /// What the status page shows of the engine.
    pub status: Arc<StatusBoard>,
    /// The scrape interval; a reload changes it in place.
    pub interval: watch::Receiver<Duration>,
    /// How often the log summarises failing scrapes.
    pub summary_interval: watch::Receiver<Duration>,
    /// Client-side TTFTs since the last scrape, for the client/server gap.
    pub ttft_window: Arc<Mutex<TtftWindow>>,
    pub stop: CancellationToken,
    /// Held while publishing (see `RunningTarget::publish`).
    pub publish: Arc<Mutex<()>>,
}

/// Builds the scrape loop of a target (its HTTP client uses the target's TLS settings).
pub fn scrape_loop(
    scraper: Scraper,
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    let Scraper {
        plan,
        url,
        metrics,
        status,
        interval,
        mut summary_interval,
        ttft_window,
        stop,
        publish,
    } = scraper;
    let http = scrape_client(&plan.client.tls)?;
    Ok(async move {
        // A reload that changes the interval changes it here: the scraper keeps running.
        let mut ticks = Ticks::new(interval);
        let mut publisher = Publisher {
            key: FailureKey::target(&plan.name),
            failures: FailureLog::new(*summary_interval.borrow_and_update()),
            plan,
            metrics,
            status,
            ttft_window,
            prev: None,
            slots_warned: None,
            energy: EnergyTracker::default(),
            last_generation_tps: None,
        };
        let gpu_urls = publisher.plan.gpu.as_ref().map(|g| g.urls.clone());
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = ticks.tick() => {}
            }
            // A scrape must end before the next one is due.
            let timeout = ticks.every().min(Duration::from_secs(10));
            let started = Instant::now();
            let both = async {
                tokio::join!(
                    engine_metrics::scrape(&http, &url, timeout),
                    read_gpus(&http, gpu_urls.as_deref(), timeout)
                )
            };
            let (result, gpus) = tokio::select! {
                biased;
                () = stop.cancelled() => break,
                r = both => r,
            };
            let ended = Instant::now();
            // Checked under the lock the control task takes to remove this target's
            // series after cancelling it: a stopped scraper publishes nothing more.
            let _publishing = publish.lock().unwrap_or_else(|e| e.into_inner());
            if stop.is_cancelled() {
                break;
            }
            publisher
                .failures
                .set_interval(*summary_interval.borrow_and_update());
            publisher.publish(result, started, ended);
            publisher.publish_energy(gpus, started);
        }
    })
}

/// What a target's scrapes publish and log, and what the next scrape needs of the last.
struct Publisher {
    plan: TargetPlan,
    metrics: Arc<Metrics>,
    status: Arc<StatusBoard>,
    ttft_window: Arc<Mutex<TtftWindow>>,
    prev: Option<(EngineSnapshot, Instant)>,
    /// The last /props problem logged: logged again only when it changes.
    slots_warned: Option<String>,
    key: FailureKey,
    failures: FailureLog,
    energy: EnergyTracker,
    /// The generation rate of the last successful scrape, for its energy round.
    last_generation_tps: Option<f64>,
}

/// Reads the GPU telemetry at `urls`, if the target has any.
async fn read_gpus(
    http: &reqwest::Client,
    urls: Option<&[String]>,
    timeout: Duration,
) -> Option<Result<GpuReading, ScrapeError>> {
    Some(gpu::scrape(http, urls?, timeout).await)
}

impl Publisher {
    /// Publishes the energy figures of the GPU read `gpus` that started with the engine
    /// scrape at `started` (just published: `prev` holds it when it worked).
    fn publish_energy(&mut self, gpus: Option<Result<GpuReading, ScrapeError>>, started: Instant) {
        let (Some(gpu_plan), Some(gpus)) = (&self.plan.gpu, gpus) else {
            return;
        };
        let (name, model) = (&self.plan.name, &self.plan.model);
        let _batch = self.metrics.batch();
        match gpus {
            Ok(reading) => {
                // The engine's scrape of this round, if it worked.
                let engine = self
                    .prev
                    .as_ref()
                    .filter(|(_, at)| *at == started)
                    .map(|(snap, _)| snap);
                let tps = self.last_generation_tps;
                let engines: Vec<energy_round::Engine<'_>> = engine
                    .map(|snapshot| energy_round::Engine {
                        key: "",
                        gpus: gpu_plan.target_match.clone(),
                        snapshot,
                        generation_tokens_per_second: tps,
                    })
                    .into_iter()
                    .collect();
                let windows = self.energy.round(&self.plan, reading, started, &engines);
                let prices = energy_round::prices(&self.plan);
                let figures = windows.first().map(|w| crate::energy::figures(w, &prices));
                self.metrics
                    .set_engine_energy(name, model, true, figures.as_ref());
            }
            Err(e) => {
                self.energy.failed(&self.plan, &e);
                self.metrics.set_engine_energy(name, model, false, None);
            }
        }
    }

    /// Publishes one scrape that ran from `started` to `ended`.
    fn publish(
        &mut self,
        result: Result<engine_metrics::Scrape, engine_metrics::ScrapeError>,
        started: Instant,
        ended: Instant,
    ) {
        let took = ended.saturating_duration_since(started).as_secs_f64();
        let (plan, metrics) = (&self.plan, &self.metrics);
        let _batch = metrics.batch();
        let scrub_secrets = |text: &str| scrub(text, plan.secrets.iter().map(Secret::expose));
        match result {
            Ok(engine_metrics::Scrape {
                snapshot: snap,
                slots_error,
            }) => {
                if let Some(why) = slots_error.as_deref()
                    && slots_error != self.slots_warned
                {
                    tracing::warn!(
                        target = %plan.name,
                        error = %scrub_secrets(why),
                        "llama.cpp slot count unavailable (GET /props); max sequences \
                         fall back to the capacity block, if any"
                    );
                }
                self.slots_warned = slots_error;
                let client_mean = self
                    .ttft_window
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take_mean();
                let p = self
                    .prev
                    .as_ref()
                    .map(|(s, at)| (s, started.saturating_duration_since(*at)));
                let (g, headroom) = gauges(plan, p, &snap, client_mean);
                self.last_generation_tps = g.generation_tokens_per_second;
                metrics.set_engine(&plan.name, &plan.model, true, took, &g);
                metrics.set_headroom(&plan.name, &plan.model, headroom);
                self.status.update_engine(&plan.name, |s| {
                    *s = EngineState {
                        scrape_ok: Some(true),
                        running: g.running,
                        waiting: g.waiting,
                        kv_cache_usage_ratio: g.kv_cache_usage_ratio,
                        headroom,
                    }
                });
                self.prev = Some((snap, started));
                if let Some(line) = self.failures.success(&self.key, ended) {
                    let attempt = Attempt {
                        id: None,
                        reason: "",
                        error: "",
                    };
                    failure_lines::write(Activity::EngineScrape, &self.key, attempt, &line);
                }
            }
            Err(e) => {
                metrics.set_engine(
                    &plan.name,
                    &plan.model,
                    false,
                    took,
                    &EngineGauges::default(),
                );
                metrics.set_headroom(&plan.name, &plan.model, None);
                self.status.update_engine(&plan.name, |s| {
                    *s = EngineState {
                        scrape_ok: Some(false),
                        ..EngineState::default()
                    }
                });
                let error = scrub_secrets(&format!("{e:#}"));
                let reason = e.reason.as_str();
                let lines = self.failures.failure(&self.key, ended, reason, &error);
                let attempt = Attempt {
                    id: None,
                    reason,
                    error: &error,
                };
                failure_lines::failure(Activity::EngineScrape, &self.key, attempt, &lines);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::plan::CapacityPlan;
    use crate::exposition::CapacityGauges;

    fn plan(capacity: Option<CapacityPlan>) -> TargetPlan {
        let text = "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    scenarios: [{input_tokens: 900, output_tokens: 100}]\n";
        let mut p = crate::config::plan::load_str(text, "t.yaml")
            .unwrap()
            .targets
            .remove(0);
        p.capacity = capacity;
        p
    }

    fn model(max_seqs: f64, hourly: Option<f64>) -> CapacityPlan {
        CapacityPlan {
            gauges: CapacityGauges {
                max_concurrent_sequences: max_seqs,
                ..CapacityGauges::default()
            },
            gpus_per_replica: 4,
            gpu_hourly: hourly,
            max_num_seqs: 256,
            step: crate::capacity::StepModel {
                fixed_weight_bytes: 1.0,
                expert_weight_bytes: 0.0,
                num_experts: 0,
                top_k: 0,
                kv_bytes_per_sequence: 0.0,
                flops_per_token: 1.0,
                effective_bandwidth: 1.0,
                effective_flops: 1.0,
            },
        }
    }

    #[test]
    fn live_max_sequences_take_the_engines_own_figure_capped_by_the_scheduler() {
        // vLLM on CPU: KV for 512 sequences of max_model_len, --max-num-seqs 8.
        let cur = EngineSnapshot {
            kv_cache_tokens: Some(1_048_576.0),
            kv_max_concurrency: Some(512.0),
            ..EngineSnapshot::default()
        };
        let mut p = plan(None);
        p.context_tokens = Some(8192);
        // Without a capacity block nothing says the scheduler's limit: the engine's own
        // figure, not KV tokens over the context.
        assert_eq!(live_max_sequences(&p, &cur), Some(512.0));
        let mut capped = model(100.0, None);
        capped.max_num_seqs = 8;
        p.capacity = Some(capped);
        assert_eq!(live_max_sequences(&p, &cur), Some(8.0));
        assert_eq!(
            gauges(&p, None, &cur, None).0.max_concurrent_sequences,
            Some(8.0)
        );
        // A KV cache smaller than the scheduler's limit is the bound.
        capped.max_num_seqs = 1024;
        p.capacity = Some(capped);
        assert_eq!(live_max_sequences(&p, &cur), Some(512.0));
        // Older vLLM without the label: KV tokens over the capacity context, capped.
        let old = EngineSnapshot {
            kv_max_concurrency: None,
            ..cur
        };
        assert_eq!(live_max_sequences(&p, &old), Some(128.0));
        capped.max_num_seqs = 100;
        p.capacity = Some(capped);
        assert_eq!(live_max_sequences(&p, &old), Some(100.0));
        // llama.cpp's slots are its scheduler's own limit.
        let llama = EngineSnapshot {
            total_slots: Some(4.0),
            ..EngineSnapshot::default()
        };
        assert_eq!(live_max_sequences(&p, &llama), Some(4.0));
        // The config alone is no live figure.
        assert_eq!(live_max_sequences(&p, &EngineSnapshot::default()), None);
    }

    #[test]
    fn headroom_uses_live_kv_capacity_with_the_capacity_context() {
        let mut p = plan(Some(model(100.0, Some(2.0))));
        p.context_tokens = Some(1000);
        let cur = EngineSnapshot {
            running: Some(5.0),
            waiting: Some(0.0),
            kv_cache_tokens: Some(20_000.0),
            ..EngineSnapshot::default()
        };
        let (g, headroom) = gauges(&p, None, &cur, None);
        assert_eq!(g.max_concurrent_sequences, Some(20.0));
        assert_eq!(headroom, Some(0.75));
        // KV usage is the tighter bound.
        let full = EngineSnapshot {
            kv_usage_ratio: Some(0.9),
            ..cur
        };
        let (_, headroom) = gauges(&p, None, &full, None);
        assert!((headroom.unwrap() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_queue_means_no_headroom() {
        let p = plan(Some(model(100.0, None)));
        let cur = EngineSnapshot {
            running: Some(1.0),
            waiting: Some(3.0),
            kv_usage_ratio: Some(0.1),
            ..EngineSnapshot::default()
        };
        assert_eq!(gauges(&p, None, &cur, None).1, Some(0.0));
    }

    #[test]
    fn probe_sizes_are_never_the_context() {
        // No capacity block: live KV tokens cannot become sequences (the probes'
        // 900 + 100 tokens say nothing about production requests).
        let p = plan(None);
        assert_eq!(p.context_tokens, None);
        let cur = EngineSnapshot {
            running: Some(50.0),
            waiting: Some(0.0),
            kv_cache_tokens: Some(20_000.0),
            kv_usage_ratio: Some(0.4),
            ..EngineSnapshot::default()
        };
        let (g, headroom) = gauges(&p, None, &cur, None);
        assert_eq!(g.max_concurrent_sequences, None);
        assert!((headroom.unwrap() - 0.6).abs() < 1e-12);
    }

    #[test]
    fn headroom_falls_back_to_the_model() {
        let p = plan(Some(model(40.0, None)));
        let cur = EngineSnapshot {
            running: Some(10.0),
            ..EngineSnapshot::default()
        };
        let (g, headroom) = gauges(&p, None, &cur, None);
        assert_eq!(g.max_concurrent_sequences, None);
        assert_eq!(headroom, Some(0.75));
        // More running than the model's max: no headroom, never negative.
        let over = EngineSnapshot {
            running: Some(50.0),
            ..EngineSnapshot::default()
        };
        assert_eq!(gauges(&p, None, &over, None).1, Some(0.0));
        // Nothing tells how loaded the engine is: no headroom.
        let (_, none) = gauges(&plan(None), None, &EngineSnapshot::default(), None);
        assert_eq!(none, None);
    }

    #[test]
    fn rates_give_cost_and_ttft_gap() {
        let p = plan(Some(model(40.0, Some(3.0))));
        let prev = EngineSnapshot {
            generation_tokens_total: Some(1000.0),
            ttft_sum: Some(1.0),
            ttft_count: Some(10.0),
            ..EngineSnapshot::default()
        };
        let cur = EngineSnapshot {
            generation_tokens_total: Some(3000.0),
            ttft_sum: Some(2.0),
            ttft_count: Some(20.0),
            ..EngineSnapshot::default()
        };
        let (g, _) = gauges(
            &p,
            Some((&prev, Duration::from_secs(10))),
            &cur,
            Some(0.125),
        );
        assert_eq!(g.generation_tokens_per_second, Some(200.0));
        // $3/h × 4 GPUs / 3600 s / 200 tok/s × 1e6
        let cost = g.cost_per_million_output_tokens.unwrap();
        assert!((cost - 3.0 * 4.0 / 3600.0 / 200.0 * 1e6).abs() < 1e-9);
        assert_eq!(g.ttft_mean_seconds, Some(0.1));
        assert!((g.ttft_client_server_gap_seconds.unwrap() - 0.025).abs() < 1e-12);
        assert_eq!(g.ttft_sum_delta, Some(1.0));
        assert_eq!(g.ttft_count_delta, Some(10.0));
        // First scrape: the counters start at zero.
        let (first, _) = gauges(&p, None, &cur, None);
        assert_eq!(
            (first.ttft_sum_delta, first.ttft_count_delta),
            (Some(0.0), Some(0.0))
        );
        // Engine restart (totals went down): no increase this time.
        let (restarted, _) = gauges(&p, Some((&cur, Duration::from_secs(10))), &prev, None);
        assert_eq!(restarted.ttft_count_delta, Some(0.0));
        assert_eq!(restarted.ttft_sum_delta, Some(0.0));
    }

    #[test]
    fn ttft_window_resets_after_each_scrape() {
        let mut w = TtftWindow::default();
        assert_eq!(w.take_mean(), None);
        w.add(0.1);
        w.add(0.3);
        assert_eq!(w.take_mean(), Some(0.2));
        assert_eq!(w.take_mean(), None);
    }

    fn parse_fixture(name: &str) -> EngineSnapshot {
        let path = format!(
            "{}/tests/fixtures/engine/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        engine_metrics::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn llamacpp_headroom_is_free_slots() {
        // No capacity block: the slots from /props are enough.
        let p = plan(None);
        let one_busy = EngineSnapshot {
            running: Some(1.0),
            waiting: Some(0.0),
            total_slots: Some(2.0),
            ..EngineSnapshot::default()
        };
        let (g, headroom) = gauges(&p, None, &one_busy, None);
        assert_eq!(g.max_concurrent_sequences, Some(2.0));
        assert_eq!(headroom, Some(0.5));
        // Every slot busy: none left, though nothing waits yet.
        let full = EngineSnapshot {
            running: Some(2.0),
            ..one_busy.clone()
        };
        assert_eq!(gauges(&p, None, &full, None).1, Some(0.0));
        // A build exporting KV usage: the tighter bound wins.
        let kv = EngineSnapshot {
            kv_usage_ratio: Some(0.75),
            ..one_busy.clone()
        };
        assert_eq!(gauges(&p, None, &kv, None).1, Some(0.25));
        // Slots are the engine's hard limit: they beat the capacity model.
        let mut with_model = plan(Some(model(40.0, None)));
        with_model.context_tokens = Some(1000);
        let (g, headroom) = gauges(&with_model, None, &one_busy, None);
        assert_eq!(g.max_concurrent_sequences, Some(2.0));
        assert_eq!(headroom, Some(0.5));
    }

    #[test]
    fn llamacpp_fixture_with_a_deferred_request_has_no_headroom() {
        // The real capture: 2 of 2 slots busy and 1 request deferred.
        let cur = EngineSnapshot {
            total_slots: Some(2.0),
            ..parse_fixture("llamacpp.txt")
        };
        let (g, headroom) = gauges(&plan(None), None, &cur, None);
        assert_eq!(g.running, Some(2.0));
        assert_eq!(g.waiting, Some(1.0));
        assert_eq!(g.max_concurrent_sequences, Some(2.0));
        assert_eq!(headroom, Some(0.0));
    }

    #[test]
    fn llamacpp_without_props_falls_back_to_the_model() {
        let cur = EngineSnapshot {
            running: Some(1.0),
            waiting: Some(0.0),
            ..parse_fixture("llamacpp.txt")
        };
        // Nothing says how many requests fit: no headroom rather than a guess.
        let (g, none) = gauges(&plan(None), None, &cur, None);
        assert_eq!((g.max_concurrent_sequences, none), (None, None));
        let (g, headroom) = gauges(&plan(Some(model(4.0, None))), None, &cur, None);
        assert_eq!(g.max_concurrent_sequences, None);
        assert_eq!(headroom, Some(0.75));
    }

    #[test]
    fn tgi_headroom_from_its_token_budget() {
        let mut p = plan(Some(model(100.0, None)));
        p.context_tokens = Some(8192);
        let cur = parse_fixture("tgi.txt");
        // Two requests queue: no headroom.
        let (g, headroom) = gauges(&p, None, &cur, None);
        assert_eq!(headroom, Some(0.0));
        assert_eq!(g.max_concurrent_sequences, Some(19.0));
        // Queue drained: 6 of 155,648 / 8,192 = 19 sequences, 25 % of the budget held.
        let drained = EngineSnapshot {
            waiting: Some(0.0),
            ..cur
        };
        let headroom = gauges(&p, None, &drained, None).1.unwrap();
        assert!((headroom - 13.0 / 19.0).abs() < 1e-12, "{headroom}");
    }
}
