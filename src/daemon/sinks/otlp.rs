//! The OTLP sink: each probe of a scenario (front door or one replica) as a client span
//! and as metric points, into the daemon's OTLP export. The probe's page ID is the
//! verdict's, filed before any sink runs.

use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::KeyValue;

use crate::config::{ScenarioPlan, TargetPlan};
use crate::otlp::OtlpExport;
use crate::otlp::names as n;
use crate::otlp::span::{ProbeAttributes, probe_span};
use crate::record::RequestRecord;
use crate::sink::{RecordSink, Verdict};

pub struct OtlpSink {
    pub export: Arc<OtlpExport>,
    pub probe: ProbeAttributes,
    /// A conversation scenario's later turns, under `NAME:later` as in the metrics.
    pub later: Option<ProbeAttributes>,
}

impl OtlpSink {
    /// The sink of `scenario`'s probes sent to `base_url` (the target's, or a
    /// discovered replica's with `replica` its `host:port`).
    pub fn new(
        export: Arc<OtlpExport>,
        plan: &TargetPlan,
        scenario: &ScenarioPlan,
        base_url: &str,
        replica: Option<&str>,
    ) -> OtlpSink {
        let attrs = |name: &str| attributes(plan, name, base_url, replica);
        OtlpSink {
            export,
            probe: attrs(&scenario.name),
            later: scenario.later_name().map(|name| attrs(&name)),
        }
    }
}

impl RecordSink for OtlpSink {
    fn record(&mut self, r: &RequestRecord, verdict: Verdict) -> anyhow::Result<()> {
        let probe = match &self.later {
            Some(later) if r.is_later_turn() => later,
            _ => &self.probe,
        };
        let span = probe_span(r, probe, verdict.good, verdict.probe_id, SystemTime::now());
        self.export.span(span);
        self.export.instruments.record(r, probe, verdict.good);
        Ok(())
    }
}

/// What every span and point of one scenario's probes carries.
fn attributes(
    plan: &TargetPlan,
    scenario: &str,
    base_url: &str,
    replica: Option<&str>,
) -> ProbeAttributes {
    let endpoint = plan.client.endpoint;
    let operation = endpoint.otel_operation();
    let mut common = vec![
        KeyValue::new(n::OPERATION_NAME, operation),
        KeyValue::new(
            n::PROVIDER_NAME,
            crate::client::provider::otel_provider(&plan.client),
        ),
        KeyValue::new(n::REQUEST_MODEL, plan.model.clone()),
    ];
    if let Ok(url) = reqwest::Url::parse(base_url) {
        if let Some(host) = url.host_str() {
            common.push(KeyValue::new(n::SERVER_ADDRESS, host.to_string()));
        }
        if let Some(port) = url.port_or_known_default() {
            common.push(KeyValue::new(n::SERVER_PORT, i64::from(port)));
        }
    }
    common.push(KeyValue::new(n::TARGET, plan.name.clone()));
    common.push(KeyValue::new(n::SCENARIO, scenario.to_string()));
    if let Some(r) = replica {
        common.push(KeyValue::new(n::REPLICA, r.to_string()));
    }
    ProbeAttributes {
        common,
        span_name: format!("{operation} {}", plan.model),
        inference: endpoint.generates(),
        input_modality: "text",
    }
}
