//! The `--trace*` flags checked into [`TraceOptions`], and the first pass over the
//! trace that proves every selected line good before anything is sent. What the replay
//! then does is `workload::replay`'s job.

use std::path::PathBuf;
use std::time::Duration;

use crate::bench::args::BenchArgs;
use crate::exit::UsageError;
use crate::workload::trace::{TraceFormat, TraceSelection, TraceSurvey, survey};

/// A checked `--trace` with what its first pass found.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceOptions {
    pub path: PathBuf,
    /// As given; `None` was detected (the survey says which).
    pub format: Option<TraceFormat>,
    /// BurstGPT `Model` filter.
    pub model: Option<String>,
    pub selection: TraceSelection,
    pub survey: TraceSurvey,
}

impl TraceOptions {
    /// The format replayed (given or detected).
    pub fn format(&self) -> TraceFormat {
        self.format
            .or(self.survey.format)
            .unwrap_or(TraceFormat::Jsonl)
    }
}

/// `--trace` and its flags, the trace read once through up to `warmup + num_requests`
/// selected requests. `None` without `--trace`.
pub fn parse_trace(a: &BenchArgs, warmup: u64) -> Result<Option<TraceOptions>, UsageError> {
    let Some(path) = &a.trace else {
        let given = [
            ("--trace-format", a.trace_format.is_some()),
            ("--trace-speedup", a.trace_speedup.is_some()),
            ("--trace-window", a.trace_window.is_some()),
            ("--trace-model", a.trace_model.is_some()),
            ("--max-model-len", a.max_model_len.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, set)| *set) {
            return Err(UsageError::new(format!("{name} needs --trace FILE")));
        }
        return Ok(None);
    };
    if a.duration.is_some() {
        return Err(UsageError::new(
            "--trace replays the trace's own times: cap it with --num-requests or \
             --trace-window, not --duration",
        ));
    }
    let format = a
        .trace_format
        .as_deref()
        .map(str::parse::<TraceFormat>)
        .transpose()
        .map_err(|e| UsageError::new(format!("--trace-format: {e}")))?;
    let speedup = a.trace_speedup.unwrap_or(1.0);
    if !(speedup > 0.0 && speedup.is_finite()) {
        return Err(UsageError::new(format!(
            "--trace-speedup {speedup} must be a finite number greater than 0"
        )));
    }
    let (start, end) = match &a.trace_window {
        Some(w) => parse_window(w)?,
        None => (Duration::ZERO, None),
    };
    if a.max_model_len == Some(0) {
        return Err(UsageError::new("--max-model-len must be at least 1"));
    }
    let selection = TraceSelection {
        start,
        end,
        speedup,
        max_model_len: a.max_model_len,
    };
    let cap = a.num_requests.map(|n| n.saturating_add(warmup));
    let survey = survey(path, format, a.trace_model.clone(), &selection, cap)?;
    if survey.requests <= warmup {
        return Err(UsageError::new(format!(
            "--warmup {} leaves none of the trace's {} selected requests to measure",
            warmup, survey.requests
        )));
    }
    Ok(Some(TraceOptions {
        path: path.clone(),
        format,
        model: a.trace_model.clone(),
        selection,
        survey,
    }))
}

/// `START..END`, either side optional, each a duration (a bare number is seconds).
fn parse_window(s: &str) -> Result<(Duration, Option<Duration>), UsageError> {
    let bad = |why: String| UsageError::new(format!("--trace-window {s:?}: {why}"));
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| bad("expected START..END, e.g. 10m..20m or 60..".into()))?;
    let side = |t: &str| -> Result<Option<Duration>, UsageError> {
        if t.trim().is_empty() {
            return Ok(None);
        }
        crate::duration::parse(t)
            .map(Some)
            .map_err(|e| bad(format!("{t:?} is not a duration: {e}")))
    };
    let start = side(a)?.unwrap_or(Duration::ZERO);
    let end = side(b)?;
    if end.is_some_and(|e| e <= start) {
        return Err(bad("END must be after START".into()));
    }
    Ok((start, end))
}

/// The replay's row key: its mean rate, to four significant digits (a trace has no
/// configured rate; the achieved and offered rates are measured as usual).
pub fn trace_rate(survey: &TraceSurvey) -> crate::rate::Rate {
    let r = survey.mean_rate();
    if !r.is_finite() || r <= 0.0 {
        return crate::rate::Rate::INFINITE;
    }
    let scale = 10f64.powi(3 - r.log10().floor() as i32);
    // Four significant digits of a positive rate stay positive.
    crate::rate::Rate::new((r * scale).round() / scale)
        .unwrap_or_else(|| crate::rate::Rate::as_written(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        let s = Duration::from_secs;
        assert_eq!(parse_window("10m..20m").unwrap(), (s(600), Some(s(1200))));
        assert_eq!(parse_window("60..").unwrap(), (s(60), None));
        assert_eq!(
            parse_window("..1.5").unwrap(),
            (s(0), Some(Duration::from_millis(1500)))
        );
        assert!(
            parse_window("5..5")
                .unwrap_err()
                .0
                .contains("END must be after START")
        );
        assert!(parse_window("5-10").unwrap_err().0.contains("START..END"));
        assert!(
            parse_window("x..10")
                .unwrap_err()
                .0
                .contains("\"x\" is not a duration")
        );
    }

    #[test]
    fn the_row_key_is_the_mean_rate_rounded() {
        let t = |requests, ms| TraceSurvey {
            requests,
            span: Duration::from_millis(ms),
            ..TraceSurvey::default()
        };
        assert_eq!(trace_rate(&t(200, 19_900)).per_second(), 10.0);
        assert_eq!(trace_rate(&t(4, 9_000)).per_second(), 0.3333);
        assert!(trace_rate(&t(5, 0)).is_infinite());
    }
}
