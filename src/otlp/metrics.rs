//! The OTLP metric instruments (the latency catalogue's OTLP column, `names::latencies`)
//! and one probe's record → its points: each latency from the record's own definition
//! (`RequestRecord::samples`), its tokens, and its outcome.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

use super::names::{self as n, latencies};
use super::span::ProbeAttributes;
use crate::exposition::Buckets;
use crate::exposition::series::MAX_ITL_OBSERVATIONS_PER_PROBE;
use crate::latency::{Latency, Otlp};
use crate::record::RequestRecord;

/// Every instrument of the export.
#[derive(Debug)]
pub struct Instruments {
    latencies: Vec<(Latency, &'static Otlp, Histogram<f64>)>,
    tokens: Histogram<u64>,
    probes: Counter<u64>,
}

impl Instruments {
    pub fn new(meter: &Meter) -> Instruments {
        let vllm = Buckets::vllm();
        let latencies = latencies()
            .map(|(l, o)| {
                let bounds = if o.semconv {
                    n::SEMCONV_SECONDS_BOUNDS.to_vec()
                } else {
                    vllm.of(l.histogram().map_or(l, |h| h.buckets)).to_vec()
                };
                let h = meter
                    .f64_histogram(o.name)
                    .with_unit("s")
                    .with_description(o.description)
                    .with_boundaries(bounds)
                    .build();
                (l, o, h)
            })
            .collect();
        Instruments {
            latencies,
            tokens: meter
                .u64_histogram(n::TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(n::TOKEN_BOUNDS.to_vec())
                .build(),
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
        for &(l, o, ref h) in &self.latencies {
            if !o.failed_probes && !r.is_success() {
                continue;
            }
            let mut left = MAX_ITL_OBSERVATIONS_PER_PROBE;
            r.samples(l, |v, weight| {
                let times = u64::from(weight).min(left);
                left -= times;
                for _ in 0..times {
                    h.record(v.as_secs_f64(), &attrs);
                }
            });
        }
        // Only probes the server answered used tokens.
        if r.http_status.is_some() {
            for (kind, count) in [("input", r.prompt_tokens()), ("output", r.output_tokens())] {
                let mut a = attrs.clone();
                a.push(KeyValue::new(n::TOKEN_TYPE, kind));
                self.tokens.record(u64::from(count), &a);
            }
        }
        attrs.push(KeyValue::new(n::OUTCOME, r.outcome.as_str()));
        attrs.push(KeyValue::new(n::GOOD, good));
        self.probes.add(1, &attrs);
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
        let points = Points::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(points.clone()).build())
            .build();
        let instruments = Instruments::new(&provider.meter("test"));
        let probe = ProbeAttributes {
            common: Vec::new(),
            span_name: "chat m".into(),
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
}
