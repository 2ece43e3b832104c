//! Every name the OTLP export uses, in one place: the OpenTelemetry GenAI semantic
//! conventions' names where one exists (their version in [`SEMCONV_VERSION`]), llmprobe's
//! own (`llmprobe.*`) for the rest. Each API's operation and provider are its `Api`'s
//! (`Endpoint::otel_operation`, `otel_provider`), each latency instrument a column of
//! the latency catalogue. docs/metrics.md (OTLP) lists them, and tests hold it to these.

use crate::latency::{Latency, Otlp};

/// The GenAI conventions followed: v1.41.0, the last release in the main
/// semantic-conventions repository (later ones moved GenAI out), and the first with the
/// client streaming metrics. All of them are marked Development.
pub const SEMCONV_VERSION: &str = "1.41.0";
/// The schema URL of that version, on the export's instrumentation scope.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";
/// The instrumentation scope (tracer and meter) name.
pub const SCOPE: &str = "llmprobe";

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
/// semantic-conventions-genai v0.1.0: per-operation token histograms (by direction, no
/// `gen_ai.token.type`) and token counters by `gen_ai.token.modality`.
pub const GENAI_VERSION: &str = "0.1.0";
pub const OPERATION_INPUT_TOKENS: &str = "gen_ai.client.inference.operation.input_tokens";
pub const OPERATION_OUTPUT_TOKENS: &str = "gen_ai.client.inference.operation.output_tokens";
pub const USAGE_INPUT_TOKENS_COUNTER: &str = "gen_ai.client.inference.usage.input_tokens";
pub const USAGE_OUTPUT_TOKENS_COUNTER: &str = "gen_ai.client.inference.usage.output_tokens";
pub const USAGE_CACHE_READ_COUNTER: &str = "gen_ai.client.inference.usage.cache_read.input_tokens";
pub const TOKEN_MODALITY: &str = "gen_ai.token.modality";
/// `llmprobe.client.probes`: probes completed, by outcome and whether they were good.
pub const PROBES: &str = "llmprobe.client.probes";

/// The latency histograms, in seconds: the catalogue's rows with an OTLP instrument, in
/// its order. Each records the record's own definition of its latency
/// (`RequestRecord::samples`).
pub fn latencies() -> impl Iterator<Item = (Latency, &'static Otlp)> {
    Latency::ALL
        .into_iter()
        .filter_map(|l| Some((l, l.otlp()?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Endpoint;

    fn otlp_section() -> &'static str {
        include_str!("../../docs/metrics.md")
            .split("## OTLP")
            .nth(1)
            .expect("docs/metrics.md has an OTLP section")
    }

    /// The cells of the section's table row whose first cell is `` `key` ``.
    fn row(key: &str) -> Vec<&'static str> {
        let first = format!("| `{key}` |");
        let line = otlp_section()
            .lines()
            .find(|l| l.starts_with(&first))
            .unwrap_or_else(|| panic!("no row for {key} in docs/metrics.md (OTLP)"));
        line.trim_matches('|').split(" | ").map(str::trim).collect()
    }

    #[test]
    fn each_api_is_its_conventions_operation_and_provider() {
        let want = [
            (Endpoint::Chat, "chat", "openai"),
            (Endpoint::Completions, "text_completion", "openai"),
            (Endpoint::Responses, "chat", "openai"),
            (Endpoint::Messages, "chat", "anthropic"),
            (Endpoint::Embeddings, "embeddings", "openai"),
            (Endpoint::Rerank, "rerank", "cohere"),
            (Endpoint::Score, "score", "vllm"),
        ];
        for (e, operation, provider) in want {
            assert_eq!(
                (e.otel_operation(), e.otel_provider()),
                (operation, provider),
                "{e:?}"
            );
        }
    }

    /// `` `value` (api, api), `other` (api) ``: each value with the APIs that have it, in
    /// `Endpoint::ALL` order; a value that is its one API's name stands alone.
    fn by_value(value: fn(Endpoint) -> &'static str) -> String {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for e in Endpoint::ALL {
            match groups.iter_mut().find(|(v, _)| *v == value(e)) {
                Some((_, apis)) => apis.push(e.as_str()),
                None => groups.push((value(e), vec![e.as_str()])),
            }
        }
        let parts: Vec<String> = groups
            .into_iter()
            .map(|(v, apis)| match apis.as_slice() {
                [only] if *only == v => format!("`{v}`"),
                _ => format!("`{v}` ({})", apis.join(", ")),
            })
            .collect();
        parts.join(", ")
    }

    #[test]
    fn the_metrics_page_gives_each_hosted_providers_name() {
        let cells = row(PROVIDER_NAME);
        for p in crate::client::Provider::ALL {
            let cfg = crate::client::ClientConfig {
                provider: Some(p),
                ..crate::client::ClientConfig::default()
            };
            let want = format!(
                "`{}` ({})",
                crate::client::provider::otel_provider(&cfg),
                p.as_str()
            );
            assert!(
                cells[1].contains(&want),
                "docs/metrics.md (OTLP), {PROVIDER_NAME}: {:?} does not say {want}",
                cells[1]
            );
        }
    }

    #[test]
    fn the_metrics_page_gives_each_apis_operation_and_provider() {
        for (key, value) in [
            (
                OPERATION_NAME,
                Endpoint::otel_operation as fn(Endpoint) -> &'static str,
            ),
            (PROVIDER_NAME, Endpoint::otel_provider),
        ] {
            let want = by_value(value);
            let cells = row(key);
            assert!(
                cells[1].contains(&want),
                "docs/metrics.md (OTLP), {key}: {:?} does not say {want}",
                cells[1]
            );
        }
    }

    #[test]
    fn the_metrics_page_says_which_probes_each_latency_records() {
        for (l, o) in latencies() {
            let cells = row(o.name);
            assert_eq!(cells[1], "`s`", "{}", o.name);
            let every = cells[3].starts_with("every probe");
            assert_eq!(
                every, o.failed_probes,
                "docs/metrics.md (OTLP), {} ({l:?}): recorded for {:?}",
                o.name, cells[3]
            );
        }
    }

    #[test]
    fn the_latency_instruments_keep_their_names() {
        let names: Vec<(Latency, &str)> = latencies().map(|(l, o)| (l, o.name)).collect();
        assert_eq!(
            names,
            [
                (Latency::Ttft, "gen_ai.client.operation.time_to_first_chunk"),
                (Latency::Ttfa, "llmprobe.client.time_to_first_answer_chunk"),
                (Latency::Tpot, "llmprobe.client.time_per_output_token"),
                (Latency::Itl, "llmprobe.client.inter_token_latency"),
                (
                    Latency::ChunkGap,
                    "gen_ai.client.operation.time_per_output_chunk"
                ),
                (Latency::E2e, "gen_ai.client.operation.duration"),
                (Latency::DispatchLag, "llmprobe.client.dispatch_lag"),
            ]
        );
    }

    #[test]
    fn the_metrics_page_lists_every_name() {
        let otlp = otlp_section();
        assert!(otlp.contains(&format!("v{SEMCONV_VERSION}")));
        let names = latencies()
            .map(|(_, o)| o.name)
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

    #[test]
    fn the_metrics_page_names_both_versions_as_the_code_emits_them() {
        let otlp = otlp_section();
        assert!(otlp.contains(&format!("semantic-conventions-genai v{GENAI_VERSION}")));
        for value in [
            crate::otlp::semconv::OPT_IN_VAR,
            crate::otlp::semconv::OPT_IN_LATEST,
            crate::otlp::semconv::OPT_IN_DUP,
        ] {
            assert!(otlp.contains(&format!("`{value}`")), "{value}");
        }
        for (_, o) in latencies() {
            let Some(new) = o.genai else { continue };
            let renamed = format!("| `{}` | `{new}` |", o.name);
            assert!(
                otlp.lines().any(|l| l.starts_with(&renamed)),
                "docs/metrics.md (OTLP) has no row {renamed}"
            );
        }
        let tokens = [
            ("input", OPERATION_INPUT_TOKENS, USAGE_INPUT_TOKENS_COUNTER),
            (
                "output",
                OPERATION_OUTPUT_TOKENS,
                USAGE_OUTPUT_TOKENS_COUNTER,
            ),
        ];
        for (kind, histogram, counter) in tokens {
            let first = format!("| `{TOKEN_USAGE}` (`{TOKEN_TYPE}` `{kind}`) |");
            let line = otlp
                .lines()
                .find(|l| l.starts_with(&first))
                .unwrap_or_else(|| panic!("no row {first}"));
            assert!(
                line.contains(&format!("`{histogram}` (histogram)")),
                "{line}"
            );
            assert!(
                line.contains(&format!("`{counter}` (counter, `{TOKEN_MODALITY}`")),
                "{line}"
            );
        }
        assert!(otlp.contains(&format!("| `{USAGE_CACHE_READ_COUNTER}` (counter) |")));
    }
}
