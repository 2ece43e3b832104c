//! The fleet figures of one scrape round, as pure arithmetic over the replicas whose
//! engine answered in that round: each sum is exactly the sum of the replicas' own
//! gauges published from the same round.

use crate::config::TargetPlan;
use crate::exposition::{FleetGauges, ReplicaEngineGauges};

/// What one replica's scrape contributes: the gauges published for it. Its
/// `max_concurrent_sequences` is the figure its headroom used (live, else the capacity
/// model's), so the fleet's sum and headroom use the same one.
pub type ReplicaLoad = ReplicaEngineGauges;

/// The fleet of `replicas` discovered replicas, of which `scraped` answered this round.
pub fn fleet_gauges(plan: &TargetPlan, replicas: usize, scraped: &[ReplicaLoad]) -> FleetGauges {
    let sum = |f: fn(&ReplicaLoad) -> Option<f64>| -> Option<f64> {
        let values: Vec<f64> = scraped.iter().filter_map(f).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    };
    let running = sum(|r| r.running);
    let waiting = sum(|r| r.waiting);
    let gen_tps = sum(|r| r.generation_tokens_per_second);
    let kv: Vec<f64> = scraped
        .iter()
        .filter_map(|r| r.kv_cache_usage_ratio)
        .collect();
    let queueing = scraped
        .iter()
        .filter(|r| r.waiting.is_some_and(|w| w > 0.0))
        .count();
    FleetGauges {
        replicas,
        scraped: scraped.len(),
        running,
        waiting,
        max_concurrent_sequences: sum(|r| r.max_concurrent_sequences),
        kv_cache_usage_ratio: (!kv.is_empty()).then(|| kv.iter().sum::<f64>() / kv.len() as f64),
        queueing,
        headroom: fleet_headroom(scraped, queueing),
        generation_tokens_per_second: gen_tps,
        cost_per_million_output_tokens: fleet_cost(plan, scraped.len(), gen_tps),
    }
}

/// 0 as soon as one replica queues (a router may still send it work); else the smaller
/// of the free sequence share of the sums and the free KV share of the mean. A replica
/// that says neither leaves the figure out rather than guessed.
fn fleet_headroom(scraped: &[ReplicaLoad], queueing: usize) -> Option<f64> {
    if scraped.is_empty() {
        return None;
    }
    if queueing > 0 {
        return Some(0.0);
    }
    let seqs = if scraped
        .iter()
        .all(|r| r.running.is_some() && r.max_concurrent_sequences.is_some_and(|m| m > 0.0))
    {
        let running: f64 = scraped.iter().filter_map(|r| r.running).sum();
        let max: f64 = scraped
            .iter()
            .filter_map(|r| r.max_concurrent_sequences)
            .sum();
        Some(1.0 - running / max)
    } else {
        None
    };
    let kv = if scraped.iter().all(|r| r.kv_cache_usage_ratio.is_some()) {
        let total: f64 = scraped.iter().filter_map(|r| r.kv_cache_usage_ratio).sum();
        Some(1.0 - total / scraped.len() as f64)
    } else {
        None
    };
    let free = match (seqs, kv) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    free.map(|f| f.clamp(0.0, 1.0))
}

/// The cost rule of one engine (docs/capacity.md) over the fleet: every scraped
/// replica's GPUs at `gpu_hourly` over their summed generation rate.
fn fleet_cost(plan: &TargetPlan, scraped: usize, gen_tps: Option<f64>) -> Option<f64> {
    let c = plan.capacity.as_ref()?;
    let hourly = c.gpu_hourly?;
    let tps = gen_tps.filter(|v| *v > 0.0)?;
    Some(hourly * f64::from(c.gpus_per_replica) * scraped as f64 / 3600.0 / tps * 1e6)
}
