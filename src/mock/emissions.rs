//! When each token of a streamed answer really left the engine, kept on request for an
//! in-process caller that needs the engine's actual timing and not its configured one
//! (the self-check judges the client against what the engine did, so the engine's own
//! lateness is not counted as the client's). Entries are keyed by the request body,
//! which such a caller can rebuild from what it sent.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Answers remembered at most: the oldest is forgotten first, so entries nobody takes
/// (a client that went away) do not grow the log.
const CAPACITY: usize = 256;

/// Token chunks remembered per answer at most.
const MAX_CHUNKS: usize = 4096;

/// One answer as the engine sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emission {
    /// When the engine had read the request: the start of its TTFT.
    pub arrival: Instant,
    /// When each chunk carrying tokens was handed to the HTTP layer, in order.
    pub chunks: Vec<Instant>,
}

impl Emission {
    /// The engine's actual TTFT: from reading the request to handing over the first
    /// token chunk. `None` before any token.
    pub fn ttft(&self) -> Option<Duration> {
        Some(self.chunks.first()?.duration_since(self.arrival))
    }

    /// The engine's actual gaps between consecutive token chunks.
    pub fn gaps(&self) -> impl Iterator<Item = Duration> + '_ {
        self.chunks.windows(2).map(|w| w[1].duration_since(w[0]))
    }
}

/// The log an engine writes its answers' emissions to, for one reader in the process.
#[derive(Debug, Default)]
pub struct EmissionLog {
    entries: Mutex<VecDeque<(u64, Emission)>>,
}

impl EmissionLog {
    pub fn new() -> Arc<EmissionLog> {
        Arc::default()
    }

    /// Starts the entry of the request whose body is `body`, read at `arrival`.
    pub(crate) fn open(self: &Arc<Self>, body: &[u8], arrival: Instant) -> EmissionRecorder {
        let key = key(body);
        let mut entries = self.lock();
        if entries.len() == CAPACITY {
            entries.pop_front();
        }
        entries.push_back((
            key,
            Emission {
                arrival,
                chunks: Vec::new(),
            },
        ));
        EmissionRecorder {
            log: self.clone(),
            key,
        }
    }

    /// Takes the entry of the request whose body was `body` (the latest one, should a
    /// body have been sent twice).
    pub fn take(&self, body: &[u8]) -> Option<Emission> {
        let key = key(body);
        let mut entries = self.lock();
        let at = entries.iter().rposition(|(k, _)| *k == key)?;
        entries.remove(at).map(|(_, e)| e)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, Emission)>> {
        // A panic elsewhere cannot leave an entry half-written: each change is one push.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where one answer's token chunks are noted as they leave.
#[derive(Debug)]
pub(crate) struct EmissionRecorder {
    log: Arc<EmissionLog>,
    key: u64,
}

impl EmissionRecorder {
    /// Notes that a token chunk is being handed to the HTTP layer now.
    pub(crate) fn chunk_out(&self) {
        let now = Instant::now();
        let mut entries = self.log.lock();
        if let Some((_, e)) = entries.iter_mut().rev().find(|(k, _)| *k == self.key)
            && e.chunks.len() < MAX_CHUNKS
        {
            e.chunks.push(now);
        }
    }
}

/// The key of a request body: a hash, since the log lives and is read in one process.
fn key(body: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(body);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_entry_holds_what_left_and_is_taken_once() {
        let log = EmissionLog::new();
        let arrival = Instant::now();
        let rec = log.open(b"{\"a\":1}", arrival);
        let other = log.open(b"{\"b\":2}", arrival);
        tokio::time::advance(Duration::from_millis(50)).await;
        rec.chunk_out();
        tokio::time::advance(Duration::from_millis(5)).await;
        rec.chunk_out();
        tokio::time::advance(Duration::from_millis(6)).await;
        rec.chunk_out();
        other.chunk_out();
        let e = log.take(b"{\"a\":1}").unwrap();
        assert_eq!(e.ttft(), Some(Duration::from_millis(50)));
        let gaps: Vec<Duration> = e.gaps().collect();
        assert_eq!(gaps, [Duration::from_millis(5), Duration::from_millis(6)]);
        assert_eq!(log.take(b"{\"a\":1}"), None);
        assert_eq!(
            log.take(b"{\"b\":2}").unwrap().ttft(),
            Some(Duration::from_millis(61))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_oldest_entry_goes_first_when_full() {
        let log = EmissionLog::new();
        for i in 0..=CAPACITY {
            drop(log.open(i.to_string().as_bytes(), Instant::now()));
        }
        assert_eq!(log.take(b"0"), None);
        assert!(log.take(b"1").is_some());
        assert!(log.take(CAPACITY.to_string().as_bytes()).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_without_tokens_has_no_ttft() {
        let log = EmissionLog::new();
        drop(log.open(b"x", Instant::now()));
        let e = log.take(b"x").unwrap();
        assert_eq!(e.ttft(), None);
        assert_eq!(e.gaps().count(), 0);
    }
}
