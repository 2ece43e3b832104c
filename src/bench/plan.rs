//! The logic of `bench` above one run: which rates run in which order (a fixed list,
//! once per prefix hit ratio, or the max-rate search), which rows the table shows, and
//! what the results mean for the exit code. It calls an [`Executor`] to run one rate, so it is tested with a
//! fake one (exact numbers, no server); `run.rs` holds the real executor over the
//! runner and the client.

use crate::bench::options::RatePlan;
use crate::bench::search::{self, SearchResult};
use crate::exit;
use crate::rate::Rate;
use crate::record::RequestRecord;
use crate::report::gate::{self, GateResult};
use crate::report::stop::StoppedEarly;
use crate::report::{RateReport, hit_ratios_vary};

/// What one run at one rate produced.
#[derive(Debug, Clone)]
pub struct RateRun {
    pub report: RateReport,
    /// Its counted records, in id order (empty unless the caller keeps them).
    pub records: Vec<RequestRecord>,
}

/// Runs the load at one rate. The bench logic asks nothing else of a run.
#[allow(async_fn_in_trait)] // Used generically within the crate, never as `dyn`.
pub trait Executor {
    /// One run at `rate` (the rate of the whole run, all shards together), a share
    /// `hit_ratio` of its requests starting with the shared prefix when given.
    async fn run_rate(&mut self, rate: Rate, hit_ratio: Option<f64>) -> anyhow::Result<RateRun>;

    /// Whether the user interrupted the bench: no further rate is started.
    fn interrupted(&self) -> bool;
}

/// Every run of a bench, in the order they ran, and the search's result when the plan
/// was a search.
#[derive(Debug, Clone)]
pub struct PlanResult {
    pub runs: Vec<RateRun>,
    pub search: Option<SearchResult>,
}

/// Runs the plan: each fixed rate in the order given, once per prefix hit ratio in the
/// order given (`hit_ratios`, empty without `--prefix-hit-ratio`), stopping early when
/// interrupted or a run stopped; or the max-rate search over `gates` (their texts, for
/// messages) at the one ratio there may be.
pub async fn run_plan<E: Executor>(
    plan: &RatePlan,
    hit_ratios: &[f64],
    gates: &str,
    exec: &mut E,
) -> anyhow::Result<PlanResult> {
    match plan {
        RatePlan::Fixed(rates) => run_fixed(rates, hit_ratios, exec).await,
        &RatePlan::FindMax {
            start,
            precision,
            limit,
        } => {
            let hit_ratio = hit_ratios.first().copied();
            eprintln!(
                "searching for the highest rate passing {gates} (precision {precision}, limit {limit} req/s)"
            );
            let mut runs = Vec::new();
            let (runs_ref, stopped) = (&mut runs, &mut false);
            let result = search::find_max_rate(start.per_second(), precision, limit, async |r| {
                let rate = Rate::new(r).unwrap_or(start);
                if exec.interrupted() {
                    anyhow::bail!("interrupted");
                }
                let run = exec.run_rate(rate, hit_ratio).await?;
                if run.report.stopped_early.is_some() {
                    // Ends the search as it ends a sweep; the verdict names the run.
                    runs_ref.push(run);
                    *stopped = true;
                    anyhow::bail!("stopped early");
                }
                let passed = run.report.gates_passed();
                eprintln!(
                    "probe {rate} req/s: {}",
                    if passed { "pass" } else { "FAIL" }
                );
                runs_ref.push(run);
                Ok(passed)
            })
            .await;
            let search = match result {
                Err(_) if *stopped => None,
                result => Some(result?),
            };
            Ok(PlanResult { runs, search })
        }
    }
}

/// The fixed rates, once per hit ratio (once without any).
async fn run_fixed<E: Executor>(
    rates: &[Rate],
    hit_ratios: &[f64],
    exec: &mut E,
) -> anyhow::Result<PlanResult> {
    let passes: Vec<Option<f64>> = if hit_ratios.is_empty() {
        vec![None]
    } else {
        hit_ratios.iter().copied().map(Some).collect()
    };
    let mut runs = Vec::new();
    'plan: for hit_ratio in passes {
        for &rate in rates {
            let run = exec.run_rate(rate, hit_ratio).await?;
            let stopped = run.report.stopped_early.is_some();
            runs.push(run);
            // A run stopped by --max-error-rate ends the whole plan: further rates and
            // ratios of a failing endpoint only cost more.
            if stopped || exec.interrupted() {
                break 'plan;
            }
        }
    }
    Ok(PlanResult { runs, search: None })
}

/// How a bench ended, for its last message and its exit code.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Ctrl-C: the figures cover only part of the plan.
    Interrupted,
    /// The search found the highest passing rate below a failing one.
    MaxRate {
        max: f64,
        first_failing: Option<f64>,
    },
    /// The search's limit itself passed.
    AtLimit { max: f64 },
    /// The search found no passing rate down to its floor.
    NothingPasses,
    /// `--max-error-rate` stopped a run (and with it the sweep or the search).
    StoppedEarly { rate: String, stopped: StoppedEarly },
    /// A gate failed at a fixed rate (the first one, in run order).
    GateFailed { rate: String, gate: GateResult },
    /// Every gate passed at every rate (or there were none).
    Passed,
}

impl Verdict {
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            Verdict::Interrupted => exit::FAILURE,
            Verdict::MaxRate { .. } | Verdict::AtLimit { .. } | Verdict::Passed => exit::OK,
            Verdict::NothingPasses | Verdict::GateFailed { .. } | Verdict::StoppedEarly { .. } => {
                exit::SLO_FAILED
            }
        }
    }

    /// Prints the closing message: results on stdout, failures on stderr.
    pub fn print(&self, gates: &str) {
        match self {
            Verdict::Interrupted => {
                eprintln!("Error: interrupted; the figures above cover what was measured");
            }
            Verdict::MaxRate { max, first_failing } => println!(
                "max rate: {max} req/s passes every gate; {} req/s fails",
                first_failing.map_or("-".to_string(), |f| f.to_string())
            ),
            Verdict::AtLimit { max } => println!(
                "max rate: at least {max} req/s (the --max-rate-limit); every probe passed"
            ),
            Verdict::NothingPasses => {
                eprintln!("no rate down to the search floor passes {gates}");
            }
            Verdict::GateFailed { rate, gate: g } => {
                let observed = g.observed.map_or("no data".to_string(), |v| {
                    format!("{v:.3} {}", g.unit).trim_end().to_string()
                });
                eprintln!(
                    "SLO gate failed at rate {rate}: {} (observed {observed})",
                    g.gate
                );
            }
            Verdict::StoppedEarly { rate, stopped } => {
                eprintln!(
                    "Error: rate {rate}: {}; the rest of the run and of the plan was not sent",
                    stopped.describe()
                );
            }
            Verdict::Passed => {}
        }
    }
}

impl PlanResult {
    /// The reports as table and plot rows: in run order for a fixed list, in rate
    /// order for a search (which visits rates out of order), so they read as a curve.
    pub fn rows(&self) -> Vec<RateReport> {
        let mut order: Vec<usize> = (0..self.runs.len()).collect();
        if self.search.is_some() {
            let rate = |i: usize| self.runs[i].report.rate.per_second();
            order.sort_by(|&a, &b| rate(a).total_cmp(&rate(b)));
        }
        order.iter().map(|&i| self.runs[i].report.clone()).collect()
    }

    /// What the results mean; `interrupted` wins over everything else.
    pub fn verdict(&self, interrupted: bool) -> Verdict {
        if interrupted {
            return Verdict::Interrupted;
        }
        let reports: Vec<RateReport> = self.runs.iter().map(|r| r.report.clone()).collect();
        let vary = hit_ratios_vary(&reports);
        if let Some(r) = reports.iter().find(|r| r.stopped_early.is_some())
            && let Some(stopped) = r.stopped_early
        {
            return Verdict::StoppedEarly {
                rate: r.row_name(vary),
                stopped,
            };
        }
        if let Some(s) = &self.search {
            return match (s.max_rate, s.hit_limit) {
                (Some(max), false) => Verdict::MaxRate {
                    max,
                    first_failing: s.first_failing,
                },
                (Some(max), true) => Verdict::AtLimit { max },
                (None, _) => Verdict::NothingPasses,
            };
        }
        let verdicts: Vec<(String, Vec<GateResult>)> = reports
            .iter()
            .map(|r| (r.row_name(vary), r.gates.clone()))
            .collect();
        match gate::first_failure(&verdicts) {
            Some((rate, gate)) => Verdict::GateFailed { rate, gate },
            None => Verdict::Passed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::options::Precision;
    use crate::report::gate::Gate;
    use crate::report::test_support::sample_report;

    /// A server whose goodput ratio is 0.9 up to `knee` req/s and 0.5 above it: each
    /// run is the sample report at that rate, gates checked.
    struct Fake {
        knee: f64,
        gates: Vec<Gate>,
        ran: Vec<f64>,
        /// The hit ratio of each run.
        hit_ratios: Vec<Option<f64>>,
        /// Interrupt after this many runs.
        interrupt_after: Option<usize>,
        /// Runs above this rate stop early (`--max-error-rate`).
        stops_above: f64,
    }

    impl Fake {
        fn new(knee: f64, gates: &[&str]) -> Fake {
            Fake {
                knee,
                gates: gates.iter().map(|g| g.parse().unwrap()).collect(),
                ran: Vec::new(),
                hit_ratios: Vec::new(),
                interrupt_after: None,
                stops_above: f64::INFINITY,
            }
        }
    }

    impl Executor for Fake {
        async fn run_rate(
            &mut self,
            rate: Rate,
            hit_ratio: Option<f64>,
        ) -> anyhow::Result<RateRun> {
            self.ran.push(rate.per_second());
            self.hit_ratios.push(hit_ratio);
            let mut report = sample_report(rate.per_second());
            report.prefix_hit_ratio = hit_ratio;
            if rate.per_second() > self.knee {
                report.goodput_ratio = Some(0.5);
            }
            report.gates = self.gates.iter().map(|g| g.check(&report)).collect();
            if rate.per_second() > self.stops_above {
                report.stopped_early = crate::report::stop::MaxErrorRate(0.1).check(10, 2);
            }
            Ok(RateRun {
                report,
                records: Vec::new(),
            })
        }

        fn interrupted(&self) -> bool {
            self.interrupt_after.is_some_and(|n| self.ran.len() >= n)
        }
    }

    fn fixed(rates: &[f64]) -> RatePlan {
        RatePlan::Fixed(rates.iter().map(|&r| Rate::new(r).unwrap()).collect())
    }

    #[tokio::test]
    async fn a_sweep_runs_its_rates_in_the_order_given() {
        let mut fake = Fake::new(100.0, &["goodput-ratio>=0.8"]);
        let r = run_plan(&fixed(&[8.0, 2.0, 32.0]), &[], "", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran, vec![8.0, 2.0, 32.0]);
        let rows: Vec<f64> = r.rows().iter().map(|r| r.rate.per_second()).collect();
        assert_eq!(rows, vec![8.0, 2.0, 32.0]);
        assert_eq!(r.verdict(false), Verdict::Passed);
        assert_eq!(r.verdict(false).exit_code(), 0);
    }

    #[tokio::test]
    async fn each_hit_ratio_runs_the_rates_in_the_order_given() {
        let mut fake = Fake::new(100.0, &["goodput-ratio>=0.8"]);
        let r = run_plan(&fixed(&[8.0, 2.0]), &[0.5, 0.0, 1.0], "", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran, vec![8.0, 2.0, 8.0, 2.0, 8.0, 2.0]);
        let h = |v: f64| Some(v);
        assert_eq!(
            fake.hit_ratios,
            vec![h(0.5), h(0.5), h(0.0), h(0.0), h(1.0), h(1.0)]
        );
        let rows: Vec<(f64, Option<f64>)> = r
            .rows()
            .iter()
            .map(|r| (r.rate.per_second(), r.prefix_hit_ratio))
            .collect();
        assert_eq!(rows[2], (8.0, h(0.0)));
        assert_eq!(r.verdict(false), Verdict::Passed);
        // Without the flag: one pass, no ratio.
        let mut fake = Fake::new(100.0, &[]);
        run_plan(&fixed(&[8.0]), &[], "", &mut fake).await.unwrap();
        assert_eq!(fake.hit_ratios, vec![None]);
    }

    #[tokio::test]
    async fn a_hit_ratio_sweep_stops_whole_and_names_its_failing_row() {
        // A stopped run ends the later ratios too.
        let mut fake = Fake::new(100.0, &["goodput-ratio>=0.8"]);
        fake.stops_above = 10.0;
        let r = run_plan(&fixed(&[4.0, 16.0]), &[0.0, 1.0], "", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran, vec![4.0, 16.0]);
        let Verdict::StoppedEarly { rate, .. } = r.verdict(false) else {
            panic!("{:?}", r.verdict(false));
        };
        // Only one ratio ran: the rows, and so their names, do not differ in it.
        assert_eq!(rate, "16");
        // So does an interrupt.
        let mut fake = Fake::new(100.0, &[]);
        fake.interrupt_after = Some(1);
        run_plan(&fixed(&[4.0]), &[0.0, 0.5, 1.0], "", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran, vec![4.0]);
        // Gates apply to every row; the first failing one is named by rate and ratio.
        let mut fake = Fake::new(10.0, &["goodput-ratio>=0.8"]);
        let r = run_plan(&fixed(&[4.0, 16.0]), &[0.25, 0.75], "", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran.len(), 4);
        let Verdict::GateFailed { rate, .. } = r.verdict(false) else {
            panic!("{:?}", r.verdict(false));
        };
        assert_eq!(rate, "16 (hit ratio 0.25)");
    }

    #[tokio::test]
    async fn the_search_runs_at_its_one_hit_ratio() {
        let mut fake = Fake::new(3.0, &["goodput-ratio>=0.8"]);
        let plan = RatePlan::FindMax {
            start: Rate::new(1.0).unwrap(),
            precision: Precision::PerSecond(1.0),
            limit: 1024.0,
        };
        run_plan(&plan, &[0.5], "goodput-ratio>=0.8", &mut fake)
            .await
            .unwrap();
        assert!(fake.hit_ratios.iter().all(|h| *h == Some(0.5)));
    }

    #[tokio::test]
    async fn a_run_stopped_early_ends_the_sweep_and_the_search_and_exits_3() {
        let mut fake = Fake::new(100.0, &["goodput-ratio>=0.8"]);
        fake.stops_above = 10.0;
        let r = run_plan(&fixed(&[4.0, 16.0, 64.0]), &[], "", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran, vec![4.0, 16.0]);
        let v = r.verdict(false);
        let Verdict::StoppedEarly { rate, stopped } = &v else {
            panic!("{v:?}");
        };
        assert_eq!(
            (rate.as_str(), stopped.requests, stopped.failed),
            ("16", 10, 2)
        );
        assert_eq!(v.exit_code(), exit::SLO_FAILED);
        // An interrupt still wins.
        assert_eq!(r.verdict(true), Verdict::Interrupted);

        let mut fake = Fake::new(100.0, &["goodput-ratio>=0.8"]);
        fake.stops_above = 10.0;
        let plan = RatePlan::FindMax {
            start: Rate::new(4.0).unwrap(),
            precision: Precision::PerSecond(1.0),
            limit: 1000.0,
        };
        let r = run_plan(&plan, &[], "goodput-ratio>=0.8", &mut fake)
            .await
            .unwrap();
        // The search doubles from 4 and ends at the first run that stopped.
        assert_eq!(fake.ran, vec![4.0, 8.0, 16.0]);
        assert!(r.search.is_none());
        assert!(matches!(r.verdict(false), Verdict::StoppedEarly { .. }));
    }

    #[tokio::test]
    async fn a_failing_gate_exits_3_naming_the_first_failing_rate() {
        let mut fake = Fake::new(10.0, &["goodput-ratio>=0.8"]);
        let r = run_plan(&fixed(&[4.0, 16.0, 64.0]), &[], "", &mut fake)
            .await
            .unwrap();
        let v = r.verdict(false);
        let Verdict::GateFailed { rate, gate } = &v else {
            panic!("{v:?}");
        };
        assert_eq!(rate, "16");
        assert_eq!(gate.gate, "goodput-ratio>=0.8");
        assert_eq!(gate.observed, Some(0.5));
        assert_eq!(v.exit_code(), exit::SLO_FAILED);
        assert_eq!(v.exit_code(), 3);
    }

    #[tokio::test]
    async fn an_interrupt_stops_the_sweep_and_exits_1() {
        let mut fake = Fake::new(100.0, &[]);
        fake.interrupt_after = Some(2);
        let r = run_plan(&fixed(&[1.0, 2.0, 4.0, 8.0]), &[], "", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran, vec![1.0, 2.0]);
        assert_eq!(r.verdict(true), Verdict::Interrupted);
        assert_eq!(r.verdict(true).exit_code(), exit::FAILURE);
    }

    #[tokio::test]
    async fn the_search_converges_on_the_knee_and_rows_are_in_rate_order() {
        let mut fake = Fake::new(13.7, &["goodput-ratio>=0.8"]);
        let plan = RatePlan::FindMax {
            start: Rate::new(1.0).unwrap(),
            precision: Precision::PerSecond(0.25),
            limit: 1024.0,
        };
        let r = run_plan(&plan, &[], "goodput-ratio>=0.8", &mut fake)
            .await
            .unwrap();
        assert_eq!(
            fake.ran,
            vec![1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 14.0, 13.0, 13.5, 13.75]
        );
        assert_eq!(
            r.verdict(false),
            Verdict::MaxRate {
                max: 13.5,
                first_failing: Some(13.75)
            }
        );
        assert_eq!(r.verdict(false).exit_code(), 0);
        let rows: Vec<f64> = r.rows().iter().map(|r| r.rate.per_second()).collect();
        assert_eq!(
            rows,
            vec![1.0, 2.0, 4.0, 8.0, 12.0, 13.0, 13.5, 13.75, 14.0, 16.0]
        );
    }

    #[tokio::test]
    async fn a_search_with_no_passing_rate_exits_3() {
        let mut fake = Fake::new(0.1, &["goodput-ratio>=0.8"]);
        let plan = RatePlan::FindMax {
            start: Rate::new(8.0).unwrap(),
            precision: Precision::PerSecond(0.5),
            limit: 1024.0,
        };
        let r = run_plan(&plan, &[], "goodput-ratio>=0.8", &mut fake)
            .await
            .unwrap();
        assert_eq!(fake.ran, vec![8.0, 4.0, 2.0, 1.0, 0.5]);
        assert_eq!(r.verdict(false), Verdict::NothingPasses);
        assert_eq!(r.verdict(false).exit_code(), exit::SLO_FAILED);
    }

    #[tokio::test]
    async fn a_search_that_passes_the_limit_says_so() {
        let mut fake = Fake::new(1e9, &["goodput-ratio>=0.8"]);
        let plan = RatePlan::FindMax {
            start: Rate::new(1.0).unwrap(),
            precision: Precision::PerSecond(0.5),
            limit: 10.0,
        };
        let r = run_plan(&plan, &[], "", &mut fake).await.unwrap();
        assert_eq!(fake.ran, vec![1.0, 2.0, 4.0, 8.0, 10.0]);
        assert_eq!(r.verdict(false), Verdict::AtLimit { max: 10.0 });
    }

    #[tokio::test]
    async fn an_interrupt_stops_the_search_with_an_error() {
        let mut fake = Fake::new(100.0, &["goodput-ratio>=0.8"]);
        fake.interrupt_after = Some(3);
        let plan = RatePlan::FindMax {
            start: Rate::new(1.0).unwrap(),
            precision: Precision::PerSecond(0.5),
            limit: 1024.0,
        };
        let e = run_plan(&plan, &[], "", &mut fake).await.unwrap_err();
        assert_eq!(e.to_string(), "interrupted");
        assert_eq!(fake.ran, vec![1.0, 2.0, 4.0]);
    }
}
