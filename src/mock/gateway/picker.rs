//! What the mock gateway's stand-in endpoint picker knows and serves at `/metrics`, in
//! the names and labels of llm-d's router (`pkg/epp/metrics/llm_d_router_metrics.go`,
//! and its plugins' `prefix_indexer_hit_ratio` and `request_slo_violation_total`):
//! ready endpoints and the pool's mean KV-cache use and queue, read from the upstream
//! engines' own `/metrics` at each scrape; flow control's saturation (the fullest
//! upstream's KV cache) and queue (always empty: the mock holds no queue); a prefix
//! "hit" for each request whose routing key it has routed before; a TTFT violation for
//! each request whose first body bytes came later than its `x-llm-d-slo-ttft-ms`.

use std::collections::HashSet;
use std::fmt::Write;
use std::sync::Mutex;

/// The pool name in the picker's labels.
pub const POOL: &str = "mock-pool";
/// Routing keys remembered for prefix hits; past it the set starts over.
const MAX_KEYS: usize = 65_536;

/// The picker's counters.
#[derive(Debug, Default)]
pub struct PickerState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    keys: HashSet<Vec<u8>>,
    /// Prefix lookups: (hits, lookups), each request one lookup.
    hits: u64,
    lookups: u64,
    ttft_violations: u64,
}

/// One upstream engine's load as its `/metrics` says (`None`: it did not answer).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UpstreamLoad {
    pub kv_usage: f64,
    pub waiting: f64,
}

impl PickerState {
    /// Notes one routed request's lookup: a hit when its key was routed before.
    pub fn lookup(&self, key: Option<&[u8]>) {
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        s.lookups += 1;
        if let Some(k) = key {
            if s.keys.contains(k) {
                s.hits += 1;
            } else {
                if s.keys.len() >= MAX_KEYS {
                    s.keys.clear();
                }
                s.keys.insert(k.to_vec());
            }
        }
    }

    pub fn ttft_violation(&self) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ttft_violations += 1;
    }

    /// The `/metrics` page, given each upstream's load (`None`: not ready).
    pub fn render(&self, model: &str, loads: &[Option<UpstreamLoad>]) -> String {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let ready: Vec<UpstreamLoad> = loads.iter().flatten().copied().collect();
        let mean = |f: fn(&UpstreamLoad) -> f64| {
            if ready.is_empty() {
                0.0
            } else {
                ready.iter().map(f).sum::<f64>() / ready.len() as f64
            }
        };
        // An empty pool reads as saturated, as the router's detector does.
        let saturation = if ready.is_empty() {
            1.0
        } else {
            ready.iter().map(|l| l.kv_usage).fold(0.0, f64::max)
        };
        let pool = format!("name=\"{POOL}\"");
        let flow = format!(
            "fairness_id=\"default-flow\",priority=\"0\",inference_pool=\"{POOL}\",\
             model_name=\"{model}\",target_model_name=\"{model}\""
        );
        let plugin = "plugin_name=\"mock\"";
        let mut out = String::new();
        let mut gauge = |name: &str, labels: &str, v: f64| {
            let _ = writeln!(out, "# TYPE {name} gauge\n{name}{{{labels}}} {v}");
        };
        gauge("llm_d_epp_ready_endpoints", &pool, ready.len() as f64);
        gauge(
            "llm_d_epp_average_kv_cache_utilization",
            &pool,
            mean(|l| l.kv_usage),
        );
        gauge("llm_d_epp_average_queue_size", &pool, mean(|l| l.waiting));
        gauge(
            "llm_d_epp_flow_control_pool_saturation",
            &format!("inference_pool=\"{POOL}\",stage=\"effective\""),
            saturation,
        );
        gauge("llm_d_epp_flow_control_queue_size", &flow, 0.0);
        let prefix = "llm_d_epp_prefix_indexer_hit_ratio";
        let labels = format!("{plugin},plugin_type=\"approx-prefix-cache-producer\"");
        let _ = writeln!(out, "# TYPE {prefix} histogram");
        let misses = s.lookups - s.hits;
        for (le, n) in [("0", misses), ("1", s.lookups), ("+Inf", s.lookups)] {
            let _ = writeln!(out, "{prefix}_bucket{{{labels},le=\"{le}\"}} {n}");
        }
        let _ = writeln!(out, "{prefix}_sum{{{labels}}} {}", s.hits);
        let _ = writeln!(out, "{prefix}_count{{{labels}}} {}", s.lookups);
        let slo = "llm_d_epp_request_slo_violation_total";
        let _ = writeln!(out, "# TYPE {slo} counter");
        for (kind, n) in [
            ("ttft_slo_violation", s.ttft_violations),
            ("tpot_slo_violation", 0),
        ] {
            let _ = writeln!(
                out,
                "{slo}{{{plugin},plugin_type=\"predicted-latency-producer\",\
                 model_name=\"{model}\",target_model_name=\"{model}\",type=\"{kind}\"}} {n}"
            );
        }
        out
    }
}

/// An engine's load from its vLLM-format `/metrics` text: `vllm:kv_cache_usage_perc`
/// and `vllm:num_requests_waiting` (summed over their series). Read line by line here,
/// not with the prober's own parser, which this mock exists to test.
pub fn upstream_load(text: &str) -> Option<UpstreamLoad> {
    let mut load = UpstreamLoad::default();
    let mut any = false;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap_or("");
        let value = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
        match (name, value) {
            ("vllm:kv_cache_usage_perc", Some(v)) => {
                load.kv_usage += v;
                any = true;
            }
            ("vllm:num_requests_waiting", Some(v)) => {
                load.waiting += v;
                any = true;
            }
            _ => {}
        }
    }
    any.then_some(load)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_seen_before_are_hits_and_the_page_counts_them() {
        let p = PickerState::default();
        p.lookup(Some(b"a"));
        p.lookup(Some(b"a"));
        p.lookup(None);
        p.ttft_violation();
        let page = p.render(
            "m",
            &[
                Some(UpstreamLoad {
                    kv_usage: 0.2,
                    waiting: 1.0,
                }),
                Some(UpstreamLoad {
                    kv_usage: 0.6,
                    waiting: 0.0,
                }),
                None,
            ],
        );
        for line in [
            "llm_d_epp_ready_endpoints{name=\"mock-pool\"} 2",
            "llm_d_epp_average_kv_cache_utilization{name=\"mock-pool\"} 0.4",
            "llm_d_epp_average_queue_size{name=\"mock-pool\"} 0.5",
            "llm_d_epp_flow_control_pool_saturation{inference_pool=\"mock-pool\",stage=\"effective\"} 0.6",
            "llm_d_epp_prefix_indexer_hit_ratio_sum{plugin_name=\"mock\",plugin_type=\"approx-prefix-cache-producer\"} 1",
            "llm_d_epp_prefix_indexer_hit_ratio_count{plugin_name=\"mock\",plugin_type=\"approx-prefix-cache-producer\"} 3",
        ] {
            assert!(page.lines().any(|l| l == line), "{line} in\n{page}");
        }
        assert!(page.contains("type=\"ttft_slo_violation\"} 1"), "{page}");
        assert!(page.contains("type=\"tpot_slo_violation\"} 0"), "{page}");
    }

    #[test]
    fn an_engines_load_is_read_from_its_page() {
        let page = "# HELP x\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\nvllm:num_requests_waiting{model_name=\"m\"} 3\n";
        assert_eq!(
            upstream_load(page),
            Some(UpstreamLoad {
                kv_usage: 0.25,
                waiting: 3.0
            })
        );
        assert_eq!(upstream_load("other 1\n"), None);
    }
}
