//! What a token costs in energy and money, and how far the engine runs from its
//! roofline: the energy figures of one scrape window as pure arithmetic, one row per
//! figure. The daemon publishes each figure for a target's engine, for each discovered
//! replica and for the fleet (`exposition::families` makes the three families of a row);
//! bench reports the same figures per rate. docs/measurement.md gives the formulas.

/// One energy figure: a row of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    Gpus,
    PowerWatts,
    Utilization,
    MemoryUsedBytes,
    JoulesPerToken,
    TokensPerJoule,
    GpuCost,
    EnergyCost,
    Co2,
    RooflineTokensPerSecond,
    RooflineEfficiency,
}

/// How many figures the catalogue has.
pub const COUNT: usize = Figure::ALL.len();

impl Figure {
    /// Every figure, in the order of docs/metrics.md.
    pub const ALL: [Figure; 11] = [
        Figure::Gpus,
        Figure::PowerWatts,
        Figure::Utilization,
        Figure::MemoryUsedBytes,
        Figure::JoulesPerToken,
        Figure::TokensPerJoule,
        Figure::GpuCost,
        Figure::EnergyCost,
        Figure::Co2,
        Figure::RooflineTokensPerSecond,
        Figure::RooflineEfficiency,
    ];

    /// The family name after its scope's prefix (`llmprobe_engine_`, `llmprobe_replica_`,
    /// `llmprobe_fleet_`).
    pub const fn suffix(self) -> &'static str {
        match self {
            Figure::Gpus => "gpus",
            Figure::PowerWatts => "gpu_power_watts",
            Figure::Utilization => "gpu_utilization_ratio",
            Figure::MemoryUsedBytes => "gpu_memory_used_bytes",
            Figure::JoulesPerToken => "energy_per_output_token_joules",
            Figure::TokensPerJoule => "output_tokens_per_joule",
            Figure::GpuCost => "gpu_cost_per_million_output_tokens_dollars",
            Figure::EnergyCost => "energy_cost_per_million_output_tokens_dollars",
            Figure::Co2 => "co2_per_million_output_tokens_grams",
            Figure::RooflineTokensPerSecond => "roofline_tokens_per_second",
            Figure::RooflineEfficiency => "roofline_efficiency_ratio",
        }
    }

    /// The help text (what the figure says, and its formula in short).
    pub const fn help(self) -> &'static str {
        match self {
            Figure::Gpus => "GPUs of the GPU telemetry matched to this engine.",
            Figure::PowerWatts => {
                "Power draw of the matched GPUs (DCGM_FI_DEV_POWER_USAGE), summed."
            }
            Figure::Utilization => {
                "GPU utilisation of the matched GPUs, 0..1 (DCGM_FI_DEV_GPU_UTIL / 100), mean."
            }
            Figure::MemoryUsedBytes => {
                "Framebuffer memory used by the matched GPUs (DCGM_FI_DEV_FB_USED), summed."
            }
            Figure::JoulesPerToken => {
                "GPU energy per output token over the last scrape window: energy counter increase / the engine's generation-token increase."
            }
            Figure::TokensPerJoule => {
                "Output tokens per joule of GPU energy over the last scrape window (1 / energy per output token)."
            }
            Figure::GpuCost => {
                "Live dollars per million output tokens from the GPUs matched: gpu_hourly x GPUs / 3600 / generation tokens per second x 1e6."
            }
            Figure::EnergyCost => {
                "Dollars of electricity per million output tokens: energy per output token x 1e6 / 3.6e6 x energy_price_per_kwh."
            }
            Figure::Co2 => {
                "Grams CO2e per million output tokens: energy per output token x 1e6 / 3.6e6 x grams_co2_per_kwh."
            }
            Figure::RooflineTokensPerSecond => {
                "The capacity model's decode roofline at the live batch (running requests, at least 1): tokens per second its memory bandwidth and compute allow."
            }
            Figure::RooflineEfficiency => {
                "Measured generation tokens per second / the roofline's at the live batch."
            }
        }
    }

    /// The base unit the family name ends with, if any.
    pub const fn unit(self) -> Option<&'static str> {
        match self {
            Figure::PowerWatts => Some("watts"),
            Figure::Utilization | Figure::RooflineEfficiency => Some("ratio"),
            Figure::MemoryUsedBytes => Some("bytes"),
            Figure::JoulesPerToken => Some("joules"),
            Figure::GpuCost | Figure::EnergyCost => Some("dollars"),
            Figure::Co2 => Some("grams"),
            Figure::Gpus | Figure::TokensPerJoule | Figure::RooflineTokensPerSecond => None,
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Every figure of one engine (or fleet) for one window; `None` = not known this window
/// (its series is removed rather than left stale).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures([Option<f64>; COUNT]);

impl Figures {
    pub fn get(&self, f: Figure) -> Option<f64> {
        self.0[f.index()]
    }

    fn set(&mut self, f: Figure, v: Option<f64>) {
        self.0[f.index()] = v.filter(|v| v.is_finite());
    }

    /// Each figure with its value.
    pub fn iter(&self) -> impl Iterator<Item = (Figure, Option<f64>)> + '_ {
        Figure::ALL.into_iter().map(|f| (f, self.get(f)))
    }
}

/// What the GPUs and the engine did over one window: the inputs of every figure. The
/// fleet's window is the sum of its replicas' ([`Window::sum`]), so the fleet's figures
/// follow from the same formulas.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Window {
    /// GPUs matched.
    pub gpus: u32,
    /// Their power draw now, W.
    pub power_watts: Option<f64>,
    /// Utilisation, 0..1, summed over the GPUs that report it (`util_gpus` of them).
    pub utilization_sum: Option<f64>,
    pub util_gpus: u32,
    /// Framebuffer used, bytes.
    pub memory_used_bytes: Option<f64>,
    /// GPU energy spent over the window, J (`None` on the first scrape).
    pub energy_joules: Option<f64>,
    /// Output tokens the engine generated over the window (its counter's increase).
    pub output_tokens: Option<f64>,
    /// The engine's generation rate, tokens/s.
    pub generation_tokens_per_second: Option<f64>,
    /// The capacity model's roofline at the live batch, tokens/s.
    pub roofline_tokens_per_second: Option<f64>,
}

impl Window {
    /// The fleet's window: counts, energies, tokens and rates summed; utilisation
    /// weighted by GPUs. A part some replica lacks is left out of the sum only where a
    /// partial sum would still mean the same (power, memory); energy and tokens are
    /// summed only over replicas that have both, so energy per token never mixes one
    /// replica's energy with another's tokens.
    pub fn sum(windows: &[Window]) -> Window {
        let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        let mut out = Window::default();
        for w in windows {
            out.gpus += w.gpus;
            out.power_watts = add(out.power_watts, w.power_watts);
            out.utilization_sum = add(out.utilization_sum, w.utilization_sum);
            out.util_gpus += w.util_gpus;
            out.memory_used_bytes = add(out.memory_used_bytes, w.memory_used_bytes);
            if let (Some(e), Some(t)) = (w.energy_joules, w.output_tokens) {
                out.energy_joules = add(out.energy_joules, Some(e));
                out.output_tokens = add(out.output_tokens, Some(t));
            }
            out.generation_tokens_per_second = add(
                out.generation_tokens_per_second,
                w.generation_tokens_per_second,
            );
            out.roofline_tokens_per_second =
                add(out.roofline_tokens_per_second, w.roofline_tokens_per_second);
        }
        out
    }
}

/// What electricity and GPUs cost, from the config.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Prices {
    /// Dollars per GPU-hour (the capacity block's `gpu_hourly`).
    pub gpu_hourly: Option<f64>,
    /// Dollars per kWh.
    pub energy_per_kwh: Option<f64>,
    /// Grams CO2e per kWh.
    pub co2_grams_per_kwh: Option<f64>,
}

/// Joules in a kilowatt-hour.
pub const JOULES_PER_KWH: f64 = 3.6e6;

/// Every figure of a window.
pub fn figures(w: &Window, p: &Prices) -> Figures {
    let mut f = Figures::default();
    let positive = |v: Option<f64>| v.filter(|v| *v > 0.0);
    f.set(Figure::Gpus, Some(f64::from(w.gpus)));
    f.set(Figure::PowerWatts, w.power_watts);
    f.set(
        Figure::Utilization,
        w.utilization_sum
            .filter(|_| w.util_gpus > 0)
            .map(|s| s / f64::from(w.util_gpus)),
    );
    f.set(Figure::MemoryUsedBytes, w.memory_used_bytes);
    // No tokens in the window: energy per token is undefined, not infinite.
    let per_token = match (w.energy_joules, positive(w.output_tokens)) {
        (Some(e), Some(t)) if e >= 0.0 => Some(e / t),
        _ => None,
    };
    f.set(Figure::JoulesPerToken, per_token);
    f.set(Figure::TokensPerJoule, positive(per_token).map(|j| 1.0 / j));
    let tps = positive(w.generation_tokens_per_second);
    f.set(
        Figure::GpuCost,
        match (p.gpu_hourly, tps) {
            (Some(hourly), Some(tps)) if w.gpus > 0 => {
                Some(hourly * f64::from(w.gpus) / 3600.0 / tps * 1e6)
            }
            _ => None,
        },
    );
    let kwh_per_million = per_token.map(|j| j * 1e6 / JOULES_PER_KWH);
    f.set(
        Figure::EnergyCost,
        kwh_per_million.zip(p.energy_per_kwh).map(|(k, p)| k * p),
    );
    f.set(
        Figure::Co2,
        kwh_per_million.zip(p.co2_grams_per_kwh).map(|(k, g)| k * g),
    );
    f.set(
        Figure::RooflineTokensPerSecond,
        w.roofline_tokens_per_second,
    );
    f.set(
        Figure::RooflineEfficiency,
        match (
            w.generation_tokens_per_second,
            positive(w.roofline_tokens_per_second),
        ) {
            (Some(measured), Some(roof)) => Some(measured / roof),
            _ => None,
        },
    );
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> Window {
        Window {
            gpus: 2,
            power_watts: Some(500.0),
            utilization_sum: Some(1.5),
            util_gpus: 2,
            memory_used_bytes: Some(8e9),
            energy_joules: Some(5_000.0),
            output_tokens: Some(10_000.0),
            generation_tokens_per_second: Some(1_000.0),
            roofline_tokens_per_second: Some(4_000.0),
        }
    }

    #[test]
    fn every_figure_follows_its_formula() {
        let p = Prices {
            gpu_hourly: Some(3.6),
            energy_per_kwh: Some(0.36),
            co2_grams_per_kwh: Some(360.0),
        };
        let f = figures(&window(), &p);
        assert_eq!(f.get(Figure::Gpus), Some(2.0));
        assert_eq!(f.get(Figure::PowerWatts), Some(500.0));
        assert_eq!(f.get(Figure::Utilization), Some(0.75));
        assert_eq!(f.get(Figure::JoulesPerToken), Some(0.5));
        assert_eq!(f.get(Figure::TokensPerJoule), Some(2.0));
        // $3.60/h x 2 GPUs / 3600 / 1000 tok/s x 1e6 = $2 per 1M tokens.
        assert!((f.get(Figure::GpuCost).unwrap() - 2.0).abs() < 1e-12);
        // 0.5 J/token x 1e6 = 5e5 J = 0.13889 kWh per 1M tokens.
        let kwh = 0.5e6 / 3.6e6;
        assert!((f.get(Figure::EnergyCost).unwrap() - kwh * 0.36).abs() < 1e-12);
        assert!((f.get(Figure::Co2).unwrap() - kwh * 360.0).abs() < 1e-9);
        assert_eq!(f.get(Figure::RooflineEfficiency), Some(0.25));
    }

    #[test]
    fn no_tokens_means_no_energy_per_token_and_no_price_without_a_price() {
        let w = Window {
            output_tokens: Some(0.0),
            generation_tokens_per_second: Some(0.0),
            ..window()
        };
        let f = figures(&w, &Prices::default());
        assert_eq!(f.get(Figure::JoulesPerToken), None);
        assert_eq!(f.get(Figure::TokensPerJoule), None);
        assert_eq!(f.get(Figure::GpuCost), None);
        assert_eq!(f.get(Figure::EnergyCost), None);
        assert_eq!(f.get(Figure::RooflineEfficiency), Some(0.0));
        // Power and GPUs stay: the GPUs draw power whether tokens flow or not.
        assert_eq!(f.get(Figure::PowerWatts), Some(500.0));
    }

    #[test]
    fn the_fleet_window_is_the_sum_and_never_mixes_energy_with_foreign_tokens() {
        let a = window();
        let b = Window {
            gpus: 1,
            power_watts: Some(100.0),
            utilization_sum: Some(0.0),
            util_gpus: 1,
            energy_joules: None,
            output_tokens: Some(7.0),
            ..window()
        };
        let s = Window::sum(&[a, b]);
        assert_eq!(s.gpus, 3);
        assert_eq!(s.power_watts, Some(600.0));
        assert_eq!(s.energy_joules, Some(5_000.0));
        assert_eq!(s.output_tokens, Some(10_000.0));
        let f = figures(&s, &Prices::default());
        assert_eq!(f.get(Figure::Utilization), Some(0.5));
        assert_eq!(f.get(Figure::JoulesPerToken), Some(0.5));
        assert_eq!(f.get(Figure::RooflineEfficiency), Some(0.25));
    }

    #[test]
    fn names_end_with_their_unit() {
        for f in Figure::ALL {
            if let Some(u) = f.unit() {
                assert!(f.suffix().ends_with(u), "{}", f.suffix());
            }
        }
    }
}
