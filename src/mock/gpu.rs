//! The mock's GPUs: a power model of its own batch and a dcgm-exporter-shaped page
//! (`GET /gpu/metrics`, with `--gpu-metrics`), so energy per token has exact truth.
//!
//! Power model (whole engine, split evenly over `gpus` GPUs):
//! P(running) = min(idle_watts + watts_per_request × running, tdp_watts × gpus).
//! Energy is P integrated exactly over time: the meter adds P × elapsed at every change
//! of the running count, a request's share from its schedule's time zero (when it got
//! its slot), as the engine's own timing counts it. Each request adds less power than it
//! adds tokens, so energy per token falls as the batch grows, as on a real GPU. Utilisation is
//! min(100, 25 × running) %, framebuffer used 20,480 MiB plus 1 MiB per KV block held.
//! Names, units and labels follow dcgm-exporter's defaults (`etc/default-counters.csv`
//! of NVIDIA/dcgm-exporter) with its Kubernetes mapping on: `pod` is the mock's own
//! `host:port`, so a replica's GPUs match it by `replica_match: {pod: replica}`.

use std::fmt::Write;
use std::sync::Mutex;

use serde::Deserialize;
use tokio::time::Instant;

/// The power model's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PowerModel {
    /// Watts of the engine with nothing running.
    pub idle_watts: f64,
    /// Watts each running request adds.
    pub watts_per_request: f64,
    /// The most one GPU draws.
    pub tdp_watts: f64,
    /// GPUs the engine runs on.
    pub gpus: u32,
}

impl Default for PowerModel {
    fn default() -> Self {
        PowerModel {
            idle_watts: 60.0,
            watts_per_request: 40.0,
            tdp_watts: 700.0,
            gpus: 1,
        }
    }
}

impl PowerModel {
    /// The engine's power with `running` requests in its batch, W.
    pub fn watts(&self, running: u64) -> f64 {
        let tdp = self.tdp_watts * f64::from(self.gpus.max(1));
        (self.idle_watts + self.watts_per_request * running as f64).min(tdp)
    }

    pub fn validate(&self) -> Result<(), String> {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        if !(ok(self.idle_watts) && ok(self.watts_per_request) && ok(self.tdp_watts)) {
            return Err("GPU watts must be finite numbers >= 0".into());
        }
        if self.gpus == 0 || self.gpus > 64 {
            return Err(format!("GPUs must be 1..=64, got {}", self.gpus));
        }
        Ok(())
    }
}

/// The energy the engine has drawn, integrated at every change of its batch.
pub struct PowerMeter {
    model: PowerModel,
    state: Mutex<Meter>,
}

struct Meter {
    since: Instant,
    joules: f64,
    running: u64,
}

/// What the page shows at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub watts: f64,
    pub joules: f64,
    pub running: u64,
}

impl PowerMeter {
    pub fn new(model: PowerModel) -> Self {
        PowerMeter {
            model,
            state: Mutex::new(Meter {
                since: Instant::now(),
                joules: 0.0,
                running: 0,
            }),
        }
    }

    pub fn model(&self) -> PowerModel {
        self.model
    }

    /// A request joined the batch at `since` (its schedule's time zero, a moment before
    /// the engine got round to counting it): its power from then on, not from now.
    pub fn joined(&self, since: Instant) {
        let mut m = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        m.joules += self.model.watts(m.running) * (now - m.since).as_secs_f64();
        m.since = now;
        let before = self.model.watts(m.running);
        m.running += 1;
        let added = self.model.watts(m.running) - before;
        m.joules += added * now.saturating_duration_since(since).as_secs_f64();
    }

    /// The batch grew (`+1`) or shrank (`-1`) now.
    pub fn change(&self, up: bool) {
        let mut m = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        m.joules += self.model.watts(m.running) * (now - m.since).as_secs_f64();
        m.since = now;
        m.running = if up {
            m.running + 1
        } else {
            m.running.saturating_sub(1)
        };
    }

    pub fn read(&self) -> Reading {
        let m = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let watts = self.model.watts(m.running);
        Reading {
            watts,
            joules: m.joules + watts * (Instant::now() - m.since).as_secs_f64(),
            running: m.running,
        }
    }
}

/// The dcgm-exporter page of a mock listening at `address` (its `pod`) with
/// `kv_blocks_used` KV blocks held.
pub fn render(model: &PowerModel, r: &Reading, address: &str, kv_blocks_used: u64) -> String {
    let gpus = model.gpus.max(1);
    let n = f64::from(gpus);
    let util = (25.0 * r.running as f64).min(100.0);
    let fb_used = 20_480.0 + kv_blocks_used as f64 / n;
    let fb_total = 81_920.0;
    let rows: [(&str, &str, &str, f64); 5] = [
        (
            "DCGM_FI_DEV_POWER_USAGE",
            "gauge",
            "Power draw (in W).",
            r.watts / n,
        ),
        (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "counter",
            "Total energy consumption since boot (in mJ).",
            (r.joules * 1000.0 / n).floor(),
        ),
        (
            "DCGM_FI_DEV_GPU_UTIL",
            "gauge",
            "GPU utilization (in %).",
            util,
        ),
        (
            "DCGM_FI_DEV_FB_FREE",
            "gauge",
            "Framebuffer memory free (in MiB).",
            (fb_total - fb_used).max(0.0).floor(),
        ),
        (
            "DCGM_FI_DEV_FB_USED",
            "gauge",
            "Framebuffer memory used (in MiB).",
            fb_used.floor(),
        ),
    ];
    let pod = address.replace('"', "");
    let mut out = String::with_capacity(2048);
    for (name, kind, help, value) in rows {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for gpu in 0..gpus {
            let _ = writeln!(
                out,
                "{name}{{gpu=\"{gpu}\",UUID=\"GPU-llmprobe-mock-{pod}-{gpu}\",device=\"nvidia{gpu}\",\
                 modelName=\"llmprobe mock GPU\",Hostname=\"llmprobe-mock\",container=\"engine\",\
                 namespace=\"llmprobe-mock\",pod=\"{pod}\"}} {value}"
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_grows_with_the_batch_up_to_tdp() {
        let m = PowerModel::default();
        assert_eq!(m.watts(0), 60.0);
        assert_eq!(m.watts(4), 220.0);
        assert_eq!(m.watts(1000), 700.0);
    }

    #[tokio::test(start_paused = true)]
    async fn energy_is_power_integrated_over_each_batch_size() {
        let meter = PowerMeter::new(PowerModel::default());
        tokio::time::advance(std::time::Duration::from_secs(10)).await; // 60 W × 10 s
        meter.change(true);
        meter.change(true);
        tokio::time::advance(std::time::Duration::from_secs(5)).await; // 140 W × 5 s
        meter.change(false);
        tokio::time::advance(std::time::Duration::from_secs(1)).await; // 100 W × 1 s
        let r = meter.read();
        assert_eq!(r.joules, 600.0 + 700.0 + 100.0);
        assert_eq!(r.watts, 100.0);
        assert_eq!(r.running, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_counted_late_draws_power_from_its_start() {
        let meter = PowerMeter::new(PowerModel::default());
        let start = Instant::now();
        tokio::time::advance(std::time::Duration::from_secs(2)).await;
        // Counted 2 s after its start: 60 W × 2 s, plus its 40 W over those 2 s.
        meter.joined(start);
        let r = meter.read();
        assert_eq!((r.joules, r.running), (200.0, 1));
    }

    #[test]
    fn the_page_reads_back_as_gpu_telemetry() {
        let model = PowerModel {
            gpus: 2,
            ..PowerModel::default()
        };
        let r = Reading {
            watts: 140.0,
            joules: 1400.0,
            running: 2,
        };
        let page = render(&model, &r, "127.0.0.1:8000", 64);
        let reading = crate::engine_metrics::gpu::parse(&page).unwrap();
        assert_eq!(reading.gpus.len(), 2);
        let w = crate::engine_metrics::gpu::window(None, &reading);
        assert_eq!(w.power_watts, Some(140.0));
        assert_eq!(w.utilization_sum, Some(1.0));
        let gpu = reading.gpus.values().next().unwrap();
        assert_eq!(gpu.energy_joules, Some(700.0));
        assert_eq!(
            gpu.labels.get("pod").map(String::as_str),
            Some("127.0.0.1:8000")
        );
    }
}
