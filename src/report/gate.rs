//! SLO gates: `--gate goodput-ratio>=0.95`, `--gate ttft-p99<=500ms`. A gate is parsed
//! once (bad syntax is a usage error before any request is sent) and checked against
//! each rate's [`RateReport`]; a failing gate makes `bench` exit with
//! [`crate::exit::SLO_FAILED`].
//!
//! Grammar: `METRIC OP VALUE[UNIT]`, OP one of `<=`, `<`, `>=`, `>`.
//! - ratios `goodput-ratio`, `success-ratio`, `error-ratio`: `0.95` or `95%`;
//! - rates `goodput`, `request-throughput` (req/s), `output-throughput` (tok/s);
//! - latencies `ttft|tpot|itl|e2el` + `-mean` or `-pNN` (e.g. `-p99`, `-p99.9`):
//!   `500`, `500ms`, `0.5s` or `500000us` (a bare number is ms);
//! - golden-set accuracy (`bench --golden`) `golden-accuracy`, and the bounds of its
//!   95 % Wilson interval `golden-accuracy-lower`, `golden-accuracy-upper`: ratios.
//!   `golden-accuracy-upper>=A` is the rule of the LlmprobeGoldenAccuracyDrop alert
//!   (`--min-golden-accuracy A`).
//!
//! A gate whose figure does not exist at a rate (no request succeeded, so there is no
//! TTFT; fewer judged golden answers than the alert needs) fails: a gate passes only
//! on evidence.

use std::fmt;
use std::str::FromStr;

use crate::latency::Latency;
pub use crate::report::GateResult;
use crate::report::RateReport;
use crate::report::figures;

/// Which statistic of a latency distribution a gate reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    Mean,
    Percentile(f64),
}

/// The figure a gate reads from a rate's report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GateMetric {
    GoodputRatio,
    /// Checked answers that failed a check, over checked answers.
    CheckFailureRatio,
    SuccessRatio,
    ErrorRatio,
    /// Good requests per second.
    Goodput,
    /// Completed requests per second.
    RequestThroughput,
    /// Output tokens per second.
    OutputThroughput,
    /// A latency statistic, in ms.
    Latency(Latency, Stat),
    /// The golden-set accuracy, or a bound of its Wilson interval.
    Golden(GoldenFigure),
}

/// Which golden-set figure a gate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoldenFigure {
    Accuracy,
    Lower,
    Upper,
}

impl GateMetric {
    fn unit(self) -> &'static str {
        match self {
            GateMetric::GoodputRatio
            | GateMetric::CheckFailureRatio
            | GateMetric::SuccessRatio
            | GateMetric::ErrorRatio
            | GateMetric::Golden(_) => "",
            GateMetric::Goodput | GateMetric::RequestThroughput => "req/s",
            GateMetric::OutputThroughput => "tok/s",
            GateMetric::Latency(..) => "ms",
        }
    }
}

/// What a gate compares with its threshold (`--gate-on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GateBasis {
    /// The figure (the mean over repeat runs).
    #[default]
    Value,
    /// The pessimistic end of the figure's 95 % interval over repeat runs; the figure
    /// itself when there is no interval (a single run, or the success/error ratio).
    Ci,
}

impl FromStr for GateBasis {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "value" => Ok(GateBasis::Value),
            "ci" => Ok(GateBasis::Ci),
            other => Err(format!("{other:?}: expected value or ci")),
        }
    }
}

/// Comparison of the observed figure with the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Le,
    Lt,
    Ge,
    Gt,
}

impl Cmp {
    fn holds(self, observed: f64, threshold: f64) -> bool {
        match self {
            Cmp::Le => observed <= threshold,
            Cmp::Lt => observed < threshold,
            Cmp::Ge => observed >= threshold,
            Cmp::Gt => observed > threshold,
        }
    }
}

/// One pass/fail condition, checked at every rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The gate as the user wrote it (whitespace removed), for messages and reports.
    pub text: String,
    pub metric: GateMetric,
    pub cmp: Cmp,
    /// In the metric's unit: a fraction for ratios, req/s or tok/s, ms for latencies.
    pub threshold: f64,
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Gate {
    /// The percentile this gate reads, if any (so it is computed even when not shown).
    pub fn percentile(&self) -> Option<f64> {
        match self.metric {
            GateMetric::Latency(_, Stat::Percentile(p)) => Some(p),
            _ => None,
        }
    }

    /// Whether this gate reads a golden-set figure (so the run must ask a golden set).
    pub fn reads_golden(&self) -> bool {
        matches!(self.metric, GateMetric::Golden(_))
    }

    /// The observed figure at one rate.
    pub fn observe(&self, r: &RateReport) -> Option<f64> {
        let ratio = |n: u64| (r.requests > 0).then(|| n as f64 / r.requests as f64);
        match self.metric {
            GateMetric::GoodputRatio => r.goodput_ratio,
            GateMetric::CheckFailureRatio => r.check_failure_ratio,
            GateMetric::SuccessRatio => ratio(r.completed),
            GateMetric::ErrorRatio => super::stop::error_ratio(r.failed, r.requests),
            GateMetric::Goodput => Some(r.goodput),
            GateMetric::RequestThroughput => Some(r.achieved_rate),
            GateMetric::OutputThroughput => Some(r.output_throughput),
            GateMetric::Golden(f) => {
                let g = r.golden.as_ref()?;
                g.gated(match f {
                    GoldenFigure::Accuracy => g.accuracy,
                    GoldenFigure::Lower => g.lower,
                    GoldenFigure::Upper => g.upper,
                })
            }
            GateMetric::Latency(m, stat) => {
                let stats = r.latency_stats(m)?;
                match stat {
                    Stat::Mean => stats.mean,
                    Stat::Percentile(p) => stats.percentile(p),
                }
            }
        }
    }

    /// The name of this gate's figure in a report's `ci95` (`report::figures`); `None`
    /// for the success and error ratios, which repeat runs do not bound, and for the
    /// golden-set figures, whose runs are pooled into one interval of their own.
    pub fn figure_key(&self) -> Option<String> {
        Some(match self.metric {
            GateMetric::GoodputRatio => "goodput_ratio".into(),
            GateMetric::Goodput => "goodput".into(),
            GateMetric::RequestThroughput => "achieved_rate".into(),
            GateMetric::OutputThroughput => "output_throughput".into(),
            GateMetric::Latency(m, Stat::Mean) => figures::latency_key(m, None),
            GateMetric::Latency(m, Stat::Percentile(p)) => figures::latency_key(m, Some(p)),
            GateMetric::SuccessRatio
            | GateMetric::ErrorRatio
            | GateMetric::CheckFailureRatio
            | GateMetric::Golden(_) => {
                return None;
            }
        })
    }

    /// Checks the gate against one rate's report.
    pub fn check(&self, r: &RateReport) -> GateResult {
        self.check_on(r, GateBasis::Value)
    }

    /// Checks the gate on `basis`: with [`GateBasis::Ci`] and an interval for its
    /// figure, the interval's pessimistic end must pass (the upper bound of a
    /// `<=` gate, the lower of a `>=` one).
    pub fn check_on(&self, r: &RateReport, basis: GateBasis) -> GateResult {
        let bound = match basis {
            GateBasis::Value => None,
            GateBasis::Ci => self
                .figure_key()
                .and_then(|k| r.ci95.get(&k))
                .map(|[lo, hi]| match self.cmp {
                    Cmp::Le | Cmp::Lt => *hi,
                    Cmp::Ge | Cmp::Gt => *lo,
                }),
        };
        let observed = bound.or_else(|| self.observe(r)).filter(|v| v.is_finite());
        GateResult {
            gate: self.text.clone(),
            observed,
            threshold: self.threshold,
            unit: self.metric.unit(),
            passed: observed.is_some_and(|v| self.cmp.holds(v, self.threshold)),
        }
    }
}

impl FromStr for Gate {
    type Err = String;

    fn from_str(s: &str) -> Result<Gate, String> {
        let text: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        let (pos, op_len, cmp) = ["<=", ">=", "<", ">"]
            .iter()
            .find_map(|op| {
                text.find(op).map(|i| {
                    let cmp = match *op {
                        "<=" => Cmp::Le,
                        ">=" => Cmp::Ge,
                        "<" => Cmp::Lt,
                        _ => Cmp::Gt,
                    };
                    (i, op.len(), cmp)
                })
            })
            .ok_or_else(|| {
                format!(
                    "{s:?} has no comparison: write METRIC<=VALUE or METRIC>=VALUE, e.g. goodput-ratio>=0.95 or ttft-p99<=500ms"
                )
            })?;
        let (name, value) = (&text[..pos], &text[pos + op_len..]);
        let metric = parse_metric(name).map_err(|e| format!("{s:?}: {e}"))?;
        let threshold = parse_value(metric, value).map_err(|e| format!("{s:?}: {e}"))?;
        Ok(Gate {
            text,
            metric,
            cmp,
            threshold,
        })
    }
}

const METRIC_HELP: &str = "goodput-ratio, check-failure-ratio, success-ratio, error-ratio, goodput, \
request-throughput, output-throughput, golden-accuracy[-lower|-upper], or ttft|tpot|itl|e2el \
followed by -mean or -pNN";

fn parse_metric(name: &str) -> Result<GateMetric, String> {
    let lower = name.to_ascii_lowercase();
    Ok(match lower.as_str() {
        "goodput-ratio" => GateMetric::GoodputRatio,
        "check-failure-ratio" => GateMetric::CheckFailureRatio,
        "success-ratio" => GateMetric::SuccessRatio,
        "error-ratio" => GateMetric::ErrorRatio,
        "goodput" => GateMetric::Goodput,
        "request-throughput" | "throughput" => GateMetric::RequestThroughput,
        "output-throughput" => GateMetric::OutputThroughput,
        "golden-accuracy" => GateMetric::Golden(GoldenFigure::Accuracy),
        "golden-accuracy-lower" => GateMetric::Golden(GoldenFigure::Lower),
        "golden-accuracy-upper" => GateMetric::Golden(GoldenFigure::Upper),
        other => {
            let (m, stat) = other
                .split_once('-')
                .ok_or_else(|| format!("unknown metric {name:?}: expected {METRIC_HELP}"))?;
            let metric: Latency = m
                .parse()
                .map_err(|_| format!("unknown metric {name:?}: expected {METRIC_HELP}"))?;
            let stat = match stat {
                "mean" => Stat::Mean,
                "median" => Stat::Percentile(50.0),
                p => {
                    let v: f64 = p
                        .strip_prefix('p')
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| {
                            format!("{name:?}: the statistic must be mean or pNN (e.g. p99)")
                        })?;
                    if !(v > 0.0 && v <= 100.0) {
                        return Err(format!("{name:?}: percentile {v} is not in (0, 100]"));
                    }
                    Stat::Percentile(v)
                }
            };
            GateMetric::Latency(metric, stat)
        }
    })
}

/// A finite number >= 0 (`v` is the whole value, for messages).
fn number(v: &str, t: &str) -> Result<f64, String> {
    let x: f64 = t.parse().map_err(|_| format!("{v:?} is not a number"))?;
    if !x.is_finite() || x < 0.0 {
        return Err(format!("{v:?} must be a finite number >= 0"));
    }
    Ok(x)
}

/// A ratio in [0, 1], written `0.05` or `5%` (gates and `--max-error-rate`).
pub fn parse_ratio(v: &str) -> Result<f64, String> {
    let x = match v.strip_suffix('%') {
        Some(p) => number(v, p)? / 100.0,
        None => number(v, v)?,
    };
    if x > 1.0 {
        return Err(format!("a ratio is at most 1 (or 100%), got {v:?}"));
    }
    Ok(x)
}

fn parse_value(metric: GateMetric, v: &str) -> Result<f64, String> {
    let number = |t: &str| number(v, t);
    match metric {
        GateMetric::GoodputRatio
        | GateMetric::CheckFailureRatio
        | GateMetric::SuccessRatio
        | GateMetric::ErrorRatio
        | GateMetric::Golden(_) => parse_ratio(v),
        GateMetric::Goodput | GateMetric::RequestThroughput | GateMetric::OutputThroughput => {
            number(v.strip_suffix("/s").unwrap_or(v))
        }
        GateMetric::Latency(..) => {
            // Longest suffix first: "ms" before "s".
            if let Some(t) = v.strip_suffix("ms") {
                number(t)
            } else if let Some(t) = v.strip_suffix("us") {
                Ok(number(t)? / 1000.0)
            } else if let Some(t) = v.strip_suffix('s') {
                Ok(number(t)? * 1000.0)
            } else {
                number(v)
            }
        }
    }
}

/// The first failing gate over a set of per-rate results, for the exit message.
pub fn first_failure(results: &[(String, Vec<GateResult>)]) -> Option<(String, GateResult)> {
    results.iter().find_map(|(rate, gates)| {
        gates
            .iter()
            .find(|g| !g.passed)
            .map(|g| (rate.clone(), g.clone()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::sample_report;

    fn gate(s: &str) -> Gate {
        s.parse().unwrap()
    }

    #[test]
    fn parses_ratios_rates_and_latencies_with_units() {
        let g = gate("goodput-ratio >= 95%");
        assert_eq!(g.text, "goodput-ratio>=95%");
        assert_eq!(g.metric, GateMetric::GoodputRatio);
        assert_eq!(g.cmp, Cmp::Ge);
        assert!((g.threshold - 0.95).abs() < 1e-12);
        assert_eq!(gate("goodput-ratio>=0.9").threshold, 0.9);
        let g = gate("ttft-p99<=0.5s");
        assert_eq!(
            g.metric,
            GateMetric::Latency(Latency::Ttft, Stat::Percentile(99.0))
        );
        assert_eq!(g.threshold, 500.0);
        assert_eq!(gate("tpot-p99.9<40").percentile(), Some(99.9));
        assert_eq!(gate("e2e-mean<=2000ms").threshold, 2000.0);
        assert_eq!(gate("itl-median<=1500us").threshold, 1.5);
        assert_eq!(
            gate("output-throughput>100").metric,
            GateMetric::OutputThroughput
        );
        assert_eq!(gate("goodput>=2/s").threshold, 2.0);
        assert_eq!(
            gate("ttfa-p99<=2s").metric,
            GateMetric::Latency(Latency::Ttfa, Stat::Percentile(99.0))
        );
    }

    #[test]
    fn bad_syntax_is_explained() {
        let e = |s: &str| s.parse::<Gate>().unwrap_err();
        assert!(e("goodput-ratio").contains("no comparison"));
        assert!(e("latency<=5").contains("unknown metric"));
        assert!(e("ttft-p0<=5").contains("(0, 100]"));
        assert!(e("ttft-avg<=5").contains("mean or pNN"));
        assert!(e("goodput-ratio>=1.5").contains("at most 1"));
        assert!(e("ttft-p99<=fast").contains("not a number"));
        assert!(e("ttft-p99<=-3").contains(">= 0"));
    }

    #[test]
    fn checks_against_a_report() {
        let r = sample_report(8.0);
        // sample: 100 requests, 98 completed, 90 good; ttft p99 = 120 ms.
        let ok = gate("goodput-ratio>=0.9").check(&r);
        assert!(ok.passed, "{ok:?}");
        assert_eq!(ok.observed, Some(0.9));
        assert!(!gate("goodput-ratio>0.9").check(&r).passed);
        assert!(gate("error-ratio<=2%").check(&r).passed);
        assert!(!gate("error-ratio<2%").check(&r).passed);
        let t = gate("ttft-p99<=100ms").check(&r);
        assert!(!t.passed);
        assert_eq!(t.observed, Some(120.0));
        assert_eq!(t.unit, "ms");
        // A percentile that was not computed does not exist: the gate fails.
        let missing = gate("ttft-p75<=1000").check(&r);
        assert_eq!(missing.observed, None);
        assert!(!missing.passed);
    }

    #[test]
    fn on_ci_the_pessimistic_end_must_pass() {
        let mut r = sample_report(8.0);
        r.ci95.insert("ttft_ms.p99".into(), [110.0, 130.0]);
        r.ci95.insert("goodput_ratio".into(), [0.85, 0.95]);
        let g = gate("ttft-p99<=125ms");
        assert!(g.check_on(&r, GateBasis::Value).passed);
        let on_ci = g.check_on(&r, GateBasis::Ci);
        assert!(!on_ci.passed);
        assert_eq!(on_ci.observed, Some(130.0));
        let ratio = gate("goodput-ratio>=0.88").check_on(&r, GateBasis::Ci);
        assert_eq!((ratio.passed, ratio.observed), (false, Some(0.85)));
        // No interval for a figure: its value is used.
        let err = gate("error-ratio<=2%").check_on(&r, GateBasis::Ci);
        assert!(err.passed);
        assert!(gate("ttft-mean<=101").check_on(&r, GateBasis::Ci).passed);
        assert_eq!("ci".parse::<GateBasis>(), Ok(GateBasis::Ci));
        assert!("upper".parse::<GateBasis>().is_err());
    }

    #[test]
    fn golden_gates_read_the_accuracy_and_its_interval() {
        let mut r = sample_report(8.0);
        let upper = gate("golden-accuracy-upper>=0.9");
        assert_eq!(upper.metric, GateMetric::Golden(GoldenFigure::Upper));
        assert_eq!(gate("golden-accuracy-lower>=80%").threshold, 0.8);
        assert!(e_golden("golden-accuracy>=1.5").contains("at most 1"));
        // No golden set asked: no figure, so the gate fails.
        assert_eq!(upper.check(&r).observed, None);
        assert!(!upper.check(&r).passed);
        // Too few answers (3 of 5: upper bound 0.88): no figure either, as the alert.
        r.golden = Some(crate::report::golden::GoldenReport::from_counts(3, 5));
        assert_eq!(gate("golden-accuracy-upper>=0.5").check(&r).observed, None);
        r.golden = Some(crate::report::golden::GoldenReport::from_counts(49, 49));
        assert!(!gate("golden-accuracy-upper>=0.5").check(&r).passed);
        r.golden = Some(crate::report::golden::GoldenReport::from_counts(50, 50));
        assert!(gate("golden-accuracy-upper>=0.5").check(&r).passed);
        // 160 of 200: accuracy 0.8, interval [0.739…, 0.849…].
        r.golden = Some(crate::report::golden::GoldenReport::from_counts(160, 200));
        let (lo, hi) = crate::check::accuracy::wilson(160, 200, crate::check::accuracy::Z).unwrap();
        let failed = upper.check(&r);
        assert_eq!(
            (failed.passed, failed.observed, failed.unit),
            (false, Some(hi), "")
        );
        assert!(gate("golden-accuracy-upper>=0.8").check(&r).passed);
        assert_eq!(gate("golden-accuracy>=0.8").check(&r).observed, Some(0.8));
        assert_eq!(
            gate("golden-accuracy-lower>=0.7").check(&r).observed,
            Some(lo)
        );
        // Pooled, never averaged over repeat runs: --gate-on ci reads the same bound.
        assert_eq!(upper.figure_key(), None);
        assert_eq!(upper.check_on(&r, GateBasis::Ci), failed);
    }

    fn e_golden(s: &str) -> String {
        s.parse::<Gate>().unwrap_err()
    }

    #[test]
    fn first_failure_names_rate_and_gate() {
        let r = sample_report(8.0);
        let results = vec![
            ("2".to_string(), vec![gate("goodput-ratio>=0.5").check(&r)]),
            (
                "8".to_string(),
                vec![
                    gate("goodput-ratio>=0.5").check(&r),
                    gate("ttft-p99<=100ms").check(&r),
                ],
            ),
        ];
        let (rate, g) = first_failure(&results).unwrap();
        assert_eq!(rate, "8");
        assert_eq!(g.gate, "ttft-p99<=100ms");
    }
}
