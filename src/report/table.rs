//! The console report: one aligned table with a row per rate (so a sweep reads as a
//! curve), then failures by reason, answer checks, golden-set accuracy, token-count
//! sources, client-lag warnings and gate verdicts. Pure: it formats [`RateReport`]s
//! into a string.

use std::fmt::Write as _;

use crate::latency::Latency;
use crate::report::{RateReport, figures, hit_ratios_vary, percentile_key};

/// Milliseconds with about three significant digits; `-` when absent.
fn ms(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The metrics to show: the asked ones, plus TTFA right after TTFT when some request
/// reasoned (then the two differ and both matter).
fn with_ttfa(reports: &[RateReport], metrics: &[Latency]) -> Vec<Latency> {
    let mut out = metrics.to_vec();
    if reports.iter().any(|r| r.ttfa_ms.is_some()) && !out.contains(&Latency::Ttfa) {
        let at = out
            .iter()
            .position(|m| *m == Latency::Ttft)
            .map_or(0, |i| i + 1);
        out.insert(at, Latency::Ttfa);
    }
    out
}

struct Group {
    title: String,
    columns: Vec<String>,
}

/// Renders the sweep table and the notes under it.
pub fn render(reports: &[RateReport], metrics: &[Latency], percentiles: &[f64]) -> String {
    let metrics = &with_ttfa(reports, metrics)[..];
    let energy = reports.iter().any(|r| r.energy.is_some());
    // Several --prefix-hit-ratio values: a column says which row is which.
    let hit_ratio = hit_ratios_vary(reports);
    let groups = groups(metrics, percentiles, energy, hit_ratio);
    // A rate's per-model rows (`--lora-split`) follow it.
    let rows: Vec<Vec<String>> = reports
        .iter()
        .flat_map(|r| std::iter::once(r).chain(&r.by_model))
        .map(|r| {
            let mut cells = row(r, metrics, percentiles, energy);
            if hit_ratio {
                let h = r
                    .prefix_hit_ratio
                    .map_or("-".to_string(), |h| h.to_string());
                cells.insert(1, h);
            }
            cells
        })
        .collect();
    let widths = widths(&groups, &rows);

    let mut out = String::new();
    let mut line = String::new();
    let mut col = 0;
    for (gi, g) in groups.iter().enumerate() {
        let n = g.columns.len();
        let span: usize = widths[col..col + n].iter().sum::<usize>() + 2 * (n - 1);
        if gi > 0 {
            line.push_str(" | ");
        }
        let _ = write!(line, "{:^span$}", g.title);
        col += n;
    }
    out.push_str(line.trim_end());
    out.push('\n');

    let header: Vec<String> = groups.iter().flat_map(|g| g.columns.clone()).collect();
    let header_line = format_row(&groups, &widths, &header);
    out.push_str(&header_line);
    out.push('\n');
    out.push_str(&"-".repeat(header_line.len()));
    out.push('\n');
    for r in &rows {
        out.push_str(&format_row(&groups, &widths, r));
        out.push('\n');
    }

    out.push_str(&notes(reports));
    out
}

/// The column groups: requests (with the prefix hit ratio after the rate when rows
/// differ in it), throughput, goodput, one per latency metric, lag, and GPU energy when
/// measured.
fn groups(metrics: &[Latency], percentiles: &[f64], energy: bool, hit_ratio: bool) -> Vec<Group> {
    let mut groups = vec![Group {
        title: "requests".into(),
        columns: vec![
            "rate".into(),
            "offered".into(),
            "achieved".into(),
            "ok".into(),
            "fail".into(),
        ],
    }];
    if hit_ratio {
        groups[0].columns.insert(1, "hit ratio".into());
    }
    groups.push(Group {
        title: "throughput".into(),
        columns: vec!["out tok/s".into(), "tot tok/s".into()],
    });
    groups.push(Group {
        title: "goodput".into(),
        columns: vec!["good/s".into(), "good%".into()],
    });
    for &m in metrics {
        let mut columns = vec!["mean".to_string()];
        columns.extend(percentiles.iter().map(|&p| percentile_key(p)));
        groups.push(Group {
            title: m.title().into(),
            columns,
        });
    }
    groups.push(Group {
        title: "lag ms".into(),
        columns: vec!["p99".into()],
    });
    if energy {
        groups.push(Group {
            title: "GPU energy".into(),
            columns: vec!["J/tok".into(), "tok/J".into(), "W".into()],
        });
    }
    groups
}

/// The cells of one rate's row; with repeat runs a figure reads `value±half-width`
/// of its 95 % interval.
fn row(r: &RateReport, metrics: &[Latency], percentiles: &[f64], energy: bool) -> Vec<String> {
    let ci = |text: String, key: &str, fmt: &dyn Fn(f64) -> String| match r.ci95.get(key) {
        Some([lo, hi]) => format!("{text}±{}", fmt((hi - lo) / 2.0)),
        None => text,
    };
    let pct = |v: f64| format!("{:.1}", v * 100.0);
    let mut row = vec![
        r.model
            .as_ref()
            .map_or_else(|| r.rate.to_string(), |m| format!("  {m}")),
        r.offered_rate.map_or("-".to_string(), num),
        ci(num(r.achieved_rate), "achieved_rate", &num),
        r.completed.to_string(),
        r.failed.to_string(),
        ci(num(r.output_throughput), "output_throughput", &num),
        ci(
            num(r.total_token_throughput),
            "total_token_throughput",
            &num,
        ),
        ci(num(r.goodput), "goodput", &num),
        r.goodput_ratio
            .map_or("-".to_string(), |g| ci(pct(g), "goodput_ratio", &pct)),
    ];
    let ms_ci = |v: Option<f64>, key: String| match v {
        Some(_) => ci(ms(v), &key, &|h| ms(Some(h))),
        None => ms(v),
    };
    // Every latency users can name has stats (a test in `report` holds them to it).
    for (m, s) in metrics
        .iter()
        .filter_map(|&m| Some((m, r.latency_stats(m)?)))
    {
        row.push(ms_ci(s.mean, figures::latency_key(m, None)));
        row.extend(
            percentiles
                .iter()
                .map(|&p| ms_ci(s.percentile(p), figures::latency_key(m, Some(p)))),
        );
    }
    let lag = ms(r.dispatch_lag_ms.p99);
    row.push(if r.client_behind {
        format!("{lag}!")
    } else {
        lag
    });
    if energy {
        let e = r.energy.as_ref();
        let fig = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
        row.push(fig(e.and_then(|e| e.energy_per_output_token_joules)));
        row.push(fig(e.and_then(|e| e.output_tokens_per_joule)));
        row.push(
            e.and_then(|e| e.mean_power_watts)
                .map_or("-".to_string(), num),
        );
    }
    row
}

/// Column widths: the widest of header and cells; a group is at least as wide as its
/// title (extra room goes to its first column).
fn widths(groups: &[Group], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = Vec::new();
    let mut col = 0;
    for g in groups {
        let start = col;
        for c in &g.columns {
            let w = rows
                .iter()
                .map(|r| r[col].len())
                .chain(std::iter::once(c.len()))
                .max()
                .unwrap_or(0);
            widths.push(w);
            col += 1;
        }
        let span: usize = widths[start..col].iter().sum::<usize>() + 2 * (col - start - 1);
        if span < g.title.len() {
            widths[start] += g.title.len() - span;
        }
    }
    widths
}

/// One line of cells, right-aligned in their columns, groups separated by ` | `.
fn format_row(groups: &[Group], widths: &[usize], cells: &[String]) -> String {
    let mut s = String::new();
    let mut col = 0;
    for (gi, g) in groups.iter().enumerate() {
        if gi > 0 {
            s.push_str(" | ");
        }
        for k in 0..g.columns.len() {
            if k > 0 {
                s.push_str("  ");
            }
            let w = widths[col];
            let _ = write!(s, "{:>w$}", cells[col]);
            col += 1;
        }
    }
    s
}

/// The answer-check line of one rate (row `name`): how many checked answers failed, by
/// check.
fn check_note(out: &mut String, r: &RateReport, name: &str) {
    let (Some(checked), Some(ratio)) = (r.checked_requests, r.check_failure_ratio) else {
        return;
    };
    let failed = (ratio * checked as f64).round();
    let by_check: Vec<String> = r
        .check_failures
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = write!(
        out,
        "rate {name}: answer checks failed on {failed} of {checked} completed requests ({:.1}%)",
        ratio * 100.0
    );
    if !by_check.is_empty() {
        let _ = write!(out, ": {}", by_check.join(", "));
    }
    out.push_str(" (completed, not good)\n");
}

/// The lines under the table: failures, answer checks, token sources, lag warnings,
/// gate verdicts.
/// A share as a percentage; `-` when absent.
fn pct(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{:.1} %", v * 100.0))
}

/// Multi-turn runs: TTFT, prompt tokens and cache-hit share per turn, and turns ≥ 2
/// together; otherwise the cache-hit share alone when the server reported it.
fn turns_note(out: &mut String, r: &RateReport, name: &str) {
    let Some(t) = &r.turns else {
        if let Some(share) = r.cache_hit_share {
            let _ = writeln!(out, "rate {name}: cache-hit share {}", pct(Some(share)));
        }
        return;
    };
    let _ = writeln!(
        out,
        "rate {name}: per turn (cache hit = cached / prompt tokens, as the server reported; \
         overall {})",
        pct(r.cache_hit_share)
    );
    let _ = writeln!(
        out,
        "  {:>5} {:>6} {:>6} {:>9} {:>9} {:>11} {:>9}",
        "turn", "ok", "fail", "TTFT p50", "TTFT p99", "prompt tok", "cache hit"
    );
    let rows = t
        .by_turn
        .iter()
        .map(|x| (x.turn.map_or("?".to_string(), |n| n.to_string()), x))
        .chain([(">=2".to_string(), &t.later)]);
    for (name, x) in rows {
        let _ = writeln!(
            out,
            "  {:>5} {:>6} {:>6} {:>9} {:>9} {:>11} {:>9}",
            name,
            x.completed,
            x.requests - x.completed,
            ms(x.ttft_ms.percentile(50.0)),
            ms(x.ttft_ms.percentile(99.0)),
            x.prompt_tokens_mean
                .map_or("-".to_string(), |v| format!("{v:.1}")),
            pct(x.cache_hit_share)
        );
    }
}

fn notes(reports: &[RateReport]) -> String {
    let mut out = String::new();
    let vary = hit_ratios_vary(reports);
    let name = |r: &RateReport| r.row_name(vary);
    for r in reports.iter().filter(|r| r.failed > 0) {
        let reasons: Vec<String> = r
            .failed_by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            out,
            "rate {}: {} of {} requests failed ({})",
            name(r),
            r.failed,
            r.requests,
            reasons.join(", ")
        );
    }
    for r in reports {
        check_note(&mut out, r, &name(r));
    }
    for (r, g) in reports.iter().filter_map(|r| Some((r, r.golden.as_ref()?))) {
        let _ = writeln!(out, "{}", g.line(&name(r)));
    }
    for r in reports {
        turns_note(&mut out, r, &name(r));
    }
    let mut sources: Vec<&str> = reports
        .iter()
        .flat_map(|r| r.token_sources.keys().map(String::as_str))
        .collect();
    sources.sort_unstable();
    sources.dedup();
    if !sources.is_empty() {
        let _ = write!(out, "output tokens counted from: {}", sources.join(", "));
        if sources.contains(&"chunks") {
            out.push_str(" (no usage from the server and no --tokenizer: one token per chunk, TPOT/ITL approximate)");
        }
        out.push('\n');
    }
    for r in reports.iter().filter(|r| r.repeats > 1) {
        let _ = writeln!(
            out,
            "rate {}: mean of {} runs (different seeds); ± is the half-width of the 95 % \
             confidence interval (Student's t over the runs); ok and fail are summed",
            name(r),
            r.repeats
        );
    }
    for (r, stopped) in reports
        .iter()
        .filter_map(|r| Some((r, r.stopped_early.as_ref()?)))
    {
        let _ = writeln!(out, "rate {}: {}", name(r), stopped.describe());
    }
    for (r, why) in reports
        .iter()
        .filter_map(|r| Some((r, r.cache_warning.as_ref()?)))
    {
        let _ = writeln!(out, "WARNING: rate {}: {why}", name(r));
    }
    for r in reports.iter().filter(|r| r.client_behind) {
        let _ = writeln!(
            out,
            "WARNING: rate {}: dispatch lag p99 {} ms is above {} ms: the client fell behind its schedule, \
             so these figures describe the client, not the server (lower the rate, use --shard, or a bigger machine)",
            name(r),
            ms(r.dispatch_lag_ms.p99),
            r.dispatch_lag_warn_ms
        );
    }
    let gate_names: Vec<&str> = reports
        .first()
        .map(|r| r.gates.iter().map(|g| g.gate.as_str()).collect())
        .unwrap_or_default();
    for (i, gate_name) in gate_names.iter().enumerate() {
        let mut verdicts = Vec::new();
        for r in reports {
            if let Some(g) = r.gates.get(i) {
                let observed = match g.observed {
                    Some(v) if g.unit.is_empty() => format!("{v:.3}"),
                    Some(v) => format!("{} {}", num(v), g.unit),
                    None => "no data".to_string(),
                };
                verdicts.push(format!(
                    "{} at {} ({observed})",
                    if g.passed { "pass" } else { "FAIL" },
                    name(r)
                ));
            }
        }
        let _ = writeln!(out, "gate {gate_name}: {}", verdicts.join("; "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::Rate;
    use crate::report::test_support::sample_report;

    fn sweep() -> Vec<RateReport> {
        let mut rs: Vec<RateReport> = [2.0, 8.0, f64::INFINITY]
            .into_iter()
            .map(sample_report)
            .collect();
        rs[2].rate = Rate::INFINITE;
        rs[2].offered_rate = None;
        rs[2].achieved_rate = 40.0;
        rs[2].output_throughput = 5120.0;
        rs[2].total_token_throughput = 46080.0;
        rs[2].goodput = 4.0;
        rs[2].dispatch_lag_ms.p99 = Some(12.5);
        rs[2].client_behind = true;
        let gate: crate::report::gate::Gate = "ttft-p99<=110ms".parse().unwrap();
        for r in &mut rs {
            r.gates = vec![gate.check(r)];
        }
        rs[0].ttft_ms.percentiles[2].1 = Some(105.0);
        rs[0].gates = vec![gate.check(&rs[0])];
        rs
    }

    #[test]
    fn repeat_rows_show_half_widths() {
        let mut r = sample_report(8.0);
        r.repeats = 5;
        r.ci95.insert("ttft_ms.p99".into(), [110.0, 130.0]);
        r.ci95.insert("output_throughput".into(), [990.0, 1010.0]);
        let out = render(&[r], &[Latency::Ttft], &[99.0]);
        assert!(out.contains("120±10.0"), "{out}");
        assert!(out.contains("±10.00"), "{out}");
        assert!(out.contains("rate 8: mean of 5 runs"), "{out}");
    }

    #[test]
    fn a_hit_ratio_sweep_names_its_rows_and_one_ratio_changes_nothing() {
        let at = |h: f64| {
            let mut r = sample_report(8.0);
            r.prefix_hit_ratio = Some(h);
            r.cache_hit_share = Some(h * 0.75);
            r
        };
        let out = render(&[at(0.0), at(0.5)], &[Latency::Ttft], &[99.0]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[1].starts_with("rate  hit ratio  offered"), "{out}");
        assert!(lines[3].starts_with("   8          0 "), "{out}");
        assert!(lines[4].starts_with("   8        0.5 "), "{out}");
        assert!(
            out.contains("rate 8 (hit ratio 0.5): cache-hit share 37.5 %"),
            "{out}"
        );
        assert!(
            out.contains("rate 8 (hit ratio 0): 2 of 100 requests failed"),
            "{out}"
        );
        let mut plain = at(0.5);
        plain.prefix_hit_ratio = None;
        assert_eq!(
            render(&[at(0.5)], &[Latency::Ttft], &[99.0]),
            render(&[plain], &[Latency::Ttft], &[99.0])
        );
    }

    #[test]
    fn sweep_table() {
        let out = render(
            &sweep(),
            &Latency::vllm_metrics().collect::<Vec<_>>(),
            &[50.0, 90.0, 99.0],
        );
        insta::assert_snapshot!(out);
    }

    #[test]
    fn narrow_table_with_one_metric() {
        let out = render(&sweep()[..1], &[Latency::Ttft], &[99.9]);
        insta::assert_snapshot!(out);
    }

    #[test]
    fn rows_are_aligned() {
        let out = render(
            &sweep(),
            &Latency::vllm_metrics().collect::<Vec<_>>(),
            &[50.0, 99.0],
        );
        let lines: Vec<&str> = out.lines().skip(1).take(5).collect();
        let bars = |l: &str| -> Vec<usize> { l.match_indices('|').map(|(i, _)| i).collect() };
        let first = bars(lines[0]);
        assert_eq!(first.len(), 7);
        for l in &lines[2..] {
            assert_eq!(bars(l), first, "{out}");
        }
    }
}
