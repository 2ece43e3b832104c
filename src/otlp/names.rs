//! Every name the OTLP export uses, in one place: the OpenTelemetry GenAI semantic
//! conventions' names where one exists (their version in [`SEMCONV_VERSION`]), llmprobe's
//! own (`llmprobe.*`) for the rest; which GenAI operation and provider each API is; the
//! latency instruments as rows over the latency catalogue. docs/metrics.md (OTLP) lists
//! them, and a test holds it to this file.

use crate::client::Endpoint;
use crate::latency::Latency;

/// The GenAI conventions followed: v1.41.0, the last release in the main
/// semantic-conventions repository (later ones moved GenAI out), and the first with the
/// client streaming metrics. All of them are marked Development.
pub const SEMCONV_VERSION: &str = "1.41.0";
/// The schema URL of that version, on the export's instrumentation scope.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";
/// The instrumentation scope (tracer and meter) name.
pub const SCOPE: &str = "llmprobe";

/// `gen_ai.operation.name` of a probe of `endpoint`: the conventions' well-known value
/// for each API.
pub fn operation(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Chat | Endpoint::Responses | Endpoint::Messages => "chat",
        Endpoint::Completions => "text_completion",
        Endpoint::Embeddings => "embeddings",
    }
}

/// `gen_ai.provider.name` of a probe of `endpoint`: the API's flavour, as the
/// conventions ask of a client that cannot know what serves it (an OpenAI-compatible
/// vLLM is `openai`; `server.address` and the model say which engine it is).
pub fn provider(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Messages => "anthropic",
        Endpoint::Chat | Endpoint::Completions | Endpoint::Responses | Endpoint::Embeddings => {
            "openai"
        }
    }
}

// Attribute keys of the conventions.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
pub const REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
pub const REQUEST_STREAM: &str = "gen_ai.request.stream";
pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
pub const RESPONSE_TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";
pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
pub const USAGE_REASONING_OUTPUT_TOKENS: &str = "gen_ai.usage.reasoning.output_tokens";
pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
pub const SERVER_ADDRESS: &str = "server.address";
pub const SERVER_PORT: &str = "server.port";
pub const ERROR_TYPE: &str = "error.type";

// llmprobe's own attribute keys.
pub const TARGET: &str = "llmprobe.target";
pub const SCENARIO: &str = "llmprobe.scenario";
pub const REPLICA: &str = "llmprobe.replica";
pub const OUTCOME: &str = "llmprobe.outcome";
pub const GOOD: &str = "llmprobe.good";
pub const PROBE_ID: &str = "llmprobe.probe.id";
pub const TURN: &str = "llmprobe.turn";
pub const LOCATION: &str = "llmprobe.location";

// The span's events.
pub const EVENT_HEADERS: &str = "llmprobe.response.headers";
pub const EVENT_FIRST_TOKEN: &str = "llmprobe.response.first_token";
pub const EVENT_FIRST_ANSWER_TOKEN: &str = "llmprobe.response.first_answer_token";

/// `gen_ai.client.token.usage`: a histogram of tokens per probe, by `gen_ai.token.type`.
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// The conventions' advised bounds for token usage.
pub const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// The conventions' advised bounds for their latency histograms (seconds).
pub const SEMCONV_SECONDS_BOUNDS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// `llmprobe.client.probes`: probes completed, by outcome and whether they were good.
pub const PROBES: &str = "llmprobe.client.probes";

/// One latency histogram of the export.
#[derive(Debug, Clone, Copy)]
pub struct LatencyInstrument {
    pub latency: Latency,
    pub name: &'static str,
    pub description: &'static str,
    /// Recorded for failed probes too (with `error.type`), not only successful ones.
    pub covers_failures: bool,
    /// Whether it is the conventions' (its bounds are then theirs, else vLLM's).
    pub semconv: bool,
}

/// The latency histograms, in seconds. Each records the record's own definition of its
/// latency (`RequestRecord::samples`).
pub const LATENCIES: [LatencyInstrument; 7] = [
    LatencyInstrument {
        latency: Latency::E2e,
        name: "gen_ai.client.operation.duration",
        description: "GenAI operation duration: the probe's send to its last token (end of body when not streamed).",
        covers_failures: true,
        semconv: true,
    },
    LatencyInstrument {
        latency: Latency::Ttft,
        name: "gen_ai.client.operation.time_to_first_chunk",
        description: "Time from the send to the first chunk with generated text (reasoning or answer).",
        covers_failures: false,
        semconv: true,
    },
    LatencyInstrument {
        latency: Latency::ChunkGap,
        name: "gen_ai.client.operation.time_per_output_chunk",
        description: "Time between consecutive chunks with generated text, one value per chunk after the first.",
        covers_failures: false,
        semconv: true,
    },
    LatencyInstrument {
        latency: Latency::Ttfa,
        name: "llmprobe.client.time_to_first_answer_chunk",
        description: "Time from the send to the first chunk with answer (non-reasoning) text.",
        covers_failures: false,
        semconv: false,
    },
    LatencyInstrument {
        latency: Latency::Tpot,
        name: "llmprobe.client.time_per_output_token",
        description: "Time per output token after the first, vLLM's definition.",
        covers_failures: false,
        semconv: false,
    },
    LatencyInstrument {
        latency: Latency::Itl,
        name: "llmprobe.client.inter_token_latency",
        description: "Per-token inter-token latency: a chunk's gap shared among its tokens, one value per token.",
        covers_failures: false,
        semconv: false,
    },
    LatencyInstrument {
        latency: Latency::DispatchLag,
        name: "llmprobe.client.dispatch_lag",
        description: "The probe's actual send minus its scheduled send (the prober's own health).",
        covers_failures: true,
        semconv: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_has_an_operation_and_a_provider() {
        for e in Endpoint::ALL {
            assert!(!operation(e).is_empty() && !provider(e).is_empty(), "{e:?}");
        }
        assert_eq!(operation(Endpoint::Completions), "text_completion");
        assert_eq!(provider(Endpoint::Messages), "anthropic");
    }

    #[test]
    fn the_metrics_page_lists_every_name() {
        let doc = include_str!("../../docs/metrics.md");
        let otlp = doc
            .split("## OTLP")
            .nth(1)
            .expect("docs/metrics.md has an OTLP section");
        assert!(otlp.contains(&format!("v{SEMCONV_VERSION}")));
        let names = LATENCIES
            .iter()
            .map(|l| l.name)
            .chain([TOKEN_USAGE, PROBES]);
        for name in names {
            assert!(
                otlp.contains(&format!("`{name}`")),
                "{name} not in docs/metrics.md"
            );
        }
        for key in [
            OPERATION_NAME,
            PROVIDER_NAME,
            REQUEST_MODEL,
            SERVER_ADDRESS,
            SERVER_PORT,
            ERROR_TYPE,
            TOKEN_TYPE,
            TARGET,
            SCENARIO,
            REPLICA,
            OUTCOME,
            GOOD,
            PROBE_ID,
            EVENT_HEADERS,
            EVENT_FIRST_TOKEN,
            EVENT_FIRST_ANSWER_TOKEN,
        ] {
            assert!(
                otlp.contains(&format!("`{key}`")),
                "{key} not in docs/metrics.md"
            );
        }
    }
}
