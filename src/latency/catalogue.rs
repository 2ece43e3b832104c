//! The catalogue: one row per latency, in the order of [`Latency::ALL`]. Everything the
//! code knows about a latency besides its definition is a field here.

use super::Latency;

/// What the code knows about one latency.
#[derive(Debug)]
pub struct Row {
    pub latency: Latency,
    /// Field in the aggregation summary, `sli` label value and config key.
    pub name: &'static str,
    /// Key of its distribution in reports, in ms (vLLM's spelling).
    pub report_key: &'static str,
    /// Its summaries, report figures and histogram cover every dispatched request, not
    /// only successful ones.
    pub covers_failures: bool,
    /// Only a streamed answer has it.
    pub needs_streaming: bool,
    /// How users name it (flags, gates, table columns); `None` when they cannot.
    pub user: Option<UserName>,
    /// Its histogram in the daemon's `/metrics`, if it has one.
    pub histogram: Option<Histogram>,
    /// What an objective on it means, if one may bound it.
    pub objective: Option<Objective>,
    /// Its histogram in the OTLP export, if it has one.
    pub otlp: Option<Otlp>,
}

/// How users name a latency.
#[derive(Debug)]
pub struct UserName {
    /// The name users type (vLLM's where vLLM has one): `e2el`.
    pub name: &'static str,
    /// Other spellings accepted when parsing: `e2e`.
    pub aliases: &'static [&'static str],
    /// Its column title in the bench table.
    pub title: &'static str,
    /// vLLM's benchmark names it too (`--percentile-metrics`, `--goodput`).
    pub vllm: bool,
}

/// A latency histogram family of the daemon.
#[derive(Debug)]
pub struct Histogram {
    pub family: &'static str,
    pub help: &'static str,
    /// Whose configured bucket bounds it uses (TTFA shares TTFT's).
    pub buckets: Latency,
    /// One probe gives it one value, so each bucket can name the newest probe in it (an
    /// exemplar); per-token ITL gives many, none of which stands for the probe.
    pub exemplars: bool,
}

/// What an objective on a latency means.
#[derive(Debug)]
pub struct Objective {
    /// A record without this latency meets the objective (a one-token answer has no
    /// TPOT, so it cannot miss a TPOT objective); otherwise it misses it.
    pub missing_meets: bool,
    /// The histogram bucket layouts its threshold becomes a bound of, so `le` is exact.
    pub bucket_layouts: &'static [Latency],
    /// The gauge publishing a scenario's threshold.
    pub gauge: &'static str,
    pub gauge_help: &'static str,
    /// Its description in the config file's schema.
    pub config_help: &'static str,
}

/// A latency histogram of the OTLP export, in seconds.
#[derive(Debug)]
pub struct Otlp {
    /// The GenAI conventions' name where they define one, else `llmprobe.client.*`.
    pub name: &'static str,
    pub description: &'static str,
    /// The conventions' instrument, with their advised bounds; llmprobe's own use the
    /// bounds of the latency's histogram (vLLM's).
    pub semconv: bool,
    /// Its name in the GenAI conventions' standalone release (semantic-conventions-genai
    /// v0.1.0) for inference operations, where that release renamed it; the export
    /// emits it when `OTEL_SEMCONV_STABILITY_OPT_IN` asks (`otlp::semconv`).
    pub genai: Option<&'static str>,
    /// Failed probes are recorded too, with `error.type`. The conventions ask it of the
    /// operation duration, so E2E's instrument has them although its summaries and its
    /// histogram do not (`covers_failures`).
    pub failed_probes: bool,
}

pub(super) const ROWS: [Row; Latency::COUNT] = [
    Row {
        latency: Latency::Ttft,
        name: "ttft",
        report_key: "ttft_ms",
        covers_failures: false,
        needs_streaming: true,
        user: Some(UserName {
            name: "ttft",
            aliases: &[],
            title: "TTFT ms",
            vllm: true,
        }),
        histogram: Some(Histogram {
            family: "llmprobe_ttft_seconds",
            help: "Time to first content token, from the actual send.",
            buckets: Latency::Ttft,
            exemplars: true,
        }),
        objective: Some(Objective {
            missing_meets: false,
            bucket_layouts: &[Latency::Ttft],
            gauge: "llmprobe_slo_ttft_seconds",
            gauge_help: "The scenario's configured TTFT objective.",
            config_help: "Time to first token, e.g. `500ms`.",
        }),
        otlp: Some(Otlp {
            name: "gen_ai.client.operation.time_to_first_chunk",
            description: "Time from the send to the first chunk with generated text (reasoning or answer).",
            semconv: true,
            genai: Some("gen_ai.client.inference.time_to_first_chunk"),
            failed_probes: false,
        }),
    },
    Row {
        latency: Latency::Ttfa,
        name: "ttfa",
        report_key: "ttfa_ms",
        covers_failures: false,
        needs_streaming: true,
        user: Some(UserName {
            name: "ttfa",
            aliases: &[],
            title: "TTFA ms",
            vllm: false,
        }),
        histogram: Some(Histogram {
            family: "llmprobe_ttfa_seconds",
            help: "Time to first answer (non-reasoning) token, from the actual send; equals TTFT when the model does not reason.",
            buckets: Latency::Ttft,
            exemplars: true,
        }),
        objective: Some(Objective {
            missing_meets: false,
            // TTFA shares TTFT's layout, so its objective is a bound of that layout.
            bucket_layouts: &[Latency::Ttft],
            gauge: "llmprobe_slo_ttfa_seconds",
            gauge_help: "The scenario's configured time-to-first-answer-token objective.",
            config_help: "Time to first answer token (reasoning models: after the reasoning), e.g. `5s`.",
        }),
        otlp: Some(Otlp {
            name: "llmprobe.client.time_to_first_answer_chunk",
            description: "Time from the send to the first chunk with answer (non-reasoning) text.",
            semconv: false,
            genai: None,
            failed_probes: false,
        }),
    },
    Row {
        latency: Latency::Tpot,
        name: "tpot",
        report_key: "tpot_ms",
        covers_failures: false,
        needs_streaming: true,
        user: Some(UserName {
            name: "tpot",
            aliases: &[],
            title: "TPOT ms",
            vllm: true,
        }),
        histogram: Some(Histogram {
            family: "llmprobe_tpot_seconds",
            help: "Time per output token after the first (vLLM's TPOT).",
            buckets: Latency::Tpot,
            exemplars: true,
        }),
        objective: Some(Objective {
            missing_meets: true,
            // The same per-token budget bounds per-token ITL.
            bucket_layouts: &[Latency::Tpot, Latency::Itl],
            gauge: "llmprobe_slo_tpot_seconds",
            gauge_help: "The scenario's configured TPOT objective.",
            config_help: "Time per output token after the first, e.g. `50ms`.",
        }),
        otlp: Some(Otlp {
            name: "llmprobe.client.time_per_output_token",
            description: "Time per output token after the first, vLLM's definition.",
            semconv: false,
            genai: None,
            failed_probes: false,
        }),
    },
    Row {
        latency: Latency::Itl,
        name: "itl",
        report_key: "itl_ms",
        covers_failures: false,
        needs_streaming: true,
        user: Some(UserName {
            name: "itl",
            aliases: &[],
            title: "ITL ms",
            vllm: true,
        }),
        histogram: Some(Histogram {
            family: "llmprobe_inter_token_latency_seconds",
            help: "Per-token inter-token latency (a chunk gap shared among its tokens).",
            buckets: Latency::Itl,
            exemplars: false,
        }),
        objective: None,
        otlp: Some(Otlp {
            name: "llmprobe.client.inter_token_latency",
            description: "Per-token inter-token latency: a chunk's gap shared among its tokens, one value per token.",
            semconv: false,
            genai: None,
            failed_probes: false,
        }),
    },
    Row {
        latency: Latency::ChunkGap,
        name: "chunk_gap",
        report_key: "chunk_gap_ms",
        covers_failures: false,
        needs_streaming: true,
        user: None,
        histogram: None,
        objective: None,
        otlp: Some(Otlp {
            name: "gen_ai.client.operation.time_per_output_chunk",
            description: "Time between consecutive chunks with generated text, one value per chunk after the first.",
            semconv: true,
            genai: Some("gen_ai.client.inference.time_per_output_chunk"),
            failed_probes: false,
        }),
    },
    Row {
        latency: Latency::E2e,
        name: "e2e",
        report_key: "e2el_ms",
        covers_failures: false,
        needs_streaming: false,
        user: Some(UserName {
            name: "e2el",
            aliases: &["e2e"],
            title: "E2E ms",
            vllm: true,
        }),
        histogram: Some(Histogram {
            family: "llmprobe_request_duration_seconds",
            help: "End-to-end probe latency, send to last token.",
            buckets: Latency::E2e,
            exemplars: true,
        }),
        objective: Some(Objective {
            missing_meets: false,
            bucket_layouts: &[Latency::E2e],
            gauge: "llmprobe_slo_e2e_seconds",
            gauge_help: "The scenario's configured end-to-end latency objective.",
            config_help: "End-to-end latency, e.g. `10s`.",
        }),
        otlp: Some(Otlp {
            name: "gen_ai.client.operation.duration",
            description: "GenAI operation duration: the probe's send to its last token (end of body when not streamed).",
            semconv: true,
            genai: Some("gen_ai.client.inference.duration"),
            failed_probes: true,
        }),
    },
    Row {
        latency: Latency::TtftFromSched,
        name: "ttft_from_sched",
        report_key: "ttft_from_sched_ms",
        covers_failures: false,
        needs_streaming: true,
        user: None,
        histogram: None,
        objective: None,
        otlp: None,
    },
    Row {
        latency: Latency::E2eFromSched,
        name: "e2e_from_sched",
        report_key: "e2el_from_sched_ms",
        covers_failures: false,
        needs_streaming: false,
        user: None,
        histogram: None,
        objective: None,
        otlp: None,
    },
    Row {
        latency: Latency::DispatchLag,
        name: "dispatch_lag",
        report_key: "dispatch_lag_ms",
        covers_failures: true,
        needs_streaming: false,
        user: None,
        histogram: Some(Histogram {
            family: "llmprobe_dispatch_lag_seconds",
            help: "Actual send time minus scheduled send time (client health).",
            buckets: Latency::DispatchLag,
            exemplars: false,
        }),
        objective: None,
        otlp: Some(Otlp {
            name: "llmprobe.client.dispatch_lag",
            description: "The probe's actual send minus its scheduled send (the prober's own health).",
            semconv: false,
            genai: None,
            failed_probes: true,
        }),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otlp_instruments_keep_what_the_other_outputs_record() {
        for row in &ROWS {
            let Some(o) = &row.otlp else { continue };
            // A latency over every request is not cut to successful probes in OTLP.
            assert!(
                o.failed_probes || !row.covers_failures,
                "{:?}: {} drops failed probes",
                row.latency,
                o.name
            );
            // llmprobe's own instruments take their bounds from the histogram.
            assert!(
                o.semconv || row.histogram.is_some(),
                "{:?}: {} has no bounds",
                row.latency,
                o.name
            );
            assert_eq!(o.name.starts_with("gen_ai."), o.semconv, "{}", o.name);
        }
    }
}
