//! Why a discovery input or a refresh failed: one error type with a short reason for
//! the daemon's error counter and a message that names the input.

use std::path::PathBuf;

/// A discovery failure. Configuration mistakes (`Input`) are found before anything
/// runs; the others happen on a refresh, which then keeps the last good set.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// A bad value in the configuration: a URL, a port, a name, a pattern, a label.
    #[error("{what}: {reason}")]
    Input { what: String, reason: String },
    /// A file_sd file or directory that cannot be read.
    #[error("read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A target-group document (file_sd or http_sd) that is not the Prometheus format.
    #[error("{origin}: {reason}")]
    Format { origin: String, reason: String },
    /// An http_sd request that failed or did not answer 200.
    #[error("GET {url}: {reason}")]
    Http { url: String, reason: String },
    /// A DNS lookup that failed or found no records.
    #[error("DNS {name}: {reason}")]
    Dns { name: String, reason: String },
}

impl DiscoveryError {
    pub(crate) fn input(what: impl Into<String>, reason: impl Into<String>) -> Self {
        DiscoveryError::Input {
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// A short, bounded name of the failure's kind, fit for a metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            DiscoveryError::Input { .. } => "input",
            DiscoveryError::Read { .. } => "read",
            DiscoveryError::Format { .. } => "format",
            DiscoveryError::Http { .. } => "http",
            DiscoveryError::Dns { .. } => "dns",
        }
    }
}
