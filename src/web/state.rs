//! The web config in force: loaded from `--web.config.file`, checked again every few
//! seconds and swapped when the file or a file it names (certificate, key, client CA)
//! holds new bytes. A bad new version is logged and the running one kept.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::auth::BasicAuth;
use super::file::{self, WebFile};
use super::listener::TlsSource;
use super::tls::{self, ClientAuth};

/// How often the web config file and the files it names are read again.
pub const WEB_CONFIG_CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// The web settings of `llmprobe daemon` (flags).
#[derive(Debug, Clone, Default)]
pub struct WebOptions {
    /// `--web.config.file`: exporter-toolkit TLS and auth settings.
    pub config_file: Option<PathBuf>,
    /// `--web.health-unauthenticated`: `/-/healthy` and `/-/ready` need no credentials and
    /// no client certificate (for kubelet probes).
    pub health_unauthenticated: bool,
    /// How often the file is checked for changes (`None`: [`WEB_CONFIG_CHECK_INTERVAL`]).
    pub check_interval: Option<Duration>,
}

/// One loaded version of the file.
pub struct Active {
    /// User → bcrypt hash.
    pub users: HashMap<String, String>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The handshake lets a client without a certificate through (so kubelet can reach the
    /// open health endpoints) and every other path must refuse it.
    pub cert_required_by_http: bool,
    pub limiter: Option<Mutex<Bucket>>,
}

/// The toolkit's `rate_limit`: a token bucket of `burst` tokens, one back per `interval`.
pub struct Bucket {
    burst: f64,
    interval: Duration,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    pub fn allow(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() / self.interval.as_secs_f64();
        self.tokens = (self.tokens + refill).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Shared by the listener (TLS config per handshake) and the request guard.
pub struct Web {
    pub options: WebOptions,
    active: RwLock<Arc<Active>>,
    /// The bytes the active version was built from (file, then each named file).
    seen: Mutex<Vec<Vec<u8>>>,
    tls_at_start: bool,
    pub auth: Arc<BasicAuth>,
}

impl Web {
    /// Loads the web config (none: plain HTTP, no auth). A bad file is an error here.
    pub fn load(options: WebOptions) -> anyhow::Result<Arc<Web>> {
        let (active, seen) = match &options.config_file {
            Some(path) => {
                let (f, seen) = read(path)?;
                (build(&f, &options)?, seen)
            }
            None => (empty(), Vec::new()),
        };
        let tls_at_start = active.tls.is_some();
        Ok(Arc::new(Web {
            options,
            active: RwLock::new(Arc::new(active)),
            seen: Mutex::new(seen),
            tls_at_start,
            auth: BasicAuth::new(),
        }))
    }

    pub fn active(&self) -> Arc<Active> {
        self.active
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the listener speaks TLS (fixed at start, as in the toolkit).
    pub fn tls_enabled(&self) -> bool {
        self.tls_at_start
    }

    /// Reads the files again and swaps in a changed, valid version. `Ok(true)` when it
    /// swapped; `Err` (the running version stays) for a bad new version.
    pub fn reload_if_changed(&self) -> anyhow::Result<bool> {
        let Some(path) = &self.options.config_file else {
            return Ok(false);
        };
        let (f, seen) = read(path)?;
        if *self.seen.lock().unwrap_or_else(|e| e.into_inner()) == seen {
            return Ok(false);
        }
        let next = build(&f, &self.options)?;
        if next.tls.is_some() != self.tls_at_start {
            // Still adopt the new bytes so this is said once, not every check.
            *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = seen;
            anyhow::bail!(
                "web config file {}: turning TLS on or off takes effect on restart; \
                 keeping the running web config",
                path.display()
            );
        }
        *self.active.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = seen;
        Ok(true)
    }

    /// Checks for changes until `stop`.
    pub fn watch(self: Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let every = self
            .options
            .check_interval
            .unwrap_or(WEB_CONFIG_CHECK_INTERVAL);
        tokio::spawn(async move {
            if self.options.config_file.is_none() {
                return;
            }
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let web = self.clone();
                let outcome = tokio::task::spawn_blocking(move || web.reload_if_changed()).await;
                match outcome {
                    Ok(Ok(true)) => tracing::info!("web config reloaded"),
                    Ok(Ok(false)) => {}
                    Ok(Err(e)) => {
                        tracing::error!(error = %format!("{e:#}"), "web config not reloaded");
                    }
                    Err(e) => tracing::error!(error = %e, "web config check failed"),
                }
            }
        })
    }
}

impl TlsSource for Web {
    fn tls(&self) -> Option<Arc<rustls::ServerConfig>> {
        self.active().tls.clone()
    }
}

fn empty() -> Active {
    Active {
        users: HashMap::new(),
        headers: Vec::new(),
        tls: None,
        cert_required_by_http: false,
        limiter: None,
    }
}

/// Parses the file and reads the bytes of every file it names.
fn read(path: &std::path::Path) -> anyhow::Result<(WebFile, Vec<Vec<u8>>)> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("web config file {}: {e}", path.display()))?;
    let text = String::from_utf8(bytes.clone())
        .map_err(|_| anyhow::anyhow!("web config file {}: not UTF-8", path.display()))?;
    let f = file::parse(&text, path)?;
    let mut seen = vec![bytes];
    for p in f.tls_server_config.files() {
        // A missing file is reported by `build`, with its field name.
        seen.push(std::fs::read(&p).unwrap_or_default());
    }
    Ok((f, seen))
}

fn build(f: &WebFile, options: &WebOptions) -> anyhow::Result<Active> {
    let declared = ClientAuth::parse(f.tls_server_config.client_auth_type.as_deref())?;
    let split = options.health_unauthenticated && declared.required();
    let tls = if f.tls_server_config.is_enabled() {
        let auth = if split { declared.optional() } else { declared };
        let (config, warnings) = tls::server_config(&f.tls_server_config, auth)?;
        for w in warnings {
            tracing::warn!("{w}");
        }
        Some(config)
    } else {
        None
    };
    let headers = f
        .http_server_config
        .headers
        .iter()
        .map(|(k, v)| Ok((HeaderName::try_from(k.as_str())?, HeaderValue::try_from(v)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let limiter = match f.rate_limit.interval.as_deref().unwrap_or("") {
        "" | "0" | "0s" => None,
        text => {
            let interval = humantime::parse_duration(text).map_err(|e| {
                anyhow::anyhow!("rate_limit.interval {text:?}: not a duration ({e})")
            })?;
            (!interval.is_zero()).then(|| {
                Mutex::new(Bucket {
                    burst: f64::from(f.rate_limit.burst),
                    interval,
                    tokens: f64::from(f.rate_limit.burst),
                    last: Instant::now(),
                })
            })
        }
    };
    Ok(Active {
        users: f
            .basic_auth_users
            .iter()
            .map(|(u, h)| (u.clone(), h.expose().to_string()))
            .collect(),
        headers,
        tls,
        cert_required_by_http: split && f.tls_server_config.is_enabled(),
        limiter,
    })
}
