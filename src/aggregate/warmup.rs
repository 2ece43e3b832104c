//! `--warmup auto`: where the start-up transient of a run ends, by MSER-5 (White,
//! "An effective truncation heuristic for bias reduction in simulation output", 1997;
//! the variant of White, Cobb & Spratt 2000 that works on batch means of 5). The series
//! is cut into batches of 5 observations; for each candidate cut d (in batches, at most
//! half of them) MSER(d) = Σ_{j>d} (b_j − mean_{>d})² / (m − d)², the squared standard
//! error of the mean of what is left; the cut with the smallest value wins. Dropping
//! a transient makes the remaining batches agree (smaller numerator) at the price of
//! fewer of them (smaller denominator): the minimum balances both.

/// Observations per batch.
pub const MSER_BATCH: usize = 5;

/// How many leading observations of `series` MSER-5 drops (a multiple of 5; 0 for
/// fewer than two batches). Ties go to the smaller cut.
pub fn mser5_truncation(series: &[f64]) -> usize {
    let batches: Vec<f64> = series
        .chunks_exact(MSER_BATCH)
        .map(|c| c.iter().sum::<f64>() / MSER_BATCH as f64)
        .collect();
    let m = batches.len();
    if m < 2 {
        return 0;
    }
    // Suffix sums give each candidate's mean and squared deviations in O(m).
    let mut best = (f64::INFINITY, 0usize);
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    let mut stats = vec![(0.0, 0.0); m];
    for j in (0..m).rev() {
        sum += batches[j];
        sum_sq += batches[j] * batches[j];
        stats[j] = (sum, sum_sq);
    }
    for (d, &(s, sq)) in stats.iter().enumerate().take(m / 2 + 1) {
        let k = (m - d) as f64;
        let ss = (sq - s * s / k).max(0.0);
        let mser = ss / (k * k);
        if mser < best.0 {
            best = (mser, d);
        }
    }
    best.1 * MSER_BATCH
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand_distr::{Distribution, Normal};

    fn noise(n: usize, mean: f64, seed: u64) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let d = Normal::new(mean, 1.0).unwrap();
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    #[test]
    fn a_step_transient_is_cut_where_it_ends() {
        // 40 slow requests (cold start at 100 ms), then 460 around 40 ms.
        let mut s = vec![100.0; 40];
        s.extend(noise(460, 40.0, 1));
        assert_eq!(mser5_truncation(&s), 40);
    }

    #[test]
    fn a_decaying_transient_is_cut_after_it_has_faded() {
        // 80 ms above the steady state at first, halving every 10 requests.
        let s: Vec<f64> = noise(600, 40.0, 2)
            .into_iter()
            .enumerate()
            .map(|(i, v)| v + 80.0 * 0.5f64.powf(i as f64 / 10.0))
            .collect();
        let d = mser5_truncation(&s);
        // After 60 requests the excess is 1.25 ms, about the noise's own size.
        assert!((40..=90).contains(&d), "cut {d}");
    }

    #[test]
    fn a_stationary_series_loses_little() {
        for seed in 0..20 {
            let d = mser5_truncation(&noise(500, 40.0, seed));
            assert!(d <= 100, "seed {seed}: cut {d}");
        }
        assert_eq!(mser5_truncation(&[1.0, 2.0, 3.0]), 0);
        assert_eq!(mser5_truncation(&[5.0; 50]), 0);
    }
}
