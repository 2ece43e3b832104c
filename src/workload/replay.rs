//! Trace replay as the runner sees it: an iterator of arrival offsets whose requests
//! are handed over by id. A builder thread reads the trace (as the run goes; it is
//! never held whole) and builds each request ahead of its arrival, so neither file
//! reading nor prompt building runs in the dispatcher: it only takes what is ready.
//! The first requests (all of them when they fit in memory, else
//! [`REPLAY_LOOKAHEAD`]) are built before the run's clock starts; if the builder ever
//! falls behind the trace, the wait shows as dispatch lag.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::RequestSpec;
use super::trace::TraceSource;
use super::trace_prompt::BlockPrompts;

/// Requests built ahead of their arrival: this many wait in the iterator, as many
/// again in the channel from the builder thread.
pub const REPLAY_LOOKAHEAD: usize = 64;

/// Built requests waiting for their dispatch, by arrival id. Cheap to clone.
#[derive(Clone, Default)]
pub struct Handoff(Arc<Mutex<HashMap<u64, RequestSpec>>>);

impl Handoff {
    /// The request of arrival `id`, once (taking it frees it).
    pub fn take(&self, id: u64) -> Option<RequestSpec> {
        self.lock().remove(&id)
    }

    fn put(&self, id: u64, spec: RequestSpec) {
        self.lock().insert(id, spec);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, RequestSpec>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a replay stopped early: a trace line or a prompt that failed. Cheap to clone.
#[derive(Clone, Default)]
pub struct ReplayFailure(Arc<Mutex<Option<String>>>);

impl ReplayFailure {
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, e: String) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    }
}

/// The arrival offsets of a replay. The k-th offset it yields is arrival id k, whose
/// request is then in the [`Handoff`]. It ends at the end of the selection, or at the
/// first failure (recorded in its [`ReplayFailure`]).
pub struct ReplayArrivals {
    ready: VecDeque<(Duration, RequestSpec)>,
    /// Most requests kept in `ready`.
    capacity: usize,
    rx: Receiver<(Duration, RequestSpec)>,
    next_id: u64,
    handoff: Handoff,
    failure: ReplayFailure,
}

impl ReplayArrivals {
    /// Starts the builder thread and waits for the first `prebuild` requests (at least
    /// [`REPLAY_LOOKAHEAD`]).
    pub fn start(
        source: TraceSource,
        prompts: BlockPrompts,
        prebuild: usize,
    ) -> std::io::Result<Self> {
        let capacity = prebuild.max(REPLAY_LOOKAHEAD);
        let (tx, rx) = sync_channel(REPLAY_LOOKAHEAD);
        let failure = ReplayFailure::default();
        let f = failure.clone();
        std::thread::Builder::new()
            .name("llmprobe-replay".into())
            .spawn(move || build_all(source, &prompts, &tx, &f))?;
        let mut ready = VecDeque::with_capacity(capacity);
        while ready.len() < capacity {
            match rx.recv() {
                Ok(x) => ready.push_back(x),
                Err(_) => break,
            }
        }
        Ok(ReplayArrivals {
            ready,
            capacity,
            rx,
            next_id: 0,
            handoff: Handoff::default(),
            failure,
        })
    }

    pub fn handoff(&self) -> Handoff {
        self.handoff.clone()
    }

    pub fn failure(&self) -> ReplayFailure {
        self.failure.clone()
    }

    /// Moves what the builder has finished into `ready`, without waiting.
    fn take_ready(&mut self) {
        while self.ready.len() < self.capacity {
            match self.rx.try_recv() {
                Ok(x) => self.ready.push_back(x),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
    }
}

/// The builder thread: every selected request of `source`, built, in order, until the
/// end, a failure, or the iterator is dropped.
fn build_all(
    mut source: TraceSource,
    prompts: &BlockPrompts,
    tx: &SyncSender<(Duration, RequestSpec)>,
    failure: &ReplayFailure,
) {
    let mut index = 0u64;
    loop {
        let (offset, entry) = match source.next_request() {
            Ok(Some(x)) => x,
            Ok(None) => return,
            Err(e) => return failure.set(e.0),
        };
        let spec = match prompts.spec(index, &entry) {
            Ok(spec) => spec,
            Err(e) => {
                return failure.set(format!(
                    "{}:{}: cannot build the prompt: {e:#}",
                    source.reader().path().display(),
                    entry.line
                ));
            }
        };
        index += 1;
        if tx.send((offset, spec)).is_err() {
            return; // the run is over
        }
    }
}

impl Iterator for ReplayArrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.take_ready();
        let (offset, spec) = match self.ready.pop_front() {
            Some(x) => x,
            // The builder is behind (or done): wait for it.
            None => self.rx.recv().ok()?,
        };
        self.handoff.put(self.next_id, spec);
        self.next_id += 1;
        Some(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::trace::{TraceReader, TraceSelection};

    fn replay(text: &str) -> (tempfile::TempDir, ReplayArrivals) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, text).unwrap();
        let r = TraceReader::open(&p, None, None).unwrap();
        let source = TraceSource::new(r, TraceSelection::default());
        (
            dir,
            ReplayArrivals::start(source, BlockPrompts::approximate(1), 0).unwrap(),
        )
    }

    #[test]
    fn offsets_in_order_and_requests_handed_over_by_id() {
        let text: String = (0..200)
            .map(|i| {
                format!(
                    "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": 3}}\n",
                    i * 10,
                    20 + i
                )
            })
            .collect();
        let (_d, mut r) = replay(&text);
        assert_eq!(r.ready.len(), REPLAY_LOOKAHEAD);
        let handoff = r.handoff();
        for id in 0..200u64 {
            assert_eq!(r.next(), Some(Duration::from_millis(id * 10)));
            // Never more than the look-ahead is held.
            assert!(r.ready.len() <= REPLAY_LOOKAHEAD);
            let spec = handoff.take(id).unwrap();
            assert_eq!(spec.prompt_tokens, 20 + id as u32);
            assert!(handoff.take(id).is_none());
        }
        assert_eq!(r.next(), None);
        assert!(r.failure().get().is_none());
    }

    #[test]
    fn a_bad_line_mid_trace_ends_the_arrivals_with_the_place() {
        let mut text: String = (0..100)
            .map(|i| format!("{{\"timestamp\": {i}, \"input_length\": 5, \"output_length\": 1}}\n"))
            .collect();
        text.push_str("{\"timestamp\": 200}\n");
        let (_d, r) = replay(&text);
        assert_eq!(r.count(), 100);
        let (_d, r) = replay(&text);
        let failure = r.failure();
        drop(r.collect::<Vec<_>>());
        let e = failure.get().unwrap();
        assert!(e.ends_with(":101: field \"input_length\": missing"), "{e}");
    }
}
