//! `llmprobe mock` as a process: start the server, print the listening line that
//! scripts parse, serve until SIGINT/SIGTERM, shut down gracefully.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use super::{MockConfig, start};
use crate::cli::MockArgs;

pub async fn run(args: &MockArgs) -> anyhow::Result<ExitCode> {
    let config = MockConfig::from_args(args)?;
    tracing::debug!(?config, "mock configuration");
    let server = start(config, args.listen).await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "llmprobe mock listening on http://{}", server.addr())
            .and_then(|()| out.flush())
            .context("writing the listening line to stdout")?;
    }
    wait_for_signal().await?;
    tracing::info!("signal received, mock shutting down");
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("waiting for SIGINT")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    Ok(())
}
