//! A pooled keep-alive connection that the server closed just as it was reused.
//!
//! Some servers (llama.cpp's `llama-server` among them) announce keep-alive and then
//! close the connection right after a streamed response. A request sent on that
//! connection in the instant before its FIN arrives fails with "connection closed before
//! message completed", although the server never saw it. curl and the OpenAI SDKs retry
//! such a request on a new connection; so does the client, once, and only when it had
//! opened a connection before the attempt (so the attempt may have taken a pooled one).
//! Whether it did cannot be told from the count of connections during the attempt: while
//! a request waits for a connection, the pool both dials a new one and takes the first
//! idle one that comes back, so the dial may finish (and count) while the request goes
//! out on the pooled connection. A client's first request, which can only go on a fresh
//! connection, is never retried: a server that closes it without answering fails the
//! probe.

use std::error::Error as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts the connections the HTTP client opens.
#[derive(Clone, Debug, Default)]
pub struct ConnectCounter(Arc<AtomicU64>);

impl ConnectCounter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// A connector layer for reqwest that bumps the count on each new connection.
    pub fn layer<C: Send + 'static>(
        &self,
    ) -> tower::util::MapResponseLayer<impl Fn(C) -> C + Clone + Send + Sync + 'static> {
        let count = self.0.clone();
        tower::util::MapResponseLayer::new(move |conn: C| {
            count.fetch_add(1, Ordering::Relaxed);
            conn
        })
    }
}

/// Sends `request`, and once more when it failed on a pooled connection the server had
/// closed (only with `reuse`: without a pool nothing is stale). Every request of the
/// client goes through here.
pub async fn send(
    request: reqwest::RequestBuilder,
    retry: impl FnOnce() -> Option<reqwest::RequestBuilder>,
    connects: &ConnectCounter,
    reuse: bool,
) -> reqwest::Result<reqwest::Response> {
    let pooled = connects.get() > 0;
    match request.send().await {
        // Only a pooled connection can be stale: without reuse, or before the first
        // connection, there is nothing to retry. The retry is built only when it is sent.
        Err(e) if reuse && pooled && closed_before_response(&e) => match retry() {
            Some(again) => again.send().await,
            None => Err(e),
        },
        sent => sent,
    }
}

/// True when the request failed because its connection closed before any response
/// byte (hyper's "incomplete message"), as a stale pooled connection does.
fn closed_before_response(e: &reqwest::Error) -> bool {
    let mut source = e.source();
    while let Some(err) = source {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message();
        }
        source = err.source();
    }
    false
}
