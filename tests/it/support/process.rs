//! The `llmprobe` binary run as a server (`daemon` or `mock`) by the tests of its
//! command line: spawned with piped output, its address read from its first stdout
//! line, both streams drained by threads so that a chatty log never blocks it on a full
//! pipe, and killed when dropped so that a failed assertion leaves nothing running.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use assert_cmd::cargo::CommandCargoExt;

/// The daemon's first line, before its URL.
pub const DAEMON_LISTENING: &str = "llmprobe daemon listening on ";
/// The mock's first line, before its URL.
pub const MOCK_LISTENING: &str = "llmprobe mock listening on ";

/// The `llmprobe` binary of this build.
pub fn llmprobe() -> Command {
    Command::cargo_bin("llmprobe").expect("the llmprobe binary")
}

/// A running server binary.
pub struct Process {
    child: Child,
    pub addr: SocketAddr,
    /// Its first stdout line, with the address.
    pub first_line: String,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
    stderr_so_far: Arc<Mutex<Vec<u8>>>,
    stopped: bool,
}

impl Process {
    /// `llmprobe ARGS`, a daemon that prints its `http://` address first.
    pub fn daemon(args: &[&str]) -> Process {
        let mut cmd = llmprobe();
        cmd.args(args);
        Process::daemon_from(cmd)
    }

    /// [`Process::daemon`] from a command of the caller's (its environment set, say).
    pub fn daemon_from(cmd: Command) -> Process {
        Process::spawn(cmd, &format!("{DAEMON_LISTENING}http://"))
    }

    /// Spawns `cmd` and reads its first stdout line, `prefix` then the address (a
    /// trailing `/` allowed); panics, with what stderr said, on any other line.
    pub fn spawn(mut cmd: Command, prefix: &str) -> Process {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let (stderr, stderr_so_far) = drain(child.stderr.take().expect("stderr"));
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first_line = String::new();
        let _ = out.read_line(&mut first_line);
        let addr = first_line
            .trim()
            .strip_prefix(prefix)
            .and_then(|a| a.trim_end_matches('/').parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!("unexpected first line {first_line:?} (want {prefix}ADDRESS); stderr:\n{err}");
        };
        Process {
            child,
            addr,
            first_line,
            stdout: Some(drain(out).0),
            stderr: Some(stderr),
            stderr_so_far,
            stopped: false,
        }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Every whole line stderr has written so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        let buf = self.stderr_so_far.lock().unwrap();
        let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        String::from_utf8_lossy(&buf[..whole])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Whether stderr has said `text` yet.
    pub fn stderr_says(&self, text: &str) -> bool {
        String::from_utf8_lossy(&self.stderr_so_far.lock().unwrap()).contains(text)
    }

    /// Sends signal `sig` (`TERM`, `HUP`); panics if it cannot be sent.
    pub fn signal(&self, sig: &str) {
        // std has no kill(2) with a signal number; the kill utility is everywhere.
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill -{sig} {}", self.child.id());
    }

    /// SIGTERM, then waits: (exited successfully, all of stdout, all of stderr).
    pub fn stop(mut self) -> (bool, String, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let ok = self.child.wait().is_ok_and(|s| s.success());
        self.stopped = true;
        let rest = self.stdout.take().map(|h| h.join().unwrap_or_default());
        let err = self.stderr.take().map(|h| h.join().unwrap_or_default());
        let out = std::mem::take(&mut self.first_line) + &rest.unwrap_or_default();
        (ok, out, err.unwrap_or_default())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads `r` to its end in a thread, appending each piece to a shared buffer as it
/// comes: the handle gives the whole text at the end, the buffer what came so far.
fn drain(mut r: impl Read + Send + 'static) -> (JoinHandle<String>, Arc<Mutex<Vec<u8>>>) {
    let so_far = Arc::new(Mutex::new(Vec::new()));
    let buf = so_far.clone();
    let handle = std::thread::spawn(move || {
        let mut piece = [0u8; 8192];
        loop {
            match r.read(&mut piece) {
                Ok(0) => break,
                Ok(n) => buf.lock().unwrap().extend_from_slice(&piece[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        String::from_utf8_lossy(&buf.lock().unwrap()).into_owned()
    });
    (handle, so_far)
}
