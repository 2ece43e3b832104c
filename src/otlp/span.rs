//! One probe's record → its OTLP client span: the trace and span IDs its `traceparent`
//! carried (so the engine's span of the request is its child), its send to its end from
//! the record's own timestamps, and an event at the headers, the first token and the
//! first answer token.
//!
//! The span is built as the SDK's `SpanData` rather than through its tracer, which
//! would draw a span ID of its own instead of the one the engine was sent.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

use super::names as n;
use crate::client::trace::TraceContext;
use crate::record::RequestRecord;

/// What a probe is, beside its record: the attributes its span and metric points share.
#[derive(Debug, Clone)]
pub struct ProbeAttributes {
    /// `gen_ai.*`, `server.*` and `llmprobe.*` of the target, scenario and replica.
    pub common: Vec<KeyValue>,
    /// `{gen_ai.operation.name} {gen_ai.request.model}`.
    pub span_name: String,
    /// An inference operation (its API generates text), which the GenAI conventions'
    /// standalone release records under `gen_ai.client.inference.*`.
    pub inference: bool,
    /// `gen_ai.token.modality` of its input tokens on the v0.1.0 counters.
    pub input_modality: &'static str,
}

/// The export's instrumentation scope, with the conventions' schema URL.
pub fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(n::SCOPE)
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_schema_url(n::SCHEMA_URL)
        .build()
}

/// The span of `r`, ending at `end` on the wall clock (the record's clock is monotonic
/// and has no date); `probe_id` is its page. Durations and event offsets are exact
/// differences of the record's timestamps.
pub fn probe_span(
    r: &RequestRecord,
    probe: &ProbeAttributes,
    good: bool,
    probe_id: Option<u64>,
    end: SystemTime,
) -> SpanData {
    let t_end = r.t_end.unwrap_or(r.t_send);
    let start = end - t_end.saturating_sub(r.t_send);
    let at = |t: Duration| start + t.saturating_sub(r.t_send);
    let ids = ids(r);
    let mut events = SpanEvents::default();
    for (name, t) in [
        (n::EVENT_HEADERS, r.t_headers),
        (n::EVENT_FIRST_TOKEN, r.t_first),
        (n::EVENT_FIRST_ANSWER_TOKEN, r.t_first_answer),
    ] {
        if let Some(t) = t {
            events.events.push(Event::new(name, at(t), Vec::new(), 0));
        }
    }
    let status = if r.is_success() {
        Status::Unset
    } else {
        Status::error(r.outcome.as_str())
    };
    SpanData {
        span_context: SpanContext::new(
            TraceId::from(ids.trace_id),
            SpanId::from(ids.span_id),
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        ),
        parent_span_id: SpanId::INVALID,
        parent_span_is_remote: false,
        span_kind: SpanKind::Client,
        name: Cow::Owned(probe.span_name.clone()),
        start_time: start,
        end_time: end,
        attributes: attributes(r, probe, good, probe_id),
        dropped_attributes_count: 0,
        events,
        links: SpanLinks::default(),
        status,
        instrumentation_scope: scope(),
    }
}

/// The IDs the probe sent; fresh ones when it sent no `traceparent`.
fn ids(r: &RequestRecord) -> TraceContext {
    let sent = r
        .trace_id
        .as_deref()
        .zip(r.span_id.as_deref())
        .and_then(|(t, s)| TraceContext::parse(&format!("00-{t}-{s}-01")));
    sent.unwrap_or_else(TraceContext::random)
}

fn attributes(
    r: &RequestRecord,
    probe: &ProbeAttributes,
    good: bool,
    probe_id: Option<u64>,
) -> Vec<KeyValue> {
    let mut a = probe.common.clone();
    let int = |v: u32| i64::from(v);
    a.push(KeyValue::new(n::REQUEST_STREAM, r.streamed));
    a.push(KeyValue::new(n::REQUEST_MAX_TOKENS, int(r.max_tokens)));
    a.push(KeyValue::new(n::OUTCOME, r.outcome.as_str()));
    a.push(KeyValue::new(n::GOOD, good));
    if let Some(id) = probe_id.and_then(|id| i64::try_from(id).ok()) {
        a.push(KeyValue::new(n::PROBE_ID, id));
    }
    if let Some(turn) = r.turn {
        a.push(KeyValue::new(n::TURN, int(turn)));
    }
    if !r.is_success() {
        a.push(KeyValue::new(n::ERROR_TYPE, r.outcome.as_str()));
    }
    if r.http_status.is_some() {
        a.push(KeyValue::new(n::USAGE_INPUT_TOKENS, int(r.prompt_tokens())));
        a.push(KeyValue::new(
            n::USAGE_OUTPUT_TOKENS,
            int(r.output_tokens()),
        ));
        if r.saw_reasoning() {
            a.push(KeyValue::new(
                n::USAGE_REASONING_OUTPUT_TOKENS,
                int(r.reasoning_tokens()),
            ));
        }
        if let Some(cached) = r.usage_cached_tokens {
            a.push(KeyValue::new(n::USAGE_CACHE_READ_INPUT_TOKENS, int(cached)));
        }
    }
    if let Some(ttft) = r.ttft() {
        a.push(KeyValue::new(
            n::RESPONSE_TIME_TO_FIRST_CHUNK,
            ttft.as_secs_f64(),
        ));
    }
    if let Some(reason) = &r.finish_reason {
        a.push(KeyValue::new(
            n::RESPONSE_FINISH_REASONS,
            Value::Array(vec![opentelemetry::StringValue::from(reason.clone())].into()),
        ));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RequestRecord {
        let mut r = RequestRecord::new(3, Duration::from_millis(100), Duration::from_millis(102));
        r.t_headers = Some(Duration::from_millis(110));
        r.t_first = Some(Duration::from_millis(150));
        r.t_first_answer = Some(Duration::from_millis(170));
        r.t_end = Some(Duration::from_millis(402));
        r.http_status = Some(200);
        r.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        r.span_id = Some("00f067aa0ba902b7".into());
        r
    }

    #[test]
    fn the_span_has_the_sent_ids_and_the_records_timing() {
        let probe = ProbeAttributes {
            common: vec![KeyValue::new(n::OPERATION_NAME, "chat")],
            span_name: "chat m".into(),
            inference: true,
            input_modality: "text",
        };
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let s = probe_span(&record(), &probe, true, Some(7), end);
        assert_eq!(
            s.span_context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(s.span_context.span_id().to_string(), "00f067aa0ba902b7");
        assert_eq!(s.span_kind, SpanKind::Client);
        assert_eq!(
            s.end_time.duration_since(s.start_time).unwrap(),
            Duration::from_millis(300)
        );
        let offsets: Vec<(String, Duration)> = s
            .events
            .iter()
            .map(|e| {
                (
                    e.name.to_string(),
                    e.timestamp.duration_since(s.start_time).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            offsets,
            [
                (n::EVENT_HEADERS.to_string(), Duration::from_millis(8)),
                (n::EVENT_FIRST_TOKEN.to_string(), Duration::from_millis(48)),
                (
                    n::EVENT_FIRST_ANSWER_TOKEN.to_string(),
                    Duration::from_millis(68)
                ),
            ]
        );
        assert!(s.attributes.contains(&KeyValue::new(n::PROBE_ID, 7_i64)));
        assert!(
            !s.attributes
                .iter()
                .any(|kv| kv.key.as_str() == n::ERROR_TYPE)
        );
    }

    #[test]
    fn a_failed_probe_has_its_error_type_and_status() {
        let mut r = record();
        r.outcome = crate::record::Outcome::Http5xx;
        let probe = ProbeAttributes {
            common: Vec::new(),
            span_name: "chat m".into(),
            inference: true,
            input_modality: "text",
        };
        let s = probe_span(&r, &probe, false, None, SystemTime::now());
        assert!(
            s.attributes
                .contains(&KeyValue::new(n::ERROR_TYPE, "http_5xx"))
        );
        assert_eq!(s.status, Status::error("http_5xx"));
    }
}
