//! 95 % confidence intervals over repeat runs: Student's t over the run-level values.
//! Each run is one independent draw of a figure (its own seed and prompt nonce), so for
//! n runs with mean m and sample standard deviation s the interval is
//! m ± t(0.975, n − 1) · s / √n. It assumes the run-level values are roughly normal,
//! which holds for means and throughputs by the central limit theorem and is an
//! approximation for tail percentiles of short runs; with few runs the t quantile makes
//! the interval honestly wide (n = 2: ±12.7 s/√2).

/// t(0.975, df) for df = 1..=30 (two-sided 95 %), from the standard tables.
const T975: [f64; 30] = [
    12.706_205, 4.302_653, 3.182_446, 2.776_445, 2.570_582, 2.446_912, 2.364_624, 2.306_004,
    2.262_157, 2.228_139, 2.200_985, 2.178_813, 2.160_369, 2.144_787, 2.131_450, 2.119_905,
    2.109_816, 2.100_922, 2.093_024, 2.085_963, 2.079_614, 2.073_873, 2.068_658, 2.063_899,
    2.059_539, 2.055_529, 2.051_831, 2.048_407, 2.045_230, 2.042_272,
];

/// The two-sided 95 % quantile of Student's t with `df` degrees of freedom (≥ 1):
/// tabulated to 30, then the Cornish–Fisher expansion around z = 1.959964 (error below
/// 1e-5 from df = 30 on).
pub fn t975(df: u32) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    if let Some(&t) = T975.get(df as usize - 1) {
        return t;
    }
    let z: f64 = 1.959_963_985;
    let d = f64::from(df);
    z + (z.powi(3) + z) / (4.0 * d)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / (384.0 * d.powi(3))
}

/// Mean and 95 % interval of run-level values; `None` for fewer than two values.
pub fn mean_ci95(values: &[f64]) -> Option<(f64, [f64; 2])> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let half = t975(u32::try_from(n - 1).unwrap_or(u32::MAX)) * (var / nf).sqrt();
    Some((mean, [mean - half, mean + half]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand_distr::{Distribution, Normal};

    #[test]
    fn known_values() {
        // 1..=5: mean 3, s = √2.5, half-width t(4) · s / √5 = 2.776445 · 0.707107.
        let (m, [lo, hi]) = mean_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(m, 3.0);
        assert!((hi - 3.0 - 1.963_243).abs() < 1e-6, "{hi}");
        assert!((3.0 - lo - 1.963_243).abs() < 1e-6, "{lo}");
        // Equal values: a zero-width interval.
        assert_eq!(mean_ci95(&[7.0, 7.0, 7.0]), Some((7.0, [7.0, 7.0])));
        assert_eq!(mean_ci95(&[1.0]), None);
        // The expansion meets the table and tends to the normal quantile.
        assert!((t975(31) - 2.039_513).abs() < 1e-5, "{}", t975(31));
        assert!((t975(60) - 2.000_298).abs() < 1e-5, "{}", t975(60));
        assert!((t975(100_000) - 1.959_99).abs() < 1e-4);
        assert_eq!(t975(0), f64::INFINITY);
    }

    #[test]
    fn intervals_cover_the_true_mean_95_percent_of_the_time() {
        // 20 000 experiments of 5 normal draws (mean 40, sd 3): the coverage of a 95 %
        // interval is binomial with sd √(0.95 · 0.05 / 20000) = 0.0015.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(15);
        let normal = Normal::new(40.0, 3.0).unwrap();
        let trials = 20_000;
        let mut covered = 0;
        for _ in 0..trials {
            let x: Vec<f64> = (0..5).map(|_| normal.sample(&mut rng)).collect();
            let (_, [lo, hi]) = mean_ci95(&x).unwrap();
            covered += usize::from(lo <= 40.0 && 40.0 <= hi);
        }
        let coverage = covered as f64 / f64::from(trials);
        assert!((coverage - 0.95).abs() < 0.006, "coverage {coverage}");
    }
}
