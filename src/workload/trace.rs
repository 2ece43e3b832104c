//! Production traces to replay (`bench --trace`): when each request came and how long
//! its prompt and output were. Three formats:
//! - Mooncake (JSONL): `{"timestamp": ms, "input_length": n, "output_length": n,
//!   "hash_ids": [..]}`, one hash id per [`TRACE_BLOCK_TOKENS`]-token block of the
//!   prompt, equal ids meaning equal blocks;
//! - BurstGPT (CSV with a header): `Timestamp` in seconds, `Request tokens`,
//!   `Response tokens`, optionally filtered by its `Model` column; other columns ignored;
//! - plain JSONL: `{"offset_ms": ms, "input_tokens": n, "output_tokens": n}` with
//!   optional `hash_ids` as in Mooncake.
//!
//! A trace is read line by line and never held in memory whole. A malformed line is an
//! error naming FILE:LINE; a timestamp earlier than the line before is refused (a trace
//! is replayed in file order, and sorting would mean holding it whole); a request with
//! a zero input or output length is skipped, counted and reported.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::exit::UsageError;

/// Tokens per `hash_ids` block, as in the Mooncake trace.
pub const TRACE_BLOCK_TOKENS: u32 = 512;

/// The longest accepted prompt: 2^20 tokens, past the longest context window served
/// today; a longer one is a unit mistake.
pub const MAX_TRACE_INPUT: u32 = 1 << 20;

/// The trace file formats (`--trace-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    Mooncake,
    BurstGpt,
    Jsonl,
}

impl TraceFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::BurstGpt => "burstgpt",
            TraceFormat::Jsonl => "jsonl",
        }
    }

    /// The format of a trace whose first non-blank line is `line`.
    fn detect(line: &str) -> Option<TraceFormat> {
        let t = line.trim_start_matches('\u{feff}').trim();
        if t.starts_with('{') {
            let v: Map<String, Value> = serde_json::from_str(t).ok()?;
            if v.contains_key("timestamp") {
                return Some(TraceFormat::Mooncake);
            }
            if v.contains_key("offset_ms") {
                return Some(TraceFormat::Jsonl);
            }
            return None;
        }
        let cols = split_csv(t);
        let has = |name: &str| cols.iter().any(|c| c == name);
        (has("Timestamp") && has("Request tokens") && has("Response tokens"))
            .then_some(TraceFormat::BurstGpt)
    }
}

impl FromStr for TraceFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mooncake" => Ok(TraceFormat::Mooncake),
            "burstgpt" => Ok(TraceFormat::BurstGpt),
            "jsonl" => Ok(TraceFormat::Jsonl),
            other => Err(format!(
                "unknown trace format {other:?}: expected mooncake, burstgpt or jsonl"
            )),
        }
    }
}

/// One request of a trace, as written in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// 1-based line in the file.
    pub line: u64,
    /// Its time in the trace, from the trace's own origin.
    pub at: Duration,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// One id per [`TRACE_BLOCK_TOKENS`]-token block of the prompt, from its start;
    /// empty when the trace has none (every block is then the request's own).
    pub hash_ids: Vec<u64>,
}

/// Column positions of a BurstGPT header.
#[derive(Debug, Clone)]
struct CsvColumns {
    timestamp: usize,
    request: usize,
    response: usize,
    model: Option<usize>,
}

/// Reads a trace file entry by entry, in file order.
pub struct TraceReader {
    path: PathBuf,
    lines: std::io::Lines<BufReader<File>>,
    line_no: u64,
    format: TraceFormat,
    columns: Option<CsvColumns>,
    /// BurstGPT: keep only rows whose `Model` is this.
    model: Option<String>,
    /// A line read while detecting the format, not yet parsed.
    pending: Option<(u64, String)>,
}

impl TraceReader {
    /// Opens `path`; `format` `None` detects it from the first non-blank line.
    pub fn open(
        path: &Path,
        format: Option<TraceFormat>,
        model: Option<String>,
    ) -> Result<TraceReader, UsageError> {
        let file = File::open(path)
            .map_err(|e| UsageError::new(format!("cannot read trace {}: {e}", path.display())))?;
        let mut lines = BufReader::new(file).lines();
        let mut line_no = 0;
        let first = loop {
            line_no += 1;
            match lines.next() {
                None => {
                    return Err(UsageError::new(format!(
                        "{}: the trace is empty",
                        path.display()
                    )));
                }
                Some(Err(e)) => return Err(read_error(path, line_no, &e)),
                Some(Ok(l)) if l.trim().is_empty() => {}
                Some(Ok(l)) => break l,
            }
        };
        let format = match format.or_else(|| TraceFormat::detect(&first)) {
            Some(f) => f,
            None => {
                return Err(UsageError::new(format!(
                    "{}:{line_no}: cannot tell the trace format (Mooncake JSONL with \
                     \"timestamp\", JSONL with \"offset_ms\", or BurstGPT CSV with a header): \
                     give --trace-format",
                    path.display()
                )));
            }
        };
        if model.is_some() && format != TraceFormat::BurstGpt {
            return Err(UsageError::new(
                "--trace-model filters BurstGPT's Model column: the trace is not BurstGPT",
            ));
        }
        let mut reader = TraceReader {
            path: path.to_path_buf(),
            lines,
            line_no,
            format,
            columns: None,
            model,
            pending: None,
        };
        if format == TraceFormat::BurstGpt {
            reader.columns = Some(reader.csv_header(&first)?);
        } else {
            reader.pending = Some((line_no, first));
        }
        Ok(reader)
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn csv_header(&self, line: &str) -> Result<CsvColumns, UsageError> {
        let cols = split_csv(line.trim_start_matches('\u{feff}'));
        let find = |name: &str| cols.iter().position(|c| c == name);
        let need = |name: &str| {
            find(name).ok_or_else(|| {
                self.error(
                    self.line_no,
                    &format!(
                        "the BurstGPT header has no {name:?} column (expected Timestamp, \
                         Request tokens, Response tokens)"
                    ),
                )
            })
        };
        let columns = CsvColumns {
            timestamp: need("Timestamp")?,
            request: need("Request tokens")?,
            response: need("Response tokens")?,
            model: find("Model"),
        };
        if self.model.is_some() && columns.model.is_none() {
            return Err(self.error(
                self.line_no,
                "--trace-model: the header has no Model column",
            ));
        }
        Ok(columns)
    }

    fn error(&self, line: u64, what: &str) -> UsageError {
        UsageError::new(format!("{}:{line}: {what}", self.path.display()))
    }

    /// The next entry, `None` at the end of the file.
    pub fn next_entry(&mut self) -> Result<Option<TraceEntry>, UsageError> {
        loop {
            let (line_no, line) = match self.pending.take() {
                Some(p) => p,
                None => {
                    self.line_no += 1;
                    match self.lines.next() {
                        None => return Ok(None),
                        Some(Err(e)) => return Err(read_error(&self.path, self.line_no, &e)),
                        Some(Ok(l)) => (self.line_no, l),
                    }
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let parsed = match (self.format, &self.columns) {
                (TraceFormat::Mooncake, _) => parse_json_line(&line, &MOONCAKE_KEYS).map(Some),
                (TraceFormat::Jsonl, _) => parse_json_line(&line, &JSONL_KEYS).map(Some),
                (TraceFormat::BurstGpt, Some(cols)) => {
                    parse_csv_line(&line, cols, self.model.as_deref())
                }
                (TraceFormat::BurstGpt, None) => Err("the CSV header was not read".to_string()),
            };
            // None: another model's row.
            if let Some(mut entry) = parsed.map_err(|e| self.error(line_no, &e))? {
                entry.line = line_no;
                return Ok(Some(entry));
            }
        }
    }
}

fn read_error(path: &Path, line: u64, e: &std::io::Error) -> UsageError {
    UsageError::new(format!(
        "{}:{line}: cannot read the trace: {e}",
        path.display()
    ))
}

/// The keys of a JSONL format and the unit of its time.
struct JsonKeys {
    name: &'static str,
    time: &'static str,
    input: &'static str,
    output: &'static str,
}

const MOONCAKE_KEYS: JsonKeys = JsonKeys {
    name: "Mooncake",
    time: "timestamp",
    input: "input_length",
    output: "output_length",
};

const JSONL_KEYS: JsonKeys = JsonKeys {
    name: "trace JSONL",
    time: "offset_ms",
    input: "input_tokens",
    output: "output_tokens",
};

fn parse_json_line(line: &str, keys: &JsonKeys) -> Result<TraceEntry, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| {
        format!(
            "column {}: not a {} line: {}",
            e.column(),
            keys.name,
            strip_position(&e)
        )
    })?;
    let Value::Object(obj) = v else {
        return Err(format!("not a {} line: expected a JSON object", keys.name));
    };
    let field = |k: &str| obj.get(k).ok_or_else(|| format!("field {k:?}: missing"));
    let ms = field(keys.time)?
        .as_f64()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| {
            format!(
                "field {:?}: expected a number of ms >= 0, got {}",
                keys.time, obj[keys.time]
            )
        })?;
    let length = |k: &str| -> Result<u32, String> {
        let v = field(k)?;
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("field {k:?}: expected a token count, got {v}"))
    };
    let hash_ids = match obj.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| {
                id.as_u64().ok_or_else(|| {
                    format!("field \"hash_ids\": expected non-negative integers, got {id}")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(format!("field \"hash_ids\": expected an array, got {v}")),
    };
    Ok(TraceEntry {
        line: 0,
        at: Duration::from_secs_f64(ms / 1000.0),
        input_tokens: length(keys.input)?,
        output_tokens: length(keys.output)?,
        hash_ids,
    })
}

/// serde_json's message without its " at line 1 column N" (the caller names the place).
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

/// One BurstGPT row; `None` when `model` filters it out.
fn parse_csv_line(
    line: &str,
    cols: &CsvColumns,
    model: Option<&str>,
) -> Result<Option<TraceEntry>, String> {
    let cells = split_csv(line);
    let cell = |i: usize, name: &str| {
        cells
            .get(i)
            .map(|c| c.trim())
            .ok_or_else(|| format!("column {name:?} missing ({} cells)", cells.len()))
    };
    if let (Some(want), Some(i)) = (model, cols.model)
        && cell(i, "Model")? != want
    {
        return Ok(None);
    }
    let ts = cell(cols.timestamp, "Timestamp")?;
    let secs: f64 = ts
        .parse()
        .ok()
        .filter(|t: &f64| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| format!("column \"Timestamp\": expected seconds >= 0, got {ts:?}"))?;
    let count = |i: usize, name: &str| -> Result<u32, String> {
        let c = cell(i, name)?;
        // Written as integers, sometimes with a ".0".
        let v: f64 = c
            .parse()
            .map_err(|_| format!("column {name:?}: expected a token count, got {c:?}"))?;
        if !(v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX)) {
            return Err(format!(
                "column {name:?}: expected a token count, got {c:?}"
            ));
        }
        Ok(v as u32)
    };
    Ok(Some(TraceEntry {
        line: 0,
        at: Duration::from_secs_f64(secs),
        input_tokens: count(cols.request, "Request tokens")?,
        output_tokens: count(cols.response, "Response tokens")?,
        hash_ids: Vec::new(),
    }))
}

/// The cells of one CSV line (RFC 4180 quoting: `"a,b"` and `""` inside quotes).
fn split_csv(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches(['\r', '\n']).chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            (c, _) => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

/// Which part of a trace to replay, and how fast.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSelection {
    /// Trace time from which requests are replayed (inclusive).
    pub start: Duration,
    /// Trace time at which the replay stops (exclusive); `None`: the end of the file.
    pub end: Option<Duration>,
    /// Time compression: 2 replays the trace twice as fast.
    pub speedup: f64,
    /// The model's context in tokens: a request whose input and output together exceed
    /// it is refused (a server would reject it, which is no measurement of the trace).
    pub max_model_len: Option<u32>,
}

impl Default for TraceSelection {
    fn default() -> Self {
        TraceSelection {
            start: Duration::ZERO,
            end: None,
            speedup: 1.0,
            max_model_len: None,
        }
    }
}

/// Requests left out of a replay because a length was zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZeroSkips {
    pub count: u64,
    /// The first such line.
    pub first_line: Option<u64>,
}

/// The selected requests of a trace with their replay offsets, in order: the first
/// selected request at offset 0, later ones at (their trace time − the first's) /
/// speedup. Checks order and lengths as it goes.
pub struct TraceSource {
    reader: TraceReader,
    selection: TraceSelection,
    origin: Option<Duration>,
    last: Option<(Duration, u64)>,
    zero: ZeroSkips,
    done: bool,
}

impl TraceSource {
    pub fn new(reader: TraceReader, selection: TraceSelection) -> TraceSource {
        TraceSource {
            reader,
            selection,
            origin: None,
            last: None,
            zero: ZeroSkips::default(),
            done: false,
        }
    }

    pub fn zero_skips(&self) -> ZeroSkips {
        self.zero
    }

    pub fn reader(&self) -> &TraceReader {
        &self.reader
    }

    /// The next selected request and its replay offset; `None` past the window or at
    /// the end of the file.
    pub fn next_request(&mut self) -> Result<Option<(Duration, TraceEntry)>, UsageError> {
        while !self.done {
            let Some(e) = self.reader.next_entry()? else {
                self.done = true;
                break;
            };
            self.check(&e)?;
            if e.at < self.selection.start {
                continue;
            }
            if self.selection.end.is_some_and(|end| e.at >= end) {
                // The trace is in time order: nothing later can be in the window.
                self.done = true;
                break;
            }
            if e.input_tokens == 0 || e.output_tokens == 0 {
                self.zero.count += 1;
                self.zero.first_line.get_or_insert(e.line);
                continue;
            }
            let origin = *self.origin.get_or_insert(e.at);
            let offset = (e.at - origin).div_f64(self.selection.speedup);
            return Ok(Some((offset, e)));
        }
        Ok(None)
    }

    /// Order and lengths: a timestamp before the previous line's is refused, and so are
    /// lengths no model serves and more hash ids than the prompt has blocks.
    fn check(&mut self, e: &TraceEntry) -> Result<(), UsageError> {
        let here = |what: String| self.reader.error(e.line, &what);
        if let Some((prev, prev_line)) = self.last
            && e.at < prev
        {
            return Err(here(format!(
                "timestamp {:.3} s is earlier than line {prev_line}'s {:.3} s: the trace must \
                 be in time order (sort it first, e.g. by its time column)",
                e.at.as_secs_f64(),
                prev.as_secs_f64()
            )));
        }
        if e.input_tokens > MAX_TRACE_INPUT {
            return Err(here(format!(
                "input length {} is above {MAX_TRACE_INPUT} tokens, longer than any model's \
                 context",
                e.input_tokens
            )));
        }
        if let Some(max) = self.selection.max_model_len
            && u64::from(e.input_tokens) + u64::from(e.output_tokens) > u64::from(max)
        {
            return Err(here(format!(
                "input {} + output {} tokens exceed --max-model-len {max}",
                e.input_tokens, e.output_tokens
            )));
        }
        let blocks = e.input_tokens.div_ceil(TRACE_BLOCK_TOKENS) as usize;
        if e.hash_ids.len() > blocks {
            return Err(here(format!(
                "{} hash_ids for an input of {} tokens: at most {blocks} blocks of \
                 {TRACE_BLOCK_TOKENS} tokens",
                e.hash_ids.len(),
                e.input_tokens
            )));
        }
        self.last = Some((e.at, e.line));
        Ok(())
    }
}

/// What a first pass over the selected part of a trace found (nothing kept but counts).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceSurvey {
    pub format: Option<TraceFormat>,
    /// Requests to replay (at most the cap given).
    pub requests: u64,
    /// Replay offset of the last one (the first is at 0).
    pub span: Duration,
    pub max_input_tokens: u32,
    pub max_output_tokens: u32,
    pub input_tokens: u64,
    pub zero: ZeroSkips,
}

impl TraceSurvey {
    /// The replay's mean arrival rate, req/s: (requests − 1) / span; infinite when
    /// every request is at the same time.
    pub fn mean_rate(&self) -> f64 {
        if self.span.is_zero() {
            f64::INFINITY
        } else {
            (self.requests.saturating_sub(1)) as f64 / self.span.as_secs_f64()
        }
    }
}

/// Reads the selected part of a trace once, checking every line (so a bad line stops
/// the bench before anything is sent), up to `cap` requests.
pub fn survey(
    path: &Path,
    format: Option<TraceFormat>,
    model: Option<String>,
    selection: &TraceSelection,
    cap: Option<u64>,
) -> Result<TraceSurvey, UsageError> {
    let reader = TraceReader::open(path, format, model)?;
    let mut s = TraceSurvey {
        format: Some(reader.format()),
        ..TraceSurvey::default()
    };
    let mut source = TraceSource::new(reader, selection.clone());
    while cap.is_none_or(|c| s.requests < c) {
        let Some((offset, e)) = source.next_request()? else {
            break;
        };
        s.requests += 1;
        s.span = offset;
        s.max_input_tokens = s.max_input_tokens.max(e.input_tokens);
        s.max_output_tokens = s.max_output_tokens.max(e.output_tokens);
        s.input_tokens += u64::from(e.input_tokens);
    }
    s.zero = source.zero_skips();
    if s.requests == 0 {
        return Err(UsageError::new(format!(
            "{}: no request to replay{}",
            path.display(),
            if s.zero.count > 0 {
                " (every selected request has a zero length)"
            } else {
                " in the selected window"
            }
        )));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("trace");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    fn all(path: &Path, sel: TraceSelection) -> Result<Vec<(Duration, TraceEntry)>, String> {
        let r = TraceReader::open(path, None, None).map_err(|e| e.0)?;
        let mut s = TraceSource::new(r, sel);
        let mut out = Vec::new();
        while let Some(x) = s.next_request().map_err(|e| e.0)? {
            out.push(x);
        }
        Ok(out)
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn mooncake_lines_are_read_with_their_blocks() {
        let (_d, p) = file(
            "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 10, \"hash_ids\": [1, 2]}\n\
             \n\
             {\"timestamp\": 250, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [1, 7]}\n",
        );
        let got = all(&p, TraceSelection::default()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, ms(0));
        assert_eq!(got[1].0, ms(250));
        assert_eq!(got[1].1.line, 3);
        assert_eq!(got[1].1.hash_ids, vec![1, 7]);
        assert_eq!((got[1].1.input_tokens, got[1].1.output_tokens), (600, 3));
    }

    #[test]
    fn burstgpt_csv_by_header_with_model_filter() {
        let (_d, p) = file(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
             5,ChatGPT,472,18,490,Conversation log\n\
             5.5,GPT-4,1087,206,1293,Conversation log\n\
             7.25,ChatGPT,12,\"30\",42,API log\n",
        );
        let got = all(&p, TraceSelection::default()).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].0, ms(500));
        assert_eq!(got[2].0, ms(2250));
        assert_eq!((got[2].1.input_tokens, got[2].1.output_tokens), (12, 30));
        let r = TraceReader::open(&p, None, Some("ChatGPT".into())).unwrap();
        let mut s = TraceSource::new(r, TraceSelection::default());
        let mut lines = Vec::new();
        while let Some((_, e)) = s.next_request().unwrap() {
            lines.push(e.line);
        }
        assert_eq!(lines, vec![2, 4]);
    }

    #[test]
    fn plain_jsonl_speedup_and_window() {
        let text: String = (0..10)
            .map(|i| {
                format!(
                    "{{\"offset_ms\": {}, \"input_tokens\": 10, \"output_tokens\": 2}}\n",
                    i * 1000
                )
            })
            .collect();
        let (_d, p) = file(&text);
        let sel = TraceSelection {
            start: ms(2500),
            end: Some(ms(6000)),
            speedup: 2.0,
            max_model_len: None,
        };
        let got = all(&p, sel).unwrap();
        // Requests at 3, 4, 5 s of the trace; the first goes at once, then every 0.5 s.
        let offsets: Vec<Duration> = got.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, vec![ms(0), ms(500), ms(1000)]);
        assert_eq!(got[0].1.line, 4);
        let s = survey(&p, None, None, &TraceSelection::default(), Some(4)).unwrap();
        assert_eq!(s.requests, 4);
        assert_eq!(s.span, ms(3000));
        assert_eq!(s.mean_rate(), 1.0);
        assert_eq!(s.format, Some(TraceFormat::Jsonl));
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let good = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n";
        let cases = [
            (
                "{\"timestamp\": 5, \"input_length\": 10}",
                "2: field \"output_length\": missing",
            ),
            (
                "{\"timestamp\": 5, \"input_length\": -3, \"output_length\": 1}",
                "2: field \"input_length\": expected a token count, got -3",
            ),
            (
                "{\"timestamp\": 5, oops",
                "2: column 18: not a Mooncake line: key must be a string",
            ),
            (
                "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [\"a\"]}",
                "2: field \"hash_ids\": expected non-negative integers, got \"a\"",
            ),
            (
                "{\"timestamp\": 5, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1,2,3]}",
                "2: 3 hash_ids for an input of 600 tokens: at most 2 blocks of 512 tokens",
            ),
            (
                "{\"timestamp\": 5, \"input_length\": 2000000, \"output_length\": 1}",
                "2: input length 2000000 is above 1048576 tokens",
            ),
        ];
        for (bad, want) in cases {
            let (_d, p) = file(&format!("{good}{bad}\n"));
            let e = all(&p, TraceSelection::default()).unwrap_err();
            let place = format!("{}:{want}", p.display());
            assert!(e.starts_with(&place), "{e}\n  wanted {place}");
        }
    }

    #[test]
    fn requests_longer_than_the_context_are_refused() {
        let (_d, p) = file(
            "{\"offset_ms\": 0, \"input_tokens\": 4000, \"output_tokens\": 96}\n\
             {\"offset_ms\": 1, \"input_tokens\": 4000, \"output_tokens\": 97}\n",
        );
        let sel = TraceSelection {
            max_model_len: Some(4096),
            ..TraceSelection::default()
        };
        let e = survey(&p, None, None, &sel, None).unwrap_err();
        assert_eq!(
            e.0,
            format!(
                "{}:2: input 4000 + output 97 tokens exceed --max-model-len 4096",
                p.display()
            )
        );
        assert!(survey(&p, None, None, &TraceSelection::default(), None).is_ok());
    }

    #[test]
    fn backwards_timestamps_are_refused_naming_both_lines() {
        let (_d, p) = file(
            "{\"offset_ms\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n\
             {\"offset_ms\": 900, \"input_tokens\": 1, \"output_tokens\": 1}\n\
             {\"offset_ms\": 900, \"input_tokens\": 1, \"output_tokens\": 1}\n\
             {\"offset_ms\": 400, \"input_tokens\": 1, \"output_tokens\": 1}\n",
        );
        let e = survey(&p, None, None, &TraceSelection::default(), None).unwrap_err();
        assert!(
            e.0.starts_with(&format!(
                "{}:4: timestamp 0.400 s is earlier than line 3's 0.900 s",
                p.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn zero_lengths_are_skipped_and_counted() {
        let (_d, p) = file(
            "Timestamp,Model,Request tokens,Response tokens\n\
             1,ChatGPT,100,0\n\
             2,ChatGPT,100,5\n\
             3,ChatGPT,0,5\n",
        );
        let s = survey(&p, None, None, &TraceSelection::default(), None).unwrap();
        assert_eq!(s.requests, 1);
        assert_eq!(
            s.zero,
            ZeroSkips {
                count: 2,
                first_line: Some(2)
            }
        );
        assert_eq!(s.mean_rate(), f64::INFINITY);
    }

    #[test]
    fn undetectable_empty_and_missing_traces_are_usage_errors() {
        let (_d, p) = file("hello,world\n1,2\n");
        let e = TraceReader::open(&p, None, None).err().unwrap();
        assert!(e.0.contains(":1: cannot tell the trace format"), "{e}");
        let (_d2, p2) = file("\n\n");
        assert!(
            TraceReader::open(&p2, None, None)
                .err()
                .unwrap()
                .0
                .ends_with("the trace is empty")
        );
        let e = TraceReader::open(Path::new("/nonexistent/t.jsonl"), None, None)
            .err()
            .unwrap();
        assert!(
            e.0.starts_with("cannot read trace /nonexistent/t.jsonl"),
            "{e}"
        );
        let (_d3, p3) = file("Timestamp,Request tokens\n");
        let e = TraceReader::open(&p3, Some(TraceFormat::BurstGpt), None)
            .err()
            .unwrap();
        assert!(
            e.0.contains(":1: the BurstGPT header has no \"Response tokens\" column"),
            "{e}"
        );
        let (_d4, p4) = file("{\"offset_ms\": 0, \"input_tokens\": 0, \"output_tokens\": 1}\n");
        let e = survey(&p4, None, None, &TraceSelection::default(), None).unwrap_err();
        assert!(
            e.0.contains("every selected request has a zero length"),
            "{e}"
        );
        assert!("csv".parse::<TraceFormat>().is_err());
    }

    #[test]
    fn csv_cells_honour_quotes() {
        assert_eq!(
            split_csv("a,\"b,c\",\"d\"\"e\",\r"),
            vec!["a", "b,c", "d\"e", ""]
        );
    }
}
