//! Fuzzes the SSE parser and the chunk decoder together, exactly as the client uses
//! them: bytes split into pieces at fuzzer-chosen points, every event decoded.
//!
//! The two modules are pure (memchr, serde, serde_json, thiserror only), so they are
//! compiled here straight from `src/` instead of building the whole llmprobe crate
//! (tokio, reqwest, tokenizers, ...) with sanitizer instrumentation.
//!
//! Checks, beyond "no panic, no hang, no unbounded memory":
//! - split invariance: any split of the input gives the same events and the same
//!   error as feeding it whole;
//! - limits hold: no event is larger than the limit.
#![no_main]

#[path = "../../src/client/sse.rs"]
#[allow(dead_code)]
mod sse;

#[path = "../../src/client/chunk.rs"]
#[allow(dead_code)]
mod chunk;

use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
struct Seen {
    events: Vec<(Vec<u8>, Vec<u8>, Option<usize>)>,
    error: Option<sse::SseError>,
}

fn run<'a>(pieces: impl IntoIterator<Item = &'a [u8]>, limit: usize) -> Seen {
    let mut p = sse::SseParser::new(limit, limit);
    let mut seen = Seen {
        events: Vec::new(),
        error: None,
    };
    let drain = |p: &mut sse::SseParser, seen: &mut Seen| -> bool {
        loop {
            match p.next_event() {
                Ok(Some(ev)) => {
                    assert!(ev.data.len() <= limit);
                    // Decode like the client does; the result must not depend on splits.
                    let text = chunk::decode(ev.data).ok().map(|c| c.text_len());
                    seen.events
                        .push((ev.event.to_vec(), ev.data.to_vec(), text));
                }
                Ok(None) => return true,
                Err(e) => {
                    seen.error = Some(e);
                    return false;
                }
            }
        }
    };
    for piece in pieces {
        p.feed(piece);
        if !drain(&mut p, &mut seen) {
            return seen;
        }
    }
    p.end();
    drain(&mut p, &mut seen);
    seen
}

fuzz_target!(|input: &[u8]| {
    // Byte 0: the limit; byte 1: how many split points; then the points; then the body.
    if input.len() < 2 {
        return;
    }
    let limit = 1 + usize::from(input[0]) * 8;
    let n = usize::from(input[1] % 8);
    if input.len() < 2 + n {
        return;
    }
    let body = &input[2 + n..];
    let mut points: Vec<usize> = input[2..2 + n]
        .iter()
        .map(|&b| usize::from(b) % (body.len() + 1))
        .collect();
    points.sort_unstable();
    let mut pieces = Vec::with_capacity(n + 1);
    let mut start = 0;
    for p in points {
        pieces.push(&body[start..p]);
        start = p;
    }
    pieces.push(&body[start..]);

    let whole = run([body], limit);
    let split = run(pieces, limit);
    assert_eq!(whole, split);
});
