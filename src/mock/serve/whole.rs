//! Whole answers: a non-streamed request (or `json_instead_of_sse`) gets one JSON
//! body after the whole generation time, on the same schedule as a stream; an
//! embeddings request gets its vectors after the prefill. The faults act through
//! `fault/inject.rs`.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::conn::ConnCtl;
use super::job::Job;
use super::reply::shutting_down;
use crate::mock::answer::logprobs::{self, Asked, Logprobs};
use crate::mock::engine::Schedule;
use crate::mock::fault::inject::{self, Tokens};
use crate::mock::protocol::Whole;

/// A generated answer, sent whole once its last token is due.
pub async fn full_response(job: Job, ctl: ConnCtl) -> Response {
    let engine = job.engine.clone();
    let Some(mut run) = engine
        .admit(
            job.req.prompt_tokens,
            job.arrival,
            engine.shutdown.cancelled(),
        )
        .await
    else {
        return shutting_down();
    };
    let tokens = Tokens::of(job.fault);
    let n = if tokens.empty() { 0 } else { job.output_tokens };
    let mut sched = Schedule::new(&engine.cfg, run.start, n, job.seed);
    sched.delay(job.prefill());
    if tokens.empty() {
        engine.timer.wait_until(sched.first_due()).await;
    }
    let mut stalled = false;
    while let Some((due, k)) = sched.next_for(&run) {
        engine.timer.wait_until(due).await;
        let to = sched.emitted();
        run.record_chunk(k);
        if tokens.whole_stalls(to, stalled) {
            stalled = true;
            let t0 = Instant::now();
            engine.stall().await;
            sched.delay(t0.elapsed());
        }
    }
    if inject::resets_at_end(job.fault) {
        ctl.reset();
        return std::future::pending().await;
    }
    run.finish();
    let emitted = sched.emitted();
    job.remember(emitted);
    let whole = Whole {
        emitted,
        finish: if job.writer.stopped(emitted) {
            "stop"
        } else {
            "length"
        },
        usage: job.usage(emitted),
        vectors: job.req.inputs,
        ranking: job.req.ranking.as_ref(),
        logprobs: logprobs(&job, emitted),
    };
    body_response(&job, &whole)
}

/// Embeddings, rerank and score: one JSON answer after the prefill time (the TTFT),
/// with one vector per input, or the documents ranked. `empty_completion` answers with
/// no vectors and no results; the transport faults act as for
/// any other request.
pub async fn embeddings_response(job: Job, ctl: ConnCtl) -> Response {
    let engine = job.engine.clone();
    let Some(run) = engine
        .admit(
            job.req.prompt_tokens,
            job.arrival,
            engine.shutdown.cancelled(),
        )
        .await
    else {
        return shutting_down();
    };
    let mut sched = Schedule::new(&engine.cfg, run.start, 0, job.seed);
    sched.delay(job.prefill());
    engine.timer.wait_until(sched.first_due()).await;
    let tokens = Tokens::of(job.fault);
    if tokens.prefill_stalls() {
        engine.stall().await;
    }
    if inject::resets_at_end(job.fault) {
        ctl.reset();
        return std::future::pending().await;
    }
    run.finish();
    let whole = Whole {
        emitted: 0,
        finish: "stop",
        usage: job.usage(0),
        vectors: if tokens.empty() { 0 } else { job.req.inputs },
        ranking: job.req.ranking.as_ref().filter(|_| !tokens.empty()),
        logprobs: None,
    };
    body_response(&job, &whole)
}

/// The logprobs of the answer's `emitted` tokens, if the request asked for them.
fn logprobs(job: &Job, emitted: u32) -> Option<Logprobs> {
    let k = job.req.logprobs?;
    let w = &job.writer;
    let tokens = (w.reasoning.min(emitted)..emitted)
        .map(|i| w.voice.token(i, w.reasoning))
        .collect();
    let seed = logprobs::seed(job.engine.cfg.logprob_seed, &job.req.prompt_words);
    Some(Logprobs {
        asked: Asked { k, seed },
        tokens,
    })
}

/// The whole answer's JSON body, as the faults on the body and its framing leave it.
fn body_response(job: &Job, whole: &Whole) -> Response {
    let json = job.protocol.full_response(&job.writer, whole);
    let bytes = inject::body(job.fault, json.to_string().into_bytes());
    let content_type = inject::framing(job.fault)
        .content_type
        .unwrap_or("application/json");
    ([(header::CONTENT_TYPE, content_type)], bytes).into_response()
}
