//! tracing-subscriber set-up: human or JSON lines on stderr, level from `--log-level`
//! (or `RUST_LOG` when set, for per-module filters).

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
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match args.log_format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    // A second init (tests calling run() twice) is harmless; keep the first subscriber.
    let _ = result;
    Ok(())
}
