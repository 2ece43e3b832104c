//! Every fault kind of `llmprobe mock` (docs/mock.md, "Faults") against the real
//! client, in process on 127.0.0.1:0 under a paused tokio clock: the exact outcome
//! (failure reason), the end within the configured timeouts, the partial record kept
//! for mid-stream faults and never counted as a success, and no task or file
//! descriptor left behind once the requests are over.
//!
//! Each fault is forced twice: by the `x-mock-fault` header on a chat request, and by
//! the mock's `faults` config (probability 1) on a completions request.
//!
//! The clients use `reuse_connections: false`: under a paused clock hyper's pooled
//! connections deliver a later request's body late (see the note in `src/client/mod.rs`).
//! The tests in this file run one at a time (a process-wide lock) because they count
//! the process's tasks and file descriptors; those that count file descriptors run
//! alone in a child process of the test binary, which other tests share.

use std::sync::Arc;
use std::time::Duration;

use crate::support::alone;
use llmprobe::client::{Client, ClientConfig, Endpoint, Limits, Timeouts};
use llmprobe::mock::{FaultSpec, MockConfig, MockServer};
use llmprobe::record::{Outcome, RequestRecord};
use llmprobe::secret::Secret;
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const TTFT: Duration = Duration::from_millis(20);
const ITL: Duration = Duration::from_millis(10);
const MAX_TOKENS: u32 = 5;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn timeouts() -> Timeouts {
    Timeouts {
        connect: ms(1000),
        first_token: ms(2000),
        idle: ms(1000),
        total: ms(10_000),
    }
}

fn mock_config(faults: Vec<FaultSpec>) -> MockConfig {
    MockConfig {
        ttft: TTFT,
        itl: ITL,
        faults,
        ..MockConfig::default()
    }
}

fn client_config(mock: &MockServer, endpoint: Endpoint, header: Option<&str>) -> ClientConfig {
    ClientConfig {
        base_url: mock.base_url(),
        endpoint,
        model: "mock-llm".into(),
        headers: header
            .map(|h| vec![("x-mock-fault".to_string(), Secret::new(h))])
            .unwrap_or_default(),
        reuse_connections: false,
        timeouts: timeouts(),
        limits: Limits {
            max_line_bytes: 1 << 20,
            ..Limits::default()
        },
        ..ClientConfig::default()
    }
}

fn spec() -> RequestSpec {
    RequestSpec {
        prompt: "one two three".into(),
        prompt_tokens: 3,
        max_tokens: MAX_TOKENS,
        history: Vec::new(),
        system: None,
        model: None,
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// What one fault must produce.
struct Expect {
    fault: &'static str,
    outcome: Outcome,
    /// HTTP status seen, if a response arrived.
    status: Option<u16>,
    /// Exact t_first (first content chunk), `None` when no text may arrive.
    t_first: Option<Duration>,
    /// Tokens in the kept chunks (exact), `None` to skip.
    tokens: Option<u32>,
    /// Exact t_end, `None` to only check it is within the total timeout.
    t_end: Option<Duration>,
    /// A piece the error text must contain.
    error: Option<&'static str>,
}

fn expectations() -> Vec<Expect> {
    let t = timeouts();
    // Content chunk k (0-based) of the mock is due at TTFT + k × ITL.
    let tok = |k: u64| TTFT + ITL * k as u32;
    vec![
        Expect {
            fault: "http_500",
            outcome: Outcome::Http5xx,
            status: Some(500),
            t_first: None,
            tokens: Some(0),
            t_end: None,
            error: Some("internal server error"),
        },
        Expect {
            fault: "http_503",
            outcome: Outcome::Http5xx,
            status: Some(503),
            t_first: None,
            tokens: Some(0),
            t_end: None,
            error: Some("service unavailable"),
        },
        Expect {
            fault: "http_429",
            outcome: Outcome::Http429,
            status: Some(429),
            t_first: None,
            tokens: Some(0),
            t_end: None,
            error: None,
        },
        Expect {
            fault: "close_before_response",
            outcome: Outcome::Connect,
            status: None,
            t_first: None,
            tokens: Some(0),
            t_end: None,
            error: None,
        },
        Expect {
            fault: "reset_mid_stream",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: Some(tok(0)),
            tokens: Some(2),
            t_end: None,
            error: None,
        },
        Expect {
            fault: "stall_before_headers",
            outcome: Outcome::Timeout,
            status: None,
            t_first: None,
            tokens: Some(0),
            t_end: Some(t.first_token),
            error: Some("first token timeout"),
        },
        Expect {
            fault: "stall_after_tokens",
            outcome: Outcome::Timeout,
            status: Some(200),
            t_first: Some(tok(0)),
            tokens: Some(2),
            // The second token is the last piece of the body; the idle gap runs from it.
            t_end: Some(tok(1) + t.idle),
            error: Some("idle timeout"),
        },
        Expect {
            fault: "stall_after_tokens=0",
            outcome: Outcome::Timeout,
            status: Some(200),
            t_first: None,
            tokens: Some(0),
            t_end: Some(t.first_token),
            error: Some("first token timeout"),
        },
        Expect {
            fault: "malformed_json",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: Some(tok(0)),
            tokens: Some(1),
            t_end: Some(tok(0)),
            error: None,
        },
        Expect {
            fault: "no_done",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: Some(tok(0)),
            tokens: Some(MAX_TOKENS),
            t_end: None,
            error: Some("[DONE]"),
        },
        Expect {
            fault: "invalid_utf8",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: None,
            tokens: Some(0),
            t_end: Some(tok(0)),
            error: None,
        },
        Expect {
            fault: "huge_line=2097152",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: None,
            tokens: Some(0),
            t_end: None,
            error: Some("max_line_bytes"),
        },
        Expect {
            fault: "trickle",
            outcome: Outcome::Ok,
            status: Some(200),
            t_first: None,
            tokens: Some(MAX_TOKENS),
            t_end: None,
            error: None,
        },
        Expect {
            fault: "wrong_content_type",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: None,
            tokens: Some(0),
            t_end: None,
            error: Some("expected a text/event-stream response"),
        },
        Expect {
            fault: "json_instead_of_sse",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: None,
            tokens: Some(0),
            t_end: None,
            error: None,
        },
        Expect {
            fault: "error_event",
            outcome: Outcome::StreamError,
            status: Some(200),
            t_first: Some(tok(0)),
            tokens: Some(1),
            t_end: Some(tok(0)),
            error: Some("the engine failed mid-stream"),
        },
        Expect {
            fault: "empty_completion",
            outcome: Outcome::EmptyOutput,
            status: Some(200),
            t_first: None,
            tokens: Some(0),
            t_end: Some(TTFT),
            error: None,
        },
        // Fast but wrong answers are well formed: a success to the client (what they
        // say is for answer checks), on the normal answer's timing.
        answer("garbage", MAX_TOKENS),
        answer("repeat", MAX_TOKENS),
        answer("wrong_model", MAX_TOKENS),
        answer("bad_json", MAX_TOKENS),
        answer("template_leak", MAX_TOKENS),
        // "I do not know.": four words, then the answer stops.
        answer("wrong_answer", 4),
        // No tool is offered here: the fault has nothing to hold back.
        answer("no_tool_call", MAX_TOKENS),
    ]
}

/// A successful answer of `tokens` tokens, one per ITL after the TTFT.
fn answer(fault: &'static str, tokens: u32) -> Expect {
    Expect {
        fault,
        outcome: Outcome::Ok,
        status: Some(200),
        t_first: Some(TTFT),
        tokens: Some(tokens),
        t_end: Some(TTFT + ITL * (tokens - 1)),
        error: None,
    }
}

#[test]
fn every_fault_of_the_table_has_a_row() {
    let rows: Vec<&str> = expectations().iter().map(|e| e.fault).collect();
    assert_eq!(crate::support::faults::gaps(&rows), Vec::<String>::new());
}

fn check(e: &Expect, how: &str, r: &RequestRecord, elapsed: Duration) -> Vec<String> {
    let mut bad = Vec::new();
    let ctx = format!("{} ({how})", e.fault);
    if r.outcome != e.outcome {
        bad.push(format!(
            "{ctx}: outcome {} want {}, error {:?}",
            r.outcome.as_str(),
            e.outcome.as_str(),
            r.error
        ));
    }
    if r.http_status != e.status {
        bad.push(format!(
            "{ctx}: status {:?} want {:?}",
            r.http_status, e.status
        ));
    }
    if e.t_first.is_some() && r.t_first != e.t_first {
        bad.push(format!(
            "{ctx}: t_first {:?} want {:?}",
            r.t_first, e.t_first
        ));
    }
    if e.t_first.is_none() && e.outcome != Outcome::Ok && r.t_first.is_some() {
        bad.push(format!("{ctx}: unexpected t_first {:?}", r.t_first));
    }
    let tokens: u32 = r.chunks.iter().map(|c| c.tokens).sum();
    if let Some(want) = e.tokens
        && tokens != want
    {
        bad.push(format!("{ctx}: {tokens} tokens kept, want {want}"));
    }
    match (e.t_end, r.t_end) {
        (_, None) => bad.push(format!("{ctx}: no t_end")),
        (Some(want), Some(got)) if got != want => {
            bad.push(format!("{ctx}: t_end {got:?} want {want:?}"))
        }
        (_, Some(got)) if got > timeouts().total => {
            bad.push(format!("{ctx}: t_end {got:?} beyond the total timeout"))
        }
        _ => {}
    }
    // The call itself returns within the total timeout (plus nothing: the clock is
    // paused, so this is exact).
    if elapsed > timeouts().total {
        bad.push(format!("{ctx}: send took {elapsed:?}"));
    }
    if e.outcome == Outcome::Ok {
        if r.error.is_some() {
            bad.push(format!("{ctx}: ok with an error {:?}", r.error));
        }
    } else {
        match (&r.error, e.error) {
            (None, _) => bad.push(format!("{ctx}: a failure without an error text")),
            (Some(got), Some(want)) if !got.contains(want) => {
                bad.push(format!("{ctx}: error {got:?} lacks {want:?}"))
            }
            _ => {}
        }
    }
    bad
}

async fn send(cfg: ClientConfig) -> (RequestRecord, Duration) {
    let client = Client::new(cfg, None).expect("client builds");
    let start = Instant::now();
    let r = client.send(&spec(), 1, Duration::ZERO, start).await;
    (r, start.elapsed())
}

/// Waits (in paused time, so instantly) past every stall, then checks that tasks and
/// file descriptors are back to where they were.
async fn assert_no_leaks(tasks_before: usize, fds_before: usize) {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    for _ in 0..100 {
        if alive_tasks() <= tasks_before && open_fds() <= fds_before {
            break;
        }
        tokio::time::sleep(ms(10)).await;
        tokio::task::yield_now().await;
    }
    assert_eq!(alive_tasks(), tasks_before, "tasks leaked");
    assert!(
        open_fds() <= fds_before,
        "file descriptors leaked: {} before, {} after",
        fds_before,
        open_fds()
    );
}

#[tokio::test(start_paused = true)]
async fn every_fault_forced_by_header_gives_its_reason_on_chat() {
    let _serial = SERIAL.lock().await;
    if !alone::in_own_process(
        module_path!(),
        "every_fault_forced_by_header_gives_its_reason_on_chat",
    ) {
        return;
    }
    let mock = llmprobe::mock::start(mock_config(vec![]), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    // Warm up once (lazy statics such as the TLS provider open nothing later).
    let (r, _) = send(client_config(&mock, Endpoint::Chat, None)).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    tokio::time::sleep(ms(100)).await;
    let (tasks, fds) = (alive_tasks(), open_fds());

    let mut bad = Vec::new();
    for e in expectations() {
        let (r, elapsed) = send(client_config(&mock, Endpoint::Chat, Some(e.fault))).await;
        bad.extend(check(&e, "header, chat", &r, elapsed));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert_no_leaks(tasks, fds).await;
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn every_fault_configured_in_the_mock_gives_its_reason_on_completions() {
    let _serial = SERIAL.lock().await;
    let mut bad = Vec::new();
    for e in expectations() {
        let fault: FaultSpec = e.fault.parse().unwrap();
        let mock = llmprobe::mock::start(mock_config(vec![fault]), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let (r, elapsed) = send(client_config(&mock, Endpoint::Completions, None)).await;
        bad.extend(check(&e, "config, completions", &r, elapsed));
        mock.shutdown().await;
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Many faults at once, concurrently (each fault kind three times, its own client with
/// a connection pool), in real time: every request ends with its reason, and nothing
/// is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_faults_in_real_time_leave_nothing_behind() {
    let _serial = SERIAL.lock().await;
    if !alone::in_own_process(
        module_path!(),
        "concurrent_faults_in_real_time_leave_nothing_behind",
    ) {
        return;
    }
    let mock = llmprobe::mock::start(
        MockConfig {
            ttft: ms(5),
            itl: ms(2),
            stall: Duration::from_secs(3),
            ..MockConfig::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    // Generous against a loaded 2-core CI machine, still shorter than the 3 s stalls.
    let fast = Timeouts {
        connect: ms(1000),
        first_token: ms(2000),
        idle: ms(1000),
        total: ms(8000),
    };
    let plain = ClientConfig {
        timeouts: fast,
        reuse_connections: true,
        ..client_config(&mock, Endpoint::Chat, None)
    };
    let warm = Client::new(plain.clone(), None).unwrap();
    let r = warm.send(&spec(), 0, Duration::ZERO, Instant::now()).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    drop(warm);
    tokio::time::sleep(ms(200)).await;
    let (tasks, fds) = (alive_tasks(), open_fds());

    // Clients (TLS roots and all) are built before any request starts, so building
    // them cannot eat into the requests' timeouts.
    let clients: Vec<(Expect, Arc<Client>)> = expectations()
        .into_iter()
        .map(|e| {
            let cfg = ClientConfig {
                headers: vec![("x-mock-fault".to_string(), Secret::new(e.fault))],
                ..plain.clone()
            };
            (e, Arc::new(Client::new(cfg, None).unwrap()))
        })
        .collect();
    let mut handles = Vec::new();
    for round in 0..3 {
        for (e, client) in &clients {
            let (fault, outcome, client) = (e.fault, e.outcome, client.clone());
            handles.push(tokio::spawn(async move {
                let start = Instant::now();
                let r = client.send(&spec(), round, Duration::ZERO, start).await;
                (fault, outcome, r, start.elapsed())
            }));
        }
    }
    let mut bad = Vec::new();
    for h in handles {
        let (fault, want, r, elapsed) = h.await.expect("no panic");
        // trickle: about 1 ms per byte may exceed the short total timeout under load.
        let ok = r.outcome == want || (fault == "trickle" && r.outcome == Outcome::Timeout);
        if !ok {
            bad.push(format!(
                "{fault}: {} want {} ({:?})",
                r.outcome.as_str(),
                want.as_str(),
                r.error
            ));
        }
        if elapsed > fast.total + ms(1000) {
            bad.push(format!("{fault}: took {elapsed:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    drop(clients);

    // The mock's stalled handlers end after `stall` (3 s); connections close after.
    // Polled, with ten times the stall as the deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline && (alive_tasks() > tasks || open_fds() > fds) {
        tokio::time::sleep(ms(100)).await;
    }
    assert!(
        alive_tasks() <= tasks,
        "tasks leaked: {tasks} before, {} after",
        alive_tasks()
    );
    assert!(
        open_fds() <= fds,
        "file descriptors leaked: {fds} before, {} after",
        open_fds()
    );
    mock.shutdown().await;
}
