//! When each token of a streamed answer was due and really left the engine, kept on
//! request for an in-process caller that needs the engine's actual timing and not its
//! configured one (the self-check judges the client against what the engine did, so the
//! engine's own lateness is not counted as the client's; `bench --mock-notes` writes
//! them out). Entries are keyed by the request body, which such a caller can rebuild
//! from what it sent.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Answers remembered at most unless a caller asks for more: the oldest is forgotten
/// first, so entries nobody takes (a client that went away) do not grow the log.
pub const DEFAULT_CAPACITY: usize = 256;

/// Token chunks remembered per answer at most.
const MAX_CHUNKS: usize = 4096;

/// One answer as the engine sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emission {
    /// When the engine had read the request: the start of its TTFT.
    pub arrival: Instant,
    /// Each chunk carrying tokens, in order.
    pub chunks: Vec<EmittedChunk>,
}

/// One chunk carrying tokens: when its schedule said it was due, and when it was
/// handed to the HTTP layer (never before `due`; the difference is the engine's own
/// lateness, which is the machine's and not the client's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmittedChunk {
    pub due: Instant,
    pub out: Instant,
    pub tokens: u32,
}

impl Emission {
    /// The engine's actual TTFT: from reading the request to handing over the first
    /// token chunk. `None` before any token.
    pub fn ttft(&self) -> Option<Duration> {
        Some(self.chunks.first()?.out.duration_since(self.arrival))
    }

    /// The engine's actual gaps between consecutive token chunks.
    pub fn gaps(&self) -> impl Iterator<Item = Duration> + '_ {
        self.chunks
            .windows(2)
            .map(|w| w[1].out.duration_since(w[0].out))
    }
}

/// One answer as a JSON line (`bench --mock-notes`), times in ms since the log was
/// made: when the request was read, and each token chunk's deadline and leaving.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EmissionLine {
    pub arrival_ms: f64,
    pub chunks: Vec<ChunkLine>,
}

/// One token chunk of an [`EmissionLine`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChunkLine {
    pub due_ms: f64,
    pub out_ms: f64,
    pub tokens: u32,
}

/// The log an engine writes its answers' emissions to, for one reader in the process.
#[derive(Debug)]
pub struct EmissionLog {
    entries: Mutex<VecDeque<(u64, Emission)>>,
    capacity: usize,
    /// The zero of [`EmissionLine`]'s times.
    created: Instant,
}

impl EmissionLog {
    /// A log of the [`DEFAULT_CAPACITY`] latest answers.
    pub fn new() -> Arc<EmissionLog> {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// A log of the `capacity` latest answers (at least one).
    pub fn with_capacity(capacity: usize) -> Arc<EmissionLog> {
        Arc::new(EmissionLog {
            entries: Mutex::default(),
            capacity: capacity.max(1),
            created: Instant::now(),
        })
    }

    /// Every answer still held, oldest first, leaving the log empty.
    pub fn drain(&self) -> Vec<Emission> {
        self.lock().drain(..).map(|(_, e)| e).collect()
    }

    /// [`drain`](Self::drain), as JSON lines.
    pub fn drain_lines(&self) -> Vec<EmissionLine> {
        let ms = |t: Instant| t.saturating_duration_since(self.created).as_secs_f64() * 1e3;
        self.drain()
            .into_iter()
            .map(|e| EmissionLine {
                arrival_ms: ms(e.arrival),
                chunks: e
                    .chunks
                    .iter()
                    .map(|c| ChunkLine {
                        due_ms: ms(c.due),
                        out_ms: ms(c.out),
                        tokens: c.tokens,
                    })
                    .collect(),
            })
            .collect()
    }

    /// Starts the entry of the request whose body is `body`, read at `arrival`.
    pub(crate) fn open(self: &Arc<Self>, body: &[u8], arrival: Instant) -> EmissionRecorder {
        let key = key(body);
        let mut entries = self.lock();
        if entries.len() >= self.capacity {
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
    /// Notes that a chunk of `tokens` tokens, due at `due`, is being handed to the HTTP
    /// layer now.
    pub(crate) fn chunk_out(&self, due: Instant, tokens: u32) {
        let out = Instant::now();
        let mut entries = self.log.lock();
        if let Some((_, e)) = entries.iter_mut().rev().find(|(k, _)| *k == self.key)
            && e.chunks.len() < MAX_CHUNKS
        {
            e.chunks.push(EmittedChunk { due, out, tokens });
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
        rec.chunk_out(arrival, 1);
        tokio::time::advance(Duration::from_millis(5)).await;
        rec.chunk_out(arrival, 1);
        tokio::time::advance(Duration::from_millis(6)).await;
        rec.chunk_out(arrival, 2);
        other.chunk_out(arrival, 1);
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
        for i in 0..=DEFAULT_CAPACITY {
            drop(log.open(i.to_string().as_bytes(), Instant::now()));
        }
        assert_eq!(log.take(b"0"), None);
        assert!(log.take(b"1").is_some());
        assert!(log.take(DEFAULT_CAPACITY.to_string().as_bytes()).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_larger_log_keeps_more_and_drains_oldest_first() {
        let log = EmissionLog::with_capacity(3);
        for i in 0..4u32 {
            let rec = log.open(i.to_string().as_bytes(), Instant::now());
            tokio::time::advance(Duration::from_millis(1)).await;
            rec.chunk_out(Instant::now(), i);
        }
        let tokens: Vec<u32> = log.drain().iter().map(|e| e.chunks[0].tokens).collect();
        assert_eq!(tokens, [1, 2, 3]);
        assert!(log.drain().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn lines_are_in_ms_since_the_log_was_made() {
        let log = EmissionLog::new();
        tokio::time::advance(Duration::from_millis(10)).await;
        let arrival = Instant::now();
        let rec = log.open(b"a", arrival);
        tokio::time::advance(Duration::from_micros(50_250)).await;
        rec.chunk_out(arrival + Duration::from_millis(50), 3);
        let lines = log.drain_lines();
        assert_eq!(
            lines,
            [EmissionLine {
                arrival_ms: 10.0,
                chunks: vec![ChunkLine {
                    due_ms: 60.0,
                    out_ms: 60.25,
                    tokens: 3
                }],
            }]
        );
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
