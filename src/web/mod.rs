//! The daemon's web security, the way Prometheus exporters do it: `--web.config.file`
//! in the exporter-toolkit format (TLS with rustls, client certificates, bcrypt basic
//! auth, response headers, rate limit), re-read when it or a file it names changes.
//! `exposition` puts its endpoints behind it.

pub mod auth;
pub mod file;
pub mod guard;
pub mod listener;
pub mod state;
pub mod tls;

pub use guard::{HEALTH_PATHS, guard};
pub use listener::{ConnInfo, WebListener};
pub use state::{WEB_CONFIG_CHECK_INTERVAL, Web, WebOptions};
