//! Why an engine scrape failed: a reason, by which the log groups repeated failures
//! (`connect`, `timeout`, `http_3xx`, `http_4xx`, `http_5xx`, `body`, `format`), and
//! the error text that says what exactly went wrong.

use std::fmt;

/// What kind of failure, named like a probe's failure reasons where they mean the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrapeFailure {
    /// No HTTP answer: the connection could not be made or broke before a response.
    Connect,
    /// No whole answer within the scrape timeout.
    Timeout,
    Http3xx,
    Http4xx,
    Http5xx,
    /// The body broke off or exceeded the size limit.
    Body,
    /// Not UTF-8, not the exposition format, or no engine's metrics in it.
    Format,
}

impl ScrapeFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            ScrapeFailure::Connect => "connect",
            ScrapeFailure::Timeout => "timeout",
            ScrapeFailure::Http3xx => "http_3xx",
            ScrapeFailure::Http4xx => "http_4xx",
            ScrapeFailure::Http5xx => "http_5xx",
            ScrapeFailure::Body => "body",
            ScrapeFailure::Format => "format",
        }
    }

    /// The reason of a non-success HTTP status.
    pub fn of_status(status: reqwest::StatusCode) -> ScrapeFailure {
        if status.is_server_error() {
            ScrapeFailure::Http5xx
        } else if status.is_redirection() {
            ScrapeFailure::Http3xx
        } else {
            ScrapeFailure::Http4xx
        }
    }
}

/// A failed scrape: its reason and its error (with context).
#[derive(Debug)]
pub struct ScrapeError {
    pub reason: ScrapeFailure,
    error: anyhow::Error,
}

impl ScrapeError {
    pub fn new(reason: ScrapeFailure, error: impl Into<anyhow::Error>) -> ScrapeError {
        ScrapeError {
            reason,
            error: error.into(),
        }
    }
}

impl fmt::Display for ScrapeError {
    /// `{:#}` shows the whole chain of causes, like `anyhow::Error`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            write!(f, "{:#}", self.error)
        } else {
            write!(f, "{}", self.error)
        }
    }
}

impl std::error::Error for ScrapeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn statuses_and_chains() {
        let reason = |code| ScrapeFailure::of_status(reqwest::StatusCode::from_u16(code).unwrap());
        assert_eq!(reason(503).as_str(), "http_5xx");
        assert_eq!(reason(404).as_str(), "http_4xx");
        assert_eq!(reason(308).as_str(), "http_3xx");
        let inner: anyhow::Result<()> = Err(anyhow::anyhow!("connection refused"));
        let e = ScrapeError::new(
            ScrapeFailure::Connect,
            inner.context("engine metrics request failed").unwrap_err(),
        );
        assert_eq!(format!("{e}"), "engine metrics request failed");
        assert_eq!(
            format!("{e:#}"),
            "engine metrics request failed: connection refused"
        );
        // Wrapped again (the /props path), the chain reads the same.
        let wrapped = anyhow::Error::new(e);
        assert_eq!(
            format!("{wrapped:#}"),
            "engine metrics request failed: connection refused"
        );
    }
}
