//! The `traceparent` headers the mock received, so a test can see what a client sent:
//! how many generating requests carried one, how many did not, and the latest values
//! (served at `GET /mock/traceparents`).

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::http::HeaderMap;

use crate::client::trace;

/// Values remembered at most: the oldest is forgotten first.
pub const CAPACITY: usize = 256;

#[derive(Debug, Default)]
pub struct TraceLog {
    inner: Mutex<Counts>,
}

/// What `GET /mock/traceparents` answers.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Generating requests that carried a `traceparent` header.
    pub with: u64,
    /// Generating requests without one.
    pub without: u64,
    /// The latest values received, oldest first (at most [`CAPACITY`]).
    pub recent: VecDeque<String>,
}

impl TraceLog {
    /// Notes one generating request's headers.
    pub fn note(&self, headers: &HeaderMap) {
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match headers.get(trace::HEADER) {
            Some(v) => {
                c.with += 1;
                if c.recent.len() == CAPACITY {
                    c.recent.pop_front();
                }
                c.recent
                    .push_back(String::from_utf8_lossy(v.as_bytes()).into_owned());
            }
            None => c.without += 1,
        }
    }

    pub fn snapshot(&self) -> Counts {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_with_and_without_and_keeps_the_latest_values() {
        let log = TraceLog::default();
        let mut with = HeaderMap::new();
        log.note(&with);
        for i in 0..CAPACITY + 2 {
            with.insert(trace::HEADER, format!("v{i}").parse().unwrap());
            log.note(&with);
        }
        let c = log.snapshot();
        assert_eq!((c.with, c.without), (CAPACITY as u64 + 2, 1));
        assert_eq!(c.recent.len(), CAPACITY);
        assert_eq!(c.recent.front().map(String::as_str), Some("v2"));
        assert_eq!(c.recent.back().map(String::as_str), Some("v257"));
    }
}
