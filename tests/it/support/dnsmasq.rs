//! `dnsmasq` as a test DNS server: A records from a hosts file it re-reads on SIGHUP,
//! SRV records fixed at start, on 127.0.0.1 at a free port. Skips (or fails with
//! `LLMPROBE_REQUIRE_TOOLS=1`) when dnsmasq is missing.

use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// `dnsmasq` as a child on 127.0.0.1:PORT, answering from a hosts file it re-reads on
/// SIGHUP, with SRV records fixed at start. Killed when dropped.
pub struct Dnsmasq {
    child: Child,
    port: u16,
    hosts: PathBuf,
    _dir: tempfile::TempDir,
}

impl Dnsmasq {
    pub fn binary() -> Option<String> {
        let bin = std::env::var("LLMPROBE_DNSMASQ").unwrap_or_else(|_| "dnsmasq".into());
        let found = Command::new(&bin)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if found {
            return Some(bin);
        }
        assert!(
            std::env::var("LLMPROBE_REQUIRE_TOOLS").as_deref() != Ok("1"),
            "dnsmasq not found and LLMPROBE_REQUIRE_TOOLS=1"
        );
        eprintln!(
            "SKIPPED: dnsmasq not found (set LLMPROBE_DNSMASQ or apt-get install dnsmasq-base)"
        );
        None
    }

    pub fn start(bin: &str, hosts_text: &str, srv: &[&str]) -> Dnsmasq {
        let dir = tempfile::tempdir().unwrap();
        let hosts = dir.path().join("hosts");
        std::fs::write(&hosts, hosts_text).unwrap();
        // dnsmasq binds UDP and TCP on its port; a port free a moment ago may be taken
        // by a parallel test since, and then dnsmasq exits at once: try another.
        for _ in 0..20 {
            let port = free_udp_and_tcp_port();
            let mut child = Self::spawn(bin, port, &hosts, srv);
            std::thread::sleep(std::time::Duration::from_millis(300));
            if child.try_wait().unwrap().is_none() {
                return Dnsmasq {
                    child,
                    port,
                    hosts,
                    _dir: dir,
                };
            }
        }
        panic!("dnsmasq exited at start on 20 ports in a row");
    }

    fn spawn(bin: &str, port: u16, hosts: &std::path::Path, srv: &[&str]) -> Child {
        let mut cmd = Command::new(bin);
        cmd.args([
            "--no-daemon",
            "--no-resolv",
            "--no-hosts",
            "--conf-file=/dev/null",
        ])
        .args([
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            "--pid-file=",
        ])
        .arg(format!("--port={port}"))
        .arg(format!("--addn-hosts={}", hosts.display()));
        // As root, dnsmasq would switch to `nobody`, who cannot read the temp dir.
        if is_root() {
            cmd.arg("--user=root");
        }
        for record in srv {
            cmd.arg(format!("--srv-host={record}"));
        }
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    pub fn server(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Replaces the hosts file and has dnsmasq read it again.
    pub fn reload(&self, hosts_text: &str) {
        std::fs::write(&self.hosts, hosts_text).unwrap();
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        assert!(status.success());
    }

    pub fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("dnsmasq exited: {status}");
        }
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// A port free on 127.0.0.1 for both UDP and TCP right now.
fn free_udp_and_tcp_port() -> u16 {
    loop {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}
