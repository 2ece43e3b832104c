//! JSONL output: `--json-out` (one [`RateReport`](crate::report::RateReport) per line) and `--records` (one
//! [`RecordLine`] per request). Each line is flushed as soon as it is written, so a
//! crash or Ctrl-C loses nothing already measured.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::latency::Slo;
use crate::rate::Rate;
use crate::record::RequestRecord;
use crate::report::SCHEMA_VERSION;
use crate::schedule::Shard;

/// A JSONL file written line by line, each line flushed.
pub struct JsonlWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl JsonlWriter {
    /// Creates (truncates) the file.
    pub fn create(path: &Path) -> anyhow::Result<JsonlWriter> {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        })
    }

    /// Writes one value as one line and flushes it.
    pub fn write<T: Serialize>(&mut self, value: &T) -> anyhow::Result<()> {
        let write = |out: &mut BufWriter<File>| -> std::io::Result<()> {
            serde_json::to_writer(&mut *out, value)?;
            out.write_all(b"\n")?;
            out.flush()
        };
        write(&mut self.out).with_context(|| format!("cannot write to {}", self.path.display()))
    }
}

/// Figures derived from a record (from its methods in `record.rs`), in ms, written next
/// to the raw timestamps so a reader needs no code to use the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// t_first − t_send.
    pub ttft_ms: Option<f64>,
    /// t_first − t_sched.
    pub ttft_from_sched_ms: Option<f64>,
    /// t_first_answer − t_send, when the request reasoned before answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfa_ms: Option<f64>,
    /// (t_last − t_first) / (N_out − 1).
    pub tpot_ms: Option<f64>,
    /// Mean per-token ITL of this request.
    pub itl_mean_ms: Option<f64>,
    /// t_last − t_send.
    pub e2el_ms: Option<f64>,
    /// t_send − t_sched.
    pub dispatch_lag_ms: f64,
    /// N_out.
    pub output_tokens: u32,
    /// Of N_out, the reasoning tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u32,
    /// Prompt tokens (server usage when sent).
    pub prompt_tokens: u32,
    /// Succeeded and met every goodput objective of the run.
    pub good: bool,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl Derived {
    pub fn of(r: &RequestRecord, slo: &Slo) -> Derived {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let (sum, n) = r.itl().fold((0.0, 0u64), |(s, n), (d, k)| {
            (s + ms(d) * f64::from(k), n + u64::from(k))
        });
        Derived {
            ttft_ms: r.ttft().map(ms),
            ttft_from_sched_ms: r.ttft_from_sched().map(ms),
            ttfa_ms: r.ttfa().filter(|_| r.saw_reasoning()).map(ms),
            tpot_ms: r.tpot().map(ms),
            itl_mean_ms: (n > 0).then(|| sum / n as f64),
            e2el_ms: r.e2e().map(ms),
            dispatch_lag_ms: ms(r.dispatch_lag()),
            output_tokens: r.output_tokens(),
            reasoning_tokens: r.reasoning_tokens(),
            prompt_tokens: r.prompt_tokens(),
            good: r.is_good(slo),
        }
    }
}

/// One line of `--records`: the request's raw record (the keys of `RequestRecord`,
/// times in seconds from the run start at its rate) plus where it belongs and derived
/// figures. `report merge` reads these lines back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordLine {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Rate of the whole run this request belongs to (req/s or `"inf"`); the key that
    /// groups records of a sweep.
    pub rate: Rate,
    /// The run's `--prefix-hit-ratio`, with `rate` the key that groups records when a
    /// bench runs several (absent without the flag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_ratio: Option<f64>,
    /// Which run sent it: the run's start (RFC 3339) and prompt nonce, unique per run
    /// of each process. `report merge` tells separate runs apart by it (empty in files
    /// written before it existed: the file then stands for the run).
    #[serde(default)]
    pub run: String,
    /// Which shard sent it (null when not sharded).
    pub shard: Option<Shard>,
    /// True for a `--warmup` request (left out of every figure).
    pub warmup: bool,
    /// The request's record; flattened, so its keys (`id`, `t_sched`, `t_send`,
    /// `t_first`, `chunks`, `outcome`, …) sit at the top level of the line.
    #[serde(flatten)]
    pub record: RequestRecord,
    /// Derived figures (ignored when read back: they are recomputed).
    #[serde(default, skip_deserializing)]
    pub derived: Option<Derived>,
}

impl RecordLine {
    pub fn new(
        record: RequestRecord,
        rate: Rate,
        run: &str,
        shard: Option<Shard>,
        warmup: bool,
        slo: &Slo,
    ) -> RecordLine {
        RecordLine {
            schema_version: SCHEMA_VERSION,
            rate,
            prefix_hit_ratio: None,
            run: run.to_string(),
            shard,
            warmup,
            derived: Some(Derived::of(&record, slo)),
            record,
        }
    }
}

/// A finished record with known figures (TTFT 40 ms, 5 tokens in 3 chunks), for tests.
#[cfg(test)]
pub(crate) fn tests_support_record() -> RequestRecord {
    use crate::record::TokenSource;
    use std::time::Duration;
    let ms = Duration::from_millis;
    let mut r = RequestRecord::new(3, ms(100), ms(101));
    r.t_headers = Some(ms(110));
    r.push_chunk(ms(141), 4, Some(1));
    r.push_chunk(ms(151), 8, Some(2));
    r.push_chunk(ms(161), 8, Some(2));
    r.usage_completion_tokens = Some(5);
    r.usage_prompt_tokens = Some(12);
    r.prompt_tokens_sent = 12;
    r.max_tokens = 5;
    r.finish_reason = Some("length".into());
    r.http_status = Some(200);
    r.t_end = Some(ms(162));
    r.resolve_tokens(Some(TokenSource::ContinuousUsage));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use std::time::Duration;

    fn record() -> RequestRecord {
        tests_support_record()
    }

    #[test]
    fn record_line_schema() {
        let slo = Slo::of([(crate::latency::Latency::Ttft, Duration::from_millis(50))]).unwrap();
        let line = RecordLine::new(
            record(),
            Rate::new(8.0).unwrap(),
            "2026-11-29T18:00:00Z/0badc0de",
            None,
            false,
            &slo,
        );
        let v = serde_json::to_value(&line).unwrap();
        insta::assert_json_snapshot!(v);
        let d = line.derived.unwrap();
        assert_eq!(d.ttft_ms, Some(40.0));
        assert_eq!(d.output_tokens, 5);
        // (161 - 141) ms over 4 tokens after the first
        assert_eq!(d.tpot_ms, Some(5.0));
        assert_eq!(d.itl_mean_ms, Some(5.0));
        assert!(d.good);
    }

    #[test]
    fn record_lines_read_back_into_the_same_record() {
        let mut rec = record();
        rec.outcome = Outcome::Timeout;
        let line = RecordLine::new(
            rec.clone(),
            Rate::INFINITE,
            "2026-11-29T18:00:00Z/0badc0de",
            Some(Shard { index: 1, count: 2 }),
            true,
            &Slo::default(),
        );
        let text = serde_json::to_string(&line).unwrap();
        let back: RecordLine = serde_json::from_str(&text).unwrap();
        assert_eq!(back.record, rec);
        assert!(back.rate.per_second().is_infinite());
        assert_eq!(back.shard, Some(Shard { index: 1, count: 2 }));
        assert!(back.warmup);
        assert_eq!(back.run, "2026-11-29T18:00:00Z/0badc0de");
        assert_eq!(back.derived, None);
    }

    #[test]
    fn writer_flushes_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut w = JsonlWriter::create(&path).unwrap();
        w.write(&serde_json::json!({"a": 1})).unwrap();
        // Still open, yet the line is on disk.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        w.write(&serde_json::json!({"b": 2})).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    }
}
