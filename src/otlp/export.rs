//! The OTLP/HTTP pipeline: the OpenTelemetry SDK's batch span processor and periodic
//! metric reader, each with an `opentelemetry-otlp` protobuf exporter sending through
//! our own reqwest client, and their flush on shutdown. What goes in is built by
//! `otlp_span` and `otlp_metrics`; nothing here reads a record.
//!
//! The SDK exports from threads of its own, blocking on each export; every request is
//! therefore run on the daemon's tokio runtime and awaited from there.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use anyhow::Context;
use opentelemetry::KeyValue;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanProcessor};

use super::metrics::Instruments;
use super::names::{LOCATION, SCOPE};

/// How long one export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how often to export.
#[derive(Debug, Clone)]
pub struct OtlpOptions {
    pub traces_url: String,
    pub metrics_url: String,
    /// Extra headers, values in clear (the caller's secrets).
    pub headers: Vec<(String, String)>,
    pub interval: Duration,
    /// The prober's location, a resource attribute when set.
    pub location: Option<String>,
    /// Whose GenAI names the instruments carry.
    pub semconv: super::Semconv,
}

/// A running export: spans in, metric points in, flushed on [`OtlpExport::shutdown`].
#[derive(Debug)]
pub struct OtlpExport {
    spans: BatchSpanProcessor,
    meters: SdkMeterProvider,
    pub instruments: Instruments,
}

impl OtlpExport {
    /// Starts the exporters; must be called on the tokio runtime that will carry the
    /// requests.
    pub fn start(o: &OtlpOptions) -> anyhow::Result<OtlpExport> {
        let client = || -> anyhow::Result<OnRuntime> {
            let http = reqwest::Client::builder()
                .tls_backend_preconfigured(crate::client::tls::client_config(
                    &crate::client::TlsConfig::default(),
                )?)
                .no_proxy()
                .timeout(EXPORT_TIMEOUT)
                .user_agent(concat!("llmprobe/", env!("CARGO_PKG_VERSION")))
                .build()?;
            Ok(OnRuntime {
                http,
                runtime: tokio::runtime::Handle::try_current()
                    .context("the OTLP export needs a tokio runtime")?,
            })
        };
        let headers: HashMap<String, String> = o.headers.iter().cloned().collect();
        let span_exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client()?)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&o.traces_url)
            .with_headers(headers.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .context("building the OTLP span exporter")?;
        let metric_exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client()?)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&o.metrics_url)
            .with_headers(headers)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .context("building the OTLP metric exporter")?;
        let mut resource = Resource::builder().with_service_name("llmprobe");
        resource =
            resource.with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        if let Some(l) = &o.location {
            resource = resource.with_attribute(KeyValue::new(LOCATION, l.clone()));
        }
        let resource = resource.build();
        let mut spans = BatchSpanProcessor::builder(span_exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_scheduled_delay(o.interval)
                    .build(),
            )
            .build();
        spans.set_resource(&resource);
        let meters = SdkMeterProvider::builder()
            .with_resource(resource)
            .with_reader(
                PeriodicReader::builder(metric_exporter)
                    .with_interval(o.interval)
                    .build(),
            )
            .build();
        let instruments = Instruments::new(
            &opentelemetry::metrics::MeterProvider::meter_with_scope(&meters, super::span::scope()),
            o.semconv,
        );
        tracing::info!(traces = %crate::secret::redact_url(&o.traces_url), metrics = %crate::secret::redact_url(&o.metrics_url), interval = ?o.interval, scope = SCOPE, semconv = ?o.semconv, "exporting probes over OTLP");
        Ok(OtlpExport {
            spans,
            meters,
            instruments,
        })
    }

    /// Queues a finished span for the next batch.
    pub fn span(&self, span: SpanData) {
        self.spans.on_end(span);
    }

    /// Sends what is queued and stops; blocks until both exporters are done, so call it
    /// off the runtime's workers (`spawn_blocking`).
    pub fn shutdown(&self) {
        if let Err(e) = self.spans.shutdown() {
            tracing::warn!(error = %e, "OTLP spans were not all sent at shutdown");
        }
        if let Err(e) = self.meters.shutdown() {
            tracing::warn!(error = %e, "OTLP metrics were not all sent at shutdown");
        }
    }
}

/// The reqwest client the exporters send with, each request spawned on the runtime
/// (the SDK's export threads have no reactor of their own).
#[derive(Debug)]
struct OnRuntime {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl HttpClient for OnRuntime {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let http = self.http.clone();
        let url = crate::secret::redact_url(&request.uri().to_string());
        let task = self.runtime.spawn(async move {
            let result = http.send_bytes(request).await;
            // The SDK drops a failed batch without a word (its own logs are off).
            match &result {
                Ok(r) if !r.status().is_success() => {
                    tracing::warn!(%url, status = %r.status(), "OTLP export refused");
                }
                Err(e) => tracing::warn!(%url, error = %e, "OTLP export failed"),
                Ok(_) => {}
            }
            result
        });
        Box::pin(async move { task.await.map_err(|e| Box::new(e) as HttpError)? })
    }
}
