//! Every figure of a rate's report by one name, as `--json-out` spells it:
//! `achieved_rate`, `goodput_ratio`, `ttft_ms.p99`, `e2el_ms.mean`,
//! `dispatch_lag_ms.p99`, …. Repeat runs average and bound them by these names
//! (`ci95`), `report compare` matches two files by them, and `--gate-on ci` looks a
//! gate's figure up by them. Which way is better is said here too.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::latency::Latency;
use crate::report::{LagStats, LatencyStats, RateReport, TurnReport, TurnsReport, percentile_key};

/// Which way a figure improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// An input or the client's own figure (offered rate, dispatch lag): a change is no
    /// regression of the server.
    Neither,
}

/// The scalar figures at the top level of a report.
const SCALARS: [&str; 6] = [
    "offered_rate",
    "achieved_rate",
    "output_throughput",
    "total_token_throughput",
    "goodput",
    "goodput_ratio",
];

/// The latency distributions, by their JSON key: every latency but dispatch lag, which
/// reports keep as p50/p99/max only.
fn latency_keys() -> impl Iterator<Item = &'static str> {
    Latency::ALL
        .into_iter()
        .filter(|l| !l.covers_failures())
        .map(Latency::report_key)
}

/// The energy figures of a report (`energy.NAME`).
const ENERGY: [&str; 3] = [
    "mean_power_watts",
    "energy_per_output_token_joules",
    "output_tokens_per_joule",
];

/// Which way `key` improves.
pub fn better(key: &str) -> Better {
    if key == "offered_rate"
        || key.contains("dispatch_lag_ms")
        || key.ends_with("prompt_tokens_mean")
        || key == "energy.mean_power_watts"
    {
        Better::Neither
    } else if key.contains("_ms.") || key == "energy.energy_per_output_token_joules" {
        Better::Lower
    } else {
        Better::Higher
    }
}

/// The name of a latency metric's statistic: `ttft_ms.p99`, `e2el_ms.mean`.
pub fn latency_key(m: Latency, stat: Option<f64>) -> String {
    let base = m.report_key();
    match stat {
        None => format!("{base}.mean"),
        Some(p) => format!("{base}.{}", percentile_key(p)),
    }
}

/// The latency distributions of a report; TTFA only when some request reasoned.
fn latencies_mut(r: &mut RateReport) -> Vec<(&'static str, &mut LatencyStats)> {
    r.latencies_mut()
        .map(|(l, s)| (l.report_key(), s))
        .collect()
}

/// Calls `f` with the name and value of every figure the report has (a figure with no
/// sample, such as the TTFT of a run where nothing succeeded, is not visited); `f` may
/// change the value.
pub fn visit_mut(r: &mut RateReport, f: &mut dyn FnMut(&str, &mut f64)) {
    let mut opt = |key: &str, v: &mut Option<f64>| {
        if let Some(x) = v.as_mut() {
            f(key, x);
        }
    };
    opt("offered_rate", &mut r.offered_rate);
    let mut achieved = Some(r.achieved_rate);
    opt("achieved_rate", &mut achieved);
    let mut out = Some(r.output_throughput);
    opt("output_throughput", &mut out);
    let mut total = Some(r.total_token_throughput);
    opt("total_token_throughput", &mut total);
    let mut goodput = Some(r.goodput);
    opt("goodput", &mut goodput);
    opt("goodput_ratio", &mut r.goodput_ratio);
    visit_lag("dispatch_lag_ms", &mut r.dispatch_lag_ms, &mut opt);
    (r.achieved_rate, r.output_throughput) = (achieved.unwrap_or(0.0), out.unwrap_or(0.0));
    (r.total_token_throughput, r.goodput) = (total.unwrap_or(0.0), goodput.unwrap_or(0.0));
    for (name, stats) in latencies_mut(r) {
        visit_stats(name, stats, &mut opt);
    }
    opt("cache_hit_share", &mut r.cache_hit_share);
    if let Some(e) = r.energy.as_mut() {
        opt("energy.mean_power_watts", &mut e.mean_power_watts);
        opt(
            "energy.energy_per_output_token_joules",
            &mut e.energy_per_output_token_joules,
        );
        opt(
            "energy.output_tokens_per_joule",
            &mut e.output_tokens_per_joule,
        );
    }
    if let Some(t) = r.turns.as_mut() {
        for (name, turn) in turns_mut(t) {
            visit_stats(&format!("{name}.ttft_ms"), &mut turn.ttft_ms, &mut opt);
            visit_lag(
                &format!("{name}.dispatch_lag_ms"),
                &mut turn.dispatch_lag_ms,
                &mut opt,
            );
            opt(
                &format!("{name}.prompt_tokens_mean"),
                &mut turn.prompt_tokens_mean,
            );
            opt(
                &format!("{name}.cache_hit_share"),
                &mut turn.cache_hit_share,
            );
        }
    }
}

/// A dispatch lag's p50, p99 and max, named `NAME.p50`, ….
fn visit_lag(name: &str, lag: &mut LagStats, opt: &mut dyn FnMut(&str, &mut Option<f64>)) {
    opt(&format!("{name}.p50"), &mut lag.p50);
    opt(&format!("{name}.p99"), &mut lag.p99);
    opt(&format!("{name}.max"), &mut lag.max);
}

/// The mean and percentiles of one latency, named `NAME.mean`, `NAME.p99`, ….
fn visit_stats(name: &str, stats: &mut LatencyStats, opt: &mut dyn FnMut(&str, &mut Option<f64>)) {
    opt(&format!("{name}.mean"), &mut stats.mean);
    for (p, v) in &mut stats.percentiles {
        opt(&format!("{name}.{}", percentile_key(*p)), v);
    }
}

/// A multi-turn report's turns by figure prefix: `turns.first`, `turns.later`,
/// `turns.by_turn.2`.
fn turns_mut(t: &mut TurnsReport) -> Vec<(String, &mut TurnReport)> {
    let mut out = vec![
        ("turns.first".to_string(), &mut t.first),
        ("turns.later".to_string(), &mut t.later),
    ];
    for turn in &mut t.by_turn {
        let name = format!("turns.by_turn.{}", turn.turn.unwrap_or(0));
        out.push((name, turn));
    }
    out
}

/// Every figure of a report, by name.
pub fn of_report(r: &RateReport) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    visit_mut(&mut r.clone(), &mut |k, v| {
        out.insert(k.to_string(), *v);
    });
    out
}

/// Every figure of a `--json-out` line, by the same names (lines from any version: a
/// key that is missing or not a number is left out).
pub fn of_json(line: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for k in SCALARS {
        if let Some(v) = line.get(k).and_then(Value::as_f64) {
            out.insert(k.to_string(), v);
        }
    }
    json_lag(&mut out, "dispatch_lag_ms", &line["dispatch_lag_ms"]);
    for name in latency_keys() {
        json_stats(&mut out, name, line.get(name));
    }
    if let Some(v) = line.get("cache_hit_share").and_then(Value::as_f64) {
        out.insert("cache_hit_share".into(), v);
    }
    for k in ENERGY {
        if let Some(v) = line["energy"].get(k).and_then(Value::as_f64) {
            out.insert(format!("energy.{k}"), v);
        }
    }
    let turns = &line["turns"];
    let by_turn = turns["by_turn"].as_array().into_iter().flatten();
    let named = [("first", &turns["first"]), ("later", &turns["later"])]
        .into_iter()
        .map(|(n, t)| (format!("turns.{n}"), t))
        .chain(by_turn.map(|t| (format!("turns.by_turn.{}", t["turn"]), t)));
    for (name, t) in named {
        json_stats(&mut out, &format!("{name}.ttft_ms"), t.get("ttft_ms"));
        json_lag(
            &mut out,
            &format!("{name}.dispatch_lag_ms"),
            &t["dispatch_lag_ms"],
        );
        for k in ["prompt_tokens_mean", "cache_hit_share"] {
            if let Some(v) = t.get(k).and_then(Value::as_f64) {
                out.insert(format!("{name}.{k}"), v);
            }
        }
    }
    out
}

/// A JSON dispatch lag's p50, p99 and max, as `NAME.p50`, ….
fn json_lag(out: &mut BTreeMap<String, f64>, name: &str, lag: &Value) {
    for k in ["p50", "p99", "max"] {
        if let Some(v) = lag.get(k).and_then(Value::as_f64) {
            out.insert(format!("{name}.{k}"), v);
        }
    }
}

/// The mean and percentiles of a JSON latency object, as `NAME.mean`, `NAME.p99`, ….
fn json_stats(out: &mut BTreeMap<String, f64>, name: &str, stats: Option<&Value>) {
    let Some(Value::Object(stats)) = stats else {
        return;
    };
    for (k, v) in stats {
        let is_stat = k == "mean" || (k.starts_with('p') && k[1..].parse::<f64>().is_ok());
        if let (true, Some(v)) = (is_stat, v.as_f64()) {
            out.insert(format!("{name}.{k}"), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::sample_report;

    #[test]
    fn report_and_its_json_name_the_same_figures() {
        let r = sample_report(8.0);
        let typed = of_report(&r);
        let json = of_json(&serde_json::to_value(&r).unwrap());
        assert_eq!(typed, json);
        assert_eq!(typed["ttft_ms.p99"], 120.0);
        assert_eq!(typed["goodput_ratio"], 0.9);
        assert!(typed.contains_key("dispatch_lag_ms.p99"));
        assert!(typed.contains_key("e2el_from_sched_ms.mean"));
        assert!(!typed.contains_key("ttfa_ms.mean"));
        // A run where requests reasoned has TTFA figures too.
        let mut r = sample_report(8.0);
        r.ttfa_ms = Some(crate::report::test_support::stats(300.0));
        let typed = of_report(&r);
        assert_eq!(typed, of_json(&serde_json::to_value(&r).unwrap()));
        assert_eq!(typed["ttfa_ms.mean"], 300.0);
        // A multi-turn run's per-turn figures, and the cache-hit share.
        let turn = |n: Option<u32>, base: f64| crate::report::TurnReport {
            turn: n,
            requests: 10,
            completed: 10,
            ttft_ms: crate::report::test_support::stats(base),
            dispatch_lag_ms: LagStats {
                p50: Some(base / 100.0),
                p99: Some(base / 50.0),
                max: Some(base / 25.0),
            },
            prompt_tokens_mean: Some(base * 2.0),
            cache_hit_share: Some(0.5),
        };
        r.cache_hit_share = Some(0.4);
        r.turns = Some(crate::report::TurnsReport {
            first: turn(Some(1), 100.0),
            later: turn(None, 50.0),
            by_turn: vec![turn(Some(1), 100.0), turn(Some(2), 50.0)],
        });
        let typed = of_report(&r);
        assert_eq!(typed, of_json(&serde_json::to_value(&r).unwrap()));
        assert_eq!(typed["turns.later.ttft_ms.p99"], 60.0);
        assert_eq!(typed["turns.by_turn.2.prompt_tokens_mean"], 100.0);
        assert_eq!(typed["turns.first.cache_hit_share"], 0.5);
        assert_eq!(typed["turns.first.dispatch_lag_ms.p99"], 2.0);
        assert_eq!(better("turns.first.dispatch_lag_ms.max"), Better::Neither);
        assert_eq!(typed["cache_hit_share"], 0.4);
        r.energy = Some(crate::report::EnergyReport {
            gpus: 2,
            duration_s: 10.0,
            energy_joules: 2000.0,
            output_tokens: 4000,
            mean_power_watts: Some(200.0),
            energy_per_output_token_joules: Some(0.5),
            output_tokens_per_joule: Some(2.0),
        });
        let typed = of_report(&r);
        assert_eq!(typed, of_json(&serde_json::to_value(&r).unwrap()));
        assert_eq!(typed["energy.energy_per_output_token_joules"], 0.5);
        assert_eq!(
            better("energy.energy_per_output_token_joules"),
            Better::Lower
        );
        assert_eq!(better("energy.output_tokens_per_joule"), Better::Higher);
        assert_eq!(better("energy.mean_power_watts"), Better::Neither);
        assert_eq!(better("turns.later.ttft_ms.p99"), Better::Lower);
        assert_eq!(better("turns.later.cache_hit_share"), Better::Higher);
        assert_eq!(
            better("turns.by_turn.2.prompt_tokens_mean"),
            Better::Neither
        );
    }

    #[test]
    fn visiting_changes_every_figure() {
        let mut r = sample_report(8.0);
        let before = of_report(&r);
        visit_mut(&mut r, &mut |_, v| *v *= 2.0);
        let after = of_report(&r);
        assert_eq!(before.len(), after.len());
        for (k, v) in &before {
            assert_eq!(after[k], v * 2.0, "{k}");
        }
        assert_eq!(r.achieved_rate, before["achieved_rate"] * 2.0);
    }

    #[test]
    fn directions() {
        assert_eq!(better("ttft_ms.p99"), Better::Lower);
        assert_eq!(better("output_throughput"), Better::Higher);
        assert_eq!(better("goodput_ratio"), Better::Higher);
        assert_eq!(better("dispatch_lag_ms.p99"), Better::Neither);
        assert_eq!(better("offered_rate"), Better::Neither);
        assert_eq!(latency_key(Latency::E2e, Some(99.9)), "e2el_ms.p99.9");
        assert_eq!(latency_key(Latency::Ttft, None), "ttft_ms.mean");
    }
}
