//! The floor reference client of `benches/client_overhead.py`: the least a client can
//! do to read the same streams llmprobe reads, so every CPU and accuracy figure of
//! llmprobe can be given next to what any client would pay on the same machine.
//!
//! What it does, and nothing more: an open-loop Poisson schedule computed up front; a
//! pool of std threads, each with one keep-alive HTTP/1.1 connection, that claims the
//! next arrival, sleeps until its time (one timed sleep, 1 µs timer slack), writes a
//! pre-built request, then blocks in `read` and takes one timestamp per read. Parsing
//! stops at finding chunked-encoding boundaries and, per chunk, whether it carries
//! text (`"content":"` followed by a character). No TLS, no JSON, no allocation per
//! chunk, records kept in memory and written after the run.
//!
//! It writes `--records` in the shape of llmprobe's own `--records` (the fields the
//! harness reads), so both are analysed by the same code. Each text chunk counts as one
//! token, which is what `llmprobe mock` sends; against a server that batches tokens
//! into chunks its ITL figures would not be per token.
//!
//!     cargo build --release --example floor_client
//!     target/release/examples/floor_client --url http://127.0.0.1:PORT --rate 20 \
//!         --num-requests 300 --output-len 64 --records floor.jsonl
//!
//! std and libc only (libc for the timer slack, on Linux).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Options {
    host_port: String,
    rate: f64,
    num_requests: usize,
    warmup: usize,
    input_len: usize,
    output_len: usize,
    seed: u64,
    threads: usize,
    records: String,
    model: String,
}

fn usage() -> ! {
    eprintln!(
        "usage: floor_client --url http://HOST:PORT --rate R --num-requests N \
         --records FILE [--warmup N] [--input-len N] [--output-len N] [--seed N] \
         [--threads N] [--model NAME]"
    );
    std::process::exit(2)
}

fn parse_options() -> Options {
    let mut o = Options {
        host_port: String::new(),
        rate: 0.0,
        num_requests: 0,
        warmup: 0,
        input_len: 128,
        output_len: 64,
        seed: 1,
        threads: 0,
        records: String::new(),
        model: "mock-llm".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else { usage() };
        let bad = |what: &str| -> ! {
            eprintln!("floor_client: {flag} {value:?}: {what}");
            std::process::exit(2)
        };
        let int = || {
            value
                .parse::<usize>()
                .unwrap_or_else(|_| bad("not a count"))
        };
        match flag.as_str() {
            "--url" => {
                let rest = value
                    .strip_prefix("http://")
                    .unwrap_or_else(|| bad("only http:// URLs"));
                o.host_port = rest.trim_end_matches('/').to_string();
            }
            "--rate" => {
                o.rate = value.parse().unwrap_or_else(|_| bad("not a number"));
                if !(o.rate > 0.0 && o.rate.is_finite()) {
                    bad("the rate must be positive");
                }
            }
            "--num-requests" => o.num_requests = int(),
            "--warmup" => o.warmup = int(),
            "--input-len" => o.input_len = int(),
            "--output-len" => o.output_len = int(),
            "--seed" => o.seed = value.parse().unwrap_or_else(|_| bad("not a seed")),
            "--threads" => o.threads = int(),
            "--records" => o.records = value,
            "--model" => o.model = value,
            _ => usage(),
        }
    }
    if o.host_port.is_empty() || o.rate == 0.0 || o.num_requests == 0 || o.records.is_empty() {
        usage()
    }
    o
}

/// Poisson arrival offsets (xorshift64*, exponential gaps): the schedule is fixed before
/// the clock starts, as llmprobe's is.
fn schedule(rate: f64, n: usize, seed: u64) -> Vec<Duration> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut t = 0.0f64;
    (0..n)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let bits = state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
            let u = (bits as f64 + 1.0) / (1u64 << 53) as f64;
            t += -u.ln() / rate;
            Duration::from_secs_f64(t)
        })
        .collect()
}

fn request_bytes(o: &Options) -> Vec<u8> {
    let prompt = vec!["word"; o.input_len.max(1)].join(" ");
    let body = format!(
        r#"{{"model":"{}","messages":[{{"role":"user","content":"{}"}}],"max_tokens":{},"stream":true,"stream_options":{{"include_usage":true}}}}"#,
        o.model, prompt, o.output_len
    );
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{}",
        o.host_port,
        body.len(),
        body
    )
    .into_bytes()
}

/// One request's timestamps, as offsets from the run start.
struct Record {
    id: usize,
    t_sched: Duration,
    t_send: Duration,
    t_headers: Option<Duration>,
    /// Arrival of each chunk that carries text.
    tokens: Vec<Duration>,
    error: Option<String>,
}

/// Finds the response's end and its text-carrying chunks in the bytes as they come.
/// States: the head, a chunk-size line, chunk data, the CRLF after the data.
struct ChunkScanner {
    head_done: bool,
    line: Vec<u8>,
    remaining: usize,
    in_data: bool,
    data: Vec<u8>,
    /// The zero-size chunk was seen; the empty line after it ends the response.
    last: bool,
    done: bool,
}

const TEXT_MARK: &[u8] = b"\"content\":\"";

impl ChunkScanner {
    fn new() -> Self {
        ChunkScanner {
            head_done: false,
            line: Vec::with_capacity(64),
            remaining: 0,
            in_data: false,
            data: Vec::with_capacity(1024),
            last: false,
            done: false,
        }
    }

    /// Feeds one read; calls `on_text` once per completed chunk with text, and returns
    /// whether the head ended in this read.
    fn feed(&mut self, mut bytes: &[u8], mut on_text: impl FnMut()) -> Result<bool, String> {
        while !bytes.is_empty() && !self.done {
            if !self.head_done {
                self.line.extend_from_slice(bytes);
                let Some(end) = find(&self.line, b"\r\n\r\n") else {
                    return Ok(false);
                };
                if !self.line.starts_with(b"HTTP/1.1 200") {
                    let head = String::from_utf8_lossy(&self.line[..end]).into_owned();
                    return Err(format!("not a 200: {head}"));
                }
                let rest = self.line.split_off(end + 4);
                self.line.clear();
                self.head_done = true;
                return self.feed(&rest, on_text).map(|_| true);
            }
            if self.in_data {
                let take = self.remaining.min(bytes.len());
                self.data.extend_from_slice(&bytes[..take]);
                self.remaining -= take;
                bytes = &bytes[take..];
                if self.remaining == 0 {
                    self.in_data = false;
                    if let Some(at) = find(&self.data, TEXT_MARK)
                        && self
                            .data
                            .get(at + TEXT_MARK.len())
                            .is_some_and(|&c| c != b'"')
                    {
                        on_text();
                    }
                    self.data.clear();
                }
                continue;
            }
            // A size line, or the CRLF closing the previous chunk's data (an empty line).
            let nl = bytes.iter().position(|&b| b == b'\n');
            let take = nl.map_or(bytes.len(), |i| i + 1);
            self.line.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if nl.is_none() {
                continue;
            }
            let text = std::str::from_utf8(&self.line).map_err(|e| e.to_string())?;
            let hex = text.trim_end_matches(['\r', '\n']);
            if hex.is_empty() {
                self.done = self.last;
            } else {
                let size = usize::from_str_radix(hex, 16)
                    .map_err(|_| format!("bad chunk size line {hex:?}"))?;
                if size == 0 {
                    self.last = true;
                } else {
                    self.remaining = size;
                    self.in_data = true;
                }
            }
            self.line.clear();
        }
        Ok(false)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(target_os = "linux")]
fn set_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

#[cfg(not(target_os = "linux"))]
fn set_timer_slack() {}

fn one_request(
    conn: &mut Option<TcpStream>,
    host_port: &str,
    request: &[u8],
    start: Instant,
    rec: &mut Record,
    buf: &mut [u8],
) -> Result<(), String> {
    if conn.is_none() {
        let s = TcpStream::connect(host_port).map_err(|e| format!("connect: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        *conn = Some(s);
    }
    let Some(stream) = conn.as_mut() else {
        return Err("no connection".into());
    };
    rec.t_send = start.elapsed();
    stream
        .write_all(request)
        .map_err(|e| format!("write: {e}"))?;
    let mut scanner = ChunkScanner::new();
    while !scanner.done {
        let n = stream.read(buf).map_err(|e| format!("read: {e}"))?;
        let at = start.elapsed();
        if n == 0 {
            return Err("connection closed mid-response".into());
        }
        let tokens = &mut rec.tokens;
        if scanner.feed(&buf[..n], || tokens.push(at))? {
            rec.t_headers = Some(at);
        }
    }
    Ok(())
}

fn worker(
    o: &Options,
    times: &[Duration],
    next: &AtomicUsize,
    request: &[u8],
    start: Instant,
) -> Vec<Record> {
    set_timer_slack();
    let mut conn: Option<TcpStream> = None;
    let mut buf = vec![0u8; 64 * 1024];
    let mut records = Vec::new();
    loop {
        let id = next.fetch_add(1, Ordering::Relaxed);
        let Some(&t_sched) = times.get(id) else {
            return records;
        };
        if let Some(wait) = (start + t_sched).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let mut rec = Record {
            id,
            t_sched,
            t_send: Duration::ZERO,
            t_headers: None,
            tokens: Vec::with_capacity(o.output_len),
            error: None,
        };
        if let Err(e) = one_request(&mut conn, &o.host_port, request, start, &mut rec, &mut buf) {
            rec.error = Some(e);
            conn = None;
        }
        records.push(rec);
    }
}

fn write_records(o: &Options, mut records: Vec<Record>) -> std::io::Result<()> {
    records.sort_by_key(|r| r.id);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&o.records)?);
    for r in &records {
        let chunks: Vec<String> = r
            .tokens
            .iter()
            .map(|t| format!(r#"{{"at":{},"tokens":1}}"#, t.as_secs_f64()))
            .collect();
        let ok = r.error.is_none() && !r.tokens.is_empty();
        let first = r.tokens.first();
        writeln!(
            out,
            r#"{{"id":{},"warmup":{},"t_sched":{},"t_send":{},"t_headers":{},"t_first":{},"outcome":"{}","error":{},"chunks":[{}],"derived":{{"ttft_ms":{}}}}}"#,
            r.id,
            r.id < o.warmup,
            r.t_sched.as_secs_f64(),
            r.t_send.as_secs_f64(),
            r.t_headers
                .map_or("null".into(), |t| t.as_secs_f64().to_string()),
            first.map_or("null".into(), |t| t.as_secs_f64().to_string()),
            if ok { "ok" } else { "error" },
            r.error.as_ref().map_or("null".into(), |e| format!("{e:?}")),
            chunks.join(","),
            first.map_or("null".into(), |t| ((*t - r.t_send).as_secs_f64() * 1e3)
                .to_string()),
        )?;
    }
    out.flush()
}

fn main() {
    let o = parse_options();
    let total = o.num_requests + o.warmup;
    let times = schedule(o.rate, total, o.seed);
    let request = request_bytes(&o);
    let threads = if o.threads > 0 { o.threads } else { 64 };
    let next = AtomicUsize::new(0);
    // Every thread is up and has claimed its first arrival before the first is due.
    let start = Instant::now() + Duration::from_millis(50);
    let shared = Arc::new((o, times, next, request));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let s = Arc::clone(&shared);
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || worker(&s.0, &s.1, &s.2, &s.3, start))
                .unwrap_or_else(|e| {
                    eprintln!("floor_client: cannot start a thread: {e}");
                    std::process::exit(1)
                })
        })
        .collect();
    let mut records = Vec::with_capacity(total);
    for h in handles {
        match h.join() {
            Ok(r) => records.extend(r),
            Err(_) => {
                eprintln!("floor_client: a worker panicked");
                std::process::exit(1)
            }
        }
    }
    let failed = records.iter().filter(|r| r.error.is_some()).count();
    if let Err(e) = write_records(&shared.0, records) {
        eprintln!("floor_client: writing {}: {e}", shared.0.records);
        std::process::exit(1)
    }
    if failed > 0 {
        eprintln!("floor_client: {failed} of {total} requests failed");
        std::process::exit(1)
    }
}
