//! Shared helpers of the daemon integration tests: a daemon started in process from a
//! config text (alone, or probing a mock started with it), a config file in a temp dir,
//! an HTTP client, a tiny Prometheus text parser, and polling until a condition holds.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use llmprobe::config::Overrides;
use llmprobe::daemon::{ConfigSource, Daemon};
use llmprobe::mock::{MockConfig, MockServer};
use llmprobe::web::WebOptions;

/// A daemon in this process on 127.0.0.1:0, started from a config file of its own. The
/// file's temp dir lives as long as the daemon, so a test may rewrite the file and
/// reload, or put other files beside it. Derefs to the [`Daemon`].
pub struct TestDaemon {
    daemon: Daemon,
    path: PathBuf,
    dir: tempfile::TempDir,
}

impl TestDaemon {
    /// Writes `config` to a file and starts a daemon from it; panics if it does not start.
    pub async fn start(config: &str) -> TestDaemon {
        TestDaemon::start_full(config, Overrides::default()).await
    }

    /// [`TestDaemon::start`] with the command line's `--location` and `--shard`.
    pub async fn start_full(config: &str, overrides: Overrides) -> TestDaemon {
        let (dir, path) = config_file(config);
        let daemon = Daemon::start_full(
            ConfigSource::File(path.clone()),
            Some("127.0.0.1:0".into()),
            WebOptions::default(),
            true,
            overrides,
        )
        .await
        .expect("daemon starts");
        TestDaemon { daemon, path, dir }
    }

    /// The config file (rewrite it, then reload).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The config file's directory, removed when the daemon is dropped.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// [`Daemon::shutdown`]; the config's directory goes after it.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.daemon.shutdown().await
    }
}

impl Deref for TestDaemon {
    type Target = Daemon;

    fn deref(&self) -> &Daemon {
        &self.daemon
    }
}

/// A mock engine on 127.0.0.1:0 and a daemon probing it: `config` is given the mock's
/// base URL and returns the daemon's config text.
pub async fn with_mock(
    mock: MockConfig,
    config: impl FnOnce(&str) -> String,
) -> (MockServer, TestDaemon) {
    let mock = super::mock::start(mock).await;
    let daemon = TestDaemon::start(&config(&mock.base_url())).await;
    (mock, daemon)
}

/// One sample of the text exposition format.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Parses `name{a="x",b="y"} value` lines (comments skipped). Label values in our
/// output never contain `"` or `,`; the parser still handles escapes minimally.
pub fn parse(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (head, value) = line.rsplit_once(' ').expect("sample line");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().expect("sample value"),
        };
        let (name, labels) = match head.split_once('{') {
            None => (head.to_string(), BTreeMap::new()),
            Some((n, rest)) => {
                let body = rest.strip_suffix('}').expect("closing brace");
                let mut labels = BTreeMap::new();
                for pair in body.split("\",") {
                    if pair.is_empty() {
                        continue;
                    }
                    let (k, v) = pair.split_once("=\"").expect("label pair");
                    labels.insert(k.to_string(), v.trim_end_matches('"').to_string());
                }
                (n.to_string(), labels)
            }
        };
        out.push(Sample {
            name,
            labels,
            value,
        });
    }
    out
}

/// The value of the one sample named `name` whose labels include every `want` pair.
pub fn value(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> Option<f64> {
    let mut hits = samples.iter().filter(|s| {
        s.name == name
            && want
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    });
    let first = hits.next()?;
    assert!(
        hits.next().is_none(),
        "more than one sample of {name} {want:?}"
    );
    Some(first.value)
}

/// Sum over every sample named `name` whose labels include `want`.
pub fn sum(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| {
            s.name == name
                && want
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

pub fn http() -> reqwest::Client {
    llmprobe::client::tls::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("reqwest client")
}

pub async fn get(url: &str) -> (u16, String) {
    let r = http().get(url).send().await.expect("GET");
    let status = r.status().as_u16();
    (status, r.text().await.expect("body"))
}

pub async fn scrape(addr: std::net::SocketAddr) -> Vec<Sample> {
    let (status, text) = get(&format!("http://{addr}/metrics")).await;
    assert_eq!(status, 200);
    parse(&text)
}

/// Polls `f` every 50 ms until it returns `Some`, for at most `limit`.
pub async fn wait_for<T, F, Fut>(limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A config file in a fresh temp dir (kept alive by the returned guard).
pub fn config_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("daemon.yaml");
    std::fs::write(&path, text).expect("write config");
    (dir, path)
}
