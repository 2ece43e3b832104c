//! `llmprobe mock`: a fake OpenAI-compatible streaming engine with exact, documented
//! timing and fault injection (docs/mock.md). It runs on the caller's tokio runtime, so
//! `bench --mock`, `daemon --mock` and tests embed it; it never imports the client,
//! runner or exporter, which are what it exists to test.

pub mod command;
mod engine;
mod fault;
mod jitter;
mod metrics;
mod openai;
mod server;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::cli::MockArgs;
use crate::exit::UsageError;

pub use fault::{FAULT_HEADER, FAULT_NAMES, FaultKind, FaultSpec};
pub use jitter::Jitter;
pub use server::{MockServer, TRICKLE_BYTE_GAP, start};

/// The mock's behaviour. Every field has a default (see [`MockConfig::default`]);
/// durations in YAML are humantime strings (`50ms`, `1s`).
#[derive(Clone, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MockConfig {
    /// Time to first token, from when the request body has been read (plus any queue wait).
    #[serde(deserialize_with = "de_duration")]
    #[schemars(with = "String")]
    pub ttft: Duration,
    /// Time per output token; a chunk of k tokens comes k token-times after the previous one.
    #[serde(deserialize_with = "de_duration")]
    #[schemars(with = "String")]
    pub itl: Duration,
    /// Random factor on TTFT and token times: none, uniform:F, lognormal:SIGMA.
    #[schemars(with = "String")]
    pub jitter: Jitter,
    /// Fixed output length; when unset the request's max_completion_tokens/max_tokens (else 16).
    pub output_tokens: Option<u32>,
    /// Tokens per content chunk after the first (speculative decoding sends several).
    pub tokens_per_chunk: u32,
    /// Batch size; beyond it requests wait in a FIFO queue (their TTFT grows by the wait).
    pub max_running: Option<u32>,
    /// Token time = itl × (1 + batch_slowdown × other running requests).
    pub batch_slowdown: f64,
    /// Send usage in streams when the request asks for it (false = like servers that never do).
    pub usage: bool,
    /// Seed of the fault and jitter random streams.
    pub seed: u64,
    /// When set, `/v1/*` demands `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Faults drawn for every request, in order, first hit wins.
    #[schemars(with = "Vec<String>")]
    pub faults: Vec<FaultSpec>,
    /// Model name in `/v1/models` and `/metrics` (requests may name any model; it is echoed).
    pub model: String,
    /// KV cache size in blocks (`vllm:cache_config_info`, `vllm:kv_cache_usage_perc`).
    pub num_gpu_blocks: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// How long `stall_before_headers` and `stall_after_tokens` stall.
    #[serde(deserialize_with = "de_duration")]
    #[schemars(with = "String")]
    pub stall: Duration,
    /// On shutdown, how long in-flight responses may take before connections are dropped.
    #[serde(deserialize_with = "de_duration")]
    #[schemars(with = "String")]
    pub shutdown_grace: Duration,
    /// Write chunks on time to tens of microseconds instead of tokio's whole-millisecond
    /// timer ticks: a dedicated timer thread (`runner::PreciseTimer`, no busy-waiting)
    /// finishes each wait. Real time only: it must stay off under a paused tokio clock
    /// (tests), so it is off by default and on in the `llmprobe mock` process.
    pub precise_timer: bool,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(10),
            jitter: Jitter::None,
            output_tokens: None,
            tokens_per_chunk: 1,
            max_running: None,
            batch_slowdown: 0.0,
            usage: true,
            seed: 0,
            api_key: None,
            faults: Vec::new(),
            model: DEFAULT_MODEL.to_string(),
            num_gpu_blocks: DEFAULT_NUM_GPU_BLOCKS,
            block_size: DEFAULT_BLOCK_SIZE,
            stall: DEFAULT_STALL,
            shutdown_grace: Duration::from_secs(5),
            precise_timer: false,
        }
    }
}

pub const DEFAULT_MODEL: &str = "mock-llm";
/// vLLM's default KV block size on GPUs.
pub const DEFAULT_BLOCK_SIZE: u32 = 16;
/// 2048 blocks × 16 = 32768 tokens of KV cache.
pub const DEFAULT_NUM_GPU_BLOCKS: u32 = 2048;
/// Long enough that any sane client timeout fires first.
pub const DEFAULT_STALL: Duration = Duration::from_secs(600);
/// Far beyond any speculative-decoding depth; bounds the size of one chunk.
const MAX_TOKENS_PER_CHUNK: u32 = 1024;
/// Larger times are surely a unit mistake (and would overflow `Instant` arithmetic).
const MAX_TIME: Duration = Duration::from_secs(24 * 3600);

// Hand-written so the API key never reaches a log line.
impl fmt::Debug for MockConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockConfig")
            .field("ttft", &self.ttft)
            .field("itl", &self.itl)
            .field("jitter", &self.jitter)
            .field("output_tokens", &self.output_tokens)
            .field("tokens_per_chunk", &self.tokens_per_chunk)
            .field("max_running", &self.max_running)
            .field("batch_slowdown", &self.batch_slowdown)
            .field("usage", &self.usage)
            .field("seed", &self.seed)
            .field("api_key", &self.api_key.as_ref().map(|_| "<secret>"))
            .field("faults", &self.faults)
            .field("model", &self.model)
            .field("num_gpu_blocks", &self.num_gpu_blocks)
            .field("block_size", &self.block_size)
            .field("stall", &self.stall)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("precise_timer", &self.precise_timer)
            .finish()
    }
}

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(s.trim())
        .map_err(|e| serde::de::Error::custom(format!("invalid duration {s:?}: {e}")))
}

fn millis(flag: &str, ms: f64) -> Result<Duration, UsageError> {
    if !ms.is_finite() || ms < 0.0 || ms > MAX_TIME.as_secs_f64() * 1e3 {
        return Err(UsageError::new(format!(
            "{flag} must be a number of milliseconds between 0 and {}, got {ms}",
            MAX_TIME.as_millis()
        )));
    }
    // Via nanoseconds so 2.5 ms is exactly 2_500_000 ns.
    Ok(Duration::from_nanos((ms * 1e6).round() as u64))
}

impl MockConfig {
    /// Checks ranges that the types do not.
    pub fn validate(&self) -> Result<(), UsageError> {
        for (name, d) in [
            ("ttft", self.ttft),
            ("itl", self.itl),
            ("stall", self.stall),
        ] {
            if d > MAX_TIME {
                crate::usage_bail!("mock {name} {d:?} is longer than {MAX_TIME:?}");
            }
        }
        if !(1..=MAX_TOKENS_PER_CHUNK).contains(&self.tokens_per_chunk) {
            crate::usage_bail!(
                "tokens per chunk must be between 1 and {MAX_TOKENS_PER_CHUNK}, got {}",
                self.tokens_per_chunk
            );
        }
        if self.max_running == Some(0) {
            crate::usage_bail!("max running must be at least 1 when set");
        }
        if let Some(n) = self.output_tokens
            && !(1..=openai::MAX_OUTPUT_TOKENS).contains(&n)
        {
            crate::usage_bail!(
                "output tokens must be between 1 and {} when set, got {n}",
                openai::MAX_OUTPUT_TOKENS
            );
        }
        if !self.batch_slowdown.is_finite() || self.batch_slowdown < 0.0 {
            crate::usage_bail!(
                "batch slowdown must be a finite number >= 0, got {}",
                self.batch_slowdown
            );
        }
        if self.block_size == 0 || self.num_gpu_blocks == 0 {
            crate::usage_bail!("block size and number of GPU blocks must be at least 1");
        }
        if self.model.trim().is_empty() {
            crate::usage_bail!("model name must not be empty");
        }
        if matches!(&self.api_key, Some(k) if k.is_empty()) {
            crate::usage_bail!("API key must not be empty when set");
        }
        Ok(())
    }

    /// Turns `llmprobe mock` flags into a checked configuration.
    pub fn from_args(args: &MockArgs) -> Result<Self, UsageError> {
        let faults = args
            .fault
            .iter()
            .map(|f| {
                f.parse::<FaultSpec>()
                    .map_err(|e| UsageError::new(format!("--fault: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let config = Self {
            ttft: millis("--ttft-ms", args.ttft_ms)?,
            itl: millis("--itl-ms", args.itl_ms)?,
            jitter: args
                .jitter
                .parse()
                .map_err(|e: UsageError| UsageError::new(format!("--jitter: {e}")))?,
            output_tokens: args.output_tokens,
            tokens_per_chunk: args.tokens_per_chunk,
            max_running: args.max_running,
            batch_slowdown: args.batch_slowdown,
            usage: !args.no_usage,
            seed: args.seed,
            api_key: args.api_key.clone(),
            faults,
            model: args.model.clone(),
            num_gpu_blocks: args.num_gpu_blocks,
            block_size: args.block_size,
            stall: millis("--stall-ms", args.stall_ms)?,
            shutdown_grace: Duration::from_secs(5),
            // A process always runs in real time (see the field's doc).
            precise_timer: true,
        };
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(extra: &[&str]) -> Result<MockConfig, UsageError> {
        let mut argv = vec!["llmprobe", "mock"];
        argv.extend_from_slice(extra);
        let cli =
            crate::cli::Cli::try_parse_from(argv).map_err(|e| UsageError::new(e.to_string()))?;
        match cli.command {
            crate::cli::Command::Mock(args) => MockConfig::from_args(&args),
            _ => Err(UsageError::new("not mock")),
        }
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
        // The process runs in real time: precise timer; embedders (paused-clock tests)
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
        use clap::CommandFactory;
        let mut cmd = crate::cli::Cli::command();
        let help = cmd
            .find_subcommand_mut("mock")
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default();
        for name in FAULT_NAMES {
            assert!(help.contains(name), "--help does not mention {name}");
        }
    }

    #[test]
    fn deserializes_from_yaml() {
        let c: MockConfig = serde_yaml_ng::from_str(
            "ttft: 20ms\nitl: 1ms\njitter: lognormal:0.1\nfaults: [\"http_429=3:0.5\"]\n",
        )
        .unwrap();
        assert_eq!(c.ttft, Duration::from_millis(20));
        assert_eq!(
            c.faults[0].kind,
            FaultKind::Http429 {
                retry_after_secs: 3
            }
        );
        assert!(serde_yaml_ng::from_str::<MockConfig>("ttft: 5\n").is_err());
        assert!(serde_yaml_ng::from_str::<MockConfig>("tff: 5ms\n").is_err());
    }
}
