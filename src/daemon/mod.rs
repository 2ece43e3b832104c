//! `llmprobe daemon`: runs one open-loop runner per target × scenario against
//! production endpoints, forever, and exports what they measure (see `exposition`).
//!
//! The control task owns the running targets. Reload (SIGHUP or `POST /-/reload`)
//! loads and resolves the new config first; a bad one changes nothing but
//! `llmprobe_config_last_reload_successful`. A good one is applied by diffing targets
//! (Cloudprober's habit): unchanged targets keep running and keep their series, removed
//! ones are stopped and their series deleted, new and changed ones start. Shutdown stops
//! scheduling and gives in-flight probes the grace period.

pub mod budget;
pub mod demo;
pub mod energy;
pub mod engine_scrape;
pub mod failure_lines;
pub mod failure_log;
pub mod fleet;
pub mod kinds;
pub mod limits;
pub mod pipeline;
pub mod router_scrape;
pub mod scenario;
pub mod scrape_ticks;
pub mod self_check;
pub mod server;
pub mod shared;
pub mod sinks;
pub mod source;
pub mod target;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::schema::SelfCheckConfig;
use crate::config::{Overrides, Plan, plan};
use crate::exposition::Metrics;
use crate::status::StatusBoard;
use crate::web::{Web, WebOptions};
use server::{ReloadRequest, ServerState};
use shared::Shared;
pub use source::ConfigSource;
use target::RunningTarget;

/// How often secret files are read again to notice a rotated key.
pub const SECRET_CHECK_INTERVAL: Duration = Duration::from_secs(60);

/// A started daemon.
pub struct Daemon {
    addr: SocketAddr,
    reload: mpsc::Sender<ReloadRequest>,
    shutdown: CancellationToken,
    control: JoinHandle<()>,
    server: JoinHandle<anyhow::Result<()>>,
    metrics: Arc<Metrics>,
    tls: bool,
    otlp: Option<Arc<crate::otlp::OtlpExport>>,
}

impl Daemon {
    /// [`Daemon::start_with`] without a web config and with `POST /-/reload` enabled:
    /// for embedding and tests, where the caller owns the process.
    pub async fn start(source: ConfigSource, listen: Option<String>) -> anyhow::Result<Daemon> {
        Self::start_with(source, listen, WebOptions::default(), true).await
    }

    /// Loads the config and the web config, binds the HTTP server (`listen` overrides the
    /// config's address) and starts every target. A bad config or web config is an error
    /// here (there is nothing to keep). `lifecycle` enables `POST /-/reload`.
    pub async fn start_with(
        source: ConfigSource,
        listen: Option<String>,
        web: WebOptions,
        lifecycle: bool,
    ) -> anyhow::Result<Daemon> {
        Self::start_full(source, listen, web, lifecycle, Overrides::default()).await
    }

    /// [`Daemon::start_with`] with the command line's `--location` and `--shard`,
    /// which hold over the config file's on every reload.
    pub async fn start_full(
        source: ConfigSource,
        listen: Option<String>,
        web: WebOptions,
        lifecycle: bool,
        overrides: Overrides,
    ) -> anyhow::Result<Daemon> {
        crate::client::tls::install_crypto_provider();
        let plan = source
            .load_with(&overrides)
            .map_err(crate::exit::UsageError::from)?;
        let web = Web::load(web).map_err(|e| crate::exit::UsageError::new(format!("{e:#}")))?;
        let listen = listen.unwrap_or_else(|| plan.listen.clone());
        let addr: SocketAddr = match listen.parse() {
            Ok(a) => a,
            Err(_) => crate::usage_bail!(
                "--listen {listen:?} is not an address such as 0.0.0.0:9464 or 127.0.0.1:0"
            ),
        };
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let addr = listener.local_addr()?;
        let metrics = Metrics::at(plan.location.as_deref())?;
        let status = StatusBoard::new();
        let shutdown = CancellationToken::new();
        let (reload_tx, reload_rx) = mpsc::channel(4);
        let (scrape_interval, scrape_interval_rx) = watch::channel(plan.engine_scrape_interval);
        let (summary_interval, summary_interval_rx) = watch::channel(plan.failure_summary_interval);
        let shared = Shared {
            metrics: metrics.clone(),
            status: status.clone(),
            engine_scrape_interval: scrape_interval_rx,
            failure_summary_interval: summary_interval_rx,
            run_nonce: run_nonce(),
            otlp: otlp_export(&plan)?,
            limits: Arc::default(),
        };
        let otlp = shared.otlp.clone();
        let mut control = Control {
            source,
            overrides,
            shared,
            grace_period: plan.grace_period,
            scrape_interval,
            summary_interval,
            plan: None,
            targets: BTreeMap::new(),
            self_check: None,
            stopping: Vec::new(),
        };
        control.apply(plan);
        metrics.set_reload(true);
        let server_stop = CancellationToken::new();
        let server = tokio::spawn(server::serve(
            listener,
            ServerState {
                metrics: metrics.clone(),
                status,
                reload: reload_tx.clone(),
                lifecycle,
            },
            web.clone(),
            server_stop.clone(),
        ));
        let control = tokio::spawn(control.run(reload_rx, shutdown.clone(), server_stop));
        tracing::info!(%addr, tls = web.tls_enabled(), "llmprobe daemon listening");
        Ok(Daemon {
            addr,
            reload: reload_tx,
            shutdown,
            control,
            server,
            metrics,
            tls: web.tls_enabled(),
            otlp,
        })
    }

    /// The address the HTTP server is bound to (the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https` when the web config turns TLS on, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Reloads the config like SIGHUP does; `Err` carries the rejected config's error.
    pub async fn reload(&self) -> Result<(), String> {
        request_reload(&self.reload).await
    }

    /// A sender for reload requests (the SIGHUP handler uses it).
    pub fn reloader(&self) -> mpsc::Sender<ReloadRequest> {
        self.reload.clone()
    }

    /// Stops scheduling, lets in-flight probes finish within the grace period, sends
    /// what the OTLP export still holds, then stops the HTTP server.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let _ = self.control.await;
        // Every consumer has ended: the last probes' spans and points go out now.
        if let Some(otlp) = self.otlp {
            let _ = tokio::task::spawn_blocking(move || otlp.shutdown()).await;
        }
        match self.server.await {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("HTTP server task failed: {e}")),
        }
    }
}

/// Sends a reload request and waits for its outcome.
pub async fn request_reload(tx: &mpsc::Sender<ReloadRequest>) -> Result<(), String> {
    let (reply, rx) = oneshot::channel();
    tx.send(reply)
        .await
        .map_err(|_| "the daemon is shutting down".to_string())?;
    rx.await
        .map_err(|_| "the daemon is shutting down".to_string())?
}

/// The OTLP export of `plan`, started on the current runtime.
fn otlp_export(plan: &Plan) -> anyhow::Result<Option<Arc<crate::otlp::OtlpExport>>> {
    let Some(o) = &plan.otlp else { return Ok(None) };
    let options = crate::otlp::OtlpOptions {
        traces_url: o.traces_url(),
        metrics_url: o.metrics_url(),
        headers: o
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.expose().to_string()))
            .collect(),
        interval: o.interval,
        location: plan.location.clone(),
    };
    Ok(Some(Arc::new(crate::otlp::OtlpExport::start(&options)?)))
}

/// A nonce part that differs between daemon starts (wall clock), see [`Shared::run_nonce`].
fn run_nonce() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    (nanos ^ (nanos >> 32)) as u32
}

struct Control {
    source: ConfigSource,
    /// `--location` and `--shard`, over the file's on every load.
    overrides: Overrides,
    shared: Shared,
    /// The grace period in force, applied whenever a target stops.
    grace_period: Duration,
    /// Publishes the engine scrape interval to running scrapers.
    scrape_interval: watch::Sender<Duration>,
    /// Publishes the failure log's summary interval to running targets.
    summary_interval: watch::Sender<Duration>,
    plan: Option<Plan>,
    targets: BTreeMap<String, RunningTarget>,
    self_check: Option<self_check::RunningSelfCheck>,
    /// Targets stopped by a reload, still finishing their in-flight probes.
    stopping: Vec<JoinHandle<()>>,
}

impl Control {
    async fn run(
        mut self,
        mut reloads: mpsc::Receiver<ReloadRequest>,
        shutdown: CancellationToken,
        server_stop: CancellationToken,
    ) {
        let mut secret_check = tokio::time::interval_at(
            tokio::time::Instant::now() + SECRET_CHECK_INTERVAL,
            SECRET_CHECK_INTERVAL,
        );
        secret_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                req = reloads.recv() => match req {
                    Some(reply) => {
                        let result = self.reload();
                        let _ = reply.send(result);
                    }
                    None => break,
                },
                _ = secret_check.tick() => self.check_secret_files(),
            }
            self.stopping.retain(|h| !h.is_finished());
        }
        tracing::info!(
            grace_period = ?self.grace_period,
            "shutting down: no new probes, waiting for in-flight ones"
        );
        if let Some(s) = self.self_check.take() {
            s.stop();
        }
        let mut waits: Vec<JoinHandle<()>> = std::mem::take(&mut self.stopping);
        for (_, t) in std::mem::take(&mut self.targets) {
            waits.push(t.stop(self.grace_period));
        }
        // A stopping target aborts what is still in flight at the end of the grace
        // period; the extra second covers the cancellation itself.
        let deadline = self.grace_period + Duration::from_secs(1);
        let all = async {
            for w in waits {
                let _ = w.await;
            }
        };
        if tokio::time::timeout(deadline, all).await.is_err() {
            tracing::warn!("some probes did not end within the grace period");
        }
        server_stop.cancel();
    }

    /// Reloads when a secret file (API key, header) holds a new value: a rotated
    /// Kubernetes Secret is remounted in place, and nobody sends SIGHUP for it.
    fn check_secret_files(&mut self) {
        let Some(plan) = &self.plan else { return };
        let changed = plan::changed_secret_files(plan);
        if changed.is_empty() {
            return;
        }
        // Paths only: never the value.
        let files: Vec<String> = changed.iter().map(|p| p.display().to_string()).collect();
        tracing::info!(files = ?files, "secret file changed; reloading the configuration");
        let _ = self.reload();
    }

    fn reload(&mut self) -> Result<(), String> {
        match self.source.load_with(&self.overrides) {
            Ok(plan) => {
                self.apply(plan);
                self.shared.metrics.set_reload(true);
                tracing::info!("configuration reloaded");
                Ok(())
            }
            Err(e) => {
                self.shared.metrics.set_reload(false);
                tracing::error!(error = %e, "reload failed; keeping the running configuration");
                Err(e.to_string())
            }
        }
    }

    /// Starts, restarts or stops the self-check to match `config`.
    fn apply_self_check(&mut self, config: Option<&SelfCheckConfig>) {
        if self.self_check.as_ref().map(|s| &s.config) == config {
            return;
        }
        if let Some(running) = self.self_check.take() {
            running.stop();
        }
        self.self_check = config.map(|c| {
            self_check::start(
                c.clone(),
                self.shared.metrics.clone(),
                u64::from(self.shared.run_nonce),
                self.shared.failure_summary_interval.clone(),
            )
        });
    }

    /// Makes the running targets match `plan`: those of this prober's shard.
    fn apply(&mut self, mut plan: Plan) {
        let metrics = self.shared.metrics.clone();
        if let Some(old) = &self.plan {
            if old.listen != plan.listen {
                tracing::warn!(
                    old = %old.listen, new = %plan.listen,
                    "listen address changes take effect on restart"
                );
            }
            if old.location != plan.location {
                tracing::warn!(
                    old = ?old.location, new = ?plan.location,
                    "location changes take effect on restart"
                );
            }
            if old.otlp != plan.otlp {
                tracing::warn!("otlp changes take effect on restart");
            }
        }
        let shard = plan.shard;
        let all = plan.targets.len();
        // A target whose front door is another shard's may still have replicas here.
        plan.targets
            .retain(|t| shard.owns_target(&t.name) || t.replicas.is_some());
        metrics.set_shard(shard.index, shard.count);
        if shard.count > 1 {
            tracing::info!(%shard, targets = plan.targets.len(), of = all, "probing this shard's targets");
        }
        // Shared settings apply to running targets in place: the grace period when a
        // target stops, the intervals through their watch channels.
        self.grace_period = plan.grace_period;
        self.scrape_interval.send_if_modified(|v| {
            let changed = *v != plan.engine_scrape_interval;
            *v = plan.engine_scrape_interval;
            changed
        });
        self.summary_interval
            .send_replace(plan.failure_summary_interval);
        self.apply_self_check(plan.self_check.as_ref());
        self.shared.status.pages().set_keep(plan.probe_pages);
        let mut next: BTreeMap<String, RunningTarget> = BTreeMap::new();
        let mut to_start = Vec::new();
        let mut old = std::mem::take(&mut self.targets);
        for t in &plan.targets {
            match old.remove(&t.name) {
                Some(running) if running.plan == *t => {
                    next.insert(t.name.clone(), running);
                }
                Some(running) => {
                    tracing::info!(target = %t.name, "target changed; restarting it");
                    self.retire(running, Some(t));
                    to_start.push(t.clone());
                }
                None => to_start.push(t.clone()),
            }
        }
        for (name, running) in old {
            tracing::info!(target = %name, "target removed");
            self.retire(running, None);
        }
        let count: usize = plan.targets.iter().map(|t| t.scenarios.len()).sum();
        let mut position = 0;
        for t in &plan.targets {
            let n = t.scenarios.len();
            if to_start.iter().any(|s| s.name == t.name) {
                match target::start(t.clone(), &self.shared, (position, count)) {
                    Ok(running) => {
                        next.insert(t.name.clone(), running);
                    }
                    Err(e) => tracing::error!(
                        target = %t.name,
                        error = %crate::secret::scrub(
                            &format!("{e:#}"),
                            t.secrets.iter().map(crate::secret::Secret::expose),
                        ),
                        "cannot start target"
                    ),
                }
            }
            position += n;
        }
        self.targets = next;
        metrics.set_targets(plan.targets.len());
        self.shared.status.set_config(plan.redacted_yaml.clone());
        self.plan = Some(plan);
    }

    /// Stops a target, then deletes the series its successor `new` (or nobody) will not
    /// continue. Cancel first, remove second, under the target's publish lock: its
    /// scraper checks the cancellation under the same lock, so nothing it publishes can
    /// outlive the removal. (Probe consumers hold pre-resolved children, which removal
    /// detaches: their late records reach no exported series.)
    fn retire(&mut self, running: RunningTarget, new: Option<&crate::config::TargetPlan>) {
        let plan = running.plan.clone();
        let publish = running.publish.clone();
        let members = running.members.clone();
        self.stopping.push(running.stop(self.grace_period));
        let _publishing = publish.lock().unwrap_or_else(|e| e.into_inner());
        self.remove_series_not_in(&plan, new);
        // A restarted target discovers its replicas again and starts their series anew.
        fleet::remove_all(&self.shared, &plan, &members);
    }

    /// Deletes the series of `old` that `new` (the same target after reload, or `None`
    /// when it is gone) will not continue.
    fn remove_series_not_in(
        &self,
        old: &crate::config::TargetPlan,
        new: Option<&crate::config::TargetPlan>,
    ) {
        let metrics = &self.shared.metrics;
        kinds::retire_all(&self.shared, old, new);
        let same_model = new.is_some_and(|n| n.model == old.model);
        match new {
            Some(n) if same_model => {
                if n.capacity.is_none() {
                    metrics.remove_capacity(&old.name, &old.model);
                }
                if n.engine_metrics_url.is_none() {
                    metrics.remove_engine(&old.name, &old.model);
                    self.shared.status.remove_engine(&old.name);
                }
                if n.router_metrics_url.is_none() {
                    metrics.remove_router(&old.name, &old.model);
                }
            }
            _ => {
                metrics.remove_target(&old.name, &old.model);
                self.shared.status.remove_engine(&old.name);
            }
        }
        // A rate-limit pause and the day's spend outlive a restart, not a removal.
        if new.is_none() {
            self.shared.limits.retain(|name| name != old.name);
            self.shared.status.remove_hold(&old.name);
        }
    }
}

/// Runs the daemon until SIGTERM or SIGINT; SIGHUP reloads. Prints the listening line
/// on stdout once bound (scripts parse it).
pub async fn run_until_signalled(
    source: ConfigSource,
    listen: Option<String>,
    web: WebOptions,
    lifecycle: bool,
    overrides: Overrides,
) -> anyhow::Result<()> {
    // Before the listening line: a script that signals as soon as it reads the line
    // must find the handlers in place, not the default action that kills the process.
    let signals = Signals::install()?;
    let daemon = Daemon::start_full(source, listen, web, lifecycle, overrides).await?;
    println!(
        "llmprobe daemon listening on {}://{}",
        daemon.scheme(),
        daemon.addr()
    );
    signals.wait(&daemon).await?;
    daemon.shutdown().await
}

/// The signals the daemon acts on.
#[cfg(unix)]
struct Signals {
    hup: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            hup: signal(SignalKind::hangup()).context("installing the SIGHUP handler")?,
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    /// Reloads on SIGHUP; returns on SIGTERM or SIGINT.
    async fn wait(mut self, daemon: &Daemon) -> anyhow::Result<()> {
        let reloader = daemon.reloader();
        loop {
            tokio::select! {
                _ = self.hup.recv() => {
                    tracing::info!("SIGHUP: reloading the configuration");
                    // The outcome is logged and exported by the control task.
                    let _ = request_reload(&reloader).await;
                }
                _ = self.term.recv() => return Ok(()),
                _ = self.int.recv() => return Ok(()),
            }
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> anyhow::Result<Signals> {
        Ok(Signals)
    }

    async fn wait(self, _daemon: &Daemon) -> anyhow::Result<()> {
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")
    }
}

/// What the `llmprobe daemon` command line asks for (the CLI layer fills it from its
/// arguments; see `cli::DaemonArgs` for what each one means).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub config: Option<PathBuf>,
    pub config_check: bool,
    /// `--config.check.allow-missing-secrets`.
    pub allow_missing_secrets: bool,
    pub listen: Option<String>,
    pub mock: bool,
    pub mock_fault: Vec<String>,
    /// `--web.config.file` and `--web.health-unauthenticated`.
    pub web: WebOptions,
    /// `--web.enable-lifecycle`.
    pub enable_lifecycle: bool,
    /// `--location` and `--shard`.
    pub overrides: Overrides,
}

/// The flag that lets `--config.check` pass with secrets only the deployment has.
const ALLOW_MISSING_SECRETS: &str = "--config.check.allow-missing-secrets";

/// The secrets a config check could not read on this machine: an error listing them
/// all, or, when allowed, a note on stderr (the OK line on stdout stays one line).
fn unread_secrets(unread: &[crate::config::ConfigError], allowed: bool) -> anyhow::Result<()> {
    if unread.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = unread.iter().map(ToString::to_string).collect();
    let n = unread.len();
    let secrets = if n == 1 { "secret" } else { "secrets" };
    if allowed {
        eprintln!(
            "{n} {secrets} not on this machine, allowed by {ALLOW_MISSING_SECRETS} (the \
             daemon needs them where it runs):\n  {}",
            lines.join("\n  ")
        );
        return Ok(());
    }
    crate::usage_bail!(
        "{}\n{n} {secrets} cannot be read on this machine; where only the deployment has \
         them, {ALLOW_MISSING_SECRETS} lists them and checks the rest",
        lines.join("\n")
    );
}

/// `llmprobe daemon`: `--config.check`, `--mock`, or a config file.
pub async fn run_cli(args: impl Into<RunOptions>) -> anyhow::Result<std::process::ExitCode> {
    let args: RunOptions = args.into();
    if let Some(l) = &args.listen
        && l.parse::<SocketAddr>().is_err()
    {
        crate::usage_bail!("--listen {l:?} is not an address such as 0.0.0.0:9464 or 127.0.0.1:0");
    }
    if args.mock {
        let (mock, source) = demo::start(&args.mock_fault).await?;
        tracing::info!(mock = %mock.base_url(), "probing the embedded mock engine");
        let listen = args
            .listen
            .or_else(|| Some(crate::config::DEFAULT_LISTEN.to_string()));
        let result = run_until_signalled(
            source,
            listen,
            args.web,
            args.enable_lifecycle,
            args.overrides,
        )
        .await;
        mock.shutdown().await;
        result?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let Some(path) = args.config else {
        crate::usage_bail!("--config FILE is required (or --mock for a demo)");
    };
    if args.config_check {
        let checked =
            plan::check_with(&path, &args.overrides).map_err(crate::exit::UsageError::from)?;
        unread_secrets(&checked.unread, args.allow_missing_secrets)?;
        let plan = checked.plan;
        let scenarios: usize = plan.targets.iter().map(|t| t.scenarios.len()).sum();
        let mine = plan
            .targets
            .iter()
            .filter(|t| plan.shard.owns_target(&t.name))
            .count();
        let share = if plan.shard.count > 1 {
            format!("; shard {} probes {mine} of the front doors", plan.shard)
        } else {
            String::new()
        };
        println!(
            "{}: OK ({} targets, {} scenarios{share})",
            path.display(),
            plan.targets.len(),
            scenarios
        );
        if let Some(web) = &args.web.config_file {
            Web::load(args.web.clone())
                .map_err(|e| crate::exit::UsageError::new(format!("{e:#}")))?;
            println!("{}: OK (web config)", web.display());
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    run_until_signalled(
        ConfigSource::File(path),
        args.listen,
        args.web,
        args.enable_lifecycle,
        args.overrides,
    )
    .await?;
    Ok(std::process::ExitCode::SUCCESS)
}
