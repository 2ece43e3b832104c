//! The fake engine's state and timing: admission (with `max_running`, a FIFO queue),
//! the absolute emission schedule of one request, KV-block accounting and the
//! numbers behind `/metrics`. No HTTP here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::MockConfig;
use super::emissions::{EmissionLog, EmissionRecorder};
use super::fault::FaultKind;
use super::jitter::{Jitter, scale};
use super::metrics::{E2E_BUCKETS, Histogram, ITL_BUCKETS, Snapshot, TTFT_BUCKETS};
use super::prefix_cache::PrefixCache;
use crate::runner::Timer;

pub struct Engine {
    pub cfg: MockConfig,
    /// How chunk deadlines are waited for (`MockConfig::precise_timer`).
    pub timer: Timer,
    slots: Option<Arc<Semaphore>>,
    running: AtomicU64,
    waiting: AtomicU64,
    kv_blocks_used: AtomicU64,
    prompt_tokens_total: AtomicU64,
    generation_tokens_total: AtomicU64,
    request_success_total: AtomicU64,
    prefix_cache_queries_total: AtomicU64,
    prefix_cache_hits_total: AtomicU64,
    hists: Mutex<Hists>,
    fault_rng: Mutex<StdRng>,
    seq: AtomicU64,
    pub shutdown: CancellationToken,
    /// What cached prompt tokens are reported from (None: `prefix_cache` off).
    pub prefix_cache: Option<PrefixCache>,
    /// Where streamed answers' token chunks are noted as they leave (None: nobody asked).
    pub emissions: Option<Arc<EmissionLog>>,
    /// The `traceparent` headers of the generating requests.
    pub traces: super::trace_log::TraceLog,
    /// The LoRA adapters it serves.
    pub lora: Arc<super::lora::Lora>,
    /// The golden questions' words and reference answers (`--golden`).
    golden: Vec<(Vec<u64>, Arc<[String]>)>,
    /// The energy its batch draws (`gpu` set).
    pub power: Option<super::gpu::PowerMeter>,
    /// `host:port` the mock listens on (its GPUs' `pod`).
    pub address: String,
    /// The access tokens its token endpoint issued (Vertex).
    pub google_tokens: super::google_tokens::TokenStore,
}

struct Hists {
    ttft: Histogram,
    itl: Histogram,
    e2e: Histogram,
}

impl Engine {
    /// Where the token chunks of the request with `body`, read at `arrival`, are noted
    /// as they leave; `None` unless a caller asked for the emission log.
    pub fn recorder(&self, body: &[u8], arrival: Instant) -> Option<EmissionRecorder> {
        self.emissions.as_ref().map(|log| log.open(body, arrival))
    }

    pub fn new(cfg: MockConfig, timer: Timer, shutdown: CancellationToken) -> Self {
        let slots = cfg
            .max_running
            .map(|n| Arc::new(Semaphore::new(n as usize)));
        let fault_rng = StdRng::seed_from_u64(cfg.seed);
        let cfg_gpu = cfg.gpu;
        let lora = Arc::new(super::lora::Lora::new(&cfg.lora_adapters));
        let prefix_cache = cfg
            .prefix_cache
            .then(|| PrefixCache::new(cfg.block_size, cfg.num_gpu_blocks));
        let golden = cfg.golden.as_ref().map_or(Vec::new(), |set| {
            set.questions()
                .iter()
                .map(|q| {
                    let mut words = Vec::new();
                    super::prefix_cache::push_words(&mut words, &q.text);
                    (words, super::answer::split_answer(&q.answer).into())
                })
                .collect()
        });
        Self {
            prefix_cache,
            emissions: None,
            cfg,
            timer,
            slots,
            running: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            kv_blocks_used: AtomicU64::new(0),
            prompt_tokens_total: AtomicU64::new(0),
            generation_tokens_total: AtomicU64::new(0),
            request_success_total: AtomicU64::new(0),
            prefix_cache_queries_total: AtomicU64::new(0),
            prefix_cache_hits_total: AtomicU64::new(0),
            hists: Mutex::new(Hists {
                ttft: Histogram::new(TTFT_BUCKETS),
                itl: Histogram::new(ITL_BUCKETS),
                e2e: Histogram::new(E2E_BUCKETS),
            }),
            fault_rng: Mutex::new(fault_rng),
            seq: AtomicU64::new(0),
            shutdown,
            traces: Default::default(),
            lora,
            golden,
            power: cfg_gpu.map(super::gpu::PowerMeter::new),
            address: String::new(),
            google_tokens: Default::default(),
        }
    }

    /// The reference answer of the golden question a prompt of these words ends with
    /// (after any nonce or prefix), the longest such question when several do.
    pub fn golden_answer(&self, words: &[u64]) -> Option<Arc<[String]>> {
        self.golden
            .iter()
            .filter(|(q, _)| !q.is_empty() && words.ends_with(q))
            .max_by_key(|(q, _)| q.len())
            .map(|(_, a)| a.clone())
    }

    /// How many tokens of a prompt of these words the prefix cache holds (None: the
    /// cache is off). The prompt's blocks are remembered.
    pub fn cached_prefix(&self, words: &[u64]) -> Option<u32> {
        let cache = self.prefix_cache.as_ref()?;
        let tokens = u32::try_from(words.len()).unwrap_or(u32::MAX);
        let hit = cache.lookup(&cache.keys(words), tokens);
        self.prefix_cache_queries_total
            .fetch_add(u64::from(tokens), Ordering::Relaxed);
        self.prefix_cache_hits_total
            .fetch_add(u64::from(hit), Ordering::Relaxed);
        Some(hit)
    }

    /// A per-request sequence number (ids, per-request jitter seeds).
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Draws the configured faults in order, one uniform number each, from the seeded
    /// fault RNG; the first that hits applies. Requests draw in arrival order.
    pub fn draw_fault(&self) -> Option<FaultKind> {
        if self.cfg.faults.is_empty() {
            return None;
        }
        let mut rng = self.fault_rng.lock().unwrap_or_else(|p| p.into_inner());
        for spec in &self.cfg.faults {
            let u: f64 = rng.random();
            if u < spec.probability {
                return Some(spec.kind);
            }
        }
        None
    }

    /// Sleeps for the configured stall (the stall faults), cut short by shutdown.
    pub async fn stall(&self) {
        tokio::select! {
            _ = tokio::time::sleep(self.cfg.stall) => {}
            _ = self.shutdown.cancelled() => {}
        }
    }

    /// Output tokens for a request: `--output-tokens`, else its max tokens, else 16.
    pub fn output_tokens(&self, requested: Option<u32>) -> u32 {
        self.cfg
            .output_tokens
            .or(requested)
            .unwrap_or(super::request::DEFAULT_MAX_TOKENS)
    }

    /// Waits for a batch slot (FIFO) unless `gone` resolves first (client left or
    /// shutdown), then counts the request as running. `arrival` is when the body was read.
    /// The answer's schedule starts at `arrival` when a slot was free (whatever the
    /// runtime took to get here), else when one became free: queueing is what delays it.
    pub async fn admit(
        self: &Arc<Self>,
        prompt_tokens: u32,
        arrival: Instant,
        gone: impl std::future::Future<Output = ()>,
    ) -> Option<Running> {
        let (permit, start) = match &self.slots {
            None => (None, arrival),
            Some(sem) => match sem.clone().try_acquire_owned() {
                Ok(p) => (Some(p), arrival),
                Err(_) => {
                    let _waiting = CountGuard::new(&self.waiting);
                    tokio::select! {
                        p = sem.clone().acquire_owned() => (Some(p.ok()?), Instant::now()),
                        _ = gone => return None,
                    }
                }
            },
        };
        self.running.fetch_add(1, Ordering::SeqCst);
        if let Some(p) = &self.power {
            p.joined(start);
        }
        self.prompt_tokens_total
            .fetch_add(u64::from(prompt_tokens), Ordering::Relaxed);
        let mut run = Running {
            engine: self.clone(),
            _permit: permit,
            arrival,
            start,
            context_tokens: u64::from(prompt_tokens),
            blocks_held: 0,
            first: None,
            last: None,
        };
        run.update_blocks();
        Some(run)
    }

    /// Requests running now other than the caller (the batch-slowdown factor's input).
    fn others_running(&self) -> u64 {
        self.running.load(Ordering::SeqCst).saturating_sub(1)
    }

    /// The dcgm-exporter page of its GPUs, if it has any.
    pub fn gpu_page(&self) -> Option<String> {
        let meter = self.power.as_ref()?;
        Some(super::gpu::render(
            &meter.model(),
            &meter.read(),
            &self.address,
            self.kv_blocks_used.load(Ordering::SeqCst),
        ))
    }

    pub fn snapshot(&self) -> Snapshot {
        let h = self.hists.lock().unwrap_or_else(|p| p.into_inner());
        Snapshot {
            model: self.cfg.model.clone(),
            running: self.running.load(Ordering::SeqCst),
            waiting: self.waiting.load(Ordering::SeqCst),
            kv_blocks_used: self.kv_blocks_used.load(Ordering::SeqCst),
            num_gpu_blocks: self.cfg.num_gpu_blocks,
            block_size: self.cfg.block_size,
            prompt_tokens_total: self.prompt_tokens_total.load(Ordering::Relaxed),
            generation_tokens_total: self.generation_tokens_total.load(Ordering::Relaxed),
            request_success_total: self.request_success_total.load(Ordering::Relaxed),
            prefix_cache_queries_total: self.prefix_cache_queries_total.load(Ordering::Relaxed),
            prefix_cache_hits_total: self.prefix_cache_hits_total.load(Ordering::Relaxed),
            ttft: h.ttft.clone(),
            itl: h.itl.clone(),
            e2e: h.e2e.clone(),
        }
    }
}

/// Increments a gauge now, decrements it on drop (also when the future is dropped).
struct CountGuard<'a>(&'a AtomicU64);

impl<'a> CountGuard<'a> {
    fn new(c: &'a AtomicU64) -> Self {
        c.fetch_add(1, Ordering::SeqCst);
        Self(c)
    }
}

impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request holding a batch slot. Dropping it frees the slot and its KV blocks.
pub struct Running {
    engine: Arc<Engine>,
    _permit: Option<OwnedSemaphorePermit>,
    arrival: Instant,
    /// When the request got its slot: the schedule's time zero.
    pub start: Instant,
    context_tokens: u64,
    blocks_held: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Running {
    /// Holds ceil(context / block_size) blocks, like a paged KV cache.
    fn update_blocks(&mut self) {
        let bs = u64::from(self.engine.cfg.block_size.max(1));
        let want = self.context_tokens.div_ceil(bs);
        if want > self.blocks_held {
            self.engine
                .kv_blocks_used
                .fetch_add(want - self.blocks_held, Ordering::SeqCst);
            self.blocks_held = want;
        }
    }

    /// Records `tokens` tokens written now: TTFT (from arrival, so queueing counts)
    /// for the first chunk, else one ITL observation per chunk gap (vLLM observes one
    /// per engine step, and a multi-token chunk is one step).
    pub fn record_chunk(&mut self, tokens: u32) {
        let now = Instant::now();
        {
            let mut h = self.engine.hists.lock().unwrap_or_else(|p| p.into_inner());
            match self.last {
                None => h.ttft.observe((now - self.arrival).as_secs_f64()),
                Some(prev) => h.itl.observe((now - prev).as_secs_f64()),
            }
        }
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.engine
            .generation_tokens_total
            .fetch_add(u64::from(tokens), Ordering::Relaxed);
        self.context_tokens += u64::from(tokens);
        self.update_blocks();
    }

    /// The request completed normally.
    pub fn finish(&self) {
        let now = Instant::now();
        let mut h = self.engine.hists.lock().unwrap_or_else(|p| p.into_inner());
        h.e2e.observe((now - self.arrival).as_secs_f64());
        self.engine
            .request_success_total
            .fetch_add(1, Ordering::Relaxed);
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.engine
            .kv_blocks_used
            .fetch_sub(self.blocks_held, Ordering::SeqCst);
        self.engine.running.fetch_sub(1, Ordering::SeqCst);
        if let Some(p) = &self.engine.power {
            p.change(false);
        }
    }
}

/// The absolute emission schedule of one request. The first content chunk (1 token)
/// is due at start + ttft; each later chunk of k tokens is due k token-times after the
/// previous deadline, a token-time being itl × (1 + batch_slowdown × others running),
/// sampled when the chunk is scheduled. Deadlines accumulate durations, never measured
/// sleeps, so the schedule does not drift.
pub struct Schedule {
    next_due: Instant,
    remaining: u32,
    emitted: u32,
    tokens_per_chunk: u32,
    itl: Duration,
    batch_slowdown: f64,
    jitter: Jitter,
    rng: StdRng,
}

impl Schedule {
    pub fn new(cfg: &MockConfig, start: Instant, output_tokens: u32, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let ttft = cfg.jitter.apply(cfg.ttft, &mut rng);
        Self {
            next_due: start + ttft,
            remaining: output_tokens,
            emitted: 0,
            tokens_per_chunk: cfg.tokens_per_chunk.max(1),
            itl: cfg.itl,
            batch_slowdown: cfg.batch_slowdown,
            jitter: cfg.jitter,
            rng,
        }
    }

    /// When the first content chunk is due (used by faults that replace it).
    pub fn first_due(&self) -> Instant {
        self.next_due
    }

    /// The next chunk: (deadline, tokens), or None when all tokens are out.
    /// `others_running` is the batch size minus this request.
    pub fn next_chunk(&mut self, others_running: u64) -> Option<(Instant, u32)> {
        if self.remaining == 0 {
            return None;
        }
        let k = if self.emitted == 0 {
            1
        } else {
            self.remaining.min(self.tokens_per_chunk)
        };
        if self.emitted > 0 {
            let per_token = scale(self.itl, 1.0 + self.batch_slowdown * others_running as f64);
            let mut gap = Duration::ZERO;
            for _ in 0..k {
                gap += self.jitter.apply(per_token, &mut self.rng);
            }
            self.next_due += gap;
        }
        self.remaining -= k;
        self.emitted += k;
        Some((self.next_due, k))
    }

    /// Tokens scheduled so far (including the chunk just returned).
    pub fn emitted(&self) -> u32 {
        self.emitted
    }

    /// Moves every later deadline by `d` (a stall fault).
    pub fn delay(&mut self, d: Duration) {
        self.next_due += d;
    }

    /// The next chunk for a running request: the batch size comes from the engine.
    pub fn next_for(&mut self, run: &Running) -> Option<(Instant, u32)> {
        self.next_chunk(run.engine().others_running())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_golden_question_is_found_after_its_nonce() {
        let set = crate::check::GoldenSet::parse(
            concat!(
                r#"{"question": "What is 2 + 2?", "number": 4}"#,
                "\n",
                r#"{"question": "Again: What is 2 + 2?", "number": 5, "tolerance": 1}"#,
            ),
            "s",
        )
        .unwrap();
        let engine = Engine::new(
            MockConfig {
                golden: Some(Arc::new(set)),
                ..MockConfig::default()
            },
            Timer::Tokio,
            CancellationToken::new(),
        );
        let words = |t: &str| {
            let mut w = Vec::new();
            crate::mock::prefix_cache::push_words(&mut w, t);
            w
        };
        let answer = |t: &str| engine.golden_answer(&words(t)).map(|a| a.concat());
        assert_eq!(answer("n-1234 What is 2 + 2?").as_deref(), Some("4"));
        // The longest question the prompt ends with.
        assert_eq!(answer("n-9 Again: What is 2 + 2?").as_deref(), Some("5"));
        assert_eq!(answer("What is 2 + 3?"), None);
    }

    fn cfg(tpc: u32, itl_us: u64, slowdown: f64) -> MockConfig {
        MockConfig {
            ttft: Duration::from_millis(50),
            itl: Duration::from_micros(itl_us),
            tokens_per_chunk: tpc,
            batch_slowdown: slowdown,
            ..MockConfig::default()
        }
    }

    #[test]
    fn schedule_is_absolute_with_multi_token_chunks() {
        let t0 = Instant::now();
        let mut s = Schedule::new(&cfg(4, 2500, 0.0), t0, 10, 1);
        let got: Vec<_> = std::iter::from_fn(|| s.next_chunk(0))
            .map(|(t, k)| ((t - t0).as_micros(), k))
            .collect();
        // 1 token at ttft, then 4, 4, and the short last chunk of 1 token.
        assert_eq!(
            got,
            vec![(50_000, 1), (60_000, 4), (70_000, 4), (72_500, 1)]
        );
    }

    #[test]
    fn batch_slowdown_scales_token_time_by_others_running() {
        let t0 = Instant::now();
        let mut s = Schedule::new(&cfg(1, 10_000, 0.5), t0, 3, 1);
        assert_eq!(
            s.next_chunk(3).map(|(t, _)| t - t0),
            Some(Duration::from_millis(50))
        );
        // 10 ms × (1 + 0.5 × 2) = 20 ms
        assert_eq!(
            s.next_chunk(2).map(|(t, _)| t - t0),
            Some(Duration::from_millis(70))
        );
        assert_eq!(
            s.next_chunk(0).map(|(t, _)| t - t0),
            Some(Duration::from_millis(80))
        );
        assert_eq!(s.next_chunk(0), None);
    }

    #[test]
    fn jittered_schedule_is_reproducible_from_the_seed() {
        let t0 = Instant::now();
        let mut c = cfg(2, 10_000, 0.0);
        c.jitter = Jitter::Uniform(0.3);
        let run = |seed| {
            let mut s = Schedule::new(&c, t0, 9, seed);
            std::iter::from_fn(|| s.next_chunk(0))
                .map(|(t, _)| t - t0)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
