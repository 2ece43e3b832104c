//! `llmprobe report …`: the front end of [`report::merge`](crate::report::merge) and
//! [`report::compare`](crate::report::compare). `merge` checks the flags with the same
//! parsers as `bench` (objectives, metrics, percentiles, gates), merges the `--records`
//! files rate by rate, prints the table and exits like `bench` when a gate fails;
//! `compare` reads two `--json-out` files and exits 3 on a regression when asked to.

use std::process::ExitCode;
use std::time::Duration;

use crate::bench::args::{CompareArgs, MergeArgs, ReportArgs, ReportCommand};
use crate::bench::options::{computed_percentiles, parse_metrics, parse_percentiles, parse_slo};
use crate::exit::{self, UsageError};
use crate::report::gate::{self, Gate};
use crate::report::jsonl::JsonlWriter;
use crate::report::merge::{merged_report, missing_shards, read_groups};
use crate::report::table;
use crate::report::{compare, hit_ratios_vary};

/// `llmprobe report …`.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        ReportCommand::Merge(m) => run_merge(m),
        ReportCommand::Compare(c) => run_compare(c),
    }
}

/// The threshold marked (and failed on with `--fail-on-regression`) by default.
const DEFAULT_REGRESSION: f64 = 0.05;

fn run_compare(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let threshold = match &a.fail_on_regression {
        Some(t) => parse_fraction(t)
            .map_err(|e| UsageError::new(format!("--fail-on-regression {t:?}: {e}")))?,
        None => DEFAULT_REGRESSION,
    };
    let base = read_summaries(&a.base)?;
    let new = read_summaries(&a.new)?;
    let c = compare::compare(&base, &new, threshold);
    if c.rates.is_empty() {
        return Err(UsageError::new(format!(
            "{} and {} have no rate in common",
            a.base.display(),
            a.new.display()
        ))
        .into());
    }
    print!("{}", compare::render(&c, threshold));
    let failed = a.fail_on_regression.is_some() && c.regressions().next().is_some();
    Ok(if failed {
        ExitCode::from(exit::SLO_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `5%` or `0.05` → 0.05, in (0, 1).
fn parse_fraction(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| "expected a percentage (5%) or a fraction (0.05)".to_string())?;
    if !(v > 0.0 && v < 1.0) {
        return Err("must be between 0 and 100%".into());
    }
    Ok(v)
}

/// The lines of a `--json-out` file; a bad line is an error naming FILE:LINE.
fn read_summaries(path: &std::path::Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError::new(format!("cannot read {}: {e}", path.display())))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            UsageError::new(format!(
                "{}:{}: not a --json-out line: {e}",
                path.display(),
                i + 1
            ))
        })?;
        if v.get("rate").is_none() {
            return Err(UsageError::new(format!(
                "{}:{}: not a --json-out line (no \"rate\"; --records files go to `report merge`)",
                path.display(),
                i + 1
            ))
            .into());
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(UsageError::new(format!("{}: no summaries", path.display())).into());
    }
    Ok(out)
}

fn run_merge(a: &MergeArgs) -> anyhow::Result<ExitCode> {
    let slo = parse_slo(&a.slo_flags(), &a.goodput)?;
    let metrics = parse_metrics(&a.percentile_metrics)?;
    let percentiles = parse_percentiles(&a.metric_percentiles)?;
    let gates = a
        .gates
        .iter()
        .map(|g| {
            g.parse::<Gate>()
                .map_err(|e| UsageError::new(format!("--gate: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !(a.dispatch_lag_warn_ms >= 0.0 && a.dispatch_lag_warn_ms.is_finite()) {
        return Err(
            UsageError::new("--dispatch-lag-warn-ms must be a finite number of ms >= 0").into(),
        );
    }
    let lag_warn = Duration::from_secs_f64(a.dispatch_lag_warn_ms / 1000.0);
    let groups = read_groups(&a.files)?;
    if groups.is_empty() {
        return Err(UsageError::new("no records in the given files").into());
    }
    let mut out = a.json_out.as_deref().map(JsonlWriter::create).transpose()?;
    let reports: Vec<_> = groups
        .iter()
        .map(|g| {
            let percentiles = computed_percentiles(&percentiles, &gates);
            merged_report(g, slo, percentiles, gates.clone(), lag_warn)
        })
        .collect();
    let vary = hit_ratios_vary(&reports);
    for (g, r) in groups.iter().zip(&reports) {
        for w in missing_shards(g) {
            eprintln!("WARNING: rate {}: {w}", r.row_name(vary));
        }
        if let Some(w) = out.as_mut() {
            w.write(r)?;
        }
    }
    print!("{}", table::render(&reports, &metrics, &percentiles));
    let verdicts: Vec<(String, Vec<gate::GateResult>)> = reports
        .iter()
        .map(|r| (r.row_name(vary), r.gates.clone()))
        .collect();
    if let Some((rate, g)) = gate::first_failure(&verdicts) {
        eprintln!("SLO gate failed at rate {rate}: {}", g.gate);
        return Ok(ExitCode::from(exit::SLO_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
