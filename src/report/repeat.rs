//! `--repeat N`: the runs of one rate folded into one row. Every figure
//! (`report::figures`) becomes its mean over the runs, with its 95 % interval in
//! `ci95` (`report::ci`); counts (requests, tokens, failures by reason) are summed;
//! golden-set answers are pooled into one accuracy and interval; gates are checked again on the folded row, on the mean or on the interval's
//! pessimistic end (`--gate-on ci`).

use std::collections::BTreeMap;

use crate::report::ci::mean_ci95;
use crate::report::figures;
use crate::report::gate::{Gate, GateBasis};
use crate::report::golden::GoldenReport;
use crate::report::{LatencyStats, RateReport, TurnsReport};

/// Folds the reports of `runs` (at least one; all at one rate) into one.
pub fn combine(runs: &[RateReport], gates: &[Gate], basis: GateBasis) -> RateReport {
    let mut out = runs[0].clone();
    if runs.len() < 2 {
        return out;
    }
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for (k, v) in figures::of_report(r) {
            values.entry(k).or_default().push(v);
        }
    }
    let mut ci95 = BTreeMap::new();
    figures::visit_mut(&mut out, &mut |k, v| {
        let Some(vs) = values.get(k) else { return };
        match mean_ci95(vs) {
            Some((mean, ci)) => {
                *v = mean;
                ci95.insert(k.to_string(), ci);
            }
            None => *v = vs[0],
        }
    });
    sum_counts(&mut out, &runs[1..]);
    out.golden = GoldenReport::pooled(runs.iter().filter_map(|r| r.golden.as_ref()));
    out.duration_s = runs.iter().map(|r| r.duration_s).sum::<f64>() / runs.len() as f64;
    out.client_behind = runs.iter().any(|r| r.client_behind);
    out.cache_warning = runs.iter().find_map(|r| r.cache_warning.clone());
    out.stopped_early = runs.iter().find_map(|r| r.stopped_early);
    out.repeats = u32::try_from(runs.len()).unwrap_or(u32::MAX);
    out.ci95 = ci95;
    out.gates = gates.iter().map(|g| g.check_on(&out, basis)).collect();
    out
}

/// Adds the counts of `rest` to `out`'s, and averages the standard deviations.
fn sum_counts(out: &mut RateReport, rest: &[RateReport]) {
    let add_map = |into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>| {
        for (k, v) in from {
            *into.entry(k.clone()).or_default() += v;
        }
    };
    for r in rest {
        out.requests += r.requests;
        out.completed += r.completed;
        out.failed += r.failed;
        out.good += r.good;
        out.warmup_excluded += r.warmup_excluded;
        out.total_input_tokens += r.total_input_tokens;
        out.total_output_tokens += r.total_output_tokens;
        add_map(&mut out.failed_by_reason, &r.failed_by_reason);
        add_map(&mut out.skipped_by_reason, &r.skipped_by_reason);
        add_map(&mut out.token_sources, &r.token_sources);
        if let Some(n) = r.reasoning_tokens {
            *out.reasoning_tokens.get_or_insert(0) += n;
        }
    }
    if let Some(turns) = out.turns.as_mut() {
        let TurnsReport {
            first,
            later,
            by_turn,
        } = turns;
        for t in [first, later].into_iter().chain(by_turn.iter_mut()) {
            for o in rest.iter().filter_map(|r| r.turns.as_ref()?.turn(t.turn)) {
                t.requests += o.requests;
                t.completed += o.completed;
                t.ttft_ms.count += o.ttft_ms.count;
            }
        }
    }
    if let Some(ttfa) = out.ttfa_ms.as_mut() {
        let others: Vec<&LatencyStats> = rest.iter().filter_map(|r| r.ttfa_ms.as_ref()).collect();
        fold_stats(ttfa, &others, rest.len() + 1);
    }
    let stats = |r: &RateReport| -> [LatencyStats; 7] {
        [
            r.ttft_ms.clone(),
            r.tpot_ms.clone(),
            r.itl_ms.clone(),
            r.chunk_gap_ms.clone(),
            r.e2el_ms.clone(),
            r.ttft_from_sched_ms.clone(),
            r.e2el_from_sched_ms.clone(),
        ]
    };
    let others: Vec<[LatencyStats; 7]> = rest.iter().map(stats).collect();
    let mine = [
        &mut out.ttft_ms,
        &mut out.tpot_ms,
        &mut out.itl_ms,
        &mut out.chunk_gap_ms,
        &mut out.e2el_ms,
        &mut out.ttft_from_sched_ms,
        &mut out.e2el_from_sched_ms,
    ];
    for (i, s) in mine.into_iter().enumerate() {
        let theirs: Vec<&LatencyStats> = others.iter().map(|o| &o[i]).collect();
        fold_stats(s, &theirs, rest.len() + 1);
    }
}

/// Adds the other runs' sample counts to `s` and averages the standard deviations over
/// all `runs` (none when a run has none).
fn fold_stats(s: &mut LatencyStats, others: &[&LatencyStats], runs: usize) {
    s.count += others.iter().map(|o| o.count).sum::<u64>();
    s.exact &= others.iter().all(|o| o.exact);
    let stds: Vec<f64> = s
        .std
        .iter()
        .copied()
        .chain(others.iter().filter_map(|o| o.std))
        .collect();
    s.std = (stds.len() == runs).then(|| stds.iter().sum::<f64>() / runs as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::sample_report;

    #[test]
    fn figures_are_averaged_with_intervals_and_counts_summed() {
        // TTFT p99 of 100, 110, 120, 130, 140 ms: mean 120, s = √250, half-width
        // t(4) · s / √5 = 2.776445 · 7.071068 = 19.63243.
        let runs: Vec<RateReport> = (0..5)
            .map(|i| {
                let mut r = sample_report(8.0);
                r.ttft_ms.percentiles = vec![
                    (50.0, Some(90.0)),
                    (99.0, Some(100.0 + 10.0 * f64::from(i))),
                ];
                r.output_throughput = 400.0;
                r
            })
            .collect();
        let gates: Vec<Gate> = vec!["ttft-p99<=135ms".parse().unwrap()];
        let c = combine(&runs, &gates, GateBasis::Value);
        assert_eq!(c.repeats, 5);
        assert_eq!(c.ttft_ms.percentile(99.0), Some(120.0));
        let [lo, hi] = c.ci95["ttft_ms.p99"];
        assert!(
            (hi - 120.0 - 19.632_43).abs() < 1e-4 && (120.0 - lo - 19.632_43).abs() < 1e-4,
            "{lo} {hi}"
        );
        assert_eq!(c.ci95["output_throughput"], [400.0, 400.0]);
        assert_eq!(c.requests, 500);
        assert_eq!(c.failed_by_reason["timeout"], 10);
        assert_eq!(c.ttft_ms.count, 5 * 98);
        assert!(c.gates[0].passed);
        // The interval's upper end, 139.6 ms, is above the gate.
        let c = combine(&runs, &gates, GateBasis::Ci);
        assert!(!c.gates[0].passed);
        assert!((c.gates[0].observed.unwrap() - 139.632).abs() < 1e-3);
    }

    #[test]
    fn golden_answers_are_pooled_and_gated_on_the_pooled_interval() {
        let runs: Vec<RateReport> = [(95, 100), (65, 100)]
            .into_iter()
            .map(|(correct, judged)| {
                let mut r = sample_report(8.0);
                r.golden = Some(GoldenReport::from_counts(correct, judged));
                r
            })
            .collect();
        let gates: Vec<Gate> = vec!["golden-accuracy-upper>=0.85".parse().unwrap()];
        let c = combine(&runs, &gates, GateBasis::Ci);
        let pooled = GoldenReport::from_counts(160, 200);
        assert_eq!(c.golden, Some(pooled));
        assert!(!c.ci95.keys().any(|k| k.contains("golden")));
        assert_eq!(c.gates[0].observed, pooled.upper);
        assert!(!c.gates[0].passed);
    }

    #[test]
    fn one_run_is_itself() {
        let r = sample_report(4.0);
        assert_eq!(combine(std::slice::from_ref(&r), &[], GateBasis::Ci), r);
    }
}
