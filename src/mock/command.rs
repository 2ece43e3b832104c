//! `llmprobe mock` as a process: its flags, checked into a [`MockConfig`]; start the
//! server, print the listening line that scripts parse, serve until SIGINT/SIGTERM, shut
//! down gracefully. `cli` re-exports [`MockArgs`] into the command line.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::config::{
    DEFAULT_BLOCK_SIZE, DEFAULT_MODEL, DEFAULT_NUM_GPU_BLOCKS, MockConfig, MockFlags, micros,
    millis, parse_fault_flags,
};
use super::fault::kinds_help;
use super::serve::start;
use crate::exit::UsageError;

/// Flags of `llmprobe mock` (checked into a [`MockConfig`] by [`MockArgs::to_config`]).
#[derive(Debug, Clone, Args)]
pub struct MockArgs {
    /// Address to listen on (port 0 picks a free port; the real one is printed).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: SocketAddr,
    /// Time to first token in milliseconds, from when the request body is read.
    #[arg(long, default_value_t = 50.0)]
    pub ttft_ms: f64,
    /// Time per output token in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    pub itl_ms: f64,
    /// Prefill time per prompt token in microseconds, for the tokens the prefix cache
    /// does not hold (added to the TTFT; 0: the TTFT ignores the prompt).
    #[arg(long, default_value_t = 0.0)]
    pub prefill_us_per_token: f64,
    /// Prefill time per image tile (512 × 512 pixels) of a request's images, in
    /// microseconds, added to the TTFT.
    #[arg(long, default_value_t = 2000.0)]
    pub prefill_us_per_image_tile: f64,
    /// Random factor on TTFT and token times: none, uniform:F, lognormal:SIGMA.
    #[arg(long, default_value = "none")]
    pub jitter: String,
    /// Fixed output length (default: the request's max_completion_tokens/max_tokens, else 16).
    #[arg(long)]
    pub output_tokens: Option<u32>,
    /// Tokens per content chunk after the first (as with speculative decoding).
    #[arg(long, default_value_t = 1)]
    pub tokens_per_chunk: u32,
    /// The first N output tokens are reasoning (chat `reasoning_content`, Responses
    /// `reasoning_text`, Anthropic `thinking`); the answer starts at token N.
    #[arg(long, default_value_t = 0)]
    pub reasoning_tokens: u32,
    /// Requests running at once; more wait in a FIFO queue (TTFT grows by the wait).
    #[arg(long)]
    pub max_running: Option<u32>,
    /// Token time = itl × (1 + F × other running requests).
    #[arg(long, default_value_t = 0.0)]
    pub batch_slowdown: f64,
    /// Never send usage in streams (like servers that ignore stream_options).
    #[arg(long)]
    pub no_usage: bool,
    /// Seed for fault draws and jitter.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Demand `Authorization: Bearer KEY` on /v1 routes.
    #[arg(long, env = "LLMPROBE_MOCK_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Bedrock routes: check SigV4 signatures made with this access key id (needs
    /// --aws-secret-access-key; without both only the signature's shape is checked).
    #[arg(long, requires = "aws_secret_access_key")]
    pub aws_access_key_id: Option<String>,
    /// Bedrock routes: the secret access key the signatures are checked with.
    #[arg(
        long,
        env = "LLMPROBE_MOCK_AWS_SECRET_ACCESS_KEY",
        hide_env_values = true,
        requires = "aws_access_key_id"
    )]
    pub aws_secret_access_key: Option<String>,
    /// Bedrock routes: the region the signatures must be scoped to.
    #[arg(long, default_value = "us-east-1")]
    pub aws_region: String,
    /// Vertex routes: trust this service-account key file's account: `POST /token`
    /// grants tokens for its JWT assertions (checked with the key's public half), and
    /// the Vertex routes demand one.
    #[arg(long, value_name = "FILE")]
    pub google_service_account: Option<std::path::PathBuf>,
    /// How long a token of `POST /token` is valid, in seconds.
    #[arg(long, default_value_t = 3600)]
    pub google_token_ttl: u64,
    /// Inject a fault: KIND[=PARAM][:PROBABILITY] (repeatable; probability default 1).
    #[arg(long, value_name = "KIND[=PARAM][:P]", long_help = fault_flag_help())]
    pub fault: Vec<String>,
    /// KV cache size in blocks (reported in vllm:cache_config_info).
    #[arg(long, default_value_t = DEFAULT_NUM_GPU_BLOCKS)]
    pub num_gpu_blocks: u32,
    /// Tokens per KV block.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Model name in /v1/models and /metrics (requests may use any name).
    #[arg(long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Duration of the stall faults in milliseconds.
    #[arg(long, default_value_t = 600_000.0)]
    pub stall_ms: f64,
    /// The answer to stream, split into tokens at words; it stops (`stop`) when the
    /// text ends. Default: numbered tokens ` tok0 tok1 …` up to the length limit.
    #[arg(long, value_name = "TEXT")]
    pub answer: Option<String>,
    /// Report no cached prompt tokens. By default a prefix cache of --num-gpu-blocks
    /// blocks of --block-size words reports the prompt's longest previously seen prefix
    /// in whole blocks (`prompt_tokens_details.cached_tokens`).
    #[arg(long)]
    pub no_prefix_cache: bool,
    /// Know a golden set's questions (a JSONL file, or `builtin`): a prompt that ends
    /// with one is answered with its reference answer, before --answer. With
    /// `--fault wrong_answer:P` a fraction P of the answers is wrong.
    #[arg(long, value_name = "FILE|builtin")]
    pub golden: Option<String>,
    /// Seed of the logprobs answered when a request asks for them (`logprobs`); another
    /// seed looks like another model to `llmprobe fingerprint`.
    #[arg(long, default_value_t = 0)]
    pub logprob_seed: u64,
    /// Serve GPU telemetry at /gpu/metrics in dcgm-exporter's format, from a power model
    /// of the batch: min(--gpu-idle-watts + --gpu-watts-per-request × running, TDP ×
    /// GPUs), integrated exactly into the energy counter.
    #[arg(long)]
    pub gpu_metrics: bool,
    /// Watts of the idle engine (with --gpu-metrics).
    #[arg(long, default_value_t = 60.0)]
    pub gpu_idle_watts: f64,
    /// Watts each running request adds (with --gpu-metrics).
    #[arg(long, default_value_t = 40.0)]
    pub gpu_watts_per_request: f64,
    /// The most one GPU draws, W (with --gpu-metrics).
    #[arg(long, default_value_t = 700.0)]
    pub gpu_tdp_watts: f64,
    /// GPUs the engine runs on; power and energy are split evenly (with --gpu-metrics).
    #[arg(long, default_value_t = 1)]
    pub gpus: u32,
    /// Serve these LoRA adapters on --model (comma-separated names), as vLLM with
    /// --enable-lora does: /v1/models lists them with the model as `parent`, /metrics
    /// carries vllm:lora_requests_info, and /v1/load_lora_adapter and
    /// /v1/unload_lora_adapter (vLLM's bodies) change them at run time.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub lora_adapters: Vec<String>,
    /// Serve an llm-d-like gateway at --listen in front of N mock engines (each with
    /// these flags, on 127.0.0.1 ports of their own): it routes by --gateway-route,
    /// names the engine that served in `x-gateway-destination-endpoint-served`, drops
    /// by --gateway-drop and serves an endpoint picker's /metrics.
    #[arg(long, value_name = "N")]
    pub gateway: Option<u32>,
    /// How the gateway picks an engine: round-robin, or header:NAME (a consistent hash
    /// of that request header's value; requests without it go round-robin).
    #[arg(
        long,
        default_value = "round-robin",
        value_name = "round-robin|header:NAME"
    )]
    pub gateway_route: String,
    /// Drop a share of requests as the router does: REASON[:P] (repeatable), answered
    /// 429 (503 for rejected-no-endpoints, 500 for rejected-internal) with
    /// `x-llm-d-request-dropped-reason: REASON`.
    #[arg(long, value_name = "REASON[:P]")]
    pub gateway_drop: Vec<String>,
}

impl MockArgs {
    /// The checked configuration these flags describe.
    pub fn to_config(&self) -> Result<MockConfig, UsageError> {
        let faults = parse_fault_flags("--fault", &self.fault)?;
        MockConfig::from_flags(MockFlags {
            ttft: Some(millis("--ttft-ms", self.ttft_ms)?),
            itl: Some(millis("--itl-ms", self.itl_ms)?),
            prefill_per_token: Some(micros("--prefill-us-per-token", self.prefill_us_per_token)?),
            prefill_per_image_tile: Some(micros(
                "--prefill-us-per-image-tile",
                self.prefill_us_per_image_tile,
            )?),
            jitter: Some(
                self.jitter
                    .parse()
                    .map_err(|e: UsageError| UsageError::new(format!("--jitter: {e}")))?,
            ),
            output_tokens: self.output_tokens,
            tokens_per_chunk: Some(self.tokens_per_chunk),
            reasoning_tokens: Some(self.reasoning_tokens),
            max_running: self.max_running,
            batch_slowdown: Some(self.batch_slowdown),
            no_usage: self.no_usage,
            seed: Some(self.seed),
            api_key: self.api_key.clone(),
            aws: match (&self.aws_access_key_id, &self.aws_secret_access_key) {
                (Some(id), Some(secret)) => Some(crate::mock::config::MockAws {
                    access_key_id: id.clone(),
                    secret_access_key: crate::secret::Secret::new(secret.clone()),
                    region: self.aws_region.clone(),
                }),
                _ => None,
            },
            google: match &self.google_service_account {
                Some(path) => {
                    let key = crate::client::auth::jwt::ServiceAccountKey::from_file(path)
                        .map_err(|e| UsageError::new(format!("--google-service-account: {e:#}")))?;
                    Some(crate::mock::google_tokens::MockGoogle {
                        public_key_der: key.public_key_der(),
                        client_email: key.client_email.clone(),
                        token_ttl: std::time::Duration::from_secs(self.google_token_ttl.max(1)),
                    })
                }
                None => None,
            },
            faults,
            model: Some(self.model.clone()),
            num_gpu_blocks: Some(self.num_gpu_blocks),
            block_size: Some(self.block_size),
            stall: Some(millis("--stall-ms", self.stall_ms)?),
            answer: self.answer.clone(),
            no_prefix_cache: self.no_prefix_cache,
            golden: self.golden.clone(),
            gpu: self.gpu_metrics.then_some(crate::mock::gpu::PowerModel {
                idle_watts: self.gpu_idle_watts,
                watts_per_request: self.gpu_watts_per_request,
                tdp_watts: self.gpu_tdp_watts,
                gpus: self.gpus,
            }),
            lora_adapters: self.lora_adapters.clone(),
        })
        .map(|c| MockConfig {
            logprob_seed: self.logprob_seed,
            ..c
        })
    }
}

pub async fn run(args: &MockArgs) -> anyhow::Result<ExitCode> {
    let config = args.to_config()?;
    tracing::debug!(?config, "mock configuration");
    if let Some(n) = args.gateway {
        return run_gateway(args, config, n).await;
    }
    let server = start(config, args.listen).await?;
    listening(server.addr())?;
    wait_for_signal().await?;
    tracing::info!("signal received, mock shutting down");
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Prints the line scripts parse.
fn listening(addr: SocketAddr) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "llmprobe mock listening on http://{addr}")
        .and_then(|()| out.flush())
        .context("writing the listening line to stdout")
}

/// The most engines `--gateway` starts.
const MAX_GATEWAY_ENGINES: u32 = 64;

/// `--gateway N`: N engines on loopback ports and the gateway at `--listen`.
async fn run_gateway(args: &MockArgs, config: MockConfig, n: u32) -> anyhow::Result<ExitCode> {
    if !(1..=MAX_GATEWAY_ENGINES).contains(&n) {
        return Err(UsageError::new(format!(
            "--gateway {n}: the number of engines must be 1 to {MAX_GATEWAY_ENGINES}"
        ))
        .into());
    }
    let route: super::gateway::Route = args.gateway_route.parse()?;
    let drops = args
        .gateway_drop
        .iter()
        .map(|d| d.parse())
        .collect::<Result<Vec<super::gateway::Drop>, UsageError>>()?;
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut engines = Vec::new();
    for _ in 0..n {
        engines.push(start(config.clone(), loopback).await?);
    }
    let upstreams: Vec<String> = engines.iter().map(|e| e.base_url()).collect();
    tracing::info!(engines = ?upstreams, "mock engines behind the gateway");
    let gateway = super::gateway::start(
        super::gateway::GatewayConfig {
            upstreams,
            route,
            drops,
            model: config.model.clone(),
            seed: config.seed,
        },
        args.listen,
    )
    .await?;
    listening(gateway.addr())?;
    wait_for_signal().await?;
    tracing::info!("signal received, mock shutting down");
    gateway.shutdown().await;
    for e in engines {
        e.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("waiting for SIGINT")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    Ok(())
}

/// The long help of `--fault`: its form, and every kind from the fault table.
fn fault_flag_help() -> String {
    format!(
        "Inject a fault: KIND[=PARAM][:PROBABILITY] (repeatable; probability default 1). \
         A request header `x-mock-fault: KIND[=PARAM]` forces one. Wire behaviour: \
         docs/mock.md.\n\nKinds:\n{}",
        kinds_help()
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::mock::fault::{FAULT_NAMES, FaultKind};
    use crate::mock::jitter::Jitter;

    /// `llmprobe mock` as the command line parses it.
    #[derive(Parser)]
    #[command(name = "mock")]
    struct MockCli {
        #[command(flatten)]
        args: MockArgs,
    }

    fn parse(extra: &[&str]) -> Result<MockConfig, UsageError> {
        let mut argv = vec!["mock"];
        argv.extend_from_slice(extra);
        let cli = MockCli::try_parse_from(argv).map_err(|e| UsageError::new(e.to_string()))?;
        cli.args.to_config()
    }

    #[test]
    fn defaults_match_the_contract() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.ttft, Duration::from_millis(50));
        assert_eq!(c.itl, Duration::from_millis(10));
        assert_eq!(
            (c.tokens_per_chunk, c.usage, c.model.as_str()),
            (1, true, "mock-llm")
        );
        assert_eq!(c.jitter, Jitter::None);
        let d = MockConfig::default();
        assert_eq!((d.ttft, d.itl, d.block_size), (c.ttft, c.itl, c.block_size));
    }

    #[test]
    fn flags_map_to_fields() {
        let c = parse(&[
            "--itl-ms",
            "2.5",
            "--tokens-per-chunk",
            "4",
            "--max-running",
            "3",
            "--no-usage",
            "--fault",
            "http_500:0.1",
            "--fault",
            "stall_after_tokens=3",
            "--jitter",
            "uniform:0.2",
            "--api-key",
            "k",
        ])
        .unwrap();
        assert_eq!(c.itl, Duration::from_nanos(2_500_000));
        assert_eq!(
            (c.tokens_per_chunk, c.max_running, c.usage),
            (4, Some(3), false)
        );
        assert_eq!(c.faults.len(), 2);
        // A front end runs in real time: precise timer; embedders (paused-clock tests)
        // get tokio's unless they ask.
        assert!(c.precise_timer && !MockConfig::default().precise_timer);
        assert_eq!(
            c.faults[1].kind,
            FaultKind::StallAfterTokens { after_tokens: 3 }
        );
        assert!(
            !format!("{c:?}").contains("\"k\""),
            "the key must not be printed"
        );
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        for bad in [
            &["--ttft-ms", "-1"][..],
            &["--itl-ms", "NaN"],
            &["--tokens-per-chunk", "0"],
            &["--max-running", "0"],
            &["--batch-slowdown", "-0.5"],
            &["--jitter", "gauss"],
            &["--fault", "nope"],
            &["--block-size", "0"],
            &["--output-tokens", "0"],
            &["--output-tokens", "2000000"],
            &["--tokens-per-chunk", "5000"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn help_lists_every_fault_kind() {
        let help = MockCli::command().render_long_help().to_string();
        for name in FAULT_NAMES {
            assert!(help.contains(name), "--help does not mention {name}");
        }
    }
}
