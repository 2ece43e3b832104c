//! The OTLP metric instruments (built from the rows of `otlp_names`) and one probe's
//! record → its points: each latency from the record's own definition
//! (`RequestRecord::samples`), its tokens, and its outcome.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

use super::names::{self as n, LATENCIES, LatencyInstrument};
use super::span::ProbeAttributes;
use crate::exposition::Buckets;
use crate::exposition::series::MAX_ITL_OBSERVATIONS_PER_PROBE;
use crate::latency::Latency;
use crate::record::RequestRecord;

/// Every instrument of the export.
#[derive(Debug)]
pub struct Instruments {
    latencies: Vec<(LatencyInstrument, Histogram<f64>)>,
    tokens: Histogram<u64>,
    probes: Counter<u64>,
}

impl Instruments {
    pub fn new(meter: &Meter) -> Instruments {
        let vllm = Buckets::vllm();
        let latencies = LATENCIES
            .iter()
            .map(|row| {
                let bounds = if row.semconv {
                    n::SEMCONV_SECONDS_BOUNDS.to_vec()
                } else {
                    match row.latency {
                        Latency::Tpot => vllm.tpot.clone(),
                        Latency::Itl => vllm.itl.clone(),
                        Latency::DispatchLag => vllm.dispatch_lag.clone(),
                        _ => vllm.ttft.clone(),
                    }
                };
                let h = meter
                    .f64_histogram(row.name)
                    .with_unit("s")
                    .with_description(row.description)
                    .with_boundaries(bounds)
                    .build();
                (*row, h)
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
        for (row, h) in &self.latencies {
            if !row.covers_failures && !r.is_success() {
                continue;
            }
            let mut left = MAX_ITL_OBSERVATIONS_PER_PROBE;
            r.samples(row.latency, |v, weight| {
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
