//! `llmprobe report …`: the front end of [`report::merge`](crate::report::merge). It
//! checks the flags with the same parsers as `bench` (objectives, metrics, percentiles,
//! gates), merges the `--records` files rate by rate, prints the table and exits like
//! `bench` when a gate fails.

use std::process::ExitCode;
use std::time::Duration;

use crate::bench::args::{MergeArgs, ReportArgs, ReportCommand};
use crate::bench::options::{build_slo, computed_percentiles, parse_metrics, parse_percentiles};
use crate::exit::{self, UsageError};
use crate::rate::Rate;
use crate::report::gate::{self, Gate};
use crate::report::jsonl::JsonlWriter;
use crate::report::merge::{merged_report, missing_shards, read_groups};
use crate::report::table;

/// `llmprobe report …`.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        ReportCommand::Merge(m) => run_merge(m),
    }
}

fn run_merge(a: &MergeArgs) -> anyhow::Result<ExitCode> {
    let slo = build_slo(
        [a.slo_ttft_ms, a.slo_tpot_ms, a.slo_e2el_ms, a.slo_ttfa_ms],
        &a.goodput,
    )?;
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
    let mut reports = Vec::new();
    for g in &groups {
        for w in missing_shards(g) {
            eprintln!("WARNING: rate {}: {w}", Rate(g.rate));
        }
        let r = merged_report(
            g,
            slo,
            computed_percentiles(&percentiles, &gates),
            gates.clone(),
            lag_warn,
        );
        if let Some(w) = out.as_mut() {
            w.write(&r)?;
        }
        reports.push(r);
    }
    print!("{}", table::render(&reports, &metrics, &percentiles));
    let verdicts: Vec<(String, Vec<gate::GateResult>)> = reports
        .iter()
        .map(|r| (r.rate.to_string(), r.gates.clone()))
        .collect();
    if let Some((rate, g)) = gate::first_failure(&verdicts) {
        eprintln!("SLO gate failed at rate {rate}: {}", g.gate);
        return Ok(ExitCode::from(exit::SLO_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
