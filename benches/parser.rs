//! Throughput of the client's hot path on the wire format alone: SSE framing
//! ([`SseParser`]) plus chunk decoding ([`chunk::decode`]), in bytes/s and events/s,
//! with no socket and no clock. Three realistic vLLM streams (the exact key order and
//! fields of vLLM's `ChatCompletionStreamResponse` / `CompletionStreamResponse`,
//! `vllm/entrypoints/openai/protocol.py`):
//!
//! - `chat`: chat chunks, `include_usage` only (usage in the last chunk);
//! - `chat_continuous_usage`: chat chunks that each carry cumulative usage (vLLM's
//!   `continuous_usage_stats`, llmprobe's default);
//! - `completions`: `/v1/completions` chunks.
//!
//! Each stream is fed in pieces of three sizes: 64 KiB (many events per socket read,
//! a saturated client), the size of one event (a read per token, the usual case at
//! low load) and 7 bytes (a pathological trickle that cuts every line).
//!
//! `cargo bench --bench parser` (criterion; `-- --quick` for a shorter run). The figures
//! in BENCHMARKS.md come from this program.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use llmprobe::client::chunk;
use llmprobe::client::sse::SseParser;

/// Tokens per stream: long enough that the per-stream setup does not matter.
const TOKENS: u32 = 256;

/// Words as a Llama 3 tokenizer streams them: a leading space, a few letters.
const WORDS: [&str; 8] = [
    " the", " model", " returns", " tokens", " quickly", ",", " and", " each",
];

#[derive(Clone, Copy)]
enum Kind {
    Chat,
    ChatContinuousUsage,
    Completions,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Chat => "chat",
            Kind::ChatContinuousUsage => "chat_continuous_usage",
            Kind::Completions => "completions",
        }
    }
}

/// One whole response body as vLLM writes it: `data: {json}\n\n` per chunk, then
/// `data: [DONE]\n\n`. Returns the body and its number of SSE events.
fn stream(kind: Kind) -> (Vec<u8>, u64) {
    const PROMPT: u32 = 1024;
    let created = 1_764_400_000u64;
    let mut out = String::new();
    let mut events = 0u64;
    let mut push = |json: String| {
        out.push_str("data: ");
        out.push_str(&json);
        out.push_str("\n\n");
        events += 1;
    };
    let usage = |done: u32| {
        format!(
            r#"{{"prompt_tokens":{PROMPT},"total_tokens":{},"completion_tokens":{done}}}"#,
            PROMPT + done
        )
    };
    match kind {
        Kind::Chat | Kind::ChatContinuousUsage => {
            let cont = matches!(kind, Kind::ChatContinuousUsage);
            let id = "chatcmpl-8f2c3a6e4b5d4f7e9a0b1c2d3e4f5a6b";
            let model = "meta-llama/Llama-3.1-8B-Instruct";
            let role_usage = if cont {
                format!(r#","usage":{}"#, usage(0))
            } else {
                String::new()
            };
            push(format!(
                r#"{{"id":"{id}","object":"chat.completion.chunk","created":{created},"model":"{model}","choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]{role_usage}}}"#
            ));
            for i in 0..TOKENS {
                let word = WORDS[i as usize % WORDS.len()];
                let finish = if i + 1 == TOKENS {
                    r#""length","stop_reason":null"#
                } else {
                    "null"
                };
                let u = if cont {
                    format!(r#","usage":{}"#, usage(i + 1))
                } else {
                    String::new()
                };
                push(format!(
                    r#"{{"id":"{id}","object":"chat.completion.chunk","created":{created},"model":"{model}","choices":[{{"index":0,"delta":{{"content":"{word}"}},"logprobs":null,"finish_reason":{finish}}}]{u}}}"#
                ));
            }
            push(format!(
                r#"{{"id":"{id}","object":"chat.completion.chunk","created":{created},"model":"{model}","choices":[],"usage":{}}}"#,
                usage(TOKENS)
            ));
        }
        Kind::Completions => {
            let id = "cmpl-5e1d2c3b4a594867a5b4c3d2e1f0a9b8";
            let model = "meta-llama/Llama-3.1-8B";
            for i in 0..TOKENS {
                let word = WORDS[i as usize % WORDS.len()];
                let finish = if i + 1 == TOKENS {
                    r#""length","stop_reason":null"#
                } else {
                    "null,\"stop_reason\":null"
                };
                push(format!(
                    r#"{{"id":"{id}","object":"text_completion","created":{created},"model":"{model}","choices":[{{"index":0,"text":"{word}","logprobs":null,"finish_reason":{finish}}}],"usage":null}}"#
                ));
            }
            push(format!(
                r#"{{"id":"{id}","object":"text_completion","created":{created},"model":"{model}","choices":[],"usage":{}}}"#,
                usage(TOKENS)
            ));
        }
    }
    push("[DONE]".to_string());
    (out.into_bytes(), events)
}

/// What the client does with a body: frame, decode every non-`[DONE]` event, add up
/// the text and the last usage (so nothing is optimised away). Returns (events,
/// text bytes, completion tokens).
fn consume(parser: &mut SseParser, body: &[u8], piece: usize) -> (u64, usize, u32) {
    let mut events = 0u64;
    let mut text = 0usize;
    let mut tokens = 0u32;
    let mut drain = |parser: &mut SseParser| {
        while let Some(ev) = parser.next_event().expect("valid SSE") {
            events += 1;
            if ev.is_done() {
                continue;
            }
            let c = chunk::decode(ev.data).expect("valid chunk");
            text += c.text_len();
            if let Some(n) = c.usage.and_then(|u| u.completion_tokens) {
                tokens = n;
            }
        }
    };
    for p in body.chunks(piece) {
        parser.feed(p);
        drain(parser);
    }
    parser.end();
    drain(parser);
    (events, text, tokens)
}

fn bench(c: &mut Criterion) {
    for kind in [Kind::Chat, Kind::ChatContinuousUsage, Kind::Completions] {
        let (body, events) = stream(kind);
        // The body must be what the client accepts: every event decodes, every token
        // arrives. A bench of a stream the client rejects would measure an error path.
        let (n, text, tokens) = consume(&mut SseParser::new(1 << 20, 1 << 20), &body, 1 << 16);
        assert_eq!(n, events, "{}: event count", kind.name());
        assert!(text > 0 && tokens == TOKENS, "{}: decoded", kind.name());
        let one_event = body.len() / events as usize;
        // Criterion reports one throughput per group: bytes/s here; events/s is
        // bytes/s divided by the mean event size printed below.
        eprintln!(
            "{}: {} bytes, {} events, {:.1} bytes/event",
            kind.name(),
            body.len(),
            events,
            body.len() as f64 / events as f64
        );
        let mut g = c.benchmark_group(format!("sse+decode/{}", kind.name()));
        g.throughput(Throughput::Bytes(body.len() as u64));
        for (label, piece) in [("64KiB", 1 << 16), ("event", one_event), ("7B", 7)] {
            g.bench_with_input(BenchmarkId::new("piece", label), &body, |b, body| {
                // One parser per request, as in the client (its buffers are reused
                // across the events of a stream, not across requests).
                b.iter(|| {
                    let mut parser = SseParser::new(1 << 20, 1 << 20);
                    black_box(consume(&mut parser, black_box(body), piece))
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
