//! The OpenMetrics text format (1.0.0) of the registry, for scrapers that ask for it:
//! the same families, series and values as the classic text format, plus the latency
//! histograms' exemplars ([`super::exemplars`]), which only this format can carry.
//!
//! `le` values are written exactly as the classic encoder writes them, so a Prometheus
//! that switches formats keeps every series (it does not rewrite `le` before 3.0).

use std::fmt::Write;
use std::sync::Arc;

use prometheus::proto::{LabelPair, Metric, MetricFamily, MetricType};

use super::exemplars::{BucketExemplars, Exemplar};

pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The bucket exemplars of a histogram series, by family name and series labels.
pub type ExemplarLookup<'a> = dyn Fn(&str, &[LabelPair]) -> Option<Arc<BucketExemplars>> + 'a;

/// Whether a scrape's `Accept` header prefers OpenMetrics to the classic text format
/// (Prometheus asks for it first; curl and most tools ask for neither).
pub fn preferred(accept: &str) -> bool {
    let mut openmetrics = 0.0_f64;
    let mut text = 0.0_f64;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.strip_prefix("q="))
            .find_map(|q| q.parse::<f64>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/openmetrics-text" => openmetrics = openmetrics.max(q),
            "text/plain" => text = text.max(q),
            _ => {}
        }
    }
    openmetrics > 0.0 && openmetrics >= text
}

/// Encodes `families` with the exemplars `exemplars` finds.
pub fn encode(families: &[MetricFamily], exemplars: &ExemplarLookup<'_>) -> String {
    let mut out = String::with_capacity(16 * 1024);
    for mf in families {
        family(&mut out, mf, exemplars);
    }
    out.push_str("# EOF\n");
    out
}

fn family(out: &mut String, mf: &MetricFamily, exemplars: &ExemplarLookup<'_>) {
    let name = mf.name();
    let kind = mf.get_field_type();
    // An OpenMetrics counter's samples are `NAME_total`: a counter named otherwise is
    // served as `unknown` under its own name, so the series stays the same.
    let (family_name, type_name) = match kind {
        MetricType::COUNTER => match name.strip_suffix("_total") {
            Some(stem) => (stem, "counter"),
            None => (name, "unknown"),
        },
        MetricType::GAUGE => (name, "gauge"),
        MetricType::HISTOGRAM => (name, "histogram"),
        MetricType::SUMMARY => (name, "summary"),
        MetricType::UNTYPED => (name, "unknown"),
    };
    if !mf.help().is_empty() {
        let _ = writeln!(out, "# HELP {family_name} {}", escape(mf.help()));
    }
    let _ = writeln!(out, "# TYPE {family_name} {type_name}");
    for m in mf.get_metric() {
        match kind {
            MetricType::COUNTER => sample(out, name, "", m, None, m.get_counter().value()),
            MetricType::GAUGE => sample(out, name, "", m, None, m.get_gauge().value()),
            MetricType::UNTYPED => sample(out, name, "", m, None, m.untyped.value()),
            MetricType::HISTOGRAM => histogram(out, name, m, exemplars(name, m.get_label())),
            MetricType::SUMMARY => {
                let s = m.get_summary();
                for q in s.get_quantile() {
                    let quantile = q.quantile().to_string();
                    sample(out, name, "", m, Some(("quantile", &quantile)), q.value());
                }
                sample(out, name, "_count", m, None, s.sample_count() as f64);
                sample(out, name, "_sum", m, None, s.sample_sum());
            }
        }
    }
}

fn histogram(out: &mut String, name: &str, m: &Metric, exemplars: Option<Arc<BucketExemplars>>) {
    let h = m.get_histogram();
    let mut inf_seen = false;
    let bucket = |out: &mut String, le: f64, le_text: &str, count: f64| {
        sample(out, name, "_bucket", m, Some(("le", le_text)), count);
        if let Some(e) = exemplars.as_ref().and_then(|x| x.of_bucket(le)) {
            // The exemplar goes on the bucket's line, before its newline.
            out.pop();
            exemplar(out, &e);
            out.push('\n');
        }
    };
    for b in h.get_bucket() {
        let le = b.upper_bound();
        inf_seen |= le == f64::INFINITY;
        let text = if le == f64::INFINITY {
            "+Inf".to_string()
        } else {
            le.to_string()
        };
        bucket(out, le, &text, b.cumulative_count() as f64);
    }
    if !inf_seen {
        bucket(out, f64::INFINITY, "+Inf", h.get_sample_count() as f64);
    }
    sample(out, name, "_count", m, None, h.get_sample_count() as f64);
    sample(out, name, "_sum", m, None, h.get_sample_sum());
}

fn sample(
    out: &mut String,
    name: &str,
    suffix: &str,
    m: &Metric,
    extra: Option<(&str, &str)>,
    value: f64,
) {
    out.push_str(name);
    out.push_str(suffix);
    let pairs = m.get_label().iter().map(|l| (l.name(), l.value()));
    labels(out, pairs.chain(extra));
    out.push(' ');
    out.push_str(&number(value));
    let ms = m.timestamp_ms();
    if ms != 0 {
        // OpenMetrics timestamps are seconds.
        let _ = write!(out, " {}", number(ms as f64 / 1000.0));
    }
    out.push('\n');
}

fn exemplar(out: &mut String, e: &Exemplar) {
    out.push_str(" # ");
    let l = e.labels();
    labels(out, l.iter().map(|(k, v)| (*k, v.as_str())));
    if l.is_empty() {
        out.push_str("{}");
    }
    let _ = write!(out, " {} {}", number(e.value), number(e.at));
}

fn labels<'a>(out: &mut String, pairs: impl Iterator<Item = (&'a str, &'a str)>) {
    let mut sep = '{';
    for (k, v) in pairs {
        out.push(sep);
        out.push_str(k);
        out.push_str("=\"");
        out.push_str(&escape(v));
        out.push('"');
        sep = ',';
    }
    if sep == ',' {
        out.push('}');
    }
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v == f64::INFINITY {
        "+Inf".to_string()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else {
        v.to_string()
    }
}

/// Label values and help text escape backslash, double quote and newline.
fn escape(s: &str) -> String {
    let mut e = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => e.push_str("\\\\"),
            '"' => e.push_str("\\\""),
            '\n' => e.push_str("\\n"),
            c => e.push(c),
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus::{Encoder, HistogramOpts, IntCounterVec, Opts, Registry, TextEncoder};

    fn registry() -> (Registry, prometheus::Histogram) {
        let r = Registry::new();
        let c = IntCounterVec::new(Opts::new("x_requests_total", "Re\"qu\\ests\nall."), &["t"])
            .unwrap();
        c.with_label_values(&["a\"b"]).inc_by(3);
        r.register(Box::new(c)).unwrap();
        let h = prometheus::Histogram::with_opts(
            HistogramOpts::new("x_ttft_seconds", "TTFT.")
                .const_label("target", "m")
                .buckets(vec![0.1, 0.5]),
        )
        .unwrap();
        r.register(Box::new(h.clone())).unwrap();
        let g = prometheus::Gauge::new("x_up", "Up.").unwrap();
        g.set(f64::INFINITY);
        r.register(Box::new(g)).unwrap();
        (r, h)
    }

    #[test]
    fn families_samples_and_exemplars() {
        let (r, h) = registry();
        h.observe(0.05);
        h.observe(0.3);
        let ex = Arc::new(BucketExemplars::new(&[0.1, 0.5]));
        ex.observe(Exemplar {
            value: 0.3,
            trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
            probe_id: Some(7),
            at: 1700000000.25,
        });
        let lookup = |name: &str, l: &[LabelPair]| {
            (name == "x_ttft_seconds" && l.iter().any(|p| p.value() == "m")).then(|| ex.clone())
        };
        let text = encode(&r.gather(), &lookup);
        assert_eq!(
            text,
            "# HELP x_requests Re\\\"qu\\\\ests\\nall.\n\
             # TYPE x_requests counter\n\
             x_requests_total{t=\"a\\\"b\"} 3\n\
             # HELP x_ttft_seconds TTFT.\n\
             # TYPE x_ttft_seconds histogram\n\
             x_ttft_seconds_bucket{target=\"m\",le=\"0.1\"} 1\n\
             x_ttft_seconds_bucket{target=\"m\",le=\"0.5\"} 2 \
             # {trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\",probe_id=\"7\"} 0.3 1700000000.25\n\
             x_ttft_seconds_bucket{target=\"m\",le=\"+Inf\"} 2\n\
             x_ttft_seconds_count{target=\"m\"} 2\n\
             x_ttft_seconds_sum{target=\"m\"} 0.35\n\
             # HELP x_up Up.\n\
             # TYPE x_up gauge\n\
             x_up +Inf\n\
             # EOF\n"
        );
    }

    /// Every classic sample line is an OpenMetrics sample line with the same name, labels
    /// and value (exemplars aside): switching formats changes no series.
    #[test]
    fn same_series_as_the_classic_format() {
        let (r, h) = registry();
        for v in [0.01, 0.2, 0.7, 3.0] {
            h.observe(v);
        }
        let mut classic = Vec::new();
        TextEncoder::new()
            .encode(&r.gather(), &mut classic)
            .unwrap();
        let classic = String::from_utf8(classic).unwrap();
        let samples = |t: &str| -> Vec<(String, String)> {
            let mut v: Vec<(String, String)> = t
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| {
                    let l = l.split(" # ").next().unwrap();
                    let (k, v) = l.rsplit_once(' ').unwrap();
                    let v: f64 = v.replace("+Inf", "inf").parse().unwrap();
                    (k.to_string(), v.to_string())
                })
                .collect();
            v.sort();
            v
        };
        let om = encode(&r.gather(), &|_, _| None);
        assert_eq!(samples(&classic), samples(&om));
    }

    #[test]
    fn counters_without_total_are_unknown_under_their_own_name() {
        let r = Registry::new();
        let c = prometheus::IntCounter::new("x_events", "Events.").unwrap();
        c.inc();
        r.register(Box::new(c)).unwrap();
        assert_eq!(
            encode(&r.gather(), &|_, _| None),
            "# HELP x_events Events.\n# TYPE x_events unknown\nx_events 1\n# EOF\n"
        );
    }

    #[test]
    fn accept_header_negotiation() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(preferred(prometheus));
        assert!(preferred("application/openmetrics-text"));
        assert!(!preferred("*/*"));
        assert!(!preferred(""));
        assert!(!preferred("text/plain"));
        assert!(!preferred(
            "text/plain;q=1,application/openmetrics-text;q=0.5"
        ));
        assert!(!preferred("application/openmetrics-text;q=0"));
    }
}
