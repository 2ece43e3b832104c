//! tracing-subscriber set-up: human or JSON lines on stderr, level from `--log-level`
//! (or `RUST_LOG` when set, for per-module filters). Colour only for a person at a
//! terminal: never in a file, a pipe, journald or a log collector, nor with `NO_COLOR`.

use std::ffi::OsStr;
use std::io::IsTerminal;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

use crate::cli::{LogArgs, LogFormat};

pub fn init(args: &LogArgs) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => {
            EnvFilter::try_new(&spec).with_context(|| format!("invalid RUST_LOG {spec:?}"))?
        }
        _ => EnvFilter::try_new(&args.log_level)
            .with_context(|| format!("invalid --log-level {:?}", args.log_level))?,
    };
    let no_color = std::env::var_os("NO_COLOR");
    let ansi = colour(
        args.log_format,
        std::io::stderr().is_terminal(),
        no_color.as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let result = match args.log_format {
        LogFormat::Human => builder.try_init(),
        // One flat object per line: the event's fields (`target`, `scenario`, `reason`,
        // …) next to `timestamp`, `level` and `message`. The module path is left out:
        // its key would be `target` too.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_target(false)
            .try_init(),
    };
    // A second init (tests calling run() twice) is harmless; keep the first subscriber.
    let _ = result;
    Ok(())
}

/// Whether log lines are coloured: human lines on a terminal, unless `NO_COLOR` is set
/// to anything but the empty string (no-color.org).
pub fn colour(format: LogFormat, stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    format == LogFormat::Human && stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_for_human_lines_on_a_terminal_without_no_color() {
        let set = Some(OsStr::new("1"));
        let empty = Some(OsStr::new(""));
        assert!(colour(LogFormat::Human, true, None));
        assert!(colour(LogFormat::Human, true, empty));
        assert!(!colour(LogFormat::Human, true, set));
        assert!(!colour(LogFormat::Human, false, None));
        assert!(!colour(LogFormat::Json, true, None));
    }
}
