//! The replica table of a target on `/` and `/target/NAME`: one row per discovered
//! replica behind the front door, worst first, with its state, last probe, TTFT
//! percentiles over a stated window, probe counts and its engine's last scrape.

use std::fmt::Write as _;

use super::history::span;
use super::html::{Column, covered_note, escape, header_cells, outcome, pair, percent, row, whole};
use super::replica_status::{
    ReplicaEngine, ReplicaState, ReplicaStatus, ReplicaView, TTFT_SAMPLES, TTFT_WINDOW_SECONDS,
    worst_first,
};

pub const REPLICA_COLUMNS: &[Column<ReplicaView>] = &[
    Column {
        head: "replica",
        title: "host:port, as discovered",
        cell: |v| escape(&v.status.replica),
    },
    Column {
        head: "state",
        title: "failing (last probe failed), engine down (last scrape failed), \
                no probe yet, or ok",
        cell: state_cell,
    },
    Column {
        head: "last probe",
        title: "how long ago the last probe finished, its outcome and error",
        cell: last_probe_cell,
    },
    Column {
        head: "TTFT p50 / p99",
        title: "time to first token over the replica's last 15 minutes, at most 256 \
                probes; the note says how many probes over how long",
        cell: ttft_cell,
    },
    Column {
        head: "probes",
        title: "probes of this replica since it was discovered, and the failed ones",
        cell: |v| {
            let s = &v.status;
            if s.failures == 0 {
                s.probes.to_string()
            } else {
                format!(
                    "{} <span class=\"bad\">({} failed)</span>",
                    s.probes, s.failures
                )
            }
        },
    },
    Column {
        head: "running",
        title: "requests the engine is running, last scrape",
        cell: |v| engine_figure(v, |e| whole(e.running)),
    },
    Column {
        head: "waiting",
        title: "requests waiting in the engine's queue, last scrape",
        cell: |v| {
            let text = engine_figure(v, |e| whole(e.waiting));
            if v.status.queueing() {
                format!("<span class=\"warn\">{text}</span>")
            } else {
                text
            }
        },
    },
    Column {
        head: "KV cache",
        title: "KV cache use, last scrape",
        cell: |v| engine_figure(v, |e| percent(e.kv_cache_usage_ratio)),
    },
    Column {
        head: "headroom",
        title: "share of the engine's concurrent sequences still free, last scrape",
        cell: |v| engine_figure(v, |e| percent(e.headroom)),
    },
];

/// Appends the replica table of one target (nothing when it has no replicas), worst
/// first as of `now`.
pub fn replica_table(out: &mut String, replicas: Vec<ReplicaStatus>, now: f64) {
    if replicas.is_empty() {
        return;
    }
    let mut views: Vec<ReplicaView> = replicas.into_iter().map(|r| r.view(now)).collect();
    views.sort_by(worst_first);
    let _ = write!(
        out,
        "<h3>Replicas <small>{} behind the front door, worst first; TTFT over each \
         replica's last {} (at most {TTFT_SAMPLES} probes)</small></h3>\n\
         <div class=\"scroll\"><table class=\"replicas\"><thead><tr>",
        views.len(),
        span(TTFT_WINDOW_SECONDS)
    );
    header_cells(out, REPLICA_COLUMNS);
    out.push_str("</tr></thead><tbody>\n");
    for v in &views {
        row(out, "replica", REPLICA_COLUMNS, v);
    }
    out.push_str("</tbody></table></div>\n");
}

fn state_cell(v: &ReplicaView) -> String {
    let class = match v.state {
        ReplicaState::Failing | ReplicaState::EngineDown => "bad",
        ReplicaState::NoProbeYet => "warn",
        ReplicaState::Ok => "ok",
    };
    format!("<span class=\"{class}\">{}</span>", v.state.as_str())
}

fn last_probe_cell(v: &ReplicaView) -> String {
    let Some(last) = &v.status.last else {
        return "–".to_string();
    };
    let mut cell = format!(
        "{} ago · {}",
        span(v.now - last.at),
        outcome(last.outcome, last.good)
    );
    if let Some(e) = last.error.as_deref().filter(|_| last.failed()) {
        let _ = write!(cell, "<br><small class=\"err\">{}</small>", escape(e));
    }
    cell
}

fn ttft_cell(v: &ReplicaView) -> String {
    let t = &v.ttft;
    if t.samples == 0 {
        return "–".to_string();
    }
    let probes = if t.samples == 1 { "probe" } else { "probes" };
    format!(
        "{}{}",
        pair(t.p50, t.p99),
        covered_note(&format!(
            "{} {probes} over {}",
            t.samples,
            span(t.covered_seconds)
        ))
    )
}

/// A figure of the engine's last scrape, `–` before the first.
fn engine_figure(v: &ReplicaView, f: fn(&ReplicaEngine) -> String) -> String {
    v.status.engine.as_ref().map_or_else(|| "–".to_string(), f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, RequestRecord};
    use std::time::Duration;

    fn probed(name: &str, outcome: Outcome, ttft_ms: u64, at: f64) -> ReplicaStatus {
        let mut s = ReplicaStatus::new("t", "m", name, Some(0.0));
        let mut r = RequestRecord::new(1, Duration::ZERO, Duration::ZERO);
        r.outcome = outcome;
        r.t_first = Some(Duration::from_millis(ttft_ms));
        let error = (!outcome.is_ok()).then(|| "<b>HTTP 503</b>".to_string());
        s.record_probe(&r, outcome.is_ok(), error, at);
        s
    }

    #[test]
    fn rows_come_worst_first_with_their_figures() {
        let mut queue = probed("q:1", Outcome::Ok, 40, 1990.0);
        queue.set_engine(ReplicaEngine {
            scrape_ok: true,
            running: Some(12.0),
            waiting: Some(3.0),
            kv_cache_usage_ratio: Some(0.5),
            headroom: Some(0.25),
        });
        let replicas = vec![
            probed("ok:1", Outcome::Ok, 30, 1995.0),
            queue,
            probed("bad:1", Outcome::Http5xx, 30, 1980.0),
        ];
        let mut out = String::new();
        replica_table(&mut out, replicas, 2000.0);
        let order: Vec<usize> = ["bad:1", "q:1", "ok:1"]
            .iter()
            .map(|n| out.find(&format!(">{n}</td>")).expect(n))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{out}");
        assert_eq!(out.matches("<tr class=\"replica\">").count(), 3);
        assert!(out.contains("20s ago · <span class=\"bad\">http_5xx</span>"));
        assert!(out.contains("&lt;b&gt;HTTP 503&lt;/b&gt;") && !out.contains("<b>"));
        assert!(out.contains("40 ms / 40 ms <small class=\"covered\">1 probe over 15m</small>"));
        assert!(out.contains("<span class=\"warn\">3</span>"));
        assert!(out.contains(">50.0 %</td><td data-label=\"headroom\">25.0 %</td>"));
        assert!(out.contains("3 behind the front door"));
        let mut none = String::new();
        replica_table(&mut none, Vec::new(), 2000.0);
        assert!(none.is_empty());
    }
}
