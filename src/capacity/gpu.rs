//! GPU table: memory as the serving engine sees it, HBM bandwidth, dense tensor peaks,
//! and an assumed hourly price. Pure data plus lookup.

use serde::Serialize;

/// One accelerator, as used by the capacity model.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuSpec {
    /// Lookup name (`--gpu`).
    pub name: String,
    /// Marketing name.
    pub description: String,
    /// Memory the CUDA/ROCm runtime reports as total (what `--gpu-memory-utilization`
    /// multiplies), in GiB. Slightly less than the marketing GB figure.
    pub memory_gib: f64,
    /// Peak memory bandwidth in TB/s (10^12 bytes per second).
    pub bandwidth_tbs: f64,
    /// Dense (no sparsity) BF16 tensor peak in TFLOP/s.
    pub bf16_tflops: f64,
    /// Dense FP8 tensor peak in TFLOP/s; `None` where the chip has no FP8 tensor cores.
    pub fp8_tflops: Option<f64>,
    /// Assumed on-demand price in $ per GPU-hour when `--gpu-hourly` is not given.
    pub default_hourly_usd: f64,
}

/// (name, description, memory GiB, TB/s, BF16 TFLOP/s, FP8 TFLOP/s, $/h)
type Row = (&'static str, &'static str, f64, f64, f64, Option<f64>, f64);

/// The table rows.
///
///
/// Memory: engine-visible totals (torch `mem_get_info`) for H100 80GB 79.2,
/// H200 139.8, B200 178.4, A100 80GB 79.15 GiB; the others are the totals torch reports
/// in its out-of-memory messages for those cards (A100 40GB 39.59, L40S 44.39, L4 22.06,
/// A10G 22.19; MI300X 191.98). HBM capacities are binary ("192 GB" is 192 GiB), so
/// where no log was at hand the runtime total is estimated from the datasheet: MI325X
/// and MI355X with the same 0.02 GiB gap as MI300X, GB200 (186 GB usable) at 184 GiB.
/// Bandwidth and dense peaks: NVIDIA H100/H200/B200/GB200/A100/L40S/L4 datasheets (the
/// datasheets print sparse FP8/BF16 figures for Hopper/Blackwell; dense is half), AMD
/// Instinct MI300X/MI325X/MI355X datasheets. A10G: AWS G5 figures (~70 BF16 TFLOP/s).
/// Prices: rough 2025 on-demand cloud list prices, only a default; pass --gpu-hourly.
const TABLE: &[Row] = &[
    (
        "h100",
        "NVIDIA H100 SXM 80GB",
        79.2,
        3.35,
        989.0,
        Some(1979.0),
        3.00,
    ),
    (
        "h100-pcie",
        "NVIDIA H100 PCIe 80GB",
        79.2,
        2.0,
        756.0,
        Some(1513.0),
        2.50,
    ),
    (
        "h200",
        "NVIDIA H200 SXM 141GB",
        139.8,
        4.8,
        989.0,
        Some(1979.0),
        3.80,
    ),
    (
        "b200",
        "NVIDIA B200 180GB",
        178.4,
        8.0,
        2250.0,
        Some(4500.0),
        5.50,
    ),
    (
        "gb200",
        "NVIDIA GB200 (per GPU, 186GB)",
        184.0,
        8.0,
        2500.0,
        Some(5000.0),
        6.50,
    ),
    (
        "a100-40gb",
        "NVIDIA A100 SXM 40GB",
        39.59,
        1.555,
        312.0,
        None,
        1.30,
    ),
    (
        "a100-80gb",
        "NVIDIA A100 SXM 80GB",
        79.15,
        2.039,
        312.0,
        None,
        1.80,
    ),
    (
        "l40s",
        "NVIDIA L40S 48GB",
        44.39,
        0.864,
        362.0,
        Some(733.0),
        1.00,
    ),
    ("l4", "NVIDIA L4 24GB", 22.06, 0.3, 121.0, Some(242.0), 0.80),
    (
        "a10g",
        "NVIDIA A10G 24GB (AWS)",
        22.19,
        0.6,
        70.0,
        None,
        1.00,
    ),
    (
        "mi300x",
        "AMD Instinct MI300X 192GB",
        191.98,
        5.3,
        1307.4,
        Some(2614.9),
        2.50,
    ),
    (
        "mi325x",
        "AMD Instinct MI325X 256GB",
        255.98,
        6.0,
        1307.4,
        Some(2614.9),
        3.00,
    ),
    (
        "mi355x",
        "AMD Instinct MI355X 288GB",
        287.98,
        8.0,
        2500.0,
        Some(5000.0),
        4.00,
    ),
];

/// All GPUs in the table, in table order.
pub fn all() -> Vec<GpuSpec> {
    TABLE
        .iter()
        .map(
            |&(name, description, memory_gib, bandwidth_tbs, bf16, fp8, hourly)| GpuSpec {
                name: name.to_string(),
                description: description.to_string(),
                memory_gib,
                bandwidth_tbs,
                bf16_tflops: bf16,
                fp8_tflops: fp8,
                default_hourly_usd: hourly,
            },
        )
        .collect()
}

/// Valid `--gpu` names, for error messages.
pub fn names() -> Vec<&'static str> {
    TABLE.iter().map(|row| row.0).collect()
}

/// Looks a GPU up by name, case-insensitively.
pub fn lookup(name: &str) -> Option<GpuSpec> {
    all()
        .into_iter()
        .find(|g| g.name.eq_ignore_ascii_case(name.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_these_gpus() {
        for name in [
            "h100",
            "h100-pcie",
            "h200",
            "b200",
            "gb200",
            "a100-40gb",
            "a100-80gb",
            "l40s",
            "l4",
            "a10g",
            "mi300x",
            "mi325x",
            "mi355x",
        ] {
            assert!(lookup(name).is_some(), "{name} missing");
        }
        assert_eq!(lookup("H100").map(|g| g.memory_gib), Some(79.2));
        assert!(lookup("tpu").is_none());
    }

    #[test]
    fn engine_visible_memory_is_below_the_marketing_size() {
        for g in all() {
            let marketing_gb: f64 = match g.name.as_str() {
                "h100" | "h100-pcie" | "a100-80gb" => 80.0,
                "h200" => 141.0,
                "b200" => 192.0,
                "gb200" => 186.0,
                "a100-40gb" => 40.0,
                "l40s" => 48.0,
                "l4" | "a10g" => 24.0,
                "mi300x" => 192.0,
                "mi325x" => 256.0,
                "mi355x" => 288.0,
                other => panic!("unexpected gpu {other}"),
            };
            // HBM sizes are sold in binary units, so compare GiB with the label.
            assert!(g.memory_gib <= marketing_gb, "{}", g.name);
            assert!(g.memory_gib > 0.9 * marketing_gb, "{}", g.name);
        }
    }
}
