//! The endpoint picker's own view of its pool: an llm-d / Gateway API Inference
//! Extension endpoint picker's (EPP) `/metrics` scraped into a [`RouterSnapshot`], and
//! two snapshots into the figures of one interval.
//!
//! Metric names from llm-d's router: `pkg/epp/metrics/llm_d_router_metrics.go` (the
//! `llm_d_epp_*` pool and flow-control gauges), `pkg/epp/metrics/metrics.go` (the older
//! `inference_pool_*` and `inference_extension_*` names, still emitted during their
//! deprecation), the approximate prefix producer's
//! `pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix/metrics.go`
//! (`prefix_indexer_hit_ratio`) and the predicted-latency producer's
//! `pkg/epp/framework/plugins/requestcontrol/dataproducer/predictedlatency/metrics.go`
//! (`request_slo_violation_total`, `type` `ttft_slo_violation` or
//! `tpot_slo_violation`). A figure is read under its current name; an older name is
//! read only when the current one is absent, so a picker that emits both is not
//! counted twice.

use std::time::Duration;

use anyhow::Context;

use super::text::{self, Sample};
use super::{EngineParseError, ScrapeError, ScrapeFailure};

/// One scrape of a picker. `None` = the picker did not export it (a plugin not
/// configured, flow control off).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouterSnapshot {
    /// Ready endpoints, summed over the picker's pools.
    pub ready_endpoints: Option<f64>,
    /// The pool's mean KV-cache utilisation, 0..1 (mean over pools).
    pub kv_cache_usage_ratio: Option<f64>,
    /// The pool's mean queue length per endpoint (mean over pools).
    pub queue_size: Option<f64>,
    /// Flow control's saturation: the `effective` stage (the one that gates
    /// dispatch), the largest over pools; 1 is the set point.
    pub flow_control_saturation: Option<f64>,
    /// Requests held in flow control's queues, summed over every flow.
    pub flow_control_queue_size: Option<f64>,
    /// The prefix-index hit-ratio histogram's sum and count (counters).
    pub prefix_hit_sum: Option<f64>,
    pub prefix_hit_count: Option<f64>,
    /// SLO violations the predicted-latency producer counted, by objective (counters).
    pub ttft_slo_violations: Option<f64>,
    pub tpot_slo_violations: Option<f64>,
}

/// The figure each name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figure {
    Ready,
    KvUsage,
    Queue,
    Saturation,
    FlowQueue,
    PrefixSum,
    PrefixCount,
    SloViolations,
}

/// (current name, older name, figure).
const NAMES: [(&str, &str, Figure); 8] = [
    (
        "llm_d_epp_ready_endpoints",
        "inference_pool_ready_pods",
        Figure::Ready,
    ),
    (
        "llm_d_epp_average_kv_cache_utilization",
        "inference_pool_average_kv_cache_utilization",
        Figure::KvUsage,
    ),
    (
        "llm_d_epp_average_queue_size",
        "inference_pool_average_queue_size",
        Figure::Queue,
    ),
    (
        "llm_d_epp_flow_control_pool_saturation",
        "inference_extension_flow_control_pool_saturation",
        Figure::Saturation,
    ),
    (
        "llm_d_epp_flow_control_queue_size",
        "inference_extension_flow_control_queue_size",
        Figure::FlowQueue,
    ),
    (
        "llm_d_epp_prefix_indexer_hit_ratio_sum",
        "inference_extension_prefix_indexer_hit_ratio_sum",
        Figure::PrefixSum,
    ),
    (
        "llm_d_epp_prefix_indexer_hit_ratio_count",
        "inference_extension_prefix_indexer_hit_ratio_count",
        Figure::PrefixCount,
    ),
    (
        "llm_d_epp_request_slo_violation_total",
        "inference_objective_request_slo_violation_total",
        Figure::SloViolations,
    ),
];

/// The figure of a sample's name, and whether the name is the older one.
fn figure(name: &str) -> Option<(Figure, bool)> {
    NAMES.iter().find_map(|(current, older, fig)| {
        if name == *current {
            Some((*fig, false))
        } else if name == *older {
            Some((*fig, true))
        } else {
            None
        }
    })
}

/// Parses a picker's `/metrics` text. `Ok(None)`: valid text with none of a picker's
/// names (a wrong URL).
pub fn parse(body: &str) -> Result<Option<RouterSnapshot>, EngineParseError> {
    let samples = text::parse(body)?;
    // Which figures have a sample under their current name.
    let current: Vec<Figure> = samples
        .iter()
        .filter_map(|s| figure(s.name))
        .filter(|(_, older)| !older)
        .map(|(f, _)| f)
        .collect();
    let mut acc = Accumulated::default();
    let mut any = false;
    for s in &samples {
        let Some((fig, older)) = figure(s.name) else {
            continue;
        };
        any = true;
        if (older && current.contains(&fig)) || !s.value.is_finite() {
            continue;
        }
        acc.push(fig, s);
    }
    Ok(any.then(|| acc.snapshot()))
}

#[derive(Default)]
struct Accumulated {
    snap: RouterSnapshot,
    kv: Vec<f64>,
    queue: Vec<f64>,
    effective: Option<f64>,
    any_stage: Option<f64>,
}

impl Accumulated {
    fn push(&mut self, fig: Figure, s: &Sample<'_>) {
        let v = s.value;
        let snap = &mut self.snap;
        match fig {
            Figure::Ready => add(&mut snap.ready_endpoints, v),
            Figure::KvUsage => self.kv.push(v),
            Figure::Queue => self.queue.push(v),
            Figure::Saturation => {
                // Older pickers have no `stage`: their one series is the gating value.
                let slot = match s.label("stage") {
                    Some("effective") => &mut self.effective,
                    _ => &mut self.any_stage,
                };
                *slot = Some(slot.map_or(v, |m: f64| m.max(v)));
            }
            Figure::FlowQueue => add(&mut snap.flow_control_queue_size, v),
            Figure::PrefixSum => add(&mut snap.prefix_hit_sum, v),
            Figure::PrefixCount => add(&mut snap.prefix_hit_count, v),
            Figure::SloViolations => match s.label("type") {
                Some("ttft_slo_violation") => add(&mut snap.ttft_slo_violations, v),
                Some("tpot_slo_violation") => add(&mut snap.tpot_slo_violations, v),
                _ => {}
            },
        }
    }

    fn snapshot(mut self) -> RouterSnapshot {
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        self.snap.kv_cache_usage_ratio = mean(&self.kv);
        self.snap.queue_size = mean(&self.queue);
        self.snap.flow_control_saturation = self.effective.or(self.any_stage);
        self.snap
    }
}

fn add(slot: &mut Option<f64>, v: f64) {
    *slot = Some(slot.unwrap_or(0.0) + v);
}

/// What one interval between two scrapes says.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RouterInterval {
    /// The mean prefix-index hit ratio of the lookups in the interval.
    pub prefix_hit_ratio: Option<f64>,
    /// SLO violations counted in the interval (0 on the first scrape and after a
    /// picker restart, whose totals are no increase).
    pub ttft_slo_violations: Option<f64>,
    pub tpot_slo_violations: Option<f64>,
}

/// The interval from `prev` (none on the first scrape) to `cur`.
pub fn interval(prev: Option<&RouterSnapshot>, cur: &RouterSnapshot) -> RouterInterval {
    let delta = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    let prefix = prev.and_then(|p| {
        let sum = delta(p.prefix_hit_sum, cur.prefix_hit_sum)?;
        let count = delta(p.prefix_hit_count, cur.prefix_hit_count)?;
        (count > 0.0).then(|| sum / count)
    });
    let violations =
        |cur: Option<f64>, prev: Option<f64>| cur.map(|_| delta(prev, cur).unwrap_or(0.0));
    RouterInterval {
        prefix_hit_ratio: prefix,
        ttft_slo_violations: violations(
            cur.ttft_slo_violations,
            prev.and_then(|p| p.ttft_slo_violations),
        ),
        tpot_slo_violations: violations(
            cur.tpot_slo_violations,
            prev.and_then(|p| p.tpot_slo_violations),
        ),
    }
}

/// Fetches and parses a picker's `/metrics` at `url` within `timeout`.
pub async fn scrape(
    http: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<RouterSnapshot, ScrapeError> {
    let fetch = async {
        let body = super::get_bounded(
            http,
            url,
            "text/plain;version=0.0.4",
            super::MAX_BODY_BYTES,
            "router metrics",
        )
        .await?;
        let format = |e: anyhow::Error| ScrapeError::new(ScrapeFailure::Format, e);
        let text = String::from_utf8(body)
            .context("router metrics body is not UTF-8")
            .map_err(format)?;
        parse(&text).map_err(|e| format(e.into()))?.ok_or_else(|| {
            format(anyhow::anyhow!(
                "no endpoint-picker metrics (llm_d_epp_*, inference_pool_*, \
                 inference_extension_*) found at the router metrics URL"
            ))
        })
    };
    tokio::time::timeout(timeout, fetch).await.map_err(|_| {
        ScrapeError::new(
            ScrapeFailure::Timeout,
            anyhow::anyhow!("router metrics scrape timed out after {timeout:?}"),
        )
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A picker's page as `pkg/epp/metrics/llm_d_router_metrics.go` and the plugins'
    /// metric definitions shape it (their names, types and labels), two pools.
    const CURRENT: &str = "\
# HELP llm_d_epp_ready_endpoints [ALPHA] The number of ready endpoints in the inference server pool.
# TYPE llm_d_epp_ready_endpoints gauge
llm_d_epp_ready_endpoints{name=\"pool-a\"} 3
llm_d_epp_ready_endpoints{name=\"pool-b\"} 1
# TYPE llm_d_epp_average_kv_cache_utilization gauge
llm_d_epp_average_kv_cache_utilization{name=\"pool-a\"} 0.5
llm_d_epp_average_kv_cache_utilization{name=\"pool-b\"} 0.25
# TYPE llm_d_epp_average_queue_size gauge
llm_d_epp_average_queue_size{name=\"pool-a\"} 2
llm_d_epp_average_queue_size{name=\"pool-b\"} 0
# TYPE llm_d_epp_flow_control_pool_saturation gauge
llm_d_epp_flow_control_pool_saturation{inference_pool=\"pool-a\",stage=\"prefill\"} 0.4
llm_d_epp_flow_control_pool_saturation{inference_pool=\"pool-a\",stage=\"decode\"} 0.9
llm_d_epp_flow_control_pool_saturation{inference_pool=\"pool-a\",stage=\"effective\"} 0.9
llm_d_epp_flow_control_pool_saturation{inference_pool=\"pool-b\",stage=\"effective\"} 1.2
# TYPE llm_d_epp_flow_control_queue_size gauge
llm_d_epp_flow_control_queue_size{fairness_id=\"a\",priority=\"0\",inference_pool=\"pool-a\",model_name=\"m\",target_model_name=\"m\"} 4
llm_d_epp_flow_control_queue_size{fairness_id=\"b\",priority=\"1\",inference_pool=\"pool-a\",model_name=\"m\",target_model_name=\"m\"} 1
# TYPE llm_d_epp_prefix_indexer_hit_ratio histogram
llm_d_epp_prefix_indexer_hit_ratio_bucket{plugin_name=\"p\",plugin_type=\"approx-prefix-cache-producer\",le=\"0.5\"} 4
llm_d_epp_prefix_indexer_hit_ratio_bucket{plugin_name=\"p\",plugin_type=\"approx-prefix-cache-producer\",le=\"+Inf\"} 6
llm_d_epp_prefix_indexer_hit_ratio_sum{plugin_name=\"p\",plugin_type=\"approx-prefix-cache-producer\"} 2.7
llm_d_epp_prefix_indexer_hit_ratio_count{plugin_name=\"p\",plugin_type=\"approx-prefix-cache-producer\"} 6
# TYPE llm_d_epp_request_slo_violation_total counter
llm_d_epp_request_slo_violation_total{plugin_name=\"p\",plugin_type=\"predicted-latency-producer\",model_name=\"m\",target_model_name=\"m\",type=\"ttft_slo_violation\"} 5
llm_d_epp_request_slo_violation_total{plugin_name=\"p\",plugin_type=\"predicted-latency-producer\",model_name=\"m\",target_model_name=\"m\",type=\"tpot_slo_violation\"} 2
";

    /// The same picker's deprecated twins (`pkg/epp/metrics/metrics.go`), with other
    /// values: while the current names are there, these must not count.
    const OLDER: &str = "\
# TYPE inference_pool_ready_pods gauge
inference_pool_ready_pods{name=\"pool-a\"} 30
# TYPE inference_pool_average_kv_cache_utilization gauge
inference_pool_average_kv_cache_utilization{name=\"pool-a\"} 0.9
# TYPE inference_pool_average_queue_size gauge
inference_pool_average_queue_size{name=\"pool-a\"} 7
# TYPE inference_extension_flow_control_pool_saturation gauge
inference_extension_flow_control_pool_saturation{inference_pool=\"pool-a\",stage=\"effective\"} 0.3
# TYPE inference_extension_flow_control_queue_size gauge
inference_extension_flow_control_queue_size{fairness_id=\"a\",priority=\"0\",inference_pool=\"pool-a\",model_name=\"m\",target_model_name=\"m\"} 9
# TYPE inference_extension_prefix_indexer_hit_ratio histogram
inference_extension_prefix_indexer_hit_ratio_sum 1
inference_extension_prefix_indexer_hit_ratio_count 10
# TYPE inference_objective_request_slo_violation_total counter
inference_objective_request_slo_violation_total{model_name=\"m\",target_model_name=\"m\",type=\"ttft_slo_violation\"} 50
";

    #[test]
    fn a_pickers_page_gives_the_pool_figures() {
        let s = parse(CURRENT).unwrap().unwrap();
        assert_eq!(s.ready_endpoints, Some(4.0));
        assert_eq!(s.kv_cache_usage_ratio, Some(0.375));
        assert_eq!(s.queue_size, Some(1.0));
        // The effective stage gates dispatch; the most saturated pool shows.
        assert_eq!(s.flow_control_saturation, Some(1.2));
        assert_eq!(s.flow_control_queue_size, Some(5.0));
        assert_eq!(
            (s.prefix_hit_sum, s.prefix_hit_count),
            (Some(2.7), Some(6.0))
        );
        assert_eq!(s.ttft_slo_violations, Some(5.0));
        assert_eq!(s.tpot_slo_violations, Some(2.0));
    }

    #[test]
    fn older_names_count_only_without_the_current_ones() {
        let both = format!("{CURRENT}{OLDER}");
        assert_eq!(parse(&both).unwrap(), parse(CURRENT).unwrap());
        let s = parse(OLDER).unwrap().unwrap();
        assert_eq!(s.ready_endpoints, Some(30.0));
        assert_eq!(s.kv_cache_usage_ratio, Some(0.9));
        assert_eq!(s.queue_size, Some(7.0));
        assert_eq!(s.flow_control_saturation, Some(0.3));
        assert_eq!(s.flow_control_queue_size, Some(9.0));
        assert_eq!(
            (s.prefix_hit_sum, s.prefix_hit_count),
            (Some(1.0), Some(10.0))
        );
        assert_eq!(s.ttft_slo_violations, Some(50.0));
        assert_eq!(s.tpot_slo_violations, None);
    }

    #[test]
    fn a_saturation_without_stages_is_the_gating_value() {
        let s = parse("inference_extension_flow_control_pool_saturation 0.7\n")
            .unwrap()
            .unwrap();
        assert_eq!(s.flow_control_saturation, Some(0.7));
    }

    #[test]
    fn a_page_without_picker_names_is_none_and_bad_text_an_error() {
        assert_eq!(parse("vllm:num_requests_running 1\n").unwrap(), None);
        assert!(parse("llm_d_epp_ready_endpoints{name=\"a\" 1\n").is_err());
    }

    #[test]
    fn intervals_take_counter_deltas_and_survive_a_restart() {
        let prev = parse(CURRENT).unwrap().unwrap();
        let first = interval(None, &prev);
        assert_eq!(first.prefix_hit_ratio, None);
        assert_eq!(first.ttft_slo_violations, Some(0.0));
        let cur = RouterSnapshot {
            prefix_hit_sum: Some(4.2),
            prefix_hit_count: Some(8.0),
            ttft_slo_violations: Some(8.0),
            tpot_slo_violations: Some(1.0),
            ..prev.clone()
        };
        let i = interval(Some(&prev), &cur);
        assert!((i.prefix_hit_ratio.unwrap() - 0.75).abs() < 1e-9);
        assert_eq!(i.ttft_slo_violations, Some(3.0));
        // The TPOT total went down: the picker restarted, no increase is known.
        assert_eq!(i.tpot_slo_violations, Some(0.0));
        let idle = interval(Some(&prev), &prev);
        assert_eq!(idle.prefix_hit_ratio, None);
    }
}
