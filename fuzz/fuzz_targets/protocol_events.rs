//! Fuzzes every protocol's decoders as the client uses them: the input is split into
//! an endpoint choice and bytes; the bytes go through the SSE parser and each event
//! through that protocol's stream decoder, and whole through its body decoder.
//!
//! This target links the llmprobe crate (the decoders need its types), unlike
//! `sse_chunks`, which compiles two pure files on their own.
//!
//! Checks, beyond "no panic, no hang, no unbounded memory": a decoded event never
//! claims more text than the event's data holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llmprobe::client::Endpoint;
use llmprobe::client::protocol;
use llmprobe::client::sse::SseParser;

const LIMIT: usize = 1 << 12;

fuzz_target!(|input: &[u8]| {
    let Some((&choice, bytes)) = input.split_first() else {
        return;
    };
    let endpoint = Endpoint::ALL[usize::from(choice) % Endpoint::ALL.len()];
    let p = protocol::of(endpoint);
    let _ = p.decode_full(bytes);
    let mut parser = SseParser::new(LIMIT, LIMIT);
    parser.feed(bytes);
    parser.end();
    while let Ok(Some(ev)) = parser.next_event() {
        if let Ok(d) = p.decode_event(&ev) {
            assert!(d.text_len() <= ev.data.len());
        }
    }
});
