//! [`MockConfig`]: the mock's behaviour, its defaults and range checks, and
//! [`MockFlags`], the one way a front end's flags become a checked configuration.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::fault::FaultSpec;
use super::jitter::Jitter;
use super::request::MAX_OUTPUT_TOKENS;
use crate::check::GoldenSet;
use crate::exit::UsageError;

/// The mock's behaviour. Every field has a default (see [`MockConfig::default`]);
/// durations in YAML follow `src/duration.rs` (`50ms`, `1s`, or bare seconds).
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
    /// Prefill time per prompt token the prefix cache does not hold, added to the TTFT
    /// (0: the TTFT ignores the prompt).
    #[serde(deserialize_with = "de_duration")]
    #[schemars(with = "String")]
    pub prefill_per_token: Duration,
    /// Prefill time per image tile (512 × 512 pixels, each part counted whole) of the
    /// images a request carries, added to the TTFT: the image's preprocessing and
    /// encoding, which a real engine does before the first token.
    #[serde(deserialize_with = "de_duration")]
    #[schemars(with = "String")]
    pub prefill_per_image_tile: Duration,
    /// Random factor on TTFT and token times: none, uniform:F, lognormal:SIGMA.
    #[schemars(with = "String")]
    pub jitter: Jitter,
    /// Fixed output length; when unset the request's max_completion_tokens/max_tokens (else 16).
    pub output_tokens: Option<u32>,
    /// Tokens per content chunk after the first (speculative decoding sends several).
    pub tokens_per_chunk: u32,
    /// The first N output tokens are reasoning, streamed in each protocol's reasoning
    /// form (chat `reasoning_content`, Responses `reasoning_text`, Anthropic
    /// `thinking`); the answer starts at token N.
    pub reasoning_tokens: u32,
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
    /// When set, the Bedrock routes demand a SigV4 signature made with these
    /// credentials (else only its shape is checked).
    #[serde(skip)]
    #[schemars(skip)]
    pub aws: Option<MockAws>,
    /// When set, `POST /token` grants access tokens for this service account's JWT
    /// assertions, and the Vertex routes demand one of them.
    #[serde(skip)]
    #[schemars(skip)]
    pub google: Option<super::google_tokens::MockGoogle>,
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
    /// (tests), so it is off in [`Default`] and on in every mock a front end starts
    /// ([`MockConfig::from_flags`]: `llmprobe mock`, `bench --mock`, `daemon --mock`, the
    /// self-check's reference engine).
    pub precise_timer: bool,
    /// The answer text, split into tokens at words; the answer stops (`stop`) when it
    /// ends. Unset: numbered tokens ` tok0 tok1 …` up to the length limit.
    pub answer: Option<String>,
    /// Report cached prompt tokens from a prefix cache of `num_gpu_blocks` blocks of
    /// `block_size` words (false: usage says nothing about caching).
    pub prefix_cache: bool,
    /// A golden set whose questions the mock knows: a prompt that ends with one of
    /// them is answered with its reference answer (before `answer`). Set by `--golden`.
    #[serde(skip)]
    #[schemars(skip)]
    pub golden: Option<Arc<GoldenSet>>,
    /// Seed of the logprobs answered to a request that asks for them; another seed is
    /// another model to a fingerprint (same tokens, other probabilities).
    pub logprob_seed: u64,
    /// Serve GPU telemetry at `/gpu/metrics` from this power model of the batch
    /// (src/mock/gpu.rs); unset: no GPUs.
    pub gpu: Option<super::gpu::PowerModel>,
    /// LoRA adapters served on `model` from the start (listed in `/v1/models` with
    /// `model` as their parent; more load and unload at run time).
    pub lora_adapters: Vec<String>,
}

/// The image prefill of a tile when none is configured (`--prefill-us-per-image-tile`).
pub const DEFAULT_PREFILL_PER_IMAGE_TILE: Duration = Duration::from_millis(2);

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(10),
            prefill_per_token: Duration::ZERO,
            prefill_per_image_tile: DEFAULT_PREFILL_PER_IMAGE_TILE,
            jitter: Jitter::None,
            output_tokens: None,
            tokens_per_chunk: 1,
            reasoning_tokens: 0,
            max_running: None,
            batch_slowdown: 0.0,
            usage: true,
            seed: 0,
            api_key: None,
            aws: None,
            google: None,
            faults: Vec::new(),
            model: DEFAULT_MODEL.to_string(),
            num_gpu_blocks: DEFAULT_NUM_GPU_BLOCKS,
            block_size: DEFAULT_BLOCK_SIZE,
            stall: DEFAULT_STALL,
            shutdown_grace: Duration::from_secs(5),
            precise_timer: false,
            answer: None,
            prefix_cache: true,
            golden: None,
            logprob_seed: 0,
            gpu: None,
            lora_adapters: Vec::new(),
        }
    }
}

/// The AWS credentials and region the mock's Bedrock routes check signatures with.
#[derive(Clone, PartialEq, Eq)]
pub struct MockAws {
    pub access_key_id: String,
    pub secret_access_key: crate::secret::Secret,
    pub region: String,
}

pub const DEFAULT_MODEL: &str = "mock-llm";
/// Longest `answer`: a fixed answer to a test question, not a corpus.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
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
            .field("reasoning_tokens", &self.reasoning_tokens)
            .field("max_running", &self.max_running)
            .field("batch_slowdown", &self.batch_slowdown)
            .field("usage", &self.usage)
            .field("seed", &self.seed)
            .field("api_key", &self.api_key.as_ref().map(|_| "<secret>"))
            .field("aws", &self.aws.as_ref().map(|a| &a.access_key_id))
            .field("faults", &self.faults)
            .field("model", &self.model)
            .field("num_gpu_blocks", &self.num_gpu_blocks)
            .field("block_size", &self.block_size)
            .field("stall", &self.stall)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("precise_timer", &self.precise_timer)
            .field("golden", &self.golden.as_ref().map(|g| g.source.as_str()))
            .finish()
    }
}

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    crate::duration::parse(&s)
        .map_err(|e| serde::de::Error::custom(format!("invalid duration {s:?}: {e}")))
}

pub(super) fn millis(flag: &str, ms: f64) -> Result<Duration, UsageError> {
    if !ms.is_finite() || ms < 0.0 || ms > MAX_TIME.as_secs_f64() * 1e3 {
        return Err(UsageError::new(format!(
            "{flag} must be a number of milliseconds between 0 and {}, got {ms}",
            MAX_TIME.as_millis()
        )));
    }
    // Via nanoseconds so 2.5 ms is exactly 2_500_000 ns.
    Ok(Duration::from_nanos((ms * 1e6).round() as u64))
}

/// A per-token time flag in microseconds: at most a second per token.
pub(super) fn micros(flag: &str, us: f64) -> Result<Duration, UsageError> {
    if !us.is_finite() || !(0.0..=1e6).contains(&us) {
        return Err(UsageError::new(format!(
            "{flag} must be a number of microseconds between 0 and 1000000, got {us}"
        )));
    }
    Ok(Duration::from_nanos((us * 1e3).round() as u64))
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
            && !(1..=MAX_OUTPUT_TOKENS).contains(&n)
        {
            crate::usage_bail!(
                "output tokens must be between 1 and {} when set, got {n}",
                MAX_OUTPUT_TOKENS
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
        if let Some(a) = &self.answer {
            if a.trim().is_empty() {
                crate::usage_bail!("the answer must not be empty when set");
            }
            if a.len() > MAX_ANSWER_BYTES {
                crate::usage_bail!("the answer is longer than {MAX_ANSWER_BYTES} bytes");
            }
        }
        if let Some(g) = &self.gpu
            && let Err(e) = g.validate()
        {
            crate::usage_bail!("{e}");
        }
        for (i, a) in self.lora_adapters.iter().enumerate() {
            if a.trim().is_empty() || *a == self.model || self.lora_adapters[..i].contains(a) {
                crate::usage_bail!(
                    "LoRA adapter {a:?}: names must be non-empty, unique and not the model's"
                );
            }
        }
        if matches!(&self.api_key, Some(k) if k.is_empty()) {
            crate::usage_bail!("API key must not be empty when set");
        }
        Ok(())
    }

    /// The checked configuration that `flags` describe; unset flags keep the defaults.
    /// A front end runs in real time, so its mock paces tokens with the precise timer.
    pub fn from_flags(flags: MockFlags) -> Result<Self, UsageError> {
        let d = Self::default();
        let config = Self {
            ttft: flags.ttft.unwrap_or(d.ttft),
            itl: flags.itl.unwrap_or(d.itl),
            prefill_per_token: flags.prefill_per_token.unwrap_or(d.prefill_per_token),
            prefill_per_image_tile: flags
                .prefill_per_image_tile
                .unwrap_or(d.prefill_per_image_tile),
            jitter: flags.jitter.unwrap_or(d.jitter),
            output_tokens: flags.output_tokens.or(d.output_tokens),
            tokens_per_chunk: flags.tokens_per_chunk.unwrap_or(d.tokens_per_chunk),
            reasoning_tokens: flags.reasoning_tokens.unwrap_or(d.reasoning_tokens),
            max_running: flags.max_running.or(d.max_running),
            batch_slowdown: flags.batch_slowdown.unwrap_or(d.batch_slowdown),
            usage: !flags.no_usage,
            seed: flags.seed.unwrap_or(d.seed),
            api_key: flags.api_key.or(d.api_key),
            aws: flags.aws,
            google: flags.google,
            faults: flags.faults,
            model: flags.model.unwrap_or(d.model),
            num_gpu_blocks: flags.num_gpu_blocks.unwrap_or(d.num_gpu_blocks),
            block_size: flags.block_size.unwrap_or(d.block_size),
            stall: flags.stall.unwrap_or(d.stall),
            shutdown_grace: d.shutdown_grace,
            precise_timer: true,
            answer: flags.answer,
            prefix_cache: !flags.no_prefix_cache,
            golden: match flags.golden {
                Some(source) => Some(Arc::new(
                    GoldenSet::load(&source)
                        .map_err(|e| UsageError::new(format!("--golden: {e}")))?,
                )),
                None => None,
            },
            logprob_seed: d.logprob_seed,
            gpu: flags.gpu,
            lora_adapters: flags.lora_adapters,
        };
        config.validate()?;
        Ok(config)
    }
}

/// What the flags of a front end that starts the mock (`llmprobe mock`, `bench --mock`,
/// `daemon --mock`) set, already converted to the config's types; `None` keeps the
/// [`MockConfig::default`] value. Each front end names and converts its own flags (their
/// names and error messages differ); [`MockConfig::from_flags`] is the one place that
/// turns them into a checked [`MockConfig`]. No `Debug`: it holds the API key.
#[derive(Clone, Default)]
pub struct MockFlags {
    pub ttft: Option<Duration>,
    pub itl: Option<Duration>,
    pub prefill_per_token: Option<Duration>,
    pub prefill_per_image_tile: Option<Duration>,
    pub jitter: Option<Jitter>,
    pub output_tokens: Option<u32>,
    pub tokens_per_chunk: Option<u32>,
    pub reasoning_tokens: Option<u32>,
    pub max_running: Option<u32>,
    pub batch_slowdown: Option<f64>,
    /// Never send usage in streams.
    pub no_usage: bool,
    pub seed: Option<u64>,
    pub api_key: Option<String>,
    pub aws: Option<MockAws>,
    pub google: Option<super::google_tokens::MockGoogle>,
    pub faults: Vec<FaultSpec>,
    pub model: Option<String>,
    pub num_gpu_blocks: Option<u32>,
    pub block_size: Option<u32>,
    pub stall: Option<Duration>,
    pub answer: Option<String>,
    /// Report no cached prompt tokens (see [`MockConfig::prefix_cache`]).
    pub no_prefix_cache: bool,
    /// A golden set file, or `builtin`, whose questions the mock answers right.
    pub golden: Option<String>,
    /// Serve GPU telemetry from this power model.
    pub gpu: Option<super::gpu::PowerModel>,
    /// LoRA adapters served from the start.
    pub lora_adapters: Vec<String>,
}

/// Parses the values of a repeatable fault flag (`KIND[=PARAM][:P]`); errors start with
/// the flag's name.
pub fn parse_fault_flags(flag: &str, values: &[String]) -> Result<Vec<FaultSpec>, UsageError> {
    values
        .iter()
        .map(|f| {
            f.parse::<FaultSpec>()
                .map_err(|e| UsageError::new(format!("{flag}: {e}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::fault::FaultKind;

    #[test]
    fn unset_flags_keep_the_defaults() {
        let c = MockConfig::from_flags(MockFlags::default()).unwrap();
        // A front end's mock runs in real time: the precise timer, whatever the flags.
        let d = MockConfig {
            precise_timer: true,
            ..MockConfig::default()
        };
        assert_eq!(format!("{c:?}"), format!("{d:?}"));
    }

    #[test]
    fn fault_flag_errors_name_the_flag() {
        let e = parse_fault_flags("--mock-fault", &["nope".to_string()])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("--mock-fault: "), "{e}");
        let ok = parse_fault_flags("--fault", &["http_500:0.1".to_string()]).unwrap();
        assert_eq!(ok[0].kind, FaultKind::Http500);
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
        // One duration rule everywhere (src/duration.rs): a bare number is seconds.
        let c: MockConfig = serde_yaml_ng::from_str("ttft: 5\n").unwrap();
        assert_eq!(c.ttft, Duration::from_secs(5));
        assert!(serde_yaml_ng::from_str::<MockConfig>("ttft: -5\n").is_err());
        assert!(serde_yaml_ng::from_str::<MockConfig>("ttft: soon\n").is_err());
        assert!(serde_yaml_ng::from_str::<MockConfig>("tff: 5ms\n").is_err());
    }
}
