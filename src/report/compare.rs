//! `report compare BASE NEW`: two `--json-out` files side by side, row by row (a row is
//! a rate, and a prefix hit ratio when the file has one) and figure by figure, with the change and whether it is outside the noise. With repeat
//! runs in both files (their `ci95`), a change is outside the noise when the two 95 %
//! intervals do not overlap; without them there is no noise estimate and every change
//! counts. A regression is a change the wrong way by more than the threshold that is
//! not within the noise. Pure: values in, rows and text out.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::rate::Rate;
use crate::report::figures::{self, Better};

/// The figures compared: what the server is judged by (throughput, goodput and the
/// latencies users feel). Offered rate and dispatch lag are shown but never judged.
pub fn judged(key: &str) -> bool {
    let latency = ["ttft_ms.", "tpot_ms.", "itl_ms.", "e2el_ms."]
        .iter()
        .any(|p| key.starts_with(p));
    latency
        || matches!(
            key,
            "achieved_rate"
                | "output_throughput"
                | "total_token_throughput"
                | "goodput"
                | "goodput_ratio"
                | "energy.energy_per_output_token_joules"
                | "energy.output_tokens_per_joule"
        )
}

/// Whether two runs of a figure differ beyond their noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    /// Both have intervals and they overlap: the change may be noise.
    Within,
    /// Both have intervals and they do not overlap.
    Outside,
    /// At least one side has no interval (a single run).
    Unknown,
}

/// One figure of one rate, base against new.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureChange {
    pub key: String,
    pub base: f64,
    pub new: f64,
    pub base_ci: Option<[f64; 2]>,
    pub new_ci: Option<[f64; 2]>,
    /// (new − base) / base; `None` when base is 0.
    pub change: Option<f64>,
    pub noise: Noise,
    /// Worse by more than the threshold and not within the noise.
    pub regression: bool,
}

/// The comparison of one rate.
#[derive(Debug, Clone, PartialEq)]
pub struct RateComparison {
    /// The rate as written (a number or `"inf"`).
    pub rate: String,
    pub base_repeats: u64,
    pub new_repeats: u64,
    pub figures: Vec<FigureChange>,
}

/// Rates of one file without a match in the other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    pub rates: Vec<RateComparison>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
}

impl Comparison {
    pub fn regressions(&self) -> impl Iterator<Item = (&str, &FigureChange)> {
        self.rates.iter().flat_map(|r| {
            r.figures
                .iter()
                .filter(|f| f.regression)
                .map(|f| (r.rate.as_str(), f))
        })
    }
}

fn rate_key(line: &Value) -> String {
    match &line["rate"] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n
            .as_f64()
            .map_or(n.to_string(), |v| Rate::as_written(v).to_string()),
        other => other.to_string(),
    }
}

/// A row's key: its rate as written, with its prefix hit ratio when it has one (files
/// written before the ratio was part of the key carry it in `inputs` only).
fn row_key(line: &Value) -> String {
    let rate = rate_key(line);
    let hit = line
        .get("prefix_hit_ratio")
        .and_then(Value::as_f64)
        .or_else(|| line["inputs"]["prefix_hit_ratio"].as_f64());
    match (hit, rate.parse::<Rate>()) {
        (Some(h), Ok(r)) => crate::report::row_name(r, Some(h), true),
        _ => rate,
    }
}

fn intervals(line: &Value) -> BTreeMap<String, [f64; 2]> {
    let mut out = BTreeMap::new();
    if let Some(Value::Object(ci)) = line.get("ci95") {
        for (k, v) in ci {
            if let (Some(lo), Some(hi)) = (v[0].as_f64(), v[1].as_f64()) {
                out.insert(k.clone(), [lo, hi]);
            }
        }
    }
    out
}

/// Compares the lines of two files; rows are matched by `rate` and prefix hit ratio
/// ([`row_key`]; the last line of a row wins, as a re-run replaces an earlier one). `threshold` is the relative change that
/// counts as a regression (0.05 = 5 %).
pub fn compare(base: &[Value], new: &[Value], threshold: f64) -> Comparison {
    let by_rate = |lines: &[Value]| -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = Vec::new();
        for l in lines {
            let k = row_key(l);
            out.retain(|(r, _)| *r != k);
            out.push((k, l.clone()));
        }
        out
    };
    let (base, new) = (by_rate(base), by_rate(new));
    let mut c = Comparison::default();
    for (rate, b) in &base {
        let Some((_, n)) = new.iter().find(|(r, _)| r == rate) else {
            c.only_in_base.push(rate.clone());
            continue;
        };
        c.rates.push(compare_rate(rate, b, n, threshold));
    }
    c.only_in_new = new
        .iter()
        .filter(|(r, _)| !base.iter().any(|(b, _)| b == r))
        .map(|(r, _)| r.clone())
        .collect();
    c
}

fn compare_rate(rate: &str, b: &Value, n: &Value, threshold: f64) -> RateComparison {
    let (bf, nf) = (figures::of_json(b), figures::of_json(n));
    let (bci, nci) = (intervals(b), intervals(n));
    let mut out = Vec::new();
    for (key, &base) in &bf {
        let Some(&new) = nf.get(key) else { continue };
        let (base_ci, new_ci) = (bci.get(key).copied(), nci.get(key).copied());
        let noise = match (base_ci, new_ci) {
            (Some([bl, bh]), Some([nl, nh])) if nl > bh || nh < bl => Noise::Outside,
            (Some(_), Some(_)) => Noise::Within,
            _ => Noise::Unknown,
        };
        let change = (base != 0.0).then(|| (new - base) / base.abs());
        let worse = match figures::better(key) {
            Better::Lower => change.is_some_and(|c| c > threshold),
            Better::Higher => change.is_some_and(|c| c < -threshold),
            Better::Neither => false,
        };
        out.push(FigureChange {
            key: key.clone(),
            base,
            new,
            base_ci,
            new_ci,
            change,
            noise,
            regression: worse && judged(key) && noise != Noise::Within,
        });
    }
    RateComparison {
        rate: rate.to_string(),
        base_repeats: b["repeats"].as_u64().unwrap_or(1),
        new_repeats: n["repeats"].as_u64().unwrap_or(1),
        figures: out,
    }
}

/// A value with its interval's half-width when it has one.
fn cell(v: f64, ci: Option<[f64; 2]>) -> String {
    let num = |x: f64| {
        if x.abs() >= 100.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.3}")
        }
    };
    match ci {
        Some([lo, hi]) => format!("{} ± {}", num(v), num((hi - lo) / 2.0)),
        None => num(v),
    }
}

/// The comparison as text: one table per rate, judged figures first.
pub fn render(c: &Comparison, threshold: f64) -> String {
    let mut out = String::new();
    for r in &c.rates {
        let _ = writeln!(
            out,
            "rate {}: base {} run{}, new {} run{}",
            r.rate,
            r.base_repeats,
            if r.base_repeats == 1 { "" } else { "s" },
            r.new_repeats,
            if r.new_repeats == 1 { "" } else { "s" }
        );
        let rows: Vec<[String; 6]> = r
            .figures
            .iter()
            .filter(|f| judged(&f.key) || figures::better(&f.key) == Better::Neither)
            .map(|f| {
                [
                    f.key.clone(),
                    cell(f.base, f.base_ci),
                    cell(f.new, f.new_ci),
                    f.change
                        .map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)),
                    match f.noise {
                        Noise::Within => "within".into(),
                        Noise::Outside => "outside".into(),
                        Noise::Unknown => "-".into(),
                    },
                    if f.regression {
                        "REGRESSION".into()
                    } else {
                        String::new()
                    },
                ]
            })
            .collect();
        let head = ["figure", "base", "new", "change", "noise", ""].map(String::from);
        let mut w = [0usize; 6];
        for row in rows.iter().chain(std::iter::once(&head)) {
            for (i, c) in row.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        for row in std::iter::once(&head).chain(&rows) {
            let line = format!(
                "  {:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {:>w4$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2],
                w3 = w[3],
                w4 = w[4]
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    for rate in &c.only_in_base {
        let _ = writeln!(out, "rate {rate}: only in the base file");
    }
    for rate in &c.only_in_new {
        let _ = writeln!(out, "rate {rate}: only in the new file");
    }
    let n = c.regressions().count();
    let _ = writeln!(
        out,
        "{n} regression{} beyond {}% (judged: throughput, goodput, TTFT/TPOT/ITL/E2E)",
        if n == 1 { "" } else { "s" },
        threshold * 100.0
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(rate: f64, ttft_p99: f64, tput: f64) -> Value {
        json!({
            "rate": rate,
            "achieved_rate": 8.0,
            "output_throughput": tput,
            "offered_rate": 8.1,
            "ttft_ms": {"count": 100, "mean": 40.0, "std": 1.0, "p50": 39.0, "p99": ttft_p99},
            "dispatch_lag_ms": {"p50": 0.1, "p99": 0.3, "max": 0.9}
        })
    }

    #[test]
    fn a_slowdown_beyond_the_threshold_is_a_regression() {
        let base = [line(8.0, 50.0, 400.0)];
        let new = [line(8.0, 60.0, 399.0)];
        let c = compare(&base, &new, 0.05);
        let regs: Vec<(&str, &str)> = c.regressions().map(|(r, f)| (r, f.key.as_str())).collect();
        assert_eq!(regs, vec![("8", "ttft_ms.p99")]);
        let f = &c.rates[0]
            .figures
            .iter()
            .find(|f| f.key == "ttft_ms.p99")
            .unwrap();
        assert_eq!(f.change, Some(0.2));
        assert_eq!(f.noise, Noise::Unknown);
        // Throughput 0.25 % lower: within the threshold.
        let t = c.rates[0]
            .figures
            .iter()
            .find(|f| f.key == "output_throughput")
            .unwrap();
        assert!(!t.regression);
        let text = render(&c, 0.05);
        assert!(text.contains("ttft_ms.p99"), "{text}");
        assert!(
            text.contains("+20.0%") && text.contains("REGRESSION"),
            "{text}"
        );
        assert!(text.ends_with(
            "1 regression beyond 5% (judged: throughput, goodput, TTFT/TPOT/ITL/E2E)\n"
        ));
        // The same file against itself: nothing changes.
        assert_eq!(compare(&base, &base, 0.05).regressions().count(), 0);
    }

    #[test]
    fn improvements_and_client_figures_are_never_regressions() {
        let mut better = line(8.0, 30.0, 500.0);
        better["dispatch_lag_ms"]["p99"] = json!(5.0);
        let c = compare(&[line(8.0, 50.0, 400.0)], &[better], 0.05);
        assert_eq!(c.regressions().count(), 0);
    }

    #[test]
    fn overlapping_intervals_are_noise_and_separate_ones_are_not() {
        let with_ci = |p99: f64, lo: f64, hi: f64| {
            let mut l = line(8.0, p99, 400.0);
            l["repeats"] = json!(5);
            l["ci95"] = json!({"ttft_ms.p99": [lo, hi]});
            l
        };
        // +10 % but the intervals overlap: within the noise.
        let c = compare(
            &[with_ci(50.0, 45.0, 56.0)],
            &[with_ci(55.0, 50.0, 60.0)],
            0.05,
        );
        let f = c.rates[0]
            .figures
            .iter()
            .find(|f| f.key == "ttft_ms.p99")
            .unwrap();
        assert_eq!(f.noise, Noise::Within);
        assert!(!f.regression);
        assert_eq!(c.rates[0].base_repeats, 5);
        // +10 % with tight intervals: outside the noise, a regression.
        let c = compare(
            &[with_ci(50.0, 49.0, 51.0)],
            &[with_ci(55.0, 54.0, 56.0)],
            0.05,
        );
        let f = c.rates[0]
            .figures
            .iter()
            .find(|f| f.key == "ttft_ms.p99")
            .unwrap();
        assert_eq!((f.noise, f.regression), (Noise::Outside, true));
        assert!(render(&c, 0.05).contains("50.000 ± 1.000"));
    }

    #[test]
    fn rows_are_matched_by_rate_and_hit_ratio() {
        let at = |hit: f64, p99: f64| {
            let mut l = line(8.0, p99, 400.0);
            l["prefix_hit_ratio"] = json!(hit);
            l["inputs"] = json!({"prefix_hit_ratio": hit});
            l
        };
        // The same rate at two ratios: each row meets its own, not the other.
        let base = [at(0.0, 80.0), at(1.0, 40.0)];
        let new = [at(1.0, 40.0), at(0.0, 80.0)];
        let c = compare(&base, &new, 0.05);
        let rows: Vec<&str> = c.rates.iter().map(|r| r.rate.as_str()).collect();
        assert_eq!(rows, ["8 (hit ratio 0)", "8 (hit ratio 1)"]);
        assert_eq!(c.regressions().count(), 0);
        assert!(render(&c, 0.05).starts_with("rate 8 (hit ratio 0): base 1 run"));
        // A file written before the top-level key: its inputs say the ratio.
        let mut old = at(1.0, 30.0);
        old.as_object_mut().unwrap().remove("prefix_hit_ratio");
        let c = compare(&[old], &new, 0.05);
        let regs: Vec<(&str, &str)> = c.regressions().map(|(r, f)| (r, f.key.as_str())).collect();
        assert_eq!(regs, [("8 (hit ratio 1)", "ttft_ms.p99")]);
        // A row at a ratio and one without it are different workloads.
        let c = compare(&[line(8.0, 50.0, 400.0)], &[at(0.5, 50.0)], 0.05);
        assert!(c.rates.is_empty());
        assert_eq!(
            (c.only_in_base, c.only_in_new),
            (vec!["8".to_string()], vec!["8 (hit ratio 0.5)".to_string()])
        );
    }

    #[test]
    fn rates_are_matched_and_unmatched_ones_listed() {
        let base = [line(2.0, 50.0, 100.0), line(8.0, 50.0, 400.0)];
        let mut inf = line(0.0, 50.0, 400.0);
        inf["rate"] = json!("inf");
        let new = [line(8.0, 50.0, 400.0), inf];
        let c = compare(&base, &new, 0.05);
        assert_eq!(c.rates.len(), 1);
        assert_eq!(c.only_in_base, vec!["2"]);
        assert_eq!(c.only_in_new, vec!["inf"]);
    }
}
