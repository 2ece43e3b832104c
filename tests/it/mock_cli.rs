//! `llmprobe mock` as a process: the listening line scripts parse, serving, graceful
//! exit on SIGTERM, and usage errors (exit code 2) for bad flags.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_llmprobe");

#[test]
fn prints_the_listening_line_serves_and_exits_on_sigterm() {
    let mut child = Command::new(BIN)
        .args([
            "mock",
            "--listen",
            "127.0.0.1:0",
            "--ttft-ms",
            "1",
            "--itl-ms",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim_end()
        .strip_prefix("llmprobe mock listening on http://")
        .unwrap_or_else(|| panic!("unexpected line {line:?}"));
    let addr: std::net::SocketAddr = url.parse().unwrap();
    assert_ne!(addr.port(), 0, "the real port is printed");

    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = r#"{"prompt":"a","max_tokens":2,"stream":true}"#;
    write!(
        sock,
        "POST /v1/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    sock.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
    assert!(
        resp.contains(" tok1") && resp.contains("data: [DONE]"),
        "{resp}"
    );

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "graceful exit on SIGTERM");
}

#[test]
fn bad_flags_are_usage_errors() {
    for (args, needle) in [
        (&["--fault", "bogus"][..], "unknown fault"),
        (
            &["--fault", "stall_after_tokens:3"],
            "probability must be in [0, 1]",
        ),
        (&["--jitter", "gauss:1"], "unknown jitter"),
        (&["--tokens-per-chunk", "0"], "tokens per chunk"),
        (&["--ttft-ms=-5"], "--ttft-ms"),
    ] {
        let out = assert_cmd::Command::new(BIN)
            .arg("mock")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_taken_port_is_a_clear_runtime_error() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = assert_cmd::Command::new(BIN)
        .args(["mock", "--listen", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("cannot listen on {addr}")));
}
