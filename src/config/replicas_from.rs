//! The YAML types of a target's `replicas_from:` (where the replicas behind its front
//! door are found) with their defaults; `replicas.rs` checks and plans them.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How often `dns`, `srv` and `file_sd` are read again unless they say otherwise: a
/// lookup or a directory read is cheap, and a new pod should be probed soon.
pub const DEFAULT_LOOKUP_INTERVAL: Duration = Duration::from_secs(30);
/// How often `http_sd` is asked again unless it says otherwise (Prometheus' own default
/// `refresh_interval` for HTTP SD).
pub const DEFAULT_HTTP_SD_INTERVAL: Duration = Duration::from_secs(60);
/// The path of each replica's engine metrics unless `engine_metrics_path` says.
pub const DEFAULT_ENGINE_METRICS_PATH: &str = "/metrics";

/// Where a target's replicas come from: exactly one source, plus how to read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplicasFrom {
    /// The A/AAAA records of a name (a Kubernetes headless Service) at `port`; read
    /// again every `interval` (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<DnsFrom>,
    /// The SRV records of a name (each record's host and port): the name, or
    /// `{name, interval}` (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srv: Option<SrvFrom>,
    /// Prometheus file_sd files: a pattern (`*`, `?` in the file name only; `.json`,
    /// `.yml` or `.yaml`), or `{files: PATTERN, interval}` (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sd: Option<FileSdFrom>,
    /// A Prometheus HTTP SD endpoint: `{url, interval}` (default 1m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_sd: Option<HttpSdFrom>,
    /// A fixed list of replica base URLs (`http://10.0.0.5:8000`, the base URL's scheme,
    /// no path).
    #[serde(rename = "static", default, skip_serializing_if = "Option::is_none")]
    pub static_urls: Option<Vec<String>>,
    /// The DNS server of `dns` and `srv` lookups, `IP:PORT` (default: the system's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<String>,
    /// SD labels (file_sd, http_sd) that become series labels; all others are dropped,
    /// to bound the series count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Most replicas probed; more are refused (counted and logged).
    #[serde(default = "default_max_replicas")]
    pub max_replicas: u32,
}

fn default_max_replicas() -> u32 {
    u32::try_from(crate::discovery::DEFAULT_MAX_REPLICAS).unwrap_or(u32::MAX)
}

/// `dns: {name, port, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DnsFrom {
    pub name: String,
    /// The port every address is probed at.
    pub port: u16,
    /// How often the name is looked up again (default 30s).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

/// `srv: NAME` or `srv: {name, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "srv: a DNS name or {name, interval}")]
pub enum SrvFrom {
    Name(String),
    Full(SrvFull),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SrvFull {
    pub name: String,
    /// How often the name is looked up again (default 30s).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

/// `file_sd: PATTERN` or `file_sd: {files: PATTERN, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "file_sd: a file pattern or {files, interval}")]
pub enum FileSdFrom {
    Pattern(String),
    Full(FileSdFull),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileSdFull {
    pub files: String,
    /// How often the files are read again (default 30s).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

/// `http_sd: {url, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpSdFrom {
    pub url: String,
    /// How often the endpoint is asked again (default 1m).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

impl ReplicasFrom {
    /// The sources that are set, by their key, in the order they are declared here.
    pub(super) fn kinds(&self) -> Vec<&'static str> {
        [
            ("dns", self.dns.is_some()),
            ("srv", self.srv.is_some()),
            ("file_sd", self.file_sd.is_some()),
            ("http_sd", self.http_sd.is_some()),
            ("static", self.static_urls.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }

    /// The source's own `interval`, when it sets one.
    pub(super) fn interval(&self) -> Option<Duration> {
        let srv = self.srv.as_ref().and_then(|s| match s {
            SrvFrom::Full(f) => f.interval,
            SrvFrom::Name(_) => None,
        });
        let file_sd = self.file_sd.as_ref().and_then(|f| match f {
            FileSdFrom::Full(f) => f.interval,
            FileSdFrom::Pattern(_) => None,
        });
        let dns = self.dns.as_ref().and_then(|d| d.interval);
        let http_sd = self.http_sd.as_ref().and_then(|h| h.interval);
        dns.or(srv).or(file_sd).or(http_sd)
    }
}
