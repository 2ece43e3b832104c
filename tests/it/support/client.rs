//! A scripted HTTP/1.1 server for client tests: it writes exact byte sequences with
//! exact delays (under a paused tokio clock the delays are exact virtual time), and
//! can close, reset or stall the connection at any point. Raw tokio TCP on
//! 127.0.0.1:0, so nothing (not even hyper) stands between the script and the socket.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One thing the server does, in order.
#[derive(Debug, Clone)]
pub enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
    /// Close the connection (FIN).
    Close,
    /// Reset the connection (RST).
    Reset,
    /// Never write again, keep the connection open.
    Hang,
}

/// Builds a response script. `sse()` starts a 200 `text/event-stream` response with
/// chunked transfer encoding; each `event`/`raw` is one chunked frame, so the client
/// sees it as one read.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub steps: Vec<Step>,
}

impl Script {
    pub fn sse() -> Self {
        Script::default().head(200, "OK", "text/event-stream", true)
    }

    pub fn head(mut self, status: u16, reason: &str, content_type: &str, chunked: bool) -> Self {
        let mut h = format!("HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\n");
        if chunked {
            h.push_str("transfer-encoding: chunked\r\n");
        }
        h.push_str("\r\n");
        self.steps.push(Step::Write(h.into_bytes()));
        self
    }

    /// A complete non-streaming response with a body.
    pub fn full(status: u16, reason: &str, content_type: &str, body: &str) -> Self {
        let h = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        Script {
            steps: vec![Step::Write(h.into_bytes())],
        }
    }

    pub fn wait_ms(mut self, ms: u64) -> Self {
        self.steps.push(Step::Sleep(Duration::from_millis(ms)));
        self
    }

    /// One chunked frame with exactly these bytes.
    pub fn raw(mut self, bytes: &[u8]) -> Self {
        let mut f = format!("{:x}\r\n", bytes.len()).into_bytes();
        f.extend_from_slice(bytes);
        f.extend_from_slice(b"\r\n");
        self.steps.push(Step::Write(f));
        self
    }

    /// One `data: <json>\n\n` event in its own frame.
    pub fn data(self, json: &str) -> Self {
        self.raw(format!("data: {json}\n\n").as_bytes())
    }

    /// A chat chunk with content and an optional cumulative usage count.
    pub fn content(self, text: &str, cum: Option<u32>) -> Self {
        let text = serde_json::to_string(text).unwrap();
        let usage = cum
            .map(|c| format!(",\"usage\":{{\"prompt_tokens\":11,\"completion_tokens\":{c}}}"))
            .unwrap_or_default();
        self.data(&format!(
            "{{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{text}}},\"finish_reason\":null}}]{usage}}}"
        ))
    }

    pub fn done(self) -> Self {
        self.raw(b"data: [DONE]\n\n")
    }

    /// The terminating zero-length frame of the chunked body.
    pub fn end(mut self) -> Self {
        self.steps.push(Step::Write(b"0\r\n\r\n".to_vec()));
        self
    }

    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub head: String,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

pub struct TestServer {
    pub addr: std::net::SocketAddr,
    pub requests: Arc<Mutex<Vec<Captured>>>,
    pub connections: Arc<Mutex<usize>>,
}

impl TestServer {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }

    pub fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }
}

/// Serves `scripts` in order, one per request (the last one repeats), keeping
/// connections alive between requests.
pub async fn serve(scripts: Vec<Script>) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(Mutex::new(0usize));
    let scripts = Arc::new(scripts);
    let (reqs, conns) = (requests.clone(), connections.clone());
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            *conns.lock().unwrap() += 1;
            let (reqs, scripts) = (reqs.clone(), scripts.clone());
            tokio::spawn(async move {
                let _ = serve_conn(sock, reqs, scripts).await;
            });
        }
    });
    TestServer {
        addr,
        requests,
        connections,
    }
}

async fn serve_conn(
    mut sock: TcpStream,
    reqs: Arc<Mutex<Vec<Captured>>>,
    scripts: Arc<Vec<Script>>,
) -> std::io::Result<()> {
    loop {
        let Some(captured) = read_request(&mut sock).await? else {
            return Ok(());
        };
        let index = {
            let mut r = reqs.lock().unwrap();
            r.push(captured);
            r.len() - 1
        };
        let script = &scripts[index.min(scripts.len() - 1)];
        match run_steps(&mut sock, &script.steps).await? {
            Ending::KeepAlive => continue,
            Ending::Close => return Ok(()),
            Ending::Reset => {
                sock.set_zero_linger()?;
                return Ok(());
            }
        }
    }
}

pub enum Ending {
    KeepAlive,
    Close,
    Reset,
}

pub async fn run_steps<S: AsyncWrite + Unpin>(
    sock: &mut S,
    steps: &[Step],
) -> std::io::Result<Ending> {
    for step in steps {
        match step {
            Step::Write(b) => {
                sock.write_all(b).await?;
                sock.flush().await?;
            }
            Step::Sleep(d) => tokio::time::sleep(*d).await,
            Step::Close => return Ok(Ending::Close),
            Step::Reset => return Ok(Ending::Reset),
            Step::Hang => std::future::pending::<()>().await,
        }
    }
    Ok(Ending::KeepAlive)
}

/// Reads one request (head and a Content-Length body); `None` at a clean EOF.
pub async fn read_request<S: AsyncRead + Unpin>(sock: &mut S) -> std::io::Result<Option<Captured>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Ok(Some(Captured { head, body }))
}
