//! Flags of `llmprobe bench` and `llmprobe report` (clap types only; `cli` re-exports
//! them). The names of loadgen.py are the contract; `vllm bench serve` names are
//! aliases with the same meaning. Turning these strings into checked values is
//! `bench::options`' job.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::latency::Latency;

/// Flags of `llmprobe bench`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 all gates passed, 1 runtime failure, 2 bad input, \
3 an SLO gate failed (or --find-max-rate found no passing rate)."
)]
pub struct BenchArgs {
    // ---- target ----
    /// Server base URL, with or without a trailing /v1 (default http://localhost:8000).
    #[arg(long, conflicts_with_all = ["host", "port"], help_heading = "Target")]
    pub base_url: Option<String>,
    /// Server host, when --base-url is not given (vLLM's --host).
    #[arg(long, help_heading = "Target")]
    pub host: Option<String>,
    /// Server port, when --base-url is not given (vLLM's --port).
    #[arg(long, help_heading = "Target")]
    pub port: Option<u16>,
    /// Model name sent in requests (required unless --mock).
    #[arg(long, help_heading = "Target")]
    pub model: Option<String>,
    /// API: chat, completions, responses (OpenAI Responses), messages (Anthropic) or
    /// embeddings; also their paths (/v1/chat/completions, …) and vLLM's --backend
    /// names openai-chat, openai, vllm, sglang. Default: completions, or chat with
    /// --provider.
    #[arg(long, visible_alias = "backend", help_heading = "Target")]
    pub endpoint: Option<String>,
    /// Bearer API key.
    #[arg(
        long,
        env = "OPENAI_API_KEY",
        hide_env_values = true,
        help_heading = "Target"
    )]
    pub api_key: Option<String>,
    /// Extra HTTP header `Name:Value` (repeatable).
    #[arg(long = "header", value_name = "K:V", help_heading = "Target")]
    pub headers: Vec<String>,
    /// A hosted API: azure (chat, responses, embeddings), bedrock, gemini or vertex
    /// (chat); the key of azure and gemini is --api-key.
    #[arg(long, value_enum, help_heading = "Provider")]
    pub provider: Option<crate::client::Provider>,
    /// Azure: the api-version of the deployment path (absent or v1: the v1 API).
    #[arg(long, help_heading = "Provider")]
    pub api_version: Option<String>,
    /// Bedrock: the region requests are signed for.
    #[arg(long, help_heading = "Provider")]
    pub aws_region: Option<String>,
    /// Bedrock: the shared credentials file's profile.
    #[arg(long, help_heading = "Provider")]
    pub aws_profile: Option<String>,
    /// Bedrock: a file holding the access key id (else AWS_ACCESS_KEY_ID).
    #[arg(long, value_name = "FILE", help_heading = "Provider")]
    pub aws_access_key_id_file: Option<std::path::PathBuf>,
    /// Bedrock: a file holding the secret access key (else AWS_SECRET_ACCESS_KEY).
    #[arg(long, value_name = "FILE", help_heading = "Provider")]
    pub aws_secret_access_key_file: Option<std::path::PathBuf>,
    /// Bedrock: a file holding a session token (else AWS_SESSION_TOKEN).
    #[arg(long, value_name = "FILE", help_heading = "Provider")]
    pub aws_session_token_file: Option<std::path::PathBuf>,
    /// Vertex: the Google Cloud project.
    #[arg(long, help_heading = "Provider")]
    pub google_project: Option<String>,
    /// Vertex: the location (region), e.g. us-central1.
    #[arg(long, help_heading = "Provider")]
    pub google_location: Option<String>,
    /// Vertex: a service-account key file (tokens by the JWT-bearer flow).
    #[arg(long, value_name = "FILE", help_heading = "Provider")]
    pub google_service_account_file: Option<std::path::PathBuf>,
    /// Vertex: a file holding an access token, re-read when it changes.
    #[arg(long, value_name = "FILE", help_heading = "Provider")]
    pub google_token_file: Option<std::path::PathBuf>,
    /// Send no W3C `traceparent` header (by default each request carries a fresh,
    /// sampled trace ID, kept in its record), for a gateway that rejects or strips it.
    #[arg(long, help_heading = "Target")]
    pub no_traceparent: bool,
    /// Total time limit per request (e.g. `600s`, `2m`; a bare number is seconds).
    #[arg(long, default_value = "600s", help_heading = "Target")]
    pub timeout: String,
    /// Ask the server to ignore EOS so every request generates exactly --output-len tokens.
    #[arg(long, help_heading = "Target")]
    pub ignore_eos: bool,
    /// Ask for whole answers (`stream: false`): only the end-to-end latency exists then
    /// (no TTFT, TPOT or ITL). Embeddings are never streamed.
    #[arg(long, help_heading = "Target")]
    pub no_stream: bool,
    /// After a 429 or 503 with a Retry-After header, hold every new request until that
    /// delay has passed (off by default: an open-loop test keeps its schedule). The pause
    /// shows as dispatch lag, so the report says the schedule was not kept.
    #[arg(long, help_heading = "Target")]
    pub respect_retry_after: bool,
    /// Hugging Face tokenizer.json: exact prompt lengths, and token counts when the
    /// server sends no usage.
    #[arg(long, value_name = "PATH", help_heading = "Target")]
    pub tokenizer: Option<PathBuf>,

    // ---- load ----
    /// Request rate in requests/s (Poisson arrivals), or `inf` to send all at once.
    #[arg(long, visible_alias = "request-rate", help_heading = "Load")]
    pub rate: Option<String>,
    /// Several rates, one run each, e.g. `2,8,32`: the curve, not a single number.
    #[arg(long, value_name = "R1,R2,..", help_heading = "Load")]
    pub sweep: Option<String>,
    /// Requests per rate (counted, after --warmup).
    #[arg(long, visible_alias = "num-prompts", help_heading = "Load")]
    pub num_requests: Option<u64>,
    /// Run each rate for this long instead of a request count (e.g. `60s`).
    #[arg(long, help_heading = "Load")]
    pub duration: Option<String>,
    /// Requests sent first at each rate and left out of every figure, or `auto`: find
    /// the end of the start-up transient in the TTFT series (MSER-5) and leave out what
    /// comes before it.
    #[arg(
        long,
        default_value = "0",
        value_name = "N|auto",
        help_heading = "Load"
    )]
    pub warmup: String,
    /// Run each rate N times with different seeds and report the mean and a 95 %
    /// confidence interval of every figure (Student's t over the runs).
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = "Load")]
    pub repeat: u32,
    /// Cap on requests in flight; arrivals beyond it wait for a slot (the wait shows as
    /// dispatch lag).
    #[arg(long, help_heading = "Load")]
    pub max_concurrency: Option<u32>,
    /// Gamma shape of the inter-arrival times: 1 = Poisson, < 1 burstier (vLLM's
    /// --burstiness).
    #[arg(long, default_value_t = 1.0, help_heading = "Load")]
    pub burstiness: f64,
    /// Seed for arrivals, lengths and prompts.
    #[arg(long, default_value_t = 0, help_heading = "Load")]
    pub seed: u64,
    /// Arrival process: poisson (default), gamma (shape --burstiness) or constant
    /// (evenly spaced, like vLLM's and GuideLLM's constant profiles).
    #[arg(long, value_name = "PROCESS", help_heading = "Load")]
    pub arrival: Option<String>,
    /// Search for the highest rate that passes every gate: doubling, then bisection.
    #[arg(long, help_heading = "Load")]
    pub find_max_rate: bool,
    /// Stop the max-rate search when the bracket is this narrow: req/s (`0.5`) or a
    /// fraction of the rate (`5%`).
    #[arg(long, default_value = "5%", help_heading = "Load")]
    pub max_rate_precision: String,
    /// Highest rate the max-rate search may try.
    #[arg(long, default_value_t = 1024.0, help_heading = "Load")]
    pub max_rate_limit: f64,
    /// Run shard I of N (0-based): rate/N and 1/N of the requests, with a seed derived
    /// from I. Merge the shards' --records with `llmprobe report merge`.
    #[arg(long, value_name = "I/N", help_heading = "Load")]
    pub shard: Option<String>,

    // ---- workload ----
    /// Prompt length in tokens (mean for uniform/lognormal).
    #[arg(
        long,
        visible_alias = "random-input-len",
        default_value_t = 1024,
        help_heading = "Workload"
    )]
    pub input_len: u32,
    /// Output length in tokens asked for (max_tokens).
    #[arg(
        long,
        visible_alias = "random-output-len",
        default_value_t = 128,
        help_heading = "Workload"
    )]
    pub output_len: u32,
    /// Length distribution: fixed, uniform or lognormal (default fixed, or uniform when
    /// --random-range-ratio is given).
    #[arg(long, help_heading = "Workload")]
    pub len_dist: Option<String>,
    /// Uniform lengths in [n(1-r), n(1+r)] (vLLM's --random-range-ratio).
    #[arg(long, help_heading = "Workload")]
    pub random_range_ratio: Option<f64>,
    /// Tokens of a fixed prefix shared by every prompt (measures the prefix cache on
    /// purpose; by default a unique nonce starts every prompt).
    #[arg(
        long,
        visible_alias = "random-prefix-len",
        default_value_t = 0,
        help_heading = "Workload"
    )]
    pub shared_prefix_len: u32,
    /// Only this share (0..1) of the requests start with the --shared-prefix-len prefix,
    /// drawn per request; the others are as long without it. The engine's prefix-cache
    /// hit ratio then follows it. A list (`0,0.5,1`) runs the rates once per share, in
    /// the order given: TTFT against the hit ratio.
    #[arg(long, value_name = "R1,R2,..", help_heading = "Workload")]
    pub prefix_hit_ratio: Option<String>,
    /// Split the requests between --model and its LoRA adapters: NAME=WEIGHT,… (each
    /// weight in (0, 1], their sum at most 1; the base model gets the rest). Each request
    /// names a model drawn from --seed; the table and --json-out add a row per model.
    #[arg(long, value_name = "NAME=W,...", help_heading = "Workload")]
    pub lora_split: Option<String>,
    /// Prompt source: random (synthetic), sharegpt or jsonl.
    #[arg(
        long,
        visible_alias = "dataset-name",
        default_value = "random",
        help_heading = "Workload"
    )]
    pub dataset: String,
    /// Dataset file for --dataset sharegpt|jsonl.
    #[arg(long, help_heading = "Workload")]
    pub dataset_path: Option<PathBuf>,
    /// Ask every request this question (a deterministic prompt for answer checks; the
    /// unique nonce still goes in front of it).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["prompt_file", "dataset_path"], help_heading = "Workload")]
    pub prompt: Option<String>,
    /// Like --prompt, with the question read from a file.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "dataset_path",
        help_heading = "Workload"
    )]
    pub prompt_file: Option<PathBuf>,
    /// Send N generated PNG images (data: URLs) with every prompt, for a
    /// vision-language model (chat, responses, messages); each request's differ.
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "image_file",
        help_heading = "Workload"
    )]
    pub images: Option<u32>,
    /// The generated images' size in pixels.
    #[arg(
        long,
        value_name = "WxH",
        default_value = "512x512",
        help_heading = "Workload"
    )]
    pub image_size: String,
    /// Send this image file (PNG, JPEG, GIF or WebP) with every prompt instead.
    #[arg(long, value_name = "FILE", help_heading = "Workload")]
    pub image_file: Option<PathBuf>,
    /// A document a rerank or score request ranks against the prompt (its query);
    /// repeat the flag for each document, in order (the first is document 0).
    #[arg(long = "document", value_name = "TEXT", help_heading = "Workload")]
    pub documents: Vec<String>,
    /// Rerank's `top_n`: how many results to ask for (default: the server's, all).
    #[arg(
        long,
        value_name = "N",
        requires = "documents",
        help_heading = "Workload"
    )]
    pub top_n: Option<u32>,
    /// Ask a golden set's questions (a JSONL file, or `builtin`) instead of prompts, in
    /// an order seeded by --seed, cycling; each answer is judged by its question's rule
    /// and the report gives the accuracy with its 95 % Wilson interval, whose lower
    /// bound is a daemon scenario's `golden.baseline` (docs/measurement.md).
    #[arg(long, value_name = "FILE|builtin", help_heading = "Workload")]
    pub golden: Option<String>,
    /// Send --prompt/--prompt-file (or dataset prompts) without the unique nonce in
    /// front: byte for byte the same question every time (exact-match prompts; the
    /// server's prefix cache then serves them).
    #[arg(long, help_heading = "Workload")]
    pub no_nonce: bool,
    /// Multi-turn conversations of N turns: each arrival (or --trace entry) starts a
    /// conversation, and each later turn is sent after the previous answer plus a think
    /// time, carrying the whole history and a new user message of --input-len tokens.
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub turns: Option<u32>,
    /// Mean think time between an answer and the next turn (with --turns).
    #[arg(long, value_name = "DUR", help_heading = "Workload")]
    pub think_time: Option<String>,
    /// Think-time distribution: exponential (default) or constant.
    #[arg(long, value_name = "DIST", help_heading = "Workload")]
    pub think_time_dist: Option<String>,

    // ---- Answer checks ----
    /// The answer must match this regex (Rust regex syntax, unanchored).
    #[arg(long, value_name = "REGEX", help_heading = "Answer checks")]
    pub expect_regex: Option<String>,
    /// The answer must not match this regex (e.g. '<\|im_start\|>').
    #[arg(long, value_name = "REGEX", help_heading = "Answer checks")]
    pub expect_not_regex: Option<String>,
    /// The answer must be JSON valid against this JSON Schema file.
    #[arg(long, value_name = "FILE", help_heading = "Answer checks")]
    pub expect_json_schema: Option<PathBuf>,
    /// Also ask for the --expect-json-schema schema with the request's structured-output
    /// field (chat `response_format`, responses `text.format`).
    #[arg(long, requires = "expect_json_schema", help_heading = "Answer checks")]
    pub structured_output: bool,
    /// The response's `model` field must be exactly this.
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "expect_model_regex",
        help_heading = "Answer checks"
    )]
    pub expect_model: Option<String>,
    /// The response's `model` field must match this regex.
    #[arg(long, value_name = "REGEX", help_heading = "Answer checks")]
    pub expect_model_regex: Option<String>,
    /// The finish reason as the protocol spells it (stop, length; end_turn; completed).
    #[arg(long, value_name = "REASON", help_heading = "Answer checks")]
    pub expect_finish_reason: Option<String>,
    /// At least this many output tokens.
    #[arg(long, value_name = "N", help_heading = "Answer checks")]
    pub min_output_tokens: Option<u32>,
    /// Degenerate output: at most this share (0..1) of the answer's word trigrams may
    /// repeat an earlier one.
    #[arg(long, value_name = "R", help_heading = "Answer checks")]
    pub max_repetition: Option<f64>,
    /// Rerank and score: the document (0-based index among the --document flags) that
    /// must be ranked first.
    #[arg(long, value_name = "N", help_heading = "Answer checks")]
    pub expect_top_document: Option<u32>,
    /// Offer the function NAME in every request (chat and responses `tools`) and check
    /// that the answer calls it with arguments valid against --tool-schema.
    #[arg(long, value_name = "NAME", help_heading = "Answer checks")]
    pub expect_tool_call: Option<String>,
    /// JSON Schema file of the --expect-tool-call function's parameters (default
    /// `{"type": "object"}`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "expect_tool_call",
        help_heading = "Answer checks"
    )]
    pub tool_schema: Option<PathBuf>,
    /// Description sent with the --expect-tool-call function.
    #[arg(
        long,
        value_name = "TEXT",
        requires = "expect_tool_call",
        help_heading = "Answer checks"
    )]
    pub tool_description: Option<String>,
    /// Send `tool_choice`: auto, required, or function (force the named function).
    #[arg(
        long,
        value_name = "CHOICE",
        requires = "expect_tool_call",
        help_heading = "Answer checks"
    )]
    pub tool_choice: Option<String>,

    // ---- trace replay ----
    /// Replay arrivals and lengths from a production trace instead of a schedule:
    /// Mooncake JSONL, BurstGPT CSV or JSONL `{offset_ms, input_tokens,
    /// output_tokens}` (docs/bench.md, "Trace replay").
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["rate", "sweep", "find_max_rate", "arrival", "shard", "dataset_path"],
        help_heading = "Trace replay"
    )]
    pub trace: Option<PathBuf>,
    /// Trace format: mooncake, burstgpt or jsonl (default: detected from the file).
    #[arg(long, value_name = "FORMAT", help_heading = "Trace replay")]
    pub trace_format: Option<String>,
    /// Replay this many times faster than the trace (0.5 = half speed).
    #[arg(long, value_name = "X", help_heading = "Trace replay")]
    pub trace_speedup: Option<f64>,
    /// Replay only the requests from START to END of trace time, e.g. `10m..20m`,
    /// `60..` (a bare number is seconds).
    #[arg(long, value_name = "START..END", help_heading = "Trace replay")]
    pub trace_window: Option<String>,
    /// The model's context length: a trace request whose input + output tokens exceed
    /// it is refused (FILE:LINE) before anything is sent (vLLM's --max-model-len).
    #[arg(long, value_name = "TOKENS", help_heading = "Trace replay")]
    pub max_model_len: Option<u32>,
    /// BurstGPT: replay only the rows whose Model column is this (e.g. ChatGPT).
    #[arg(long, value_name = "NAME", help_heading = "Trace replay")]
    pub trace_model: Option<String>,

    // ---- SLOs and gates ----
    /// Goodput objective: TTFT at most this many ms.
    #[arg(long, help_heading = "SLOs and gates")]
    pub slo_ttft_ms: Option<f64>,
    /// Goodput objective: TPOT at most this many ms.
    #[arg(long, help_heading = "SLOs and gates")]
    pub slo_tpot_ms: Option<f64>,
    /// Goodput objective: end-to-end latency at most this many ms.
    #[arg(long, visible_alias = "slo-e2e-ms", help_heading = "SLOs and gates")]
    pub slo_e2el_ms: Option<f64>,
    /// Goodput objective: time to first answer token (after any reasoning) at most
    /// this many ms.
    #[arg(long, help_heading = "SLOs and gates")]
    pub slo_ttfa_ms: Option<f64>,
    /// Goodput objectives vLLM-style, in ms: `--goodput ttft:500 tpot:40 e2el:2000`.
    #[arg(long, num_args = 1.., value_name = "METRIC:MS", help_heading = "SLOs and gates")]
    pub goodput: Vec<String>,
    /// A pass/fail gate checked at every rate, e.g. `goodput-ratio>=0.95`,
    /// `ttft-p99<=500ms`, `error-ratio<=1%` (repeatable). A failed gate exits with 3.
    #[arg(long = "gate", value_name = "EXPR", help_heading = "SLOs and gates")]
    pub gates: Vec<String>,
    /// What gates compare: `value` (the figure; the mean over --repeat runs) or `ci`
    /// (the pessimistic end of its 95 % interval: the upper bound of a `<=` gate).
    #[arg(
        long,
        default_value = "value",
        value_name = "value|ci",
        help_heading = "SLOs and gates"
    )]
    pub gate_on: String,
    /// Stop a run early once more than this share of its requests failed (`0.2` or
    /// `20%`), counted after at least 10 requests; a sweep or search stops with it and
    /// bench exits with 3. Limits what a failing hosted API costs.
    #[arg(long, value_name = "R", help_heading = "SLOs and gates")]
    pub max_error_rate: Option<String>,
    /// Shorthand for `--gate goodput-ratio>=R`.
    #[arg(long, value_name = "R", help_heading = "SLOs and gates")]
    pub min_goodput_ratio: Option<String>,
    /// Shorthand for `--gate golden-accuracy-upper>=A` (with --golden): fail when the
    /// upper bound of the golden accuracy's 95 % interval is below A, the rule of the
    /// LlmprobeGoldenAccuracyDrop alert.
    #[arg(
        long,
        value_name = "A",
        requires = "golden",
        help_heading = "SLOs and gates"
    )]
    pub min_golden_accuracy: Option<String>,

    // ---- report ----
    /// Latency metrics to report percentiles for: ttft,tpot,itl,e2el.
    #[arg(long, default_value = "ttft,tpot,itl,e2el", help_heading = "Report")]
    pub percentile_metrics: String,
    /// Percentiles to report, e.g. `50,90,99,99.9`.
    #[arg(long, default_value = "50,90,99", help_heading = "Report")]
    pub metric_percentiles: String,
    /// JSONL file: one summary object per rate (and per --prefix-hit-ratio value).
    #[arg(long, value_name = "FILE", help_heading = "Report")]
    pub json_out: Option<PathBuf>,
    /// JSONL file: one object per request, written as results arrive.
    #[arg(long, value_name = "FILE", help_heading = "Report")]
    pub records: Option<PathBuf>,
    /// Write a vLLM-compatible result JSON (to FILE, or to a generated name).
    #[arg(long, num_args = 0..=1, value_name = "FILE", help_heading = "Report")]
    pub save_result: Option<Option<PathBuf>>,
    /// File name for --save-result (vLLM's flag).
    #[arg(long, help_heading = "Report")]
    pub result_filename: Option<PathBuf>,
    /// Directory for --save-result files (vLLM's flag).
    #[arg(long, help_heading = "Report")]
    pub result_dir: Option<PathBuf>,
    /// Draw the sweep curve (latency percentiles and goodput against the rate; one rate at
    /// several --prefix-hit-ratio values: against the hit ratio) to an SVG file.
    #[arg(long, value_name = "FILE.svg", help_heading = "Report")]
    pub plot: Option<PathBuf>,
    /// Measure this client's own timing error on this machine before and after each
    /// rate's run: 20 requests to an in-process reference engine of known timing, through
    /// the same client. Printed after the table and written as `self_check` in
    /// --json-out.
    #[arg(long, help_heading = "Report")]
    pub self_check: bool,
    /// Read GPU telemetry (an NVIDIA dcgm-exporter `/metrics`) before and after each
    /// rate and report its GPU energy per output token, output tokens per joule and mean
    /// power (in the table and --json-out). Repeatable: one per GPU node. `mock` (with
    /// --mock): the embedded mock's GPUs, from its power model.
    #[arg(long, value_name = "URL|mock", help_heading = "Report")]
    pub gpu_metrics_url: Vec<String>,
    /// Warn loudly when the dispatch lag p99 exceeds this many ms: the client, not the
    /// server, was then the bottleneck.
    #[arg(long, default_value_t = 1.0, help_heading = "Report")]
    pub dispatch_lag_warn_ms: f64,
    /// No progress bar (it is hidden anyway when stderr is not a terminal).
    #[arg(long, help_heading = "Report")]
    pub no_progress: bool,

    // ---- mock ----
    /// Start the in-process fake engine (same as `llmprobe mock`) and point the run at it.
    #[arg(long, help_heading = "Mock")]
    pub mock: bool,
    /// Mock: time to first token in ms.
    #[arg(long, requires = "mock", help_heading = "Mock")]
    pub mock_ttft_ms: Option<f64>,
    /// Mock: time per output token in ms (before batch slowdown).
    #[arg(long, requires = "mock", help_heading = "Mock")]
    pub mock_itl_ms: Option<f64>,
    /// Mock: ITL grows as itl × (1 + F × other running requests), so a sweep shows the
    /// knee a real engine has (default 0: every token takes --mock-itl-ms).
    #[arg(long, requires = "mock", help_heading = "Mock")]
    pub mock_batch_slowdown: Option<f64>,
    /// Mock: requests beyond this many running queue (TTFT grows).
    #[arg(long, requires = "mock", help_heading = "Mock")]
    pub mock_max_running: Option<u32>,
    /// Mock: tokens per streamed chunk.
    #[arg(long, requires = "mock", help_heading = "Mock")]
    pub mock_tokens_per_chunk: Option<u32>,
    /// Mock: the first N output tokens are reasoning, streamed in the endpoint's
    /// reasoning form; the answer (and TTFA) starts at token N.
    #[arg(long, requires = "mock", help_heading = "Mock")]
    pub mock_reasoning_tokens: Option<u32>,
    /// Mock: send no usage in streams (like servers that never do), so token counts
    /// come from --tokenizer or one per chunk.
    #[arg(long, requires = "mock", help_heading = "Mock")]
    pub mock_no_usage: bool,
    /// Mock: inject a fault `KIND[:PROBABILITY]` (repeatable; see docs/mock.md).
    #[arg(long = "mock-fault", requires = "mock", help_heading = "Mock")]
    pub mock_faults: Vec<String>,
    /// The answer the mock streams (split into tokens at words; it stops there).
    #[arg(long, value_name = "TEXT", requires = "mock", help_heading = "Mock")]
    pub mock_answer: Option<String>,
    /// Mock: write the engine's own notes of each streamed answer (when it read the
    /// request, each token chunk's deadline and when it left) to FILE as JSON lines, to
    /// judge the client against what the engine really did (docs/bench.md).
    #[arg(long, value_name = "FILE", requires = "mock", help_heading = "Mock")]
    pub mock_notes: Option<PathBuf>,
}

/// `llmprobe report`: work on saved results.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ReportCommand {
    /// Recompute exact summaries from the --records files of several shards (or runs).
    Merge(MergeArgs),
    /// Two --json-out files side by side: each figure's change and whether it is
    /// outside the noise (using the intervals of --repeat runs when both have them).
    Compare(CompareArgs),
}

/// Flags of `llmprobe report compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The reference run's --json-out file.
    #[arg(value_name = "BASE.jsonl")]
    pub base: PathBuf,
    /// The run to judge, --json-out of the same rates.
    #[arg(value_name = "NEW.jsonl")]
    pub new: PathBuf,
    /// Exit 3 when a judged figure (throughput, goodput, TTFT/TPOT/ITL/E2E) got worse
    /// by more than this (`5%` or `0.05`) and not within the noise. Without it, changes
    /// beyond 5 % are marked but the exit code is 0.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<String>,
}

/// Flags of `llmprobe report merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// --records JSONL files to combine (one per shard).
    #[arg(required = true, value_name = "RECORDS.jsonl")]
    pub files: Vec<PathBuf>,
    /// Goodput objective: TTFT at most this many ms.
    #[arg(long)]
    pub slo_ttft_ms: Option<f64>,
    /// Goodput objective: TPOT at most this many ms.
    #[arg(long)]
    pub slo_tpot_ms: Option<f64>,
    /// Goodput objective: end-to-end latency at most this many ms.
    #[arg(long, visible_alias = "slo-e2e-ms")]
    pub slo_e2el_ms: Option<f64>,
    /// Goodput objective: time to first answer token at most this many ms.
    #[arg(long)]
    pub slo_ttfa_ms: Option<f64>,
    /// Goodput objectives vLLM-style, in ms: `--goodput ttft:500 tpot:40`.
    #[arg(long, num_args = 1.., value_name = "METRIC:MS")]
    pub goodput: Vec<String>,
    /// Gates to check on the merged summaries (exit 3 when one fails).
    #[arg(long = "gate", value_name = "EXPR")]
    pub gates: Vec<String>,
    /// Latency metrics to report percentiles for.
    #[arg(long, default_value = "ttft,tpot,itl,e2el")]
    pub percentile_metrics: String,
    /// Percentiles to report.
    #[arg(long, default_value = "50,90,99")]
    pub metric_percentiles: String,
    /// Write the merged summaries as JSONL (one per rate).
    #[arg(long, value_name = "FILE")]
    pub json_out: Option<PathBuf>,
    /// Warn when the merged dispatch lag p99 exceeds this many ms (as in bench).
    #[arg(long, default_value_t = 1.0)]
    pub dispatch_lag_warn_ms: f64,
}

/// Each `--slo-METRIC-ms` flag's latency and value: the flags are clap syntax, the
/// objectives are [`crate::latency::Slo`].
macro_rules! slo_flags {
    ($t:ty) => {
        impl $t {
            pub fn slo_flags(&self) -> [(Latency, Option<f64>); 4] {
                [
                    (Latency::Ttft, self.slo_ttft_ms),
                    (Latency::Tpot, self.slo_tpot_ms),
                    (Latency::E2e, self.slo_e2el_ms),
                    (Latency::Ttfa, self.slo_ttfa_ms),
                ]
            }
        }
    };
}
slo_flags!(BenchArgs);
slo_flags!(MergeArgs);
