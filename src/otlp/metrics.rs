//! The OTLP metric instruments (the latency catalogue's OTLP column, `names::latencies`)
//! and one probe's record → its points: each latency from the record's own definition
//! (`RequestRecord::samples`), its tokens, and its outcome.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

use super::names::{self as n, latencies};
use super::semconv::Semconv;
use super::span::ProbeAttributes;
use crate::exposition::Buckets;
use crate::exposition::series::MAX_ITL_OBSERVATIONS_PER_PROBE;
use crate::latency::{Latency, Otlp};
use crate::record::RequestRecord;

/// Which probes an instrument records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probes {
    All,
    /// Inference operations only (generated text: chat, completions, responses,
    /// messages): the ones semantic-conventions-genai moved to `gen_ai.client.inference.*`.
    Inference,
    /// The other operations (embeddings, rerank, score), which stay on the old name.
    Other,
}

impl Probes {
    fn take(self, inference: bool) -> bool {
        match self {
            Probes::All => true,
            Probes::Inference => inference,
            Probes::Other => !inference,
        }
    }
}

/// The v0.1.0 token instruments: per-operation histograms and counters.
#[derive(Debug)]
struct GenaiTokens {
    input: Histogram<u64>,
    output: Histogram<u64>,
    input_total: Counter<u64>,
    output_total: Counter<u64>,
    cache_read_total: Counter<u64>,
}

/// One latency's instruments under the names `semconv` asks for, each with the probes
/// it takes.
type LatencyInstruments = (Latency, &'static Otlp, Vec<(Probes, Histogram<f64>)>);

/// Every instrument of the export.
#[derive(Debug)]
pub struct Instruments {
    latencies: Vec<LatencyInstruments>,
    /// v1.41.0's `gen_ai.client.token.usage`.
    tokens: Option<Histogram<u64>>,
    genai_tokens: Option<GenaiTokens>,
    probes: Counter<u64>,
}

/// The names a latency's values go to, and the probes each takes: v1.41.0's name for
/// all, v0.1.0's for inference (other operations keep the old name), or both.
fn latency_names(o: &Otlp, semconv: Semconv) -> Vec<(&'static str, Probes)> {
    let Some(genai) = o.genai else {
        return vec![(o.name, Probes::All)];
    };
    match (semconv.emits_old(), semconv.emits_new()) {
        (true, true) => vec![(o.name, Probes::All), (genai, Probes::Inference)],
        (false, true) => vec![(genai, Probes::Inference), (o.name, Probes::Other)],
        _ => vec![(o.name, Probes::All)],
    }
}

fn token_histogram(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<u64> {
    meter
        .u64_histogram(name)
        .with_unit("{token}")
        .with_description(description)
        .with_boundaries(n::TOKEN_BOUNDS.to_vec())
        .build()
}

fn token_counter(meter: &Meter, name: &'static str, description: &'static str) -> Counter<u64> {
    meter
        .u64_counter(name)
        .with_unit("{token}")
        .with_description(description)
        .build()
}

impl Instruments {
    pub fn new(meter: &Meter, semconv: Semconv) -> Instruments {
        let vllm = Buckets::vllm();
        let latencies = latencies()
            .map(|(l, o)| {
                let bounds = if o.semconv {
                    n::SEMCONV_SECONDS_BOUNDS.to_vec()
                } else {
                    vllm.of(l.histogram().map_or(l, |h| h.buckets)).to_vec()
                };
                let instruments = latency_names(o, semconv)
                    .into_iter()
                    .map(|(name, probes)| {
                        let h = meter
                            .f64_histogram(name)
                            .with_unit("s")
                            .with_description(o.description)
                            .with_boundaries(bounds.clone())
                            .build();
                        (probes, h)
                    })
                    .collect();
                (l, o, instruments)
            })
            .collect();
        let genai_tokens = semconv.emits_new().then(|| GenaiTokens {
            input: token_histogram(
                meter,
                n::OPERATION_INPUT_TOKENS,
                "The number of input (prompt) tokens used per inference operation.",
            ),
            output: token_histogram(
                meter,
                n::OPERATION_OUTPUT_TOKENS,
                "The number of output (completion) tokens used per inference operation.",
            ),
            input_total: token_counter(
                meter,
                n::USAGE_INPUT_TOKENS_COUNTER,
                "The number of input (prompt) tokens used.",
            ),
            output_total: token_counter(
                meter,
                n::USAGE_OUTPUT_TOKENS_COUNTER,
                "The number of output (completion) tokens used.",
            ),
            cache_read_total: token_counter(
                meter,
                n::USAGE_CACHE_READ_COUNTER,
                "The number of input tokens served from a provider-managed cache.",
            ),
        });
        Instruments {
            latencies,
            tokens: semconv.emits_old().then(|| {
                token_histogram(
                    meter,
                    n::TOKEN_USAGE,
                    "Number of input and output tokens used.",
                )
            }),
            genai_tokens,
            probes: meter
                .u64_counter(n::PROBES)
                .with_unit("{probe}")
                .with_description("Probes completed, by outcome and whether they were good.")
                .build(),
        }
    }

    /// Records the points of one finished probe.
    pub fn record(&self, r: &RequestRecord, probe: &ProbeAttributes, good: bool) {
        let mut attrs = probe.common.clone();
        if !r.is_success() {
            attrs.push(KeyValue::new(n::ERROR_TYPE, r.outcome.as_str()));
        }
        for (l, o, instruments) in &self.latencies {
            if !o.failed_probes && !r.is_success() {
                continue;
            }
            for (probes, h) in instruments {
                if !probes.take(probe.inference) {
                    continue;
                }
                let mut left = MAX_ITL_OBSERVATIONS_PER_PROBE;
                r.samples(*l, |v, weight| {
                    let times = u64::from(weight).min(left);
                    left -= times;
                    for _ in 0..times {
                        h.record(v.as_secs_f64(), &attrs);
                    }
                });
            }
        }
        // Only probes the server answered used tokens.
        if r.http_status.is_some() {
            self.record_tokens(r, probe, &attrs);
        }
        attrs.push(KeyValue::new(n::OUTCOME, r.outcome.as_str()));
        attrs.push(KeyValue::new(n::GOOD, good));
        self.probes.add(1, &attrs);
    }

    fn record_tokens(&self, r: &RequestRecord, probe: &ProbeAttributes, attrs: &[KeyValue]) {
        let (input, output) = (u64::from(r.prompt_tokens()), u64::from(r.output_tokens()));
        if let Some(tokens) = &self.tokens {
            for (kind, count) in [("input", input), ("output", output)] {
                let mut a = attrs.to_vec();
                a.push(KeyValue::new(n::TOKEN_TYPE, kind));
                tokens.record(count, &a);
            }
        }
        if let Some(t) = &self.genai_tokens {
            t.input.record(input, attrs);
            t.output.record(output, attrs);
            let mut a = attrs.to_vec();
            a.push(KeyValue::new(n::TOKEN_MODALITY, probe.input_modality));
            t.input_total.add(input, &a);
            if let Some(cached) = r.usage_cached_tokens {
                t.cache_read_total.add(u64::from(cached), &a);
            }
            a.pop();
            a.push(KeyValue::new(n::TOKEN_MODALITY, "text"));
            t.output_total.add(output, &a);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use opentelemetry::metrics::MeterProvider;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
    use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

    use super::*;
    use crate::record::{Chunk, Outcome};

    /// Each exported histogram point: its instrument and whether it has `error.type`.
    #[derive(Debug, Clone, Default)]
    struct Points(Arc<Mutex<BTreeSet<(String, bool)>>>);

    impl PushMetricExporter for Points {
        async fn export(&self, rm: &ResourceMetrics) -> OTelSdkResult {
            let mut seen = self.0.lock().unwrap();
            for m in rm.scope_metrics().flat_map(|s| s.metrics()) {
                if let AggregatedMetrics::F64(MetricData::Histogram(h)) = m.data() {
                    for p in h.data_points() {
                        let failed = p.attributes().any(|kv| kv.key.as_str() == n::ERROR_TYPE);
                        seen.insert((m.name().to_string(), failed));
                    }
                }
            }
            Ok(())
        }
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
            Ok(())
        }
        fn temporality(&self) -> Temporality {
            Temporality::Cumulative
        }
    }

    /// A streamed probe of two chunks, so every latency has a value.
    fn streamed(outcome: Outcome) -> RequestRecord {
        let ms = Duration::from_millis;
        let mut r = RequestRecord::new(1, ms(0), ms(2));
        r.http_status = Some(200);
        r.t_first = Some(ms(50));
        r.t_first_answer = Some(ms(50));
        r.chunks = [50, 60, 75]
            .map(|at| Chunk {
                at: ms(at),
                tokens: 1,
                text_bytes: 3,
                reasoning_bytes: 0,
            })
            .to_vec();
        r.t_end = Some(ms(80));
        r.outcome = outcome;
        r
    }

    fn points(records: &[RequestRecord]) -> BTreeSet<(String, bool)> {
        points_of(records, Semconv::V1_41, true)
    }

    fn points_of(
        records: &[RequestRecord],
        semconv: Semconv,
        inference: bool,
    ) -> BTreeSet<(String, bool)> {
        let points = Points::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(points.clone()).build())
            .build();
        let instruments = Instruments::new(&provider.meter("test"), semconv);
        let probe = ProbeAttributes {
            common: Vec::new(),
            span_name: "chat m".into(),
            inference,
            input_modality: "text",
        };
        for r in records {
            instruments.record(r, &probe, r.is_success());
        }
        provider.force_flush().unwrap();
        let seen = points.0.lock().unwrap().clone();
        provider.shutdown().unwrap();
        seen
    }

    #[test]
    fn a_failed_probe_records_only_the_operation_duration_and_the_dispatch_lag() {
        let failed: Vec<String> = points(&[streamed(Outcome::StreamError)])
            .into_iter()
            .filter(|(_, failed)| *failed)
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            failed,
            [
                "gen_ai.client.operation.duration",
                "llmprobe.client.dispatch_lag"
            ]
        );
        let ok: BTreeSet<(String, bool)> = points(&[streamed(Outcome::Ok)]);
        let all: BTreeSet<(String, bool)> = latencies()
            .map(|(_, o)| (o.name.to_string(), false))
            .collect();
        assert_eq!(ok, all, "a successful probe records every latency");
    }

    /// The latency histograms a successful probe fills under `semconv`.
    fn latency_names(semconv: Semconv, inference: bool) -> Vec<String> {
        points_of(&[streamed(Outcome::Ok)], semconv, inference)
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| !name.starts_with("llmprobe."))
            .collect()
    }

    #[test]
    fn the_opt_in_chooses_the_names_and_other_operations_keep_the_operation_duration() {
        let old = [
            "gen_ai.client.operation.duration",
            "gen_ai.client.operation.time_per_output_chunk",
            "gen_ai.client.operation.time_to_first_chunk",
        ];
        let new = [
            "gen_ai.client.inference.duration",
            "gen_ai.client.inference.time_per_output_chunk",
            "gen_ai.client.inference.time_to_first_chunk",
        ];
        assert_eq!(latency_names(Semconv::V1_41, true), old);
        assert_eq!(latency_names(Semconv::Genai, true), new);
        let both: Vec<&str> = new.iter().chain(&old).copied().collect();
        assert_eq!(latency_names(Semconv::Both, true), both);
        // An embedding is no inference: v0.1.0 keeps it on the operation's names.
        assert_eq!(latency_names(Semconv::Genai, false), old);
        assert_eq!(latency_names(Semconv::Both, false), old);
    }
}
