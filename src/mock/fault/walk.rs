//! Walks the fault table (`table.rs`): every fault has a row here with what a client
//! sees of it, checked against the mock over HTTP on 127.0.0.1:0, and the same request
//! without the fault must fail that check (so each check can fail). A fault without a
//! row fails the walk; so does a fault table out of step with docs/mock.md.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::table::{FAULT_NAMES, FAULTS};
use crate::mock::config::MockConfig;
use crate::mock::serve::{MockServer, start};

/// The stall faults' length here: long enough to tell apart from a normal gap.
const STALL: Duration = Duration::from_millis(300);
/// Output tokens of every request.
const TOKENS: u32 = 4;

/// One raw HTTP/1.1 exchange: every byte read, when each read arrived, how it ended.
struct Exchange {
    raw: Vec<u8>,
    reads: Vec<(Duration, usize)>,
    end: std::io::Result<()>,
}

type Check = fn(&Exchange) -> Result<(), String>;

/// A fault's row: the `x-mock-fault` value, whether the request offers a tool, and
/// what the client must see.
struct Case {
    header: &'static str,
    tools: bool,
    check: Check,
}

type Row = (&'static str, bool, Check);

fn case(fault: &str) -> Option<Case> {
    let (header, tools, check) = connection_row(fault)
        .or_else(|| stream_row(fault))
        .or_else(|| answer_row(fault))?;
    Some(Case {
        header,
        tools,
        check,
    })
}

/// The faults of the connection, the status and the timing.
fn connection_row(fault: &str) -> Option<Row> {
    let row: Row = match fault {
        "http_500" => ("http_500", false, |x| {
            status_with(x, 500, "mock fault http_500")
        }),
        "http_503" => ("http_503", false, |x| {
            status_with(x, 503, "ServiceUnavailableError")
        }),
        "http_429" => ("http_429", false, |x| {
            status_with(x, 429, "rate_limit_error")?;
            ensure(
                x.header("retry-after").as_deref() == Some("1"),
                "Retry-After: 1",
            )
        }),
        "close_before_response" => ("close_before_response", false, |x| {
            ensure(
                x.raw.is_empty() && x.end.is_ok(),
                "a clean close without a byte",
            )
        }),
        "reset_mid_stream" => ("reset_mid_stream", false, |x| {
            status_with(x, 200, " tok1")?;
            ensure(!x.has(" tok2"), "no third token")?;
            ensure(x.reset(), "a connection reset")
        }),
        "stall_before_headers" => ("stall_before_headers", false, |x| {
            let first = x.reads.first().map(|r| r.0).unwrap_or_default();
            ensure(first >= STALL, "the first byte after the stall")?;
            ensure(x.has("[DONE]"), "then the normal stream")
        }),
        "stall_after_tokens" => ("stall_after_tokens", false, |x| {
            let gap = x
                .arrival(" tok2")
                .zip(x.arrival(" tok1"))
                .map(|(b, a)| b - a);
            ensure(
                gap >= Some(STALL),
                "the stall between the 2nd and 3rd tokens",
            )?;
            ensure(x.has("[DONE]"), "then the rest of the stream")
        }),
        _ => return None,
    };
    Some(row)
}

/// The faults of the stream's bytes and framing.
fn stream_row(fault: &str) -> Option<Row> {
    let row: Row = match fault {
        "malformed_json" => ("malformed_json", false, |x| {
            let bad = x
                .data_lines()
                .filter(|d| *d != "[DONE]" && serde_json::from_str::<Value>(d).is_err());
            ensure(bad.count() == 1, "one event that is not JSON")?;
            ensure(x.has("[DONE]"), "then the rest of the stream")
        }),
        "no_done" => ("no_done", false, |x| {
            ensure(
                x.end.is_ok() && x.has(" tok3"),
                "the whole stream, cleanly ended",
            )?;
            ensure(!x.has("[DONE]"), "no [DONE]")
        }),
        "invalid_utf8" => ("invalid_utf8", false, |x| {
            ensure(
                memchr::memmem::find(&x.body(), b" tok0\xff\xfe").is_some(),
                "0xFF 0xFE after tok0",
            )
        }),
        "huge_line" => ("huge_line=2048", false, |x| {
            let longest = x.body().split(|b| *b == b'\n').map(<[u8]>::len).max();
            ensure(longest == Some(2048), "one line of exactly 2048 bytes")
        }),
        "trickle" => ("trickle", false, |x| {
            let sizes = x.chunk_sizes();
            ensure(
                !sizes.is_empty() && sizes.iter().all(|s| *s == 1),
                "one byte per HTTP chunk",
            )?;
            ensure(x.body().ends_with(b"data: [DONE]\n\n"), "a whole stream")
        }),
        "wrong_content_type" => ("wrong_content_type", false, |x| {
            ensure(
                x.header("content-type").as_deref() == Some("text/plain; charset=utf-8"),
                "text/plain",
            )?;
            ensure(x.has("[DONE]"), "the normal stream")
        }),
        "json_instead_of_sse" => ("json_instead_of_sse", false, |x| {
            ensure(
                x.header("content-type").as_deref() == Some("application/json"),
                "JSON",
            )?;
            let v: Value = serde_json::from_slice(&x.body()).unwrap_or_default();
            ensure(v["object"] == "chat.completion", "a whole chat.completion")
        }),
        "error_event" => ("error_event", false, |x| {
            status_with(x, 200, "the engine failed mid-stream")?;
            ensure(
                !x.has(" tok1") && x.body().ends_with(b"data: [DONE]\n\n"),
                "after one token, then [DONE]",
            )
        }),
        "empty_completion" => ("empty_completion", false, |x| {
            ensure(
                !x.has(" tok") && x.has("\"completion_tokens\":0"),
                "no token, usage 0",
            )?;
            ensure(x.has("\"finish_reason\":\"stop\""), "finished")
        }),
        _ => return None,
    };
    Some(row)
}

/// The faults of what the answer says.
fn answer_row(fault: &str) -> Option<Row> {
    let row: Row = match fault {
        "garbage" => ("garbage", false, |x| {
            ensure(x.has("[DONE]") && !x.has(" tok"), "no numbered token")
        }),
        "repeat" => ("repeat", false, |x| {
            ensure(
                x.text().matches(" tok0").count() == TOKENS as usize,
                "tok0 every time",
            )
        }),
        "wrong_model" => ("wrong_model", false, |x| {
            ensure(x.has("\"model\":\"mock-wrong-model\""), "another model")
        }),
        "bad_json" => ("bad_json", false, |x| {
            ensure(x.has(r#"{\"answer\": "#), "an unclosed JSON answer")
        }),
        "template_leak" => ("template_leak", false, |x| {
            ensure(x.has("<|im_start|>assistant"), "control tokens")
        }),
        "wrong_answer" => ("wrong_answer", false, |x| {
            ensure(
                x.has(r#""content":" know.""#) && !x.has(" tok"),
                "the wrong answer, no numbered token",
            )
        }),
        "no_tool_call" => ("no_tool_call", true, |x| {
            ensure(
                x.has(" tok0") && !x.has("tool_calls"),
                "plain text, no call",
            )
        }),
        _ => return None,
    };
    Some(row)
}

fn ensure(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("expected {what}"))
    }
}

fn status_with(x: &Exchange, status: u16, text: &str) -> Result<(), String> {
    ensure(x.status() == Some(status), &format!("status {status}"))?;
    ensure(x.has(text), &format!("{text:?} in the body"))
}

impl Exchange {
    fn head_len(&self) -> usize {
        memchr::memmem::find(&self.raw, b"\r\n\r\n").map_or(self.raw.len(), |p| p + 4)
    }

    fn head(&self) -> String {
        String::from_utf8_lossy(&self.raw[..self.head_len()]).to_lowercase()
    }

    fn status(&self) -> Option<u16> {
        self.head().split_whitespace().nth(1)?.parse().ok()
    }

    fn header(&self, name: &str) -> Option<String> {
        let head = self.head();
        let line = head
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))?;
        Some(line.trim().to_string())
    }

    fn chunked(&self) -> bool {
        self.header("transfer-encoding").as_deref() == Some("chunked")
    }

    /// The sizes of the body's HTTP chunks (one, the whole body, when not chunked).
    fn chunk_sizes(&self) -> Vec<usize> {
        let mut rest = &self.raw[self.head_len()..];
        if !self.chunked() {
            return vec![rest.len()];
        }
        let mut sizes = Vec::new();
        while let Some(nl) = memchr::memmem::find(rest, b"\r\n") {
            let size = std::str::from_utf8(&rest[..nl])
                .ok()
                .and_then(|s| usize::from_str_radix(s, 16).ok());
            match size {
                Some(n) if n > 0 && rest.len() >= nl + 2 + n => {
                    sizes.push(n);
                    rest = &rest[(nl + 4 + n).min(rest.len())..];
                }
                _ => break,
            }
        }
        sizes
    }

    /// The body, de-chunked.
    fn body(&self) -> Vec<u8> {
        let mut rest = &self.raw[self.head_len()..];
        if !self.chunked() {
            return rest.to_vec();
        }
        let mut out = Vec::new();
        for n in self.chunk_sizes() {
            let nl = memchr::memmem::find(rest, b"\r\n").unwrap_or(0);
            out.extend_from_slice(&rest[nl + 2..nl + 2 + n]);
            rest = &rest[(nl + 4 + n).min(rest.len())..];
        }
        out
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body()).into_owned()
    }

    fn has(&self, s: &str) -> bool {
        memchr::memmem::find(&self.body(), s.as_bytes()).is_some()
    }

    fn data_lines(&self) -> impl Iterator<Item = String> {
        let text = self.text();
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(String::from)
            .collect();
        lines.into_iter()
    }

    fn reset(&self) -> bool {
        matches!(&self.end, Err(e) if e.kind() == ErrorKind::ConnectionReset)
    }

    /// When the read that completed the first `needle` in the raw bytes arrived.
    fn arrival(&self, needle: &str) -> Option<Duration> {
        let end = memchr::memmem::find(&self.raw, needle.as_bytes())? + needle.len();
        let mut total = 0;
        self.reads.iter().find_map(|&(at, n)| {
            total += n;
            (total >= end).then_some(at)
        })
    }
}

/// A streamed chat request (with a tool offered when `tools`), `fault` forced by the
/// header when given, read raw until the connection ends.
async fn exchange(addr: SocketAddr, fault: Option<&str>, tools: bool) -> Exchange {
    let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "a b"}],
        "max_tokens": TOKENS, "stream": true, "stream_options": {"include_usage": true}});
    if tools {
        body["tools"] = json!([{"type": "function", "function": {"name": "f",
            "parameters": {"type": "object", "required": ["a"],
                           "properties": {"a": {"type": "string"}}}}}]);
    }
    let body = body.to_string();
    let fault = fault.map_or(String::new(), |f| format!("x-mock-fault: {f}\r\n"));
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n{fault}content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let t0 = Instant::now();
    let mut sock = TcpStream::connect(addr).await.expect("connect");
    sock.write_all(req.as_bytes()).await.expect("send");
    let (mut raw, mut reads, mut buf) = (Vec::new(), Vec::new(), [0u8; 8192]);
    let end = loop {
        match tokio::time::timeout(Duration::from_secs(30), sock.read(&mut buf)).await {
            Err(_) => break Err(std::io::Error::new(ErrorKind::TimedOut, "no end")),
            Ok(Ok(0)) => break Ok(()),
            Ok(Ok(n)) => {
                raw.extend_from_slice(&buf[..n]);
                reads.push((t0.elapsed(), n));
            }
            Ok(Err(e)) => break Err(e),
        }
    };
    Exchange { raw, reads, end }
}

async fn mock() -> MockServer {
    let config = MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        stall: STALL,
        ..MockConfig::default()
    };
    start(config, "127.0.0.1:0".parse().expect("address"))
        .await
        .expect("mock starts")
}

#[tokio::test]
async fn every_fault_in_the_table_has_its_outcome() {
    let mock = mock().await;
    let mut bad = Vec::new();
    for fault in FAULTS {
        let Some(case) = case(fault.name) else {
            bad.push(format!("{}: no row in src/mock/fault/walk.rs", fault.name));
            continue;
        };
        let x = exchange(mock.addr(), Some(case.header), case.tools).await;
        if let Err(e) = (case.check)(&x) {
            let got = String::from_utf8_lossy(&x.raw[..x.raw.len().min(2000)]).into_owned();
            bad.push(format!("{}: {e}; got {:?}: {got}", fault.name, x.end));
        }
        let normal = exchange(mock.addr(), None, case.tools).await;
        if (case.check)(&normal).is_ok() {
            bad.push(format!(
                "{}: its check passes without the fault too",
                fault.name
            ));
        }
    }
    mock.shutdown().await;
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_fault_without_a_row_fails_the_walk() {
    assert!(case("a_new_fault").is_none());
}

/// docs/mock.md's fault table lists the faults in table order, each parameter with its
/// placeholder and default.
#[test]
fn docs_list_every_fault() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mock.md"))
        .expect("docs/mock.md");
    let section = doc.split("\n## Faults").nth(1).unwrap_or_default();
    let section = section.split("\n## ").next().unwrap_or_default();
    let rows: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split(" | ").next())
        .collect();
    let names: Vec<&str> = rows.iter().filter_map(|c| c.split('`').next()).collect();
    assert_eq!(names, FAULT_NAMES, "docs/mock.md's fault table");
    for (cell, fault) in rows.iter().zip(FAULTS) {
        if let Some(p) = fault.param {
            let (placeholder, default) = (format!("`={}`", p.name), p.default.to_string());
            assert!(
                cell.contains(&placeholder) && cell.contains(&default),
                "docs/mock.md, {}: wants {placeholder} and the default {default}: {cell}",
                fault.name
            );
        }
    }
}
