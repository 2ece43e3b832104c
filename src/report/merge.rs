//! `llmprobe report merge`: exact combined summaries from the `--records` files of
//! several shards (or several runs at the same rates).
//!
//! Each shard's records go into their own [`Collector`] (its warmup excluded by id, as
//! in the run), and the collectors are merged: every value is kept, so counts, tokens
//! and every percentile are exactly those of one run over all records, not averages of
//! shard summaries. Timestamps are offsets from each shard's own run start; shards
//! launched together (an indexed Kubernetes Job) share that origin to within their
//! start skew, which is the only inexact part (it can stretch the merged duration by
//! at most that skew).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;

use crate::aggregate::Collector;
use crate::bench::gate::{self, Gate};
use crate::bench::options::{
    Shard, build_slo, computed_percentiles, parse_metrics, parse_percentiles,
};
use crate::cli::{MergeArgs, ReportArgs, ReportCommand};
use crate::exit::{self, UsageError};
use crate::record::{RequestRecord, Slo};
use crate::report::build::{ReportContext, from_summary};
use crate::report::jsonl::{JsonlWriter, RecordLine};
use crate::report::{RateReport, RateValue, table};

/// `llmprobe report …`.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        ReportCommand::Merge(m) => run_merge(m),
    }
}

/// The records of one shard at one rate (warmup lines included, flagged).
#[derive(Debug, Default)]
pub struct ShardRecords {
    pub records: Vec<RequestRecord>,
    pub warmup: u64,
}

/// Every shard's records at one rate.
#[derive(Debug)]
pub struct RateGroup {
    pub rate: f64,
    /// Keyed by (file index, shard index): two unsharded files are two sources.
    pub sources: BTreeMap<(usize, u32), ShardRecords>,
    /// The shard count the lines declare (to warn when a shard is missing).
    pub shard_count: Option<u32>,
}

/// Reads `--records` files and groups lines by rate (ascending) and source. A
/// malformed line is a usage error naming file and line.
pub fn read_groups(files: &[impl AsRef<Path>]) -> anyhow::Result<Vec<RateGroup>> {
    let mut groups: BTreeMap<u64, RateGroup> = BTreeMap::new();
    for (file_index, file) in files.iter().enumerate() {
        let path = file.as_ref();
        let f = std::fs::File::open(path)
            .map_err(|e| UsageError::new(format!("cannot open {}: {e}", path.display())))?;
        for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let rec: RecordLine = serde_json::from_str(&line).map_err(|e| {
                UsageError::new(format!(
                    "{}:{}: not a --records line: {e}",
                    path.display(),
                    n + 1
                ))
            })?;
            // Positive rates order like their bit patterns.
            let g = groups
                .entry(rec.rate.0.to_bits())
                .or_insert_with(|| RateGroup {
                    rate: rec.rate.0,
                    sources: BTreeMap::new(),
                    shard_count: None,
                });
            let shard = rec.shard.map_or(0, |s: Shard| s.index);
            if let Some(s) = rec.shard {
                g.shard_count = Some(s.count);
            }
            // Shards of one run are one source each; the same shard index in two files
            // is two runs and stays two sources.
            let key = match rec.shard {
                Some(_) => (0, shard),
                None => (file_index, 0),
            };
            let src = g.sources.entry(key).or_default();
            if rec.warmup {
                src.warmup += 1;
            }
            src.records.push(rec.record);
        }
    }
    Ok(groups.into_values().collect())
}

/// The exact merged summary of one rate.
pub fn merged_report(
    g: &RateGroup,
    slo: Slo,
    percentiles: Vec<f64>,
    gates: Vec<Gate>,
) -> RateReport {
    let mut all = Collector::new(slo, 0);
    for src in g.sources.values() {
        let mut c = Collector::new(slo, src.warmup);
        for r in &src.records {
            c.push(r);
        }
        all.merge(&c);
    }
    let ctx = ReportContext {
        inputs: None,
        rate: RateValue(g.rate),
        process_rate: RateValue(g.rate),
        shard: None,
        percentiles,
        gates,
        dispatch_lag_warn: Duration::from_millis(1),
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
    };
    from_summary(&all.summary(&ctx.percentiles), &ctx)
}

fn run_merge(a: &MergeArgs) -> anyhow::Result<ExitCode> {
    let slo = build_slo(a.slo_ttft_ms, a.slo_tpot_ms, a.slo_e2el_ms, &a.goodput)?;
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
    let groups = read_groups(&a.files)?;
    if groups.is_empty() {
        return Err(UsageError::new("no records in the given files").into());
    }
    let mut out = a.json_out.as_deref().map(JsonlWriter::create).transpose()?;
    let mut reports = Vec::new();
    for g in &groups {
        if let Some(n) = g.shard_count {
            let seen = g.sources.keys().filter(|(f, _)| *f == 0).count();
            if seen as u32 != n {
                eprintln!(
                    "WARNING: rate {}: records from {seen} of {n} shards: the merged figures miss the others",
                    RateValue(g.rate)
                );
            }
        }
        let r = merged_report(
            g,
            slo,
            computed_percentiles(&percentiles, &gates),
            gates.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, TokenSource};
    use crate::report::jsonl::JsonlWriter;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Request `id` of a shard: scheduled at `sched`, TTFT `ttft`, `n` one-token chunks
    /// `gap` apart.
    fn rec(id: u64, sched: u64, ttft: u64, n: u64, gap: u64) -> RequestRecord {
        let mut r = RequestRecord::new(id, ms(sched), ms(sched + 1));
        r.prompt_tokens_sent = 10;
        let mut at = sched + 1 + ttft;
        r.push_chunk(ms(at), 3, Some(1));
        for _ in 1..n {
            at += gap;
            r.push_chunk(ms(at), 3, Some(1));
        }
        r.t_end = Some(ms(at + 1));
        r.resolve_tokens(Some(TokenSource::ContinuousUsage));
        r
    }

    fn shard_records(seed: u64) -> Vec<RequestRecord> {
        (0..20)
            .map(|i| {
                let mut r = rec(i, i * 37 + seed, 30 + (i * seed) % 50, 5 + i % 7, 8 + seed);
                if i % 9 == 4 {
                    r.outcome = Outcome::Http5xx;
                }
                r
            })
            .collect()
    }

    /// Writes each shard's records to its own file; returns the paths.
    fn write_shards(
        dir: &Path,
        shards: &[Vec<RequestRecord>],
        warmup: u64,
        slo: &Slo,
    ) -> Vec<std::path::PathBuf> {
        let n = shards.len() as u32;
        shards
            .iter()
            .enumerate()
            .map(|(i, recs)| {
                let path = dir.join(format!("shard{i}.jsonl"));
                let mut w = JsonlWriter::create(&path).unwrap();
                let shard = Some(Shard {
                    index: i as u32,
                    count: n,
                });
                for r in recs {
                    let line =
                        RecordLine::new(r.clone(), RateValue(8.0), shard, r.id < warmup, slo);
                    w.write(&line).unwrap();
                }
                path
            })
            .collect()
    }

    #[test]
    fn merging_two_shards_equals_one_piece() {
        let dir = tempfile::tempdir().unwrap();
        let slo = Slo {
            ttft: Some(ms(60)),
            ..Slo::default()
        };
        let shards = [shard_records(3), shard_records(11)];
        let files = write_shards(dir.path(), &shards, 0, &slo);
        let groups = read_groups(&files).unwrap();
        assert_eq!(groups.len(), 1);
        let ps = vec![50.0, 90.0, 99.0];
        let gates: Vec<Gate> = vec!["ttft-p99<=80ms".parse().unwrap()];
        let merged = merged_report(&groups[0], slo, ps.clone(), gates.clone());

        // One piece: every record of both shards through one collector.
        let mut whole = Collector::new(slo, 0);
        for r in shards.iter().flatten() {
            whole.push(r);
        }
        let ctx = ReportContext {
            inputs: None,
            rate: RateValue(8.0),
            process_rate: RateValue(8.0),
            shard: None,
            percentiles: ps.clone(),
            gates,
            dispatch_lag_warn: ms(1),
            started_at: merged.started_at.clone(),
        };
        let one_piece = from_summary(&whole.summary(&ps), &ctx);
        assert_eq!(merged, one_piece);
        assert_eq!(merged.requests, 40);
        assert_eq!(merged.failed, 4);
        assert!(merged.ttft_ms.percentile(99.0).is_some());
    }

    #[test]
    fn merge_leaves_out_each_shards_warmup() {
        let dir = tempfile::tempdir().unwrap();
        let slo = Slo::default();
        let files = write_shards(dir.path(), &[shard_records(3), shard_records(5)], 2, &slo);
        let groups = read_groups(&files).unwrap();
        let r = merged_report(&groups[0], slo, vec![50.0], vec![]);
        assert_eq!(r.requests, 36);
        assert_eq!(r.warmup_excluded, 4);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "\n{\"not\": \"a record\"}\n").unwrap();
        let err = read_groups(&[&path]).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("bad.jsonl:2"), "{msg}");
        assert_eq!(exit::code_for(&err), exit::USAGE);
    }
}
