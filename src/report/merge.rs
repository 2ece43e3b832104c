//! `llmprobe report merge` (the command is `bench::report_cmd`): exact combined summaries from the `--records` files of
//! several shards, several runs at the same rates, or both.
//!
//! Every line names its run (start time and prompt nonce) and shard, so each
//! (run, shard) is one source: lines flagged `warmup` are dropped (they only set the
//! window origin) and the rest go into the source's own [`Collector`]. Shards of one
//! run ran at the same time, so their windows are united ([`Collector::merge`]);
//! separate runs ran one after another, each with timestamps from its own start, so
//! their windows add up ([`Collector::append`]). Every value is kept, so counts,
//! tokens and every percentile are exactly those of one run over all records, not
//! averages of summaries. The one inexact part: shards launched together (an indexed
//! Kubernetes Job) share their origin only to within their start skew, which can
//! stretch the merged duration by at most that skew.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::Context;

use crate::aggregate::Collector;
use crate::exit::UsageError;
use crate::latency::Slo;
use crate::rate::Rate;
use crate::record::RequestRecord;
use crate::report::RateReport;
use crate::report::build::{ReportContext, from_summary};
use crate::report::gate::Gate;
use crate::report::jsonl::RecordLine;
use crate::schedule::Shard;

/// The records one process sent at one rate: one run, or one shard of a run.
#[derive(Debug, Default)]
pub struct Source {
    /// Which shard of its run (None when not sharded).
    pub shard: Option<Shard>,
    /// Counted records.
    pub records: Vec<RequestRecord>,
    /// Scheduled times of the lines flagged `warmup` (left out; they set the origin).
    pub warmup: Vec<Duration>,
}

/// Every source's records at one rate (and prefix hit ratio).
#[derive(Debug)]
pub struct RateGroup {
    pub rate: f64,
    /// The runs' `--prefix-hit-ratio`: runs at another ratio are another group.
    pub prefix_hit_ratio: Option<f64>,
    /// Keyed by (run id, shard index): the run id is written in every line (the file
    /// stands in for it in files written before it was), so two runs of the same shard,
    /// or an unsharded run and shard 0 of another, stay apart.
    pub sources: BTreeMap<(String, Option<u32>), Source>,
}

/// Reads `--records` files and groups lines by rate and prefix hit ratio (ascending)
/// and source. A malformed line is a usage error naming file and line.
pub fn read_groups(files: &[impl AsRef<Path>]) -> anyhow::Result<Vec<RateGroup>> {
    let mut groups: BTreeMap<(u64, Option<u64>), RateGroup> = BTreeMap::new();
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
            // Positive rates and ratios order like their bit patterns.
            let key = (
                rec.rate.per_second().to_bits(),
                rec.prefix_hit_ratio.map(f64::to_bits),
            );
            let g = groups.entry(key).or_insert_with(|| RateGroup {
                rate: rec.rate.per_second(),
                prefix_hit_ratio: rec.prefix_hit_ratio,
                sources: BTreeMap::new(),
            });
            let run = if rec.run.is_empty() {
                format!("file {file_index}")
            } else {
                rec.run
            };
            let src = g
                .sources
                .entry((run, rec.shard.map(|s| s.index)))
                .or_default();
            src.shard = rec.shard;
            if rec.warmup {
                src.warmup.push(rec.record.t_sched);
            } else {
                src.records.push(rec.record);
            }
        }
    }
    Ok(groups.into_values().collect())
}

/// The sources of one rate as runs: each run is a set of sources that ran at the same
/// time. An unsharded source is a run by itself. Shards carry no id shared by the
/// whole run (each process has its own), so the shards of an N-shard run are matched
/// by order: the k-th run (by start time) of each shard index belong together, which
/// holds when the shard sets were launched together, as an indexed Job does.
pub fn runs(g: &RateGroup) -> Vec<Vec<&Source>> {
    let mut out: Vec<Vec<&Source>> = Vec::new();
    // (shard count, shard index) → that shard's runs, in run id (start time) order.
    let mut by_shard: BTreeMap<(u32, u32), Vec<&Source>> = BTreeMap::new();
    for src in g.sources.values() {
        match src.shard {
            None => out.push(vec![src]),
            Some(s) => by_shard.entry((s.count, s.index)).or_default().push(src),
        }
    }
    let mut sharded: BTreeMap<(u32, usize), Vec<&Source>> = BTreeMap::new();
    for ((count, _), srcs) in by_shard {
        for (k, src) in srcs.into_iter().enumerate() {
            sharded.entry((count, k)).or_default().push(src);
        }
    }
    out.extend(sharded.into_values());
    out
}

/// The exact merged summary of one rate: the shards of one run overlap in time, so
/// their windows are united; separate runs' windows add up.
pub fn merged_report(
    g: &RateGroup,
    slo: Slo,
    percentiles: Vec<f64>,
    gates: Vec<Gate>,
    dispatch_lag_warn: Duration,
) -> RateReport {
    let mut all = Collector::new(slo, 0);
    for run in runs(g) {
        let mut together = Collector::new(slo, 0);
        for src in run {
            let mut c = Collector::new(slo, 0);
            for t in &src.warmup {
                c.push_warmup(*t);
            }
            for r in &src.records {
                c.push(r);
            }
            together.merge(&c);
        }
        all.append(&together);
    }
    let ctx = ReportContext {
        inputs: None,
        rate: Rate::as_written(g.rate),
        prefix_hit_ratio: g.prefix_hit_ratio,
        process_rate: Rate::as_written(g.rate),
        shard: None,
        percentiles,
        gates,
        dispatch_lag_warn,
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        golden: false,
    };
    from_summary(&all.summary(&ctx.percentiles), &ctx)
}

/// One warning per sharded run of `g` that lacks some of its shards (unsharded runs
/// are complete by definition).
pub fn missing_shards(g: &RateGroup) -> Vec<String> {
    runs(g)
        .into_iter()
        .filter_map(|run| {
            let n = run.first()?.shard?.count;
            let seen = run.len();
            (seen as u32 != n).then(|| {
                format!("records from {seen} of {n} shards: the merged figures miss the others")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;
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

    /// Writes `recs` as one file of run `run` (shard `shard`, first `warmup` ids
    /// flagged as warmup).
    fn write_file(
        path: &Path,
        run: &str,
        shard: Option<Shard>,
        recs: &[RequestRecord],
        warmup: u64,
        slo: &Slo,
    ) -> std::path::PathBuf {
        let mut w = JsonlWriter::create(path).unwrap();
        for r in recs {
            let line = RecordLine::new(
                r.clone(),
                Rate::new(8.0).unwrap(),
                run,
                shard,
                r.id < warmup,
                slo,
            );
            w.write(&line).unwrap();
        }
        path.to_path_buf()
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
                let shard = Some(Shard {
                    index: i as u32,
                    count: n,
                });
                let path = dir.join(format!("shard{i}.jsonl"));
                // Each shard process has its own run id.
                let run = format!("2026-11-29T18:00:0{i}Z/0000000{i}");
                write_file(&path, &run, shard, recs, warmup, slo)
            })
            .collect()
    }

    #[test]
    fn merging_two_shards_equals_one_piece() {
        let dir = tempfile::tempdir().unwrap();
        let slo = Slo::of([(crate::latency::Latency::Ttft, ms(60))]).unwrap();
        let shards = [shard_records(3), shard_records(11)];
        let files = write_shards(dir.path(), &shards, 0, &slo);
        let groups = read_groups(&files).unwrap();
        assert_eq!(groups.len(), 1);
        let ps = vec![50.0, 90.0, 99.0];
        let gates: Vec<Gate> = vec!["ttft-p99<=80ms".parse().unwrap()];
        let merged = merged_report(&groups[0], slo, ps.clone(), gates.clone(), ms(1));

        // One piece: every record of both shards through one collector.
        let mut whole = Collector::new(slo, 0);
        for r in shards.iter().flatten() {
            whole.push(r);
        }
        let ctx = ReportContext {
            inputs: None,
            rate: Rate::new(8.0).unwrap(),
            prefix_hit_ratio: None,
            process_rate: Rate::new(8.0).unwrap(),
            shard: None,
            percentiles: ps.clone(),
            gates,
            dispatch_lag_warn: ms(1),
            started_at: merged.started_at.clone(),
            golden: false,
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
        let r = merged_report(&groups[0], slo, vec![50.0], vec![], ms(1));
        assert_eq!(r.requests, 36);
        assert_eq!(r.warmup_excluded, 4);
    }

    #[test]
    fn sequential_runs_add_their_windows() {
        // The same 20 requests run twice, one run after the other (two unsharded
        // files): offered and achieved rates are those of one run, not twice them.
        let dir = tempfile::tempdir().unwrap();
        let slo = Slo::default();
        let recs = shard_records(3);
        let one = write_file(&dir.path().join("a.jsonl"), "run a", None, &recs, 0, &slo);
        let two = write_file(&dir.path().join("b.jsonl"), "run b", None, &recs, 0, &slo);
        let single = merged_report(
            &read_groups(&[&one]).unwrap()[0],
            slo,
            vec![50.0],
            vec![],
            ms(1),
        );
        let groups = read_groups(&[&one, &two]).unwrap();
        assert_eq!(groups[0].sources.len(), 2);
        assert!(missing_shards(&groups[0]).is_empty());
        let both = merged_report(&groups[0], slo, vec![50.0], vec![], ms(1));
        assert_eq!(both.requests, 40);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(both.duration_s, 2.0 * single.duration_s));
        assert!(close(
            both.offered_rate.unwrap(),
            single.offered_rate.unwrap()
        ));
        assert!(close(both.achieved_rate, single.achieved_rate));
    }

    #[test]
    fn two_runs_of_the_same_shard_stay_apart() {
        // Shard 0 of 2 run twice (say two Job attempts), each with 2 warmup requests.
        let dir = tempfile::tempdir().unwrap();
        let slo = Slo::default();
        let shard = Some(Shard { index: 0, count: 2 });
        let recs = shard_records(3);
        let a = write_file(&dir.path().join("a.jsonl"), "r1", shard, &recs, 2, &slo);
        let b = write_file(&dir.path().join("b.jsonl"), "r2", shard, &recs, 2, &slo);
        let groups = read_groups(&[&a, &b]).unwrap();
        assert_eq!(groups[0].sources.len(), 2);
        // Each run misses shard 1.
        assert_eq!(missing_shards(&groups[0]).len(), 2);
        let r = merged_report(&groups[0], slo, vec![50.0], vec![], ms(1));
        // Each run leaves out its own 2 warmup lines: 36 counted, not 32.
        assert_eq!((r.requests, r.warmup_excluded), (36, 4));
        let single = merged_report(
            &read_groups(&[&a]).unwrap()[0],
            slo,
            vec![50.0],
            vec![],
            ms(1),
        );
        assert!((r.offered_rate.unwrap() - single.offered_rate.unwrap()).abs() < 1e-9);
    }

    #[test]
    fn unsharded_file_and_shard_zero_stay_apart() {
        let dir = tempfile::tempdir().unwrap();
        let slo = Slo::default();
        let recs = shard_records(5);
        let plain = write_file(&dir.path().join("a.jsonl"), "r1", None, &recs, 0, &slo);
        let shard0 = write_file(
            &dir.path().join("b.jsonl"),
            "r2",
            Some(Shard { index: 0, count: 2 }),
            &recs,
            0,
            &slo,
        );
        let groups = read_groups(&[&plain, &shard0]).unwrap();
        assert_eq!(groups[0].sources.len(), 2);
        assert_eq!(runs(&groups[0]).len(), 2);
        // Only the sharded run counts towards the shard warning: 1 of its 2 shards.
        let warnings = missing_shards(&groups[0]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("1 of 2"), "{warnings:?}");
        let r = merged_report(&groups[0], slo, vec![50.0], vec![], ms(1));
        assert_eq!(r.requests, 40);
    }

    #[test]
    fn dispatch_lag_threshold_comes_from_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let slo = Slo::default();
        // Every record has 1 ms of dispatch lag (sent 1 ms after its schedule).
        let f = write_file(
            &dir.path().join("a.jsonl"),
            "r1",
            None,
            &shard_records(3),
            0,
            &slo,
        );
        let g = &read_groups(&[&f]).unwrap()[0];
        assert!(merged_report(g, slo, vec![99.0], vec![], ms(0)).client_behind);
        assert!(!merged_report(g, slo, vec![99.0], vec![], ms(5)).client_behind);
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
