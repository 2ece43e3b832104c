//! A pooled keep-alive connection that the server closed just as it was reused.
//!
//! Some servers (llama.cpp's `llama-server` among them) announce keep-alive and then
//! close the connection right after a streamed response. A request sent on that
//! connection in the instant before its FIN arrives fails with "connection closed before
//! message completed", although the server never saw it. curl and the OpenAI SDKs retry
//! such a request on a new connection; so does the client, once, and only when the
//! failed attempt opened no connection of its own (so it was a pooled one). A server
//! that closes a *fresh* connection without answering still fails the probe.

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
    let before = connects.get();
    match request.send().await {
        // Only a pooled connection can be stale: without reuse there is nothing to
        // retry. The retry is built only when it is sent.
        Err(e) if reuse && closed_before_response(&e) && connects.get() == before => {
            match retry() {
                Some(again) => again.send().await,
                None => Err(e),
            }
        }
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
