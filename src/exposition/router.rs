//! The endpoint picker's series of a target (`llmprobe_router_*`): what one scrape of
//! its `/metrics` says, set or removed family by family. Names in `families`.

use prometheus::{CounterVec, GaugeVec};

use super::families as f;
use super::registry::{Registered, set_or_remove};

/// What one picker scrape publishes. `None` removes the series (the picker did not
/// export it).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RouterGauges {
    pub ready_endpoints: Option<f64>,
    pub kv_cache_usage_ratio: Option<f64>,
    pub queue_size: Option<f64>,
    pub flow_control_saturation: Option<f64>,
    pub flow_control_queue_size: Option<f64>,
    pub prefix_hit_ratio: Option<f64>,
    /// SLO violations since the previous scrape, added to the counters.
    pub ttft_slo_violations: Option<f64>,
    pub tpot_slo_violations: Option<f64>,
}

/// The picker families' vectors.
pub struct RouterVecs {
    success: GaugeVec,
    ready: GaugeVec,
    kv_usage: GaugeVec,
    queue: GaugeVec,
    saturation: GaugeVec,
    flow_queue: GaugeVec,
    prefix_hit: GaugeVec,
    slo_violations: CounterVec,
}

impl RouterVecs {
    pub fn new(r: &Registered) -> prometheus::Result<Self> {
        Ok(RouterVecs {
            success: r.gauge_vec(&f::ROUTER_SUCCESS)?,
            ready: r.gauge_vec(&f::ROUTER_READY)?,
            kv_usage: r.gauge_vec(&f::ROUTER_KV_USAGE)?,
            queue: r.gauge_vec(&f::ROUTER_QUEUE)?,
            saturation: r.gauge_vec(&f::ROUTER_SATURATION)?,
            flow_queue: r.gauge_vec(&f::ROUTER_FLOW_QUEUE)?,
            prefix_hit: r.gauge_vec(&f::ROUTER_PREFIX_HIT)?,
            slo_violations: r.counter_vec(&f::ROUTER_SLO_VIOLATIONS)?,
        })
    }

    /// Publishes one scrape of `target`'s picker. On failure only the success gauge is
    /// set; the others are removed, so stale numbers never look live (the counters
    /// keep their totals).
    pub fn set(&self, target: &str, model: &str, success: bool, g: &RouterGauges) {
        let l = [target, model];
        self.success
            .with_label_values(&l)
            .set(if success { 1.0 } else { 0.0 });
        set_or_remove(&self.ready, &l, g.ready_endpoints);
        set_or_remove(&self.kv_usage, &l, g.kv_cache_usage_ratio);
        set_or_remove(&self.queue, &l, g.queue_size);
        set_or_remove(&self.saturation, &l, g.flow_control_saturation);
        set_or_remove(&self.flow_queue, &l, g.flow_control_queue_size);
        set_or_remove(&self.prefix_hit, &l, g.prefix_hit_ratio);
        for (sli, delta) in [
            ("ttft", g.ttft_slo_violations),
            ("tpot", g.tpot_slo_violations),
        ] {
            // A counter only grows: negative or non-finite deltas never reach it.
            if let Some(d) = delta.filter(|d| d.is_finite() && *d >= 0.0) {
                self.slo_violations
                    .with_label_values(&[target, model, sli])
                    .inc_by(d);
            }
        }
    }
}
