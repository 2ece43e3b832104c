//! GPU telemetry: an NVIDIA dcgm-exporter `/metrics` read into one reading per GPU, the
//! GPUs of an engine picked by their labels, and the energy two readings apart.
//!
//! Names and units are dcgm-exporter's defaults (its `etc/default-counters.csv`):
//! `DCGM_FI_DEV_POWER_USAGE` (W), `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ, a counter
//! since the driver loaded), `DCGM_FI_DEV_GPU_UTIL` (%), `DCGM_FI_PROF_GR_ENGINE_ACTIVE`
//! (0..1, the profiling field, used when `GPU_UTIL` is not exported),
//! `DCGM_FI_DEV_FB_USED` (MiB). Each series carries `gpu`, `UUID`, `modelName`,
//! `Hostname` and, with the exporter's Kubernetes mapping on, `pod`, `namespace` and
//! `container` of the pod the GPU is given to. AMD's device-metrics-exporter uses other
//! names and is not read.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;

use super::scrape_error::{ScrapeError, ScrapeFailure};
use super::text;
use crate::energy::Window;

/// Largest exporter body read; a node of eight GPUs writes well under 1 MiB.
const MAX_BODY_BYTES: usize = 16 << 20;

/// One GPU as the exporter shows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gpu {
    /// The labels of its first series (its identity and its pod, if mapped).
    pub labels: BTreeMap<String, String>,
    pub power_watts: Option<f64>,
    /// Energy since the driver loaded, J (the exporter's mJ / 1000).
    pub energy_joules: Option<f64>,
    /// 0..1.
    pub utilization: Option<f64>,
    pub memory_used_bytes: Option<f64>,
}

/// One read of one or more exporters: every GPU, keyed by its identity.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuReading {
    pub gpus: BTreeMap<String, Gpu>,
}

/// What a series of each name adds to its GPU.
fn read(gpu: &mut Gpu, name: &str, v: f64) -> bool {
    match name {
        "DCGM_FI_DEV_POWER_USAGE" => gpu.power_watts = Some(v),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" => gpu.energy_joules = Some(v / 1000.0),
        "DCGM_FI_DEV_GPU_UTIL" => gpu.utilization = Some(v / 100.0),
        // Used only where GPU_UTIL is missing (profiling metrics enabled alone).
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE" => {
            gpu.utilization.get_or_insert(v);
        }
        "DCGM_FI_DEV_FB_USED" => gpu.memory_used_bytes = Some(v * 1024.0 * 1024.0),
        _ => return false,
    }
    true
}

/// A GPU's identity: its UUID, else its host and index. A MIG instance (`GPU_I_ID`)
/// is its own GPU.
fn identity(s: &text::Sample<'_>) -> String {
    let base = match s.label("UUID") {
        Some(uuid) if !uuid.is_empty() => uuid.to_string(),
        _ => format!(
            "{}/{}",
            s.label("Hostname").unwrap_or(""),
            s.label("gpu").unwrap_or("")
        ),
    };
    match s.label("GPU_I_ID") {
        Some(i) if !i.is_empty() => format!("{base}/mig{i}"),
        _ => base,
    }
}

/// Reads an exporter's text. Fails on text that is not the exposition format, or that
/// has no GPU series at all (a wrong URL must not pass as zero GPUs).
pub fn parse(body: &str) -> Result<GpuReading, ScrapeError> {
    let format = |e: anyhow::Error| ScrapeError::new(ScrapeFailure::Format, e);
    let samples = text::parse(body).map_err(|e| {
        format(anyhow::Error::new(e).context("GPU metrics are not valid Prometheus text format"))
    })?;
    let mut reading = GpuReading::default();
    let mut seen_dcgm = false;
    for s in &samples {
        if !s.name.starts_with("DCGM_FI_") {
            continue;
        }
        seen_dcgm = true;
        if !s.value.is_finite() {
            continue;
        }
        let gpu = reading.gpus.entry(identity(s)).or_default();
        if read(gpu, s.name, s.value) && gpu.labels.is_empty() {
            gpu.labels = s
                .labels
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.to_string()))
                .collect();
        }
    }
    reading.gpus.retain(|_, g| !g.labels.is_empty());
    if !seen_dcgm {
        return Err(format(anyhow::anyhow!(
            "no DCGM_FI_ metrics found at the GPU metrics URL (is it a dcgm-exporter?)"
        )));
    }
    Ok(reading)
}

/// Label conditions a GPU must meet to belong to an engine: each `(label, value)` pair
/// equal. An empty matcher takes every GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuMatch(pub Vec<(String, String)>);

impl GpuMatch {
    pub fn matches(&self, gpu: &Gpu) -> bool {
        self.0
            .iter()
            .all(|(k, v)| gpu.labels.get(k).is_some_and(|have| have == v))
    }
}

impl GpuReading {
    /// The GPUs `m` picks.
    pub fn select(&self, m: &GpuMatch) -> GpuReading {
        GpuReading {
            gpus: self
                .gpus
                .iter()
                .filter(|(_, g)| m.matches(g))
                .map(|(k, g)| (k.clone(), g.clone()))
                .collect(),
        }
    }

    /// Adds another exporter's GPUs.
    pub fn extend(&mut self, other: GpuReading) {
        self.gpus.extend(other.gpus);
    }
}

/// The energy the GPUs of `cur` spent since `prev`, `elapsed` earlier. Each GPU's
/// counter increase, where a counter that went down (the driver reloaded) counts from
/// zero, as Prometheus' `rate()` does; a GPU without an energy counter in both readings
/// counts its mean power over the two readings (or its power now, if new) times the
/// elapsed time.
pub fn energy_between(prev: &GpuReading, cur: &GpuReading, elapsed: Duration) -> Option<f64> {
    let secs = elapsed.as_secs_f64();
    let mut total = 0.0;
    for (id, now) in &cur.gpus {
        let before = prev.gpus.get(id);
        let spent = match (before.and_then(|b| b.energy_joules), now.energy_joules) {
            (Some(b), Some(n)) if n >= b => n - b,
            (Some(_), Some(n)) => n,
            _ => {
                let p_now = now.power_watts?;
                let p_before = before.and_then(|b| b.power_watts).unwrap_or(p_now);
                (p_now + p_before) / 2.0 * secs
            }
        };
        total += spent;
    }
    Some(total)
}

/// The GPU part of a window: GPUs, power, utilisation, memory and, with a previous
/// reading, energy. The engine's part (tokens, rates, roofline) is the caller's.
pub fn window(prev: Option<(&GpuReading, Duration)>, cur: &GpuReading) -> Window {
    let sum = |f: fn(&Gpu) -> Option<f64>| {
        let values: Vec<f64> = cur.gpus.values().filter_map(f).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>())
    };
    Window {
        gpus: u32::try_from(cur.gpus.len()).unwrap_or(u32::MAX),
        power_watts: sum(|g| g.power_watts),
        utilization_sum: sum(|g| g.utilization),
        util_gpus: u32::try_from(
            cur.gpus
                .values()
                .filter(|g| g.utilization.is_some())
                .count(),
        )
        .unwrap_or(u32::MAX),
        memory_used_bytes: sum(|g| g.memory_used_bytes),
        // No GPU matched: no energy, rather than zero joules per token.
        energy_joules: prev
            .filter(|_| !cur.gpus.is_empty())
            .and_then(|(p, elapsed)| energy_between(p, cur, elapsed)),
        ..Window::default()
    }
}

/// Reads every exporter in `urls` at once, each within `timeout`; one failing fails the
/// reading (a partial set of GPUs would understate the energy).
pub async fn scrape(
    http: &reqwest::Client,
    urls: &[String],
    timeout: Duration,
) -> Result<GpuReading, ScrapeError> {
    let reads = futures_util::future::join_all(urls.iter().map(|url| async move {
        let body = tokio::time::timeout(
            timeout,
            super::get_bounded(
                http,
                url,
                "text/plain;version=0.0.4",
                MAX_BODY_BYTES,
                "GPU metrics",
            ),
        )
        .await
        .map_err(|_| {
            ScrapeError::new(
                ScrapeFailure::Timeout,
                anyhow::anyhow!("GPU metrics scrape timed out after {timeout:?}"),
            )
        })??;
        let text = String::from_utf8(body)
            .context("GPU metrics body is not UTF-8")
            .map_err(|e| ScrapeError::new(ScrapeFailure::Format, e))?;
        parse(&text)
    }))
    .await;
    let mut reading = GpuReading::default();
    for r in reads {
        reading.extend(r?);
    }
    Ok(reading)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(energy_mj: f64, power: f64) -> GpuReading {
        parse(&format!(
            "DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",UUID=\"GPU-a\"}} {power}\n\
             DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"0\",UUID=\"GPU-a\"}} {energy_mj}\n"
        ))
        .unwrap()
    }

    #[test]
    fn energy_is_the_counter_increase_and_a_reset_counts_from_zero() {
        let s = Duration::from_secs(10);
        assert_eq!(
            energy_between(&reading(1_000_000.0, 1.0), &reading(3_000_000.0, 1.0), s),
            Some(2_000.0)
        );
        // The driver reloaded: the counter restarted at 0 and is at 500 J now.
        assert_eq!(
            energy_between(&reading(9_000_000.0, 1.0), &reading(500_000.0, 1.0), s),
            Some(500.0)
        );
    }

    #[test]
    fn without_an_energy_counter_the_mean_power_times_the_window_counts() {
        let p = |w: f64| {
            parse(&format!(
                "DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",UUID=\"GPU-a\"}} {w}\n"
            ))
            .unwrap()
        };
        assert_eq!(
            energy_between(&p(100.0), &p(300.0), Duration::from_secs(2)),
            Some(400.0)
        );
    }

    const T0: &str = include_str!("../../tests/fixtures/dcgm/node-a-t0.txt");
    const T1: &str = include_str!("../../tests/fixtures/dcgm/node-a-t1.txt");
    const NO_K8S: &str = include_str!("../../tests/fixtures/dcgm/node-b-no-k8s.txt");

    fn pod(name: &str) -> GpuMatch {
        GpuMatch(vec![("pod".into(), name.into())])
    }

    #[test]
    fn dcgm_exporter_pages_read_per_gpu_with_their_pod() {
        let r = parse(T0).unwrap();
        assert_eq!(r.gpus.len(), 2);
        let w = window(None, &r);
        assert!((w.power_watts.unwrap() - (412.347 + 68.912)).abs() < 1e-9);
        assert_eq!(w.utilization_sum, Some(0.87));
        let vllm = r.select(&pod("vllm-0"));
        assert_eq!(vllm.gpus.len(), 1);
        let g = vllm.gpus.values().next().unwrap();
        assert_eq!(g.energy_joules, Some(5_551_899.58));
        assert_eq!(g.memory_used_bytes, Some(73216.0 * 1024.0 * 1024.0));
        assert_eq!(
            g.labels.get("modelName").map(String::as_str),
            Some("NVIDIA H100 80GB HBM3")
        );
        // The idle GPU is held by no pod: an empty `pod` matches no replica.
        assert!(r.select(&pod("")).gpus.len() == 1);
        assert!(r.select(&pod("vllm-1")).gpus.is_empty());
        // Without the exporter's Kubernetes mapping there is no `pod` label at all.
        let plain = parse(NO_K8S).unwrap();
        assert_eq!(plain.gpus.len(), 1);
        assert!(plain.select(&pod("vllm-0")).gpus.is_empty());
        assert_eq!(plain.select(&GpuMatch::default()).gpus.len(), 1);
    }

    #[test]
    fn a_driver_reload_counts_the_new_counter_from_zero() {
        let (t0, t1) = (parse(T0).unwrap(), parse(T1).unwrap());
        let ten = Duration::from_secs(10);
        // GPU 0: 4,000 J; GPU 1: its counter restarted and reads 689.12 J.
        let both = energy_between(&t0, &t1, ten).unwrap();
        assert!((both - (4_000.0 + 689.12)).abs() < 1e-6, "{both}");
        let vllm = energy_between(&t0, &t1.select(&pod("vllm-0")), ten).unwrap();
        assert!((vllm - 4_000.0).abs() < 1e-6, "{vllm}");
    }

    #[test]
    fn no_gpu_matched_is_no_energy_not_zero() {
        let t0 = parse(T0).unwrap();
        let none = t0.select(&pod("no-such-pod"));
        let w = window(Some((&t0, Duration::from_secs(10))), &none);
        assert_eq!((w.gpus, w.energy_joules, w.power_watts), (0, None, None));
    }

    #[test]
    fn a_page_without_dcgm_metrics_is_an_error() {
        let e = parse("node_cpu_seconds_total{cpu=\"0\"} 1\n").unwrap_err();
        assert_eq!(e.reason, ScrapeFailure::Format);
        assert!(format!("{e:#}").contains("dcgm-exporter"), "{e:#}");
    }
}
