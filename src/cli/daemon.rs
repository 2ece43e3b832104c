//! `llmprobe daemon` arguments (clap only; `daemon::run_cli` turns them into a run, from
//! the [`RunOptions`] they convert to).

use std::path::PathBuf;

use clap::Args;

use crate::config::{Overrides, Shard};
use crate::daemon::RunOptions;
use crate::web::WebOptions;

#[derive(Debug, Clone, Args)]
pub struct DaemonArgs {
    /// The YAML config file (see examples/daemon.yaml and docs/config.schema.json).
    #[arg(long, value_name = "FILE", required_unless_present = "mock")]
    pub config: Option<PathBuf>,
    /// Validate the config file and exit: 0 when it is good, 2 with the error otherwise.
    #[arg(long = "config.check", requires = "config")]
    pub config_check: bool,
    /// With --config.check: a secret this machine cannot read (a secret or TLS file that
    /// is not here, an unset environment variable) is listed, not an error, and the
    /// check exits 0 when the rest is good. For configs whose secrets only the
    /// deployment has; a secret that is here is checked as always.
    #[arg(long = "config.check.allow-missing-secrets", requires = "config_check")]
    pub allow_missing_secrets: bool,
    /// Listen address of the HTTP server, overriding the config's `listen` (default
    /// 0.0.0.0:9464). Port 0 picks a free port; the line `llmprobe daemon listening on
    /// http://ADDR` on stdout says which.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// No config: start the embedded mock engine on 127.0.0.1:0 and probe it at a demo
    /// rate (a live demo of every metric).
    #[arg(long, conflicts_with = "config")]
    pub mock: bool,
    /// With --mock: a fault for the mock to inject, KIND[=PARAM][:PROBABILITY]
    /// (repeatable; see `llmprobe mock --help`), e.g. http_500:0.05.
    #[arg(long, value_name = "KIND[:P]", requires = "mock")]
    pub mock_fault: Vec<String>,
    /// Where this prober runs (e.g. eu-west-1): a `location` label on every llmprobe_*
    /// series; overrides the config's `location`.
    #[arg(long, value_name = "NAME", value_parser = parse_location)]
    pub location: Option<String>,
    /// Probe only this shard's share of the targets and discovered replicas, I of N
    /// (e.g. 0/3); overrides the config's `shard`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// TLS and basic auth for the HTTP server: a Prometheus exporter-toolkit web config
    /// file (tls_server_config, basic_auth_users, http_server_config.headers). Re-read
    /// when it or a certificate it names changes. See docs/daemon.md.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
    /// Enable `POST /-/reload`; without it the endpoint answers 403 (SIGHUP always
    /// reloads).
    #[arg(long = "web.enable-lifecycle")]
    pub web_enable_lifecycle: bool,
    /// Serve /-/healthy and /-/ready without basic auth or a client certificate, for
    /// kubelet probes. Everything else stays protected.
    #[arg(long = "web.health-unauthenticated")]
    pub web_health_unauthenticated: bool,
}

impl From<DaemonArgs> for RunOptions {
    fn from(a: DaemonArgs) -> Self {
        RunOptions {
            config: a.config,
            config_check: a.config_check,
            allow_missing_secrets: a.allow_missing_secrets,
            listen: a.listen,
            mock: a.mock,
            mock_fault: a.mock_fault,
            web: WebOptions {
                config_file: a.web_config_file,
                health_unauthenticated: a.web_health_unauthenticated,
                check_interval: None,
            },
            enable_lifecycle: a.web_enable_lifecycle,
            overrides: Overrides {
                location: a.location,
                shard: a.shard,
                // Read once, here: the export keeps its names for the process' life.
                semconv_opt_in: std::env::var(crate::otlp::semconv::OPT_IN_VAR).ok(),
            },
        }
    }
}

fn parse_location(s: &str) -> Result<String, String> {
    crate::config::shard::check_location(s).map(|()| s.to_string())
}
