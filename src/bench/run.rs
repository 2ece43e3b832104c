//! Running `bench`: builds the target (or starts the in-process mock), the workload and
//! the client once, then runs the shared open-loop runner once per rate, streaming
//! records to `--records` as they arrive, and summarises each rate into a
//! [`RateReport`](crate::report::RateReport). It is the real [`Executor`]; which rates
//! run and what the results mean is [`plan`]'s business.

use std::future::Future;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::aggregate::Collector;
use crate::bench::args::BenchArgs;
use crate::bench::energy::{self, GpuMeter, GpuRead};
use crate::bench::options::{BenchOptions, Dataset, GpuSource, LenDist, Stop};
use crate::bench::plan::{self, Executor, RateRun};
use crate::bench::sinks::{ByModel, Kept, Progress, RecordsFile, RunSinks};
use crate::client::{Client, ClientConfig};
use crate::exit;
use crate::latency::Slo;
use crate::mock::{self, EmissionLog, MockConfig, MockFlags, MockServer};
use crate::probe::{Conversations, Prober};
use crate::rate::Rate;
use crate::record::RequestRecord;
use crate::report::jsonl::JsonlWriter;
use crate::report::{self, RateReport, build::ReportContext};
use crate::runner::{self, CapPolicy, ConcurrencyCap, RunConfig, Timer};
use crate::schedule::{ArrivalProcess, Schedule};
use crate::secret::Secret;
use crate::selfcheck::{self, ReferenceEngine, Truth};
use crate::workload::lengths::{LengthDist, Lengths};
use crate::workload::prompt::PromptGenerator;
use crate::workload::replay::{Handoff, ReplayArrivals, ReplayFailure};
use crate::workload::tokenizer::Tokenizer;
use crate::workload::trace::{TraceReader, TraceSource};
use crate::workload::trace_prompt::BlockPrompts;
use crate::workload::{PROMPT_BYTES_PER_TOKEN, RequestSpec, TokenCounter, Workload};

/// Answers whose emission notes `--mock-notes` keeps at most (the latest): bounded
/// memory however long the run.
const MOCK_NOTES_CAPACITY: usize = 65_536;

/// How long in-flight requests may finish after Ctrl-C before they are cancelled.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Most prompt bytes built before a run starts. Beyond it (many requests, or long
/// prompts) each request is built just before it is sent instead.
const PREBUILD_MAX_BYTES: u64 = 256 << 20;

/// Whether `n` requests of at most `prompt_bytes` each may all be built up front.
fn prebuild_fits(n: u64, prompt_bytes: u64) -> bool {
    n.checked_mul(prompt_bytes)
        .is_some_and(|total| total <= PREBUILD_MAX_BYTES)
}

/// The prompt nonce of the `run`-th run of this invocation: the `run`-th output of a
/// SplitMix64 generator started at the invocation's clock-derived base.
fn run_nonce(base: u64, run: u32) -> u32 {
    let state = base.wrapping_add(u64::from(run).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    (crate::schedule::splitmix64(state) >> 32) as u32
}

/// `llmprobe bench`.
pub async fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let now = SystemTime::now();
    let opts = BenchOptions::from_args(args, &compact_utc(now))?;
    let notes = opts
        .mock
        .as_ref()
        .and_then(|m| m.notes.clone())
        .map(|path| (path, EmissionLog::with_capacity(MOCK_NOTES_CAPACITY)));
    let mock = match &opts.mock {
        Some(m) => {
            let cfg = MockConfig::from_flags(MockFlags {
                ttft: m.ttft,
                itl: m.itl,
                batch_slowdown: m.batch_slowdown,
                max_running: m.max_running,
                no_usage: m.no_usage,
                tokens_per_chunk: m.tokens_per_chunk,
                reasoning_tokens: m.reasoning_tokens,
                faults: mock::parse_fault_flags("--mock-fault", &m.faults)?,
                answer: m.answer.clone(),
                // The mock knows the golden set's answers (a wrong one is a fault).
                golden: match &opts.dataset {
                    Dataset::Golden(set) => Some(set.source.clone()),
                    _ => None,
                },
                model: Some(opts.model.clone()),
                // `--lora-split`: the mock serves the adapters, as vLLM would.
                lora_adapters: opts.lora_split.as_ref().map_or_else(Vec::new, |s| {
                    s.adapters.iter().map(|a| a.name.clone()).collect()
                }),
                seed: Some(opts.seed),
                // `--gpu-metrics-url mock`: the mock's GPUs, from its power model.
                gpu: opts
                    .gpu_metrics
                    .contains(&GpuSource::Mock)
                    .then(crate::mock::gpu::PowerModel::default),
                ..MockFlags::default()
            })?;
            let addr = SocketAddr::from(([127, 0, 0, 1], 0));
            let started = match &notes {
                Some((_, log)) => mock::start_with_emissions(cfg, addr, log.clone()).await,
                None => mock::start(cfg, addr).await,
            };
            Some(started.context("cannot start the mock engine")?)
        }
        None => None,
    };
    let base_url = mock
        .as_ref()
        .map_or_else(|| opts.base_url.clone(), MockServer::base_url);
    let result = Bench::new(opts, base_url, mock.is_some())?.run_all().await;
    if let Some(m) = mock {
        m.shutdown().await;
    }
    // Written even when the run failed: the notes say what the engine did meanwhile.
    if let Some((path, log)) = notes {
        write_mock_notes(&path, &log)?;
    }
    result
}

/// `--mock-notes`: the engine's notes of each streamed answer, one JSON line each.
fn write_mock_notes(path: &std::path::Path, log: &EmissionLog) -> anyhow::Result<()> {
    let mut out = JsonlWriter::create(path).context("--mock-notes")?;
    for line in log.drain_lines() {
        out.write(&line)?;
    }
    Ok(())
}

struct Bench {
    opts: BenchOptions,
    base_url: String,
    mocked: bool,
    client: Arc<Client>,
    workload: Arc<Workload>,
    /// `--trace`: the prompt builder of the replay (its run nonce set per run).
    trace_prompts: Option<BlockPrompts>,
    timer: Timer,
    records_out: Option<JsonlWriter>,
    json_out: Option<JsonlWriter>,
    cancel: CancellationToken,
    /// Clock-derived base of the per-run prompt nonces.
    nonce_base: u64,
    /// Runs done so far (one per rate, or per probe of the search).
    runs: u32,
    /// `--self-check`'s reference engine, started on first use.
    reference: Option<Arc<ReferenceEngine>>,
    /// `--gpu-metrics-url`'s exporters.
    gpus: Option<GpuMeter>,
    /// Output tokens of every request of the current rate's runs (for its energy).
    output_tokens: u64,
    /// The `--prefix-hit-ratio` of the current rate's runs.
    hit_ratio: Option<f64>,
}

impl Bench {
    fn new(opts: BenchOptions, base_url: String, mocked: bool) -> anyhow::Result<Bench> {
        let tokenizer = opts
            .tokenizer
            .as_deref()
            .map(Tokenizer::from_file)
            .transpose()
            .map_err(|e| exit::UsageError::new(format!("--tokenizer: {e:#}")))?;
        let counter: Option<TokenCounter> = tokenizer.as_ref().map(Tokenizer::counter);
        let trace_prompts = trace_prompts(&opts, tokenizer.clone())?;
        let workload = build_workload(&opts, tokenizer)?;
        // Fail on the workload before the first request, not in the middle of a run.
        workload
            .spec(0)
            .map_err(|e| exit::UsageError::new(format!("cannot build prompts: {e:#}")))?;

        let cfg = ClientConfig {
            response_schema: opts.response_schema.clone(),
            tool: opts.tool.clone(),
            documents: opts.documents.clone(),
            images: opts.images.clone(),
            base_url: base_url.clone(),
            endpoint: opts.api,
            provider: opts.hosted.provider,
            api_version: opts.hosted.api_version.clone(),
            aws: opts.hosted.aws.clone(),
            google: opts.hosted.google.clone(),
            model: opts.model.clone(),
            api_key: opts.api_key.clone().map(Secret::new),
            headers: opts
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Secret::new(v.clone())))
                .collect(),
            ignore_eos: opts.ignore_eos,
            stream: opts.stream,
            traceparent: opts.traceparent,
            timeouts: crate::client::Timeouts {
                total: opts.timeout,
                first_token: opts.timeout,
                idle: opts.timeout,
                ..Default::default()
            },
            ..ClientConfig::default()
        };
        // A request asking for more tokens than the client accepts would fail every
        // time as stream_error: say so before the run instead.
        // A trace-started conversation's later turns ask --output-len.
        let max_output = match (&opts.trace, opts.turns) {
            (Some(t), None) => t.survey.max_output_tokens,
            (Some(t), Some(_)) => t.survey.max_output_tokens.max(workload.max_output_tokens()),
            (None, _) => workload.max_output_tokens(),
        };
        if max_output > cfg.limits.max_output_tokens {
            return Err(exit::UsageError::new(format!(
                "requests may ask for up to {max_output} output tokens (--output-len or the \
                 dataset), more than the client accepts ({})",
                cfg.limits.max_output_tokens
            ))
            .into());
        }
        let client = Client::new(cfg, counter)
            .context("cannot build the HTTP client")?
            .with_checks(opts.checks.clone());
        let records_out = opts
            .records
            .as_deref()
            .map(JsonlWriter::create)
            .transpose()?;
        let json_out = opts
            .json_out
            .as_deref()
            .map(JsonlWriter::create)
            .transpose()?;
        let timer = Timer::precise().context("cannot start the dispatch timer thread")?;
        let gpus = GpuMeter::of(&opts.gpu_metrics, &base_url)?;

        let cancel = CancellationToken::new();
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("interrupted: finishing in-flight requests (Ctrl-C again to abort)");
                on_signal.cancel();
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(i32::from(exit::FAILURE));
                }
            }
        });
        Ok(Bench {
            opts,
            base_url,
            mocked,
            client: Arc::new(client),
            workload: Arc::new(workload),
            trace_prompts,
            timer,
            records_out,
            json_out,
            cancel,
            nonce_base: SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            runs: 0,
            reference: None,
            gpus,
            output_tokens: 0,
            hit_ratio: None,
        })
    }

    async fn run_all(mut self) -> anyhow::Result<ExitCode> {
        // A wrong GPU telemetry URL is said before the first request, not after a sweep.
        if let Some(g) = &self.gpus {
            g.read().await.map_err(|e| {
                exit::UsageError::new(format!(
                    "--gpu-metrics-url: cannot read the GPU telemetry: {e:#}"
                ))
            })?;
        }
        let plan = self.opts.rates.clone();
        let hit_ratios = self.opts.prefix_hit_ratios.clone();
        let result = plan::run_plan(&plan, &hit_ratios, &self.gate_list(), &mut self).await?;
        let rows = result.rows();
        print!(
            "{}",
            report::table::render(&rows, &self.opts.percentile_metrics, &self.opts.percentiles)
        );
        if let Some(t) = &self.opts.trace {
            for r in &rows {
                println!("{}", trace_line(t, r));
            }
        }
        let vary = report::hit_ratios_vary(&rows);
        for r in &rows {
            if let Some(line) = self_check_line(r, &r.row_name(vary)) {
                println!("{line}");
            }
        }

        if let Some(path) = &self.opts.save_result {
            self.save_vllm(path, &result.runs)?;
        }
        if let Some(path) = &self.opts.plot {
            report::plot::write_svg(path, &rows, &self.opts.percentiles)?;
            eprintln!("plot written to {}", path.display());
        }

        let verdict = result.verdict(self.cancel.is_cancelled());
        verdict.print(&self.gate_list());
        Ok(ExitCode::from(verdict.exit_code()))
    }

    /// The name of the current run's row in messages (`report::row_name`).
    fn run_name(&self, rate: Rate) -> String {
        report::row_name(rate, self.hit_ratio, self.opts.prefix_hit_ratios.len() > 1)
    }

    fn gate_list(&self) -> String {
        self.opts
            .gates
            .iter()
            .map(|g| g.text.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One open-loop run at `rate` (the whole run's rate; a shard sends its part), its
    /// arrivals and lengths drawn from `seed`.
    async fn run_one(&mut self, rate: Rate, seed: u64) -> anyhow::Result<RateRun> {
        let process_rate = rate.divided(self.opts.shard.map_or(1, |s| s.count));
        let schedule = self.schedule(process_rate)?;
        let (max_requests, duration) = self.stop_condition();
        // A fresh prompt nonce per run, so a server's prefix cache cannot remember the
        // previous rate (or a previous invocation); lengths and arrivals stay seeded.
        let nonce = run_nonce(self.nonce_base, self.runs);
        let workload = (*self.workload)
            .clone()
            .with_run_nonce(nonce)
            .with_seed(seed);
        // The hit ratio's prefix is the run's own (drawn from its nonce): a prefix an
        // earlier run sent would be warm, and the hit share would overstate the ratio.
        let workload = Arc::new(match self.hit_ratio {
            Some(r) => workload
                .with_prefix_share(r, nonce)
                .map_err(|e| exit::UsageError::new(format!("--prefix-hit-ratio: {e:#}")))?,
            None => workload,
        });
        self.runs += 1;
        // With a count whose prompts fit in PREBUILD_MAX_BYTES, every request is built
        // before the clock starts; otherwise each is built in its own task just before
        // it is sent, which shows in its dispatch lag.
        let replay = self.replay(nonce)?;
        // In a conversation only the first turns are prebuilt; later ones are built
        // during their think time.
        let per_arrival = self.opts.turns.map_or(1, |t| u64::from(t.count));
        let prebuilt: Option<Arc<Vec<RequestSpec>>> = match max_requests {
            _ if replay.is_some() => None,
            Some(n) if prebuild_fits(n, workload.max_prompt_bytes()) => {
                Some(Arc::new(prebuild(n, |i| match self.opts.turns {
                    Some(t) => workload.first_turn(i, t.count),
                    None => workload.spec(i),
                })?))
            }
            _ => None,
        };
        let stop = self.cancel.child_token();
        // A prompt that cannot be built on the fly stops the run (see BuildFailure).
        let build_failure = BuildFailure::new(stop.clone());
        let (tx, rx) = mpsc::unbounded_channel();
        let conversations = self.opts.turns.map(|turns| Conversations {
            turns,
            seed,
            timer: self.timer.clone(),
            stop: stop.clone(),
            events: tx.clone(),
        });
        // --max-error-rate stops this run (not the bench: the verdict ends the plan).
        let stop_on_errors = stop.clone();
        let config = self.run_config(max_requests, duration, stop);
        let sender = RequestSender {
            prober: Arc::new(Prober {
                client: self.client.clone(),
                workload,
                conversations,
            }),
            prebuilt,
            // With --respect-retry-after, the latest Retry-After deadline any response
            // asked for; requests due before it wait (their wait is dispatch lag, as it
            // should be).
            retry_gate: self.opts.respect_retry_after.then(RetryGate::default),
            build_failure: build_failure.clone(),
            handoff: replay.as_ref().map(ReplayArrivals::handoff),
        };
        let probe = move |d: runner::Dispatch| sender.send(d);

        let progress = self.progress_bar(rate, max_requests.map(|n| n * per_arrival), duration);
        let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        // Tells this run's --records lines from another run's in `report merge`.
        let run_id = format!("{started_at}/{nonce:08x}");
        let replay_failure = replay.as_ref().map(ReplayArrivals::failure);
        let arrivals: Box<dyn Iterator<Item = Duration> + Send> = match replay {
            Some(r) => Box::new(r),
            None => Box::new(schedule.arrivals(seed)),
        };
        let runner = runner::run(arrivals, config, None, probe, tx);
        let sinks = self.sinks(rate, &run_id, &progress, stop_on_errors);
        // The request whose prompt could not be built was never sent: it is no result
        // (the run fails below).
        let unsent = |id| build_failure.is(id);
        let (_run_report, collected) = tokio::join!(runner, sinks.collect(rx, unsent));
        progress.finish_and_clear();
        let collected = collected?;
        let (mut collector, mut records) = (collected.summary, collected.records);
        let stopped_early = collected.stopped_early;
        self.output_tokens += collected.output_tokens;
        if let Some(e) = build_failure.error() {
            return Err(e.into());
        }
        if let Some(e) = replay_failure.as_ref().and_then(ReplayFailure::get) {
            return Err(exit::UsageError::new(format!("the trace replay stopped: {e}")).into());
        }
        records.sort_by_key(|r| r.id);
        if self.opts.warmup_auto {
            let (c, dropped) = auto_warmup(self.opts.slo, &mut records);
            eprintln!(
                "rate {}: --warmup auto (MSER-5 on TTFT) left out the first {dropped} requests",
                self.run_name(rate)
            );
            collector = c;
        }
        if self.opts.save_result.is_none() {
            records.clear();
        }
        let mut report = self.report(
            rate,
            process_rate,
            (&collector, &collected.by_model),
            started_at,
            collected.first_cached,
        );
        report.stopped_early = stopped_early;
        Ok(RateRun { report, records })
    }

    /// Where the records of a run at `rate` go.
    fn sinks<'a>(
        &'a mut self,
        rate: Rate,
        run_id: &'a str,
        progress: &'a ProgressBar,
        stop: CancellationToken,
    ) -> RunSinks<'a> {
        let opts = &self.opts;
        RunSinks {
            summary: Collector::new(opts.slo, opts.warmup),
            records_file: self.records_out.as_mut().map(|out| RecordsFile {
                out,
                rate,
                prefix_hit_ratio: self.hit_ratio,
                run_id,
                shard: opts.shard,
                warmup: opts.warmup,
                slo: opts.slo,
            }),
            progress: Progress(progress),
            // The vLLM file lists every request, and --warmup auto reads them all; keep
            // them only then.
            kept: (opts.save_result.is_some() || opts.warmup_auto).then(|| Kept {
                warmup: opts.warmup,
                records: Vec::new(),
            }),
            slo: opts.slo,
            max_error_rate: opts.max_error_rate.map(|m| (m, stop)),
            by_model: opts
                .lora_split
                .as_ref()
                .map(|s| ByModel::new(s, opts.slo, opts.warmup)),
        }
    }

    /// `--trace`: the replay of this run, its first requests built (before the clock
    /// starts).
    fn replay(&self, nonce: u32) -> anyhow::Result<Option<ReplayArrivals>> {
        let (Some(t), Some(prompts)) = (&self.opts.trace, &self.trace_prompts) else {
            return Ok(None);
        };
        let reader = TraceReader::open(&t.path, Some(t.format()), t.model.clone())?;
        let source = TraceSource::new(reader, t.selection.clone());
        // Every request built before the clock starts when they fit, as for a schedule.
        let bytes = t.survey.input_tokens.saturating_mul(PROMPT_BYTES_PER_TOKEN);
        let prebuild = if bytes <= PREBUILD_MAX_BYTES {
            usize::try_from(t.survey.requests).unwrap_or(usize::MAX)
        } else {
            0
        };
        let replay = ReplayArrivals::start(source, prompts.with_run(nonce), prebuild)
            .context("cannot start the trace replay thread")?;
        Ok(Some(replay))
    }

    /// The arrival schedule of this process at `process_rate`.
    fn schedule(&self, process_rate: Rate) -> anyhow::Result<Schedule> {
        Ok(Schedule::new(process_rate.per_second(), self.opts.arrival)?)
    }

    /// The runner's stop condition: (requests including warmup, duration).
    fn stop_condition(&self) -> (Option<u64>, Option<Duration>) {
        let opts = &self.opts;
        match opts.stop {
            Stop::Count(n) => {
                let mine = opts.shard.map_or(n, |s| s.share_of(n));
                (Some(opts.warmup + mine), None)
            }
            Stop::Duration(d) => (None, Some(d)),
        }
    }

    fn run_config(
        &self,
        max_requests: Option<u64>,
        duration: Option<Duration>,
        stop: CancellationToken,
    ) -> RunConfig {
        RunConfig {
            cap: self.opts.max_concurrency.map(|c| ConcurrencyCap {
                max_inflight: c as usize,
                policy: CapPolicy::Wait,
            }),
            stop: runner::Stop {
                max_requests,
                duration,
                cancel: stop,
            },
            drain: None,
            cancel_grace: CANCEL_GRACE,
            timer: self.timer.clone(),
        }
    }

    /// The rate's report from its collected records, warned about.
    fn report(
        &self,
        rate: Rate,
        process_rate: Rate,
        (collector, by_model): (&Collector, &[(String, Collector)]),
        started_at: String,
        first_cached: Option<(u32, u32)>,
    ) -> RateReport {
        let opts = &self.opts;
        let ctx = ReportContext {
            inputs: Some(self.inputs()),
            rate,
            prefix_hit_ratio: self.hit_ratio,
            process_rate,
            shard: opts.shard,
            percentiles: opts.computed_percentiles(),
            gates: opts.gates.clone(),
            dispatch_lag_warn: opts.dispatch_lag_warn,
            started_at,
            golden: matches!(opts.dataset, Dataset::Golden(_)),
        };
        let summary = collector.summary(&ctx.percentiles);
        let mut report = report::build::from_summary(&summary, &ctx);
        report.by_model = by_model
            .iter()
            .map(|(model, c)| {
                let mut row = report::build::from_summary(&c.summary(&ctx.percentiles), &ctx);
                row.model = Some(model.clone());
                row
            })
            .collect();
        report.cache_warning = cache_warning(opts, report.cache_hit_share, first_cached);
        // The table repeats it on stdout; say it on stderr too when stdout goes to a file.
        if report.client_behind && !std::io::stdout().is_terminal() {
            eprintln!(
                "WARNING: rate {}: dispatch lag p99 {:.2} ms > {} ms: the client fell behind its schedule",
                self.run_name(rate),
                report.dispatch_lag_ms.p99.unwrap_or(0.0),
                report.dispatch_lag_warn_ms
            );
        }
        report
    }

    fn progress_bar(
        &self,
        rate: Rate,
        count: Option<u64>,
        duration: Option<Duration>,
    ) -> ProgressBar {
        let visible = self.opts.progress && std::io::stderr().is_terminal();
        let bar = match count {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::new_spinner(),
        };
        if !visible {
            bar.set_draw_target(ProgressDrawTarget::hidden());
            return bar;
        }
        bar.set_draw_target(ProgressDrawTarget::stderr());
        let template = match (count, duration) {
            (Some(_), _) => "{msg} [{elapsed_precise}] {bar:40} {pos}/{len} requests",
            _ => "{msg} [{elapsed_precise}] {spinner} {pos} requests",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_message(format!("rate {}", self.run_name(rate)));
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    fn inputs(&self) -> report::RunInputs {
        let o = &self.opts;
        report::RunInputs {
            base_url: self.base_url.clone(),
            endpoint: o.api.as_str().to_string(),
            model: o.model.clone(),
            mock: self.mocked,
            input_len: o.input_len,
            output_len: o.output_len,
            len_dist: match o.len_dist {
                LenDist::Fixed => "fixed",
                LenDist::Uniform { .. } => "uniform",
                LenDist::Lognormal => "lognormal",
            }
            .to_string(),
            range_ratio: match o.len_dist {
                LenDist::Uniform { range_ratio } => Some(range_ratio),
                _ => None,
            },
            shared_prefix_len: o.shared_prefix_len,
            prefix_hit_ratio: self.hit_ratio,
            dataset: match &o.dataset {
                Dataset::Random => "random".to_string(),
                Dataset::ShareGpt(p) => format!("sharegpt:{}", p.display()),
                Dataset::Jsonl(p) => format!("jsonl:{}", p.display()),
                Dataset::Fixed(_) => "prompt".to_string(),
                Dataset::Golden(set) => format!("golden:{}", set.source),
            },
            ignore_eos: o.ignore_eos,
            num_requests: match o.stop {
                Stop::Count(n) => Some(o.shard.map_or(n, |s| s.share_of(n))),
                Stop::Duration(_) => None,
            },
            duration_s: match o.stop {
                Stop::Duration(d) => Some(d.as_secs_f64()),
                Stop::Count(_) => None,
            },
            warmup: o.warmup,
            max_concurrency: o.max_concurrency,
            burstiness: o.burstiness,
            arrival: match (&o.trace, o.arrival) {
                (Some(_), _) => "trace",
                (None, ArrivalProcess::Poisson) => "poisson",
                (None, ArrivalProcess::Gamma { .. }) => "gamma",
                (None, ArrivalProcess::Constant) => "constant",
            }
            .to_string(),
            turns: o.turns.map(|t| report::TurnsInputs {
                turns: t.count,
                think_time_s: t.think.mean.as_secs_f64(),
                think_time_dist: t.think.dist.as_str().to_string(),
            }),
            trace: o.trace.as_ref().map(|t| report::TraceInputs {
                path: t.path.display().to_string(),
                format: t.format().as_str().to_string(),
                speedup: t.selection.speedup,
                window_start_s: t.selection.start.as_secs_f64(),
                window_end_s: t.selection.end.map(|e| e.as_secs_f64()),
                model: t.model.clone(),
                requests: t.survey.requests,
                zero_length_skipped: t.survey.zero.count,
            }),
            seed: o.base_seed,
            effective_seed: o.seed,
            slo: report::SloMs::from_slo(&o.slo),
            gates: o.gates.iter().map(|g| g.text.clone()).collect(),
        }
    }

    fn save_vllm(&self, path: &std::path::Path, runs: &[RateRun]) -> anyhow::Result<()> {
        let date = compact_utc(SystemTime::now());
        let tokenizer_id = self
            .opts
            .tokenizer
            .as_ref()
            .map(|p| p.display().to_string());
        let ctx = report::vllm::VllmContext {
            date: &date,
            backend: self.opts.api.vllm_backend(),
            model_id: &self.opts.model,
            tokenizer_id: tokenizer_id.as_deref(),
            metrics: &self.opts.percentile_metrics,
            percentiles: &self.opts.percentiles,
            goodput_configured: !self.opts.slo.is_empty(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        // One file per rate, as vLLM writes one per run; a sweep gets `-RATEqps` added,
        // and `-hitR` when it runs several hit ratios.
        let ratios_vary = self.opts.prefix_hit_ratios.len() > 1;
        for RateRun { report, records } in runs {
            let file = if runs.len() == 1 {
                path.to_path_buf()
            } else {
                let stem = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("result");
                let hit = match report.prefix_hit_ratio {
                    Some(h) if ratios_vary => format!("-hit{h}"),
                    _ => String::new(),
                };
                path.with_file_name(format!("{stem}-{}qps{hit}.json", report.rate))
            };
            let value = report::vllm::result(report, records, &ctx);
            let text = serde_json::to_string_pretty(&value)?;
            std::fs::write(&file, text)
                .with_context(|| format!("cannot write {}", file.display()))?;
            eprintln!("vLLM-format result written to {}", file.display());
        }
        Ok(())
    }
}

impl Executor for Bench {
    /// `--repeat` runs of `rate` (each with its own seed) folded into one row, written
    /// to `--json-out`.
    async fn run_rate(&mut self, rate: Rate, hit_ratio: Option<f64>) -> anyhow::Result<RateRun> {
        self.hit_ratio = hit_ratio;
        let before = self.self_check(rate).await?;
        let gpus_before = self.read_gpus(rate).await;
        self.output_tokens = 0;
        let mut runs = Vec::new();
        for k in 0..self.opts.repeat {
            if k > 0 && self.cancel.is_cancelled() {
                break;
            }
            let run = self.run_one(rate, repeat_seed(self.opts.seed, k)).await?;
            let stopped = run.report.stopped_early.is_some();
            runs.push(run);
            if stopped {
                break;
            }
        }
        let reports: Vec<RateReport> = runs.iter().map(|r| r.report.clone()).collect();
        let mut report = report::repeat::combine(&reports, &self.opts.gates, self.opts.gate_basis);
        if let Some(before) = gpus_before
            && let Some(after) = self.read_gpus(rate).await
        {
            report.energy = Some(energy::report(&before, &after, self.output_tokens));
        }
        if let Some(before) = before {
            let after = self.self_check(rate).await?.unwrap_or_default();
            report.self_check = Some(serde_json::json!({
                "before": before.json(),
                "after": after.json(),
            }));
        }
        if let Some(w) = self.json_out.as_mut() {
            w.write(&report)?;
        }
        let records = runs.into_iter().flat_map(|r| r.records).collect();
        Ok(RateRun { report, records })
    }

    fn interrupted(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl Bench {
    /// A read of `--gpu-metrics-url`'s exporters; one that fails leaves this rate
    /// without energy figures, and says why.
    async fn read_gpus(&self, rate: Rate) -> Option<GpuRead> {
        match self.gpus.as_ref()?.read().await {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("rate {rate}: GPU telemetry unreadable, no energy figures: {e:#}");
                None
            }
        }
    }
}

/// Self-probes per `--self-check` burst.
const SELF_CHECK_PROBES: u64 = 20;

impl Bench {
    /// `--self-check`: a burst of self-probes at the run's rate (kept between 2 and 20
    /// per second, so a burst takes 1 to 10 s), when asked; the reference engine starts
    /// on first use.
    async fn self_check(&mut self, rate: Rate) -> anyhow::Result<Option<selfcheck::Summary>> {
        if !self.opts.self_check || self.cancel.is_cancelled() {
            return Ok(None);
        }
        if self.reference.is_none() {
            self.reference = Some(Arc::new(
                ReferenceEngine::start(SELF_CHECK_TRUTH)
                    .await
                    .context("--self-check: cannot start the reference engine")?,
            ));
        }
        let Some(engine) = &self.reference else {
            return Ok(None);
        };
        let per_second = if rate.per_second().is_finite() {
            rate.per_second().clamp(2.0, 20.0)
        } else {
            20.0
        };
        Ok(Some(
            selfcheck::measure(engine.clone(), SELF_CHECK_PROBES, per_second).await?,
        ))
    }
}

/// The reference engine of `--self-check`: the daemon's default self-check engine.
const SELF_CHECK_TRUTH: Truth = Truth {
    ttft: Duration::from_millis(50),
    itl: Duration::from_millis(5),
    output_tokens: 16,
};

/// Sends one dispatched arrival through the shared prober: waits out any Retry-After
/// pause and hands over a request built ahead (prebuilt, or the trace replay's). The
/// dispatcher only clones a few Arcs; anything left to build is built inside the
/// request's own task.
#[derive(Clone)]
struct RequestSender {
    prober: Arc<Prober>,
    prebuilt: Option<Arc<Vec<RequestSpec>>>,
    retry_gate: Option<RetryGate>,
    build_failure: BuildFailure,
    /// `--trace`: requests built ahead by the replay, taken by id.
    handoff: Option<Handoff>,
}

impl RequestSender {
    fn send(
        &self,
        d: runner::Dispatch,
    ) -> impl Future<Output = RequestRecord> + Send + 'static + use<> {
        let this = self.clone();
        // Taken now, at dispatch, so the hand-off holds only requests not yet sent.
        let handed = self.handoff.as_ref().and_then(|h| h.take(d.id));
        async move {
            if let Some(gate) = &this.retry_gate {
                gate.wait().await;
            }
            let prebuilt = this.prebuilt.as_deref().and_then(|v| v.get(d.id as usize));
            let record = match this.prober.send(d, handed.as_ref().or(prebuilt)).await {
                Ok(record) => record,
                Err(e) => {
                    this.build_failure.fail(d.id, &e);
                    return unsent(d);
                }
            };
            // A conversation's turns are not held back by its own last answer.
            if this.prober.conversations.is_none()
                && let (Some(gate), Some(delay)) = (&this.retry_gate, record.retry_after)
            {
                gate.hold_for(delay);
            }
            record
        }
    }
}

/// Builds the first `n` requests before the clock starts. A prompt that cannot be built
/// is a bad input (dataset, tokenizer, lengths): the run does not start, exit 2.
fn prebuild<T>(
    n: u64,
    build: impl Fn(u64) -> anyhow::Result<T>,
) -> Result<Vec<T>, exit::UsageError> {
    (0..n)
        .map(|i| {
            build(i).map_err(|e| {
                exit::UsageError::new(format!("cannot build the prompt of request {i}: {e:#}"))
            })
        })
        .collect()
}

/// The first request whose prompt could not be built just before sending. It was never
/// sent, so no outcome describes it (they are all about the server, and a label
/// contract): the run stops instead, its record is dropped, and the run fails with an
/// error naming the request (a bad input, exit 2).
#[derive(Clone)]
struct BuildFailure {
    first: Arc<std::sync::Mutex<Option<(u64, String)>>>,
    stop: CancellationToken,
}

impl BuildFailure {
    fn new(stop: CancellationToken) -> Self {
        BuildFailure {
            first: Arc::default(),
            stop,
        }
    }

    /// Request `id` could not be built: remember it (the lowest id wins) and stop the run.
    fn fail(&self, id: u64, e: &anyhow::Error) {
        let mut first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        if first.as_ref().is_none_or(|(f, _)| id < *f) {
            *first = Some((id, format!("{e:#}")));
        }
        self.stop.cancel();
    }

    /// Whether `id` is a request that could not be built.
    fn is(&self, id: u64) -> bool {
        let first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        first.as_ref().is_some_and(|(f, _)| *f == id)
    }

    fn error(&self) -> Option<exit::UsageError> {
        let first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        first.as_ref().map(|(id, e)| {
            exit::UsageError::new(format!(
                "cannot build the prompt of request {id}, the run was stopped: {e}"
            ))
        })
    }
}

/// The record handed back for a request that was not sent (it is dropped unread).
fn unsent(d: runner::Dispatch) -> RequestRecord {
    let now = d.elapsed();
    RequestRecord::new(d.id, d.t_sched, now)
}

/// The seed of the `k`-th repeat run: the seed itself first (so `--repeat 1` is the
/// plain run), then unrelated seeds derived from it.
fn repeat_seed(seed: u64, k: u32) -> u64 {
    if k == 0 {
        seed
    } else {
        crate::schedule::splitmix64(seed ^ crate::schedule::splitmix64(u64::from(k)))
    }
}

/// `--warmup auto`: the records (in id order, all kept) collected again without the
/// start-up transient MSER-5 finds in the TTFT series of the successful ones; returns
/// the collector and how many requests were left out. The records left out are removed.
fn auto_warmup(slo: Slo, records: &mut Vec<RequestRecord>) -> (Collector, u64) {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.ttft().is_some()).collect();
    let series: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.ttft())
        .map(|d| d.as_secs_f64() * 1000.0)
        .collect();
    let cut = crate::aggregate::warmup::mser5_truncation(&series);
    let first_kept = if cut == 0 {
        0
    } else {
        ok.get(cut).map_or(u64::MAX, |r| r.id)
    };
    let mut collector = Collector::new(slo, first_kept);
    for r in records.iter() {
        collector.push(r);
    }
    let dropped = records.iter().filter(|r| r.id < first_kept).count() as u64;
    records.retain(|r| r.id >= first_kept);
    (collector, dropped)
}

/// The `--self-check` line of a row (named `name`): this client's own error, before
/// and after.
fn self_check_line(r: &RateReport, name: &str) -> Option<String> {
    let sc = r.self_check.as_ref()?;
    let part = |when: &str| {
        let v = &sc[when];
        let figure =
            |key: &str, name: &str| match (v[key]["p50_ms"].as_f64(), v[key]["p99_ms"].as_f64()) {
                (Some(p50), Some(p99)) => {
                    format!("{name} error p50 +{p50:.2} ms, p99 +{p99:.2} ms")
                }
                _ => format!("{name} error unknown"),
            };
        let failed = v["failed"].as_u64().unwrap_or(0);
        let failed = if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        };
        format!(
            "{when}: {}; {} ({} self-probes{failed})",
            figure("ttft_error_ms", "TTFT"),
            figure("itl_error_ms", "ITL"),
            v["probes"].as_u64().unwrap_or(0)
        )
    };
    Some(format!(
        "self-check, rate {name}: this client's own error against a reference engine on this machine\n  {}\n  {}",
        part("before"),
        part("after")
    ))
}

/// How closely a replay kept the trace's times: its dispatch lag p99 and max. In
/// conversations only first turns are due at trace times, so only theirs count.
fn trace_line(t: &crate::bench::trace::TraceOptions, r: &RateReport) -> String {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3} ms"));
    let runs = u64::from(r.repeats.max(1));
    let (replayed, of) = if runs > 1 {
        (
            (r.requests + r.warmup_excluded) / runs,
            format!(" (means of {runs} runs)"),
        )
    } else {
        (r.requests + r.warmup_excluded, String::new())
    };
    let turns = r.inputs.as_ref().and_then(|i| i.turns.as_ref());
    let (sent, lag) = match (turns, &r.turns) {
        (Some(inputs), Some(per_turn)) => (
            format!(
                "{replayed} requests sent in conversations of up to {} turns; first turns' \
                 dispatch lag",
                inputs.turns
            ),
            &per_turn.first.dispatch_lag_ms,
        ),
        _ => (
            format!("{replayed} requests replayed; dispatch lag"),
            &r.dispatch_lag_ms,
        ),
    };
    format!(
        "trace {} ({}, speedup {}): {sent} from the trace's times p99 {}, max {}{of}",
        t.path.display(),
        t.format().as_str(),
        t.selection.speedup,
        ms(lag.p99),
        ms(lag.max)
    )
}

/// The prompt builder of `--trace` (exact lengths with a tokenizer).
fn trace_prompts(
    opts: &BenchOptions,
    tokenizer: Option<Tokenizer>,
) -> anyhow::Result<Option<BlockPrompts>> {
    let Some(t) = &opts.trace else {
        return Ok(None);
    };
    let zero = t.survey.zero;
    if let Some(line) = zero.first_line {
        eprintln!(
            "WARNING: {}: {} requests with a zero input or output length are left out \
             (the first on line {line})",
            t.path.display(),
            zero.count
        );
    }
    let prompts = match tokenizer {
        Some(tok) => BlockPrompts::exact(0, tok)
            .map_err(|e| exit::UsageError::new(format!("--tokenizer: {e:#}")))?,
        None => BlockPrompts::approximate(0),
    };
    Ok(Some(prompts))
}

fn build_workload(opts: &BenchOptions, tokenizer: Option<Tokenizer>) -> anyhow::Result<Workload> {
    let w = build_prompts(opts, tokenizer)?;
    Ok(match &opts.lora_split {
        Some(split) => w.with_models(split.clone()),
        None => w,
    })
}

/// The workload's prompts and lengths, from the dataset asked for.
fn build_prompts(opts: &BenchOptions, tokenizer: Option<Tokenizer>) -> anyhow::Result<Workload> {
    let dist = match opts.len_dist {
        LenDist::Fixed => LengthDist::Fixed,
        LenDist::Uniform { range_ratio } => LengthDist::Uniform { range_ratio },
        LenDist::Lognormal => LengthDist::LogNormal {
            sigma: crate::workload::lengths::DEFAULT_LOGNORMAL_SIGMA,
        },
    };
    let input = Lengths::new(opts.input_len, dist)
        .map_err(|e| exit::UsageError::new(format!("--input-len: {e}")))?;
    let output = Lengths::new(opts.output_len, dist)
        .map_err(|e| exit::UsageError::new(format!("--output-len: {e}")))?;
    let prompts = match tokenizer {
        Some(t) => PromptGenerator::exact(t, opts.shared_prefix_len)
            .map_err(|e| exit::UsageError::new(format!("--tokenizer: {e:#}")))?,
        None => PromptGenerator::approximate(opts.shared_prefix_len),
    };
    let prompts = if opts.no_nonce {
        prompts.without_nonce()
    } else {
        prompts
    };
    let (path, format) = match &opts.dataset {
        // A --prefix-hit-ratio share is set per run (`Bench::run_one`).
        Dataset::Random => return Ok(Workload::synthetic(input, output, prompts, opts.seed)?),
        Dataset::ShareGpt(p) => (p, crate::workload::dataset::DatasetFormat::ShareGpt),
        Dataset::Jsonl(p) => (p, crate::workload::dataset::DatasetFormat::Jsonl),
        Dataset::Golden(set) => {
            return Ok(Workload::golden(set.clone(), output, prompts, opts.seed)?);
        }
        Dataset::Fixed(text) => {
            let entry = crate::workload::dataset::DatasetEntry {
                prompt: text.clone(),
                output_len: None,
                follow_ups: Vec::new(),
            };
            return Ok(Workload::dataset(
                vec![entry],
                output,
                true,
                prompts,
                opts.seed,
            )?);
        }
    };
    let entries = {
        let count = |t: &str| prompts.count(t);
        crate::workload::dataset::load(path, format, &count)?
    };
    Ok(Workload::dataset(
        entries, output, false, prompts, opts.seed,
    )?)
}

/// Cached prompt tokens above this share of a run that should be cold (every prompt
/// starts with a unique nonce) mean something else was cached: a warning.
const COLD_RUN_CACHE_SHARE: f64 = 0.05;

/// Why a run's figures may come from a warm prefix cache, if they may: the engine already
/// held the run's first prompt (at least half of it), or a run whose prompts all start
/// with a unique nonce read more than a few per cent of its prompt tokens from the cache.
fn cache_warning(
    opts: &BenchOptions,
    share: Option<f64>,
    first: Option<(u32, u32)>,
) -> Option<String> {
    if let Some((cached, prompt)) = first
        && cached > 0
        && u64::from(cached) * 2 >= u64::from(prompt)
    {
        return Some(format!(
            "the engine's prefix cache already held this run's first prompt ({cached} of \
             {prompt} tokens): it was warm before the run, so throughput and TTFT are \
             overstated; send the unique nonce (drop --no-nonce) or restart the engine"
        ));
    }
    let cold = opts.shared_prefix_len == 0 && !opts.no_nonce && opts.turns.is_none();
    match share {
        Some(s) if cold && s > COLD_RUN_CACHE_SHARE => Some(format!(
            "{:.1} % of the prompt tokens came from the engine's prefix cache although every \
             prompt starts with a unique nonce: the cache was warm (a system prompt or chat \
             template the requests share?), so TTFT and throughput are overstated",
            s * 100.0
        )),
        _ => None,
    }
}

/// `YYYYMMDD-HHMMSS` in UTC, the stamp vLLM puts in result files.
pub fn compact_utc(t: SystemTime) -> String {
    let s = humantime::format_rfc3339_seconds(t).to_string(); // 2026-11-29T18:34:37Z
    s.chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .map(|c| if c == 'T' { '-' } else { c })
        .collect()
}

/// `--respect-retry-after`: a shared "not before" instant set from servers' Retry-After.
#[derive(Clone, Default)]
struct RetryGate(Arc<std::sync::Mutex<Option<tokio::time::Instant>>>);

impl RetryGate {
    /// Extends the pause to at least `delay` from now.
    fn hold_for(&self, delay: std::time::Duration) {
        let until = tokio::time::Instant::now() + delay;
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none_or(|t| t < until) {
            *slot = Some(until);
        }
    }

    /// Waits until every pause asked for so far has passed.
    async fn wait(&self) {
        loop {
            let until = *self.0.lock().unwrap_or_else(|e| e.into_inner());
            match until {
                Some(t) if t > tokio::time::Instant::now() => tokio::time::sleep_until(t).await,
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_stamp_is_vllms_date_format() {
        let t = std::time::UNIX_EPOCH + Duration::from_secs(1_795_977_277); // 2026-11-29T18:34:37Z
        assert_eq!(compact_utc(t), "20261129-183437");
    }

    #[test]
    fn prebuilding_is_bounded_by_bytes_not_requests() {
        // 20k requests of 1k tokens (~6 KB each): ~117 MiB, built up front.
        assert!(prebuild_fits(20_000, 1024 * 6));
        // 100 requests of 1M tokens: ~600 MiB, built one by one.
        assert!(!prebuild_fits(100, (1 << 20) * 6));
        assert!(!prebuild_fits(u64::MAX, 2));
        assert!(prebuild_fits(0, u64::MAX));
    }

    #[test]
    fn a_prompt_that_cannot_be_built_fails_the_run_before_it_starts() {
        let built = prebuild(5, |i| Ok(i * 2)).unwrap();
        assert_eq!(built, vec![0, 2, 4, 6, 8]);
        let err = prebuild(5, |i| {
            if i == 3 {
                anyhow::bail!("token id out of range")
            }
            Ok(i)
        })
        .unwrap_err();
        assert!(err.0.contains("request 3"), "{}", err.0);
        assert!(err.0.contains("token id out of range"), "{}", err.0);
        assert_eq!(exit::code_for(&err.into()), exit::USAGE);
    }

    #[test]
    fn a_prompt_that_cannot_be_built_on_the_fly_stops_the_run() {
        let stop = CancellationToken::new();
        let f = BuildFailure::new(stop.clone());
        assert!(f.error().is_none() && !f.is(7));
        f.fail(9, &anyhow::anyhow!("later"));
        f.fail(7, &anyhow::anyhow!("decode failed"));
        assert!(stop.is_cancelled());
        assert!(f.is(7) && !f.is(9));
        let e = f.error().unwrap();
        assert!(
            e.0.contains("request 7") && e.0.contains("decode failed"),
            "{}",
            e.0
        );
        assert_eq!(exit::code_for(&e.into()), exit::USAGE);
    }

    #[test]
    fn the_trace_line_gives_lag_per_replay() {
        let t = crate::bench::trace::TraceOptions {
            path: "t.jsonl".into(),
            format: Some(crate::workload::trace::TraceFormat::Mooncake),
            model: None,
            selection: crate::workload::trace::TraceSelection::default(),
            survey: crate::workload::trace::TraceSurvey::default(),
        };
        let mut r = crate::report::test_support::sample_report(8.0);
        assert_eq!(
            trace_line(&t, &r),
            "trace t.jsonl (mooncake, speedup 1): 100 requests replayed; dispatch lag from \
             the trace's times p99 0.400 ms, max 0.900 ms"
        );
        r.repeats = 5;
        r.requests = 500;
        assert!(
            trace_line(&t, &r).ends_with("100 requests replayed; dispatch lag from the trace's times p99 0.400 ms, max 0.900 ms (means of 5 runs)"),
            "{}",
            trace_line(&t, &r)
        );
        // Conversations: only the first turns were due at trace times.
        r.repeats = 1;
        r.requests = 300;
        if let Some(i) = r.inputs.as_mut() {
            i.turns = Some(crate::report::TurnsInputs {
                turns: 3,
                think_time_s: 1.0,
                think_time_dist: "exponential".into(),
            });
        }
        let first = crate::report::TurnReport {
            turn: Some(1),
            requests: 100,
            completed: 100,
            ttft_ms: crate::report::test_support::stats(50.0),
            dispatch_lag_ms: crate::report::LagStats {
                p50: Some(0.05),
                p99: Some(0.125),
                max: Some(0.25),
            },
            prompt_tokens_mean: Some(100.0),
            cache_hit_share: None,
        };
        r.turns = Some(crate::report::TurnsReport {
            later: first.clone(),
            by_turn: vec![first.clone()],
            first,
        });
        assert_eq!(
            trace_line(&t, &r),
            "trace t.jsonl (mooncake, speedup 1): 300 requests sent in conversations of up \
             to 3 turns; first turns' dispatch lag from the trace's times p99 0.125 ms, max \
             0.250 ms"
        );
    }

    #[test]
    fn every_run_gets_its_own_nonce() {
        let nonces: std::collections::HashSet<u32> = (0..100).map(|i| run_nonce(42, i)).collect();
        assert_eq!(nonces.len(), 100);
        assert_eq!(run_nonce(42, 3), run_nonce(42, 3));
        assert_ne!(run_nonce(42, 3), run_nonce(43, 3));
    }
}

#[cfg(test)]
mod retry_gate_tests {
    use super::RetryGate;
    use std::time::Duration;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn waits_for_the_longest_pause() {
        let gate = RetryGate::default();
        let t0 = Instant::now();
        gate.wait().await;
        assert_eq!(t0.elapsed(), Duration::ZERO);
        gate.hold_for(Duration::from_secs(3));
        gate.hold_for(Duration::from_secs(1)); // a shorter pause does not shorten it
        gate.wait().await;
        assert_eq!(t0.elapsed(), Duration::from_secs(3));
    }
}
