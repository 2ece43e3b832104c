//! `--gpu-metrics-url`: the GPU telemetry read before a rate's runs and after them, and
//! the rate's GPU energy per output token, tokens per joule and mean power from the two
//! reads. The figures are the daemon's (`crate::energy`), over the rate's whole run.

use std::time::Duration;

use tokio::time::Instant;

use crate::bench::options::GpuSource;
use crate::energy::{Figure, Prices, Window, figures};
use crate::engine_metrics::ScrapeError;
use crate::engine_metrics::gpu::{self, GpuReading};
use crate::report::EnergyReport;

/// How long one read of the exporters may take.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One read of the GPUs, and when it started.
pub struct GpuRead {
    reading: GpuReading,
    at: Instant,
}

/// The exporters a bench reads.
pub struct GpuMeter {
    http: reqwest::Client,
    urls: Vec<String>,
}

impl GpuMeter {
    /// The meter of `--gpu-metrics-url`'s sources (`mock`: the mock at `base_url`), if
    /// any.
    pub fn of(sources: &[GpuSource], base_url: &str) -> anyhow::Result<Option<Self>> {
        let urls: Vec<String> = sources
            .iter()
            .map(|s| match s {
                GpuSource::Url(u) => u.clone(),
                GpuSource::Mock => format!("{base_url}/gpu/metrics"),
            })
            .collect();
        (!urls.is_empty()).then(|| Self::new(urls)).transpose()
    }

    pub fn new(urls: Vec<String>) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .user_agent(concat!("llmprobe/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(GpuMeter { http, urls })
    }

    pub async fn read(&self) -> Result<GpuRead, ScrapeError> {
        let at = Instant::now();
        let reading = gpu::scrape(&self.http, &self.urls, READ_TIMEOUT).await?;
        Ok(GpuRead { reading, at })
    }
}

/// The energy of the run between `before` and `after`, in which the answers carried
/// `output_tokens` tokens.
pub fn report(before: &GpuRead, after: &GpuRead, output_tokens: u64) -> EnergyReport {
    let elapsed = after.at.saturating_duration_since(before.at);
    let mut w: Window = gpu::window(Some((&before.reading, elapsed)), &after.reading);
    w.output_tokens = Some(output_tokens as f64);
    let f = figures(&w, &Prices::default());
    let energy = w.energy_joules.unwrap_or(0.0);
    let secs = elapsed.as_secs_f64();
    EnergyReport {
        gpus: w.gpus,
        duration_s: secs,
        energy_joules: energy,
        output_tokens,
        mean_power_watts: (secs > 0.0).then(|| energy / secs),
        energy_per_output_token_joules: f.get(Figure::JoulesPerToken),
        output_tokens_per_joule: f.get(Figure::TokensPerJoule),
    }
}
