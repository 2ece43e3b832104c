//! Streamed answers: the events of one answer written on schedule by a task of its
//! own (`run_stream`) into a channel that the response body drains, noting when each
//! token chunk leaves. The faults act through `fault/inject.rs`.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep};

use super::conn::ConnCtl;
use super::job::Job;
use crate::mock::answer::ChunkWriter;
use crate::mock::engine::{Engine, Running, Schedule};
use crate::mock::fault::inject::{self, AfterChunk, BeforeChunk, First, Tokens};
use crate::mock::protocol::{MockProtocol, huge_event_parts};
use crate::runner::Timer;

/// Gap between bytes of the `trickle` fault.
pub const TRICKLE_BYTE_GAP: Duration = Duration::from_millis(1);
/// Piece size when streaming the `huge_line` fault, so it is never held in memory.
const HUGE_PIECE: usize = 64 << 10;
static FILL: [u8; HUGE_PIECE] = [b'x'; HUGE_PIECE];

enum Frame {
    Data(Bytes),
    /// A chunk of `tokens` tokens due at `due`: its leaving is noted in the emission log.
    Tokens {
        bytes: Bytes,
        due: Instant,
        tokens: u32,
    },
    /// End the connection with a TCP RST once everything before it is flushed.
    Reset,
}

/// The streamed answer: its events are written by a task of their own while hyper
/// sends what it is handed.
pub fn stream_response(mut job: Job, ctl: ConnCtl) -> Response {
    let (tx, rx) = mpsc::channel::<Frame>(8);
    let framing = inject::framing(job.fault);
    let content_type = framing
        .content_type
        .unwrap_or(job.protocol.stream_content_type());
    let out = SseOut {
        tx,
        trickle: framing.trickle,
        timer: job.engine.timer.clone(),
    };
    // Noted where the body hands a chunk to hyper, which writes it on this same task.
    let emission = job.emission.take();
    tokio::spawn(run_stream(job, out));
    let state = (rx, ctl, emission);
    let body = futures_util::stream::unfold(state, |(mut rx, ctl, emission)| async move {
        match rx.recv().await {
            Some(Frame::Data(b)) => Some((Ok::<_, Infallible>(b), (rx, ctl, emission))),
            Some(Frame::Tokens { bytes, due, tokens }) => {
                if let Some(e) = &emission {
                    e.chunk_out(due, tokens);
                }
                Some((Ok(bytes), (rx, ctl, emission)))
            }
            Some(Frame::Reset) => {
                ctl.reset();
                std::future::pending().await
            }
            None => None,
        }
    });
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// The writing end of one SSE response. Every method returns false once the client
/// is gone, so the generator stops and frees its batch slot.
struct SseOut {
    tx: mpsc::Sender<Frame>,
    trickle: bool,
    timer: Timer,
}

impl SseOut {
    /// Sends a chunk that carries `tokens` tokens, due at `due` (trickled, it is only
    /// bytes).
    async fn send_tokens(&self, bytes: Bytes, due: Instant, tokens: u32) -> bool {
        if self.trickle {
            return self.send(bytes).await;
        }
        let frame = Frame::Tokens { bytes, due, tokens };
        self.tx.send(frame).await.is_ok()
    }

    async fn send(&self, b: Bytes) -> bool {
        if !self.trickle {
            return self.tx.send(Frame::Data(b)).await.is_ok();
        }
        for i in 0..b.len() {
            if i > 0 {
                sleep(TRICKLE_BYTE_GAP).await;
            }
            if self.tx.send(Frame::Data(b.slice(i..i + 1))).await.is_err() {
                return false;
            }
        }
        true
    }

    async fn wait_until(&self, t: Instant) -> bool {
        tokio::select! {
            _ = self.timer.wait_until(t) => true,
            _ = self.tx.closed() => false,
        }
    }

    async fn stall(&self, engine: &Engine) -> bool {
        tokio::select! {
            _ = engine.stall() => true,
            _ = self.tx.closed() => false,
        }
    }

    async fn reset(&self) {
        let _ = self.tx.send(Frame::Reset).await;
    }

    /// One line of exactly `bytes` bytes before its newline (a valid chunk whose
    /// content is all `x`), written in 64 KiB pieces from a static buffer.
    async fn huge_line(&self, p: &dyn MockProtocol, w: &ChunkWriter, bytes: usize) -> bool {
        let (head, tail) = huge_event_parts(p, w);
        // `tail` ends with the blank-line terminator "\n\n", which is not part of the line.
        let mut fill = bytes.saturating_sub(head.len() + tail.len() - 2);
        if !self.send(head).await {
            return false;
        }
        while fill > 0 {
            let n = fill.min(HUGE_PIECE);
            if !self.send(Bytes::from_static(&FILL[..n])).await {
                return false;
            }
            fill -= n;
        }
        self.send(tail).await
    }
}

async fn run_stream(job: Job, out: SseOut) {
    let engine = job.engine.clone();
    let (p, w) = (job.protocol, &job.writer);
    // Chat and completions send usage when asked (`stream_options`); the Responses and
    // Messages APIs always do.
    let asked = job.req.include_usage || p.usage_unasked();
    let usage_on = engine.cfg.usage && asked;
    let continuous = usage_on && job.req.continuous_usage;
    let prompt = job.req.prompt_tokens;
    let usage_at = |completion| job.usage(completion);
    // Like vLLM, chat streams open with a role-only chunk, before any token (and the
    // Responses and Messages streams with their opening events).
    if let Some(open) = p.open(w, usage_at(0))
        && !out.send(open).await
    {
        return;
    }
    let Some(mut run) = engine.admit(prompt, job.arrival, out.tx.closed()).await else {
        return;
    };
    let tokens = Tokens::of(job.fault);
    let n = if tokens.empty() { 0 } else { job.output_tokens };
    let mut sched = Schedule::new(&engine.cfg, run.start, n, job.seed);
    sched.delay(job.prefill());
    match tokens.first() {
        First::Nothing => {}
        First::EmptyChunk => {
            if !out.wait_until(sched.first_due()).await {
                return;
            }
            let ev = p.tokens(w, 0, 0, Some("stop"), continuous.then(|| usage_at(0)));
            if !ev.is_empty() && !out.send(ev).await {
                return;
            }
        }
        First::HugeLine(bytes) => {
            if !out.wait_until(sched.first_due()).await || !out.huge_line(p, w, bytes).await {
                return;
            }
        }
    }
    if !emit_tokens(&job, &tokens, &out, &mut run, &mut sched, continuous).await {
        return;
    }
    if inject::resets_at_end(job.fault) {
        return out.reset().await;
    }
    run.finish();
    let emitted = sched.emitted();
    job.remember(emitted);
    let end = p.close(
        w,
        emitted,
        usage_on.then(|| usage_at(emitted)),
        inject::end_marker(job.fault),
    );
    if !end.is_empty() {
        out.send(end).await;
    }
}

/// Writes the content chunks on schedule, with the faults that act between chunks.
/// Returns false when the stream has ended (client gone, or a fault finished it).
async fn emit_tokens(
    job: &Job,
    tokens: &Tokens,
    out: &SseOut,
    run: &mut Running,
    sched: &mut Schedule,
    continuous: bool,
) -> bool {
    let (p, w) = (job.protocol, &job.writer);
    let n = job.output_tokens;
    let mut stalled = false;
    loop {
        // Faults due once `after_tokens` tokens are out: before the first chunk when 0,
        // after the last one when the response is no longer than that.
        match tokens.before_chunk(sched.emitted(), n, stalled) {
            BeforeChunk::Chunk => {}
            BeforeChunk::Reset => {
                out.reset().await;
                return false;
            }
            BeforeChunk::Stall => {
                stalled = true;
                let t0 = Instant::now();
                if !out.stall(&job.engine).await {
                    return false;
                }
                sched.delay(t0.elapsed());
            }
        }
        let Some((due, k)) = sched.next_for(run) else {
            return true;
        };
        if !out.wait_until(due).await {
            return false;
        }
        let to = sched.emitted();
        let from = to - k;
        let finish = (to == n).then_some(if w.stopped(to) { "stop" } else { "length" });
        let usage = continuous.then(|| job.usage(to));
        run.record_chunk(k);
        let event = tokens.chunk(from, p.tokens(w, from, to, finish, usage));
        if !out.send_tokens(event, due, k).await {
            return false;
        }
        match tokens.after_chunk(p, w, from) {
            AfterChunk::Next => {}
            AfterChunk::Extra(ev) => {
                if !out.send(ev).await {
                    return false;
                }
            }
            AfterChunk::Last(ev) => {
                out.send(ev).await;
                return false;
            }
        }
    }
}
