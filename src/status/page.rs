//! The HTML of `/` (every target × scenario) and `/target/NAME` (a target's last
//! probes), rendered on the server: no script, one same-origin stylesheet
//! (`/status.css`), inline SVG sparklines, so the pages work offline and under a
//! strict Content-Security-Policy. Auto-refresh is a `<meta refresh>` a link turns off.
//!
//! The tables are lists of columns: a new record field (time to first answer token, an
//! answer check) is one more entry in [`SCENARIO_COLUMNS`] or [`PROBE_COLUMNS`], whose
//! widths must still fit a 1280 px screen (`tests/tools/status_page.sh` measures it):
//! the 5-minute and hour figures share a cell, and a scenario's sparklines have a row
//! of their own under its figures. A windowed figure says over how long it was taken
//! while its window is not yet full (the hour's goodput four minutes after the start:
//! `over 4m`). A target with discovered replicas gets their table after its scenarios
//! (`replica_table`), and the fleet's engine sums instead of an engine line.

use std::fmt::Write as _;

use super::board::{EngineState, FleetState, ScenarioStatus, StatusBoard, TargetHold};
use super::fingerprint_table::fingerprint_table;
use super::history::{ProbeRow, WindowStats};
pub use super::html::{Column, escape};
use super::html::{
    NONE, clock, header_cells, ms, outcome, over, pair, percent, row, short_error, url_segment,
    whole,
};
use super::kind_table::kind_table;
use super::replica_table::replica_table;
use super::sparkline::sparkline;

/// Seconds between automatic reloads of a page.
pub const REFRESH_SECONDS: u32 = 15;

/// The Content-Security-Policy the pages are served with.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
                       base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The stylesheet at `/status.css`: light and dark, desktop and phone.
pub const CSS: &str = include_str!("status.css");

/// One scenario row with its windows computed.
pub struct ScenarioRow {
    pub status: ScenarioStatus,
    pub five: WindowStats,
    pub hour: WindowStats,
    pub now: f64,
}

pub const SCENARIO_COLUMNS: &[Column<ScenarioRow>] = &[
    Column {
        head: "scenario",
        title: "target × scenario",
        cell: |r| escape(&r.status.scenario),
    },
    Column {
        head: "SLO met",
        title: "probes meeting every SLO: last 5 minutes, last hour (each since the start while shorter)",
        cell: |r| windows(r, |w| percent(w.attainment())),
    },
    Column {
        head: "goodput",
        title: "good probes per minute: last 5 minutes, last hour (each since the start while shorter)",
        cell: |r| windows(r, per_min),
    },
    Column {
        head: "TTFT p50 / p99",
        title: "time to first token, last 5 minutes (or since the start)",
        cell: |r| windowed(pair(r.five.ttft_p50, r.five.ttft_p99), &r.five),
    },
    Column {
        head: "TPOT p50 / p99",
        title: "time per output token, last 5 minutes (or since the start)",
        cell: |r| windowed(pair(r.five.tpot_p50, r.five.tpot_p99), &r.five),
    },
    Column {
        head: "failures",
        title: "failed probes by reason since start; the last error",
        cell: failures_cell,
    },
    Column {
        head: "golden accuracy",
        title: "golden-set answers correct over the rolling window, with the 95% Wilson interval; the baseline; the last wrong answer",
        cell: |r| r.status.golden.as_ref().map_or(NONE.into(), golden_cell),
    },
    Column {
        head: "answer checks",
        title: "the last failure of each answer check, with the reason and an excerpt",
        cell: |r| {
            let failures = &r.status.last_check_failures;
            if failures.is_empty() {
                NONE.to_string()
            } else {
                let texts: Vec<String> = failures.iter().map(|(_, text)| escape(text)).collect();
                format!("<div class=\"text\">{}</div>", texts.join("<br>"))
            }
        },
    },
];

pub const PROBE_COLUMNS: &[Column<(String, ProbeRow)>] = &[
    Column {
        head: "time (UTC)",
        title: "completion; the link opens the probe's page while it is kept",
        cell: |(_, p)| match p.page {
            Some(id) => format!("<a href=\"/probe/{id}\">{}</a>", clock(p.at)),
            None => clock(p.at),
        },
    },
    Column {
        head: "scenario",
        title: "",
        cell: |(s, _)| escape(s),
    },
    Column {
        head: "outcome",
        title: "ok, or the failure reason",
        cell: |(_, p)| outcome(p.outcome, p.good),
    },
    Column {
        head: "TTFT",
        title: "time to first token",
        cell: |(_, p)| ms(p.ttft),
    },
    Column {
        head: "TTFA",
        title: "time to first answer token, when the model reasoned first",
        cell: |(_, p)| ms(p.ttfa),
    },
    Column {
        head: "TPOT",
        title: "time per output token",
        cell: |(_, p)| ms(p.tpot),
    },
    Column {
        head: "E2E",
        title: "end to end",
        cell: |(_, p)| ms(p.e2e),
    },
    Column {
        head: "tokens",
        title: "input → output",
        cell: |(_, p)| format!("{} → {}", p.input_tokens, p.output_tokens),
    },
];

/// `93.5% [89.1%, 96.4%] of 200 · baseline 90.0%`, then the last wrong answer.
fn golden_cell(g: &super::board::GoldenStatus) -> String {
    let w = &g.window;
    let mut out = match (w.accuracy(), w.interval()) {
        (Some(acc), Some((lo, hi))) => format!(
            "{} [{}, {}] of {}",
            percent(Some(acc)),
            percent(Some(lo)),
            percent(Some(hi)),
            w.answers()
        ),
        _ => "no answer judged yet".into(),
    };
    if let Some(b) = g.baseline {
        out.push_str(&format!(" · baseline {}", percent(Some(b))));
    }
    if let Some(wrong) = &g.last_wrong {
        out.push_str(&format!("<br>last wrong: {}", escape(wrong)));
    }
    format!("<div class=\"text\">{out}</div>")
}

/// `/`: each target with its engine line, its scenarios, its fingerprints and its
/// replicas.
pub fn status_page(board: &StatusBoard, now: f64, refresh: bool) -> String {
    let mut out = head("llmprobe daemon", refresh, "/");
    let targets = board.targets();
    for (target, model) in &targets {
        let engines = engine_lines(board.engine(target), board.fleet(target))
            + &hold_lines(board.hold(target), now);
        section_head(&mut out, target, model, &engines, refresh);
        let scenarios = board.scenarios_of(target);
        if !scenarios.is_empty() {
            out.push_str("<div class=\"scroll\"><table><thead><tr>");
            header_cells(&mut out, SCENARIO_COLUMNS);
            out.push_str("</tr></thead><tbody>\n");
            for s in scenarios {
                let r = ScenarioRow {
                    five: s.history.window(now, 5),
                    hour: s.history.window(now, 60),
                    status: s,
                    now,
                };
                row(&mut out, "scenario", SCENARIO_COLUMNS, &r);
                // The last hour in a row of its own under the figures: the sparklines
                // get the table's width and the figures keep theirs.
                let _ = writeln!(
                    out,
                    "<tr class=\"trend\"><td colspan=\"{}\" data-label=\"last hour\" \
                     title=\"per minute: TTFT p99, goodput, probe rate\">{}</td></tr>",
                    SCENARIO_COLUMNS.len(),
                    sparklines_cell(&r)
                );
            }
            out.push_str("</tbody></table></div>\n");
        }
        fingerprint_table(&mut out, board.fingerprints(target), now);
        kind_table(&mut out, board.kinds(target), now);
        replica_table(&mut out, board.replicas(target), now);
        out.push_str("</section>\n");
    }
    if targets.is_empty() {
        out.push_str("<p>No target is configured.</p>\n");
    }
    out.push_str("</main></body></html>\n");
    out
}

/// `/target/NAME`: the last probes of every scenario of a target, newest first, then its
/// replicas as of `now`; `None` when no such target runs.
pub fn target_page(board: &StatusBoard, name: &str, now: f64, refresh: bool) -> Option<String> {
    let all = board.scenarios_of(name);
    let fingerprints = board.fingerprints(name);
    let kinds = board.kinds(name);
    let model = match (all.first(), fingerprints.first(), kinds.first()) {
        (Some(s), _, _) => s.model.clone(),
        (None, Some(f), _) => f.model.clone(),
        (None, None, Some(k)) => k.model.clone(),
        (None, None, None) => return None,
    };
    let mut rows: Vec<(String, ProbeRow)> = all
        .iter()
        .flat_map(|s| s.history.recent().map(|p| (s.scenario.clone(), p.clone())))
        .collect();
    rows.sort_by(|a, b| b.1.at.total_cmp(&a.1.at));
    let here = format!("/target/{}", url_segment(name));
    let mut out = head(&format!("{name} · llmprobe"), refresh, &here);
    let _ = write!(
        out,
        "<section><h2>{} <small>{}</small></h2>\n{}<p>The last {} probes of each \
         scenario, newest first. <a href=\"/{}\">All targets</a></p>\n<div class=\"scroll\">\
         <table><thead><tr>",
        escape(name),
        escape(&model),
        hold_lines(board.hold(name), now),
        super::history::RECENT,
        if refresh { "" } else { "?refresh=off" }
    );
    header_cells(&mut out, PROBE_COLUMNS);
    out.push_str("</tr></thead><tbody>\n");
    for r in &rows {
        row(&mut out, "probe", PROBE_COLUMNS, r);
    }
    out.push_str("</tbody></table></div>\n");
    slowest_probes(&mut out, board, name);
    fingerprint_table(&mut out, fingerprints, now);
    kind_table(&mut out, kinds, now);
    replica_table(&mut out, board.replicas(name), now);
    out.push_str("</section></main></body></html>\n");
    Some(out)
}

/// How many of a target's slowest kept probes its page links.
const SLOWEST: usize = 5;

/// Links to the target's slowest probes still kept (front door and replicas), by E2E.
fn slowest_probes(out: &mut String, board: &StatusBoard, target: &str) {
    let slow = board.pages().slowest(target, SLOWEST);
    if slow.is_empty() {
        return;
    }
    out.push_str("<p>Slowest kept probes (E2E): ");
    for (i, p) in slow.iter().enumerate() {
        let _ = write!(
            out,
            "{}<a href=\"/probe/{}\">{} · {}{}</a>",
            if i == 0 { "" } else { ", " },
            p.id,
            ms(p.e2e_ms.map(|v| v / 1e3)),
            escape(&p.scenario),
            p.replica
                .as_deref()
                .map_or_else(String::new, |r| format!(" · {}", escape(r)))
        );
    }
    out.push_str("</p>\n");
}

pub(super) fn head(title: &str, refresh: bool, here: &str) -> String {
    let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<meta name=\"color-scheme\" content=\"light dark\">");
    if refresh {
        let _ = write!(
            out,
            "<meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\">"
        );
    }
    let _ = write!(
        out,
        "<title>{}</title><link rel=\"stylesheet\" href=\"/status.css\"></head><body>\n\
         <header><h1>llmprobe daemon</h1><nav><a href=\"/metrics\">Metrics</a> \
         <a href=\"/config\">Configuration</a> <a href=\"/-/ready\">Readiness</a> ",
        escape(title)
    );
    if refresh {
        let _ = write!(
            out,
            "<span class=\"refresh\">Auto-refresh every {REFRESH_SECONDS} s · \
             <a href=\"{here}?refresh=off\">turn off</a></span>"
        );
    } else {
        let _ = write!(
            out,
            "<span class=\"refresh\">Auto-refresh off · <a href=\"{here}\">turn on</a></span>"
        );
    }
    out.push_str("</nav></header>\n<main>\n");
    out
}

fn section_head(out: &mut String, target: &str, model: &str, engines: &str, refresh: bool) {
    let link = format!(
        "/target/{}{}",
        url_segment(target),
        if refresh { "" } else { "?refresh=off" }
    );
    let _ = write!(
        out,
        "<section class=\"target\"><h2><a href=\"{link}\">{}</a> <small>{}</small></h2>\n{engines}",
        escape(target),
        escape(model),
    );
}

/// The engine lines of a target: its own engine's last scrape, and for a target with
/// discovered replicas the fleet's sums of their last scrape round (the replica table
/// shows each). A fleet target shows its own engine only when it scrapes one.
fn engine_lines(e: Option<EngineState>, fleet: Option<Option<FleetState>>) -> String {
    let line = |text: String| format!("<p class=\"engine\">{text}</p>\n");
    let Some(fleet) = fleet else {
        return line(engine_line(e));
    };
    let own = e
        .filter(|e| e.scrape_ok.is_some())
        .map_or_else(String::new, |e| line(engine_line(Some(e))));
    own + &line(fleet_line(fleet))
}

/// `Fleet engines: 3 of 3 scraped · running 12 · waiting 0 · KV cache 4.1 % · headroom
/// 86.0 %`: running and waiting summed, KV cache the mean, headroom the fleet's.
fn fleet_line(g: Option<FleetState>) -> String {
    let Some(g) = g else {
        return "Fleet engines: no scrape round yet".to_string();
    };
    if g.replicas == 0 {
        return "Fleet engines: no replica discovered".to_string();
    }
    let class = if g.scraped == g.replicas {
        "ok"
    } else if g.scraped == 0 {
        "bad"
    } else {
        "warn"
    };
    format!(
        "Fleet engines: <span class=\"{class}\">{} of {} scraped</span> · running {} · \
         waiting {} · KV cache {} · headroom {}",
        g.scraped,
        g.replicas,
        whole(g.running),
        whole(g.waiting),
        percent(g.kv_cache_usage_ratio),
        percent(g.headroom)
    )
}

/// What holds a target's probes back now: `rate-limited until HH:MM:SS UTC`, the day's
/// budget spent. Nothing once its time has passed.
fn hold_lines(h: Option<TargetHold>, now: f64) -> String {
    let Some(h) = h else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(until) = h.rate_limited_until.filter(|u| *u > now) {
        let _ = writeln!(
            out,
            "<p class=\"engine\"><span class=\"warn\">rate-limited until {} UTC</span> · \
             the server answered 429 with a retry delay; arrivals until then are skipped \
             (<code>rate_limited</code>)</p>",
            clock(until)
        );
    }
    if let Some(b) = h.budget_spent.filter(|b| b.resumes_at > now) {
        let _ = writeln!(
            out,
            "<p class=\"engine\"><span class=\"warn\">budget spent: ${:.2} of ${:.2} \
             today</span> · probing resumes at {} UTC (<code>cost_budget</code>)</p>",
            b.spent,
            b.budget,
            clock(b.resumes_at)
        );
    }
    out
}

fn engine_line(e: Option<EngineState>) -> String {
    let Some(e) = e else {
        return "Engine: not scraped".to_string();
    };
    let scrape = match e.scrape_ok {
        Some(true) => "<span class=\"ok\">scrape ok</span>",
        Some(false) => "<span class=\"bad\">scrape failing</span>",
        None => "not scraped",
    };
    format!(
        "Engine: {scrape} · running {} · waiting {} · KV cache {} · headroom {}",
        whole(e.running),
        whole(e.waiting),
        percent(e.kv_cache_usage_ratio),
        percent(e.headroom)
    )
}

fn failures_cell(r: &ScenarioRow) -> String {
    let s = &r.status;
    if s.reasons.is_empty() {
        return "<span class=\"ok\">none</span>".to_string();
    }
    let reasons: Vec<String> = s
        .reasons
        .iter()
        .map(|(k, v)| format!("{} {v}", escape(k)))
        .collect();
    let mut cell = format!(
        "<div class=\"text\"><span class=\"bad\">{}</span>",
        reasons.join(", ")
    );
    if let Some(e) = &s.last_error {
        let _ = write!(cell, "<br><small class=\"err\">{}</small>", short_error(e));
    }
    cell.push_str("</div>");
    cell
}

fn sparklines_cell(r: &ScenarioRow) -> String {
    let minutes = r.status.history.minutes(r.now);
    let ttft: Vec<Option<f64>> = minutes.iter().map(|m| m.and_then(|m| m.ttft_p99)).collect();
    let good: Vec<Option<f64>> = minutes
        .iter()
        .map(|m| m.map(|m| f64::from(m.good)))
        .collect();
    let rate: Vec<Option<f64>> = minutes
        .iter()
        .map(|m| m.map(|m| f64::from(m.probes)))
        .collect();
    let last = |v: &[Option<f64>], fmt: fn(f64) -> String| {
        v.iter()
            .rev()
            .flatten()
            .next()
            .map_or_else(|| "–".to_string(), |x| fmt(*x))
    };
    format!(
        "<div class=\"sparks\"><span class=\"hour\">last hour</span>\
         <span class=\"trend\"><span>TTFT p99</span>{}<span>{}</span></span>\
         <span class=\"trend\"><span>goodput</span>{}<span>{}</span></span>\
         <span class=\"trend\"><span>probes</span>{}<span>{}</span></span></div>",
        sparkline(&ttft, "TTFT p99 per minute, last hour", "ttft"),
        last(&ttft, |x| format!("{:.0} ms", x * 1e3)),
        sparkline(&good, "good probes per minute, last hour", "goodput"),
        last(&good, |x| format!("{x:.0}/min")),
        sparkline(&rate, "probes per minute, last hour", "rate"),
        last(&rate, |x| format!("{x:.0}/min")),
    )
}

/// A figure over the last 5 minutes and the last hour, one line each.
fn windows(r: &ScenarioRow, figure: fn(&WindowStats) -> String) -> String {
    format!(
        "<div class=\"windows\"><span class=\"win\">5m</span> {}<br>\
         <span class=\"win\">1h</span> {}</div>",
        windowed(figure(&r.five), &r.five),
        windowed(figure(&r.hour), &r.hour)
    )
}

/// A windowed figure, with over how long it was taken when its window is not yet full
/// (a figure without a number, `–` or `– / –`, needs no note).
fn windowed(figure: String, w: &WindowStats) -> String {
    if !figure.contains(|c: char| c.is_ascii_digit()) {
        return figure;
    }
    figure + &over(w.short_by_start())
}

fn per_min(w: &WindowStats) -> String {
    if w.probes == 0 {
        "–".to_string()
    } else {
        format!("{:.1}/min", w.goodput_per_min())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    fn board() -> std::sync::Arc<StatusBoard> {
        let board = StatusBoard::new();
        for (scenario, ttft) in [("short", 0.05), ("long", 0.2)] {
            let h = board.scenario("prod/eu", "llama", scenario);
            let mut s = h.lock().unwrap();
            for i in 0..30 {
                let at = 6_000.0 + f64::from(i) * 10.0;
                s.record(Outcome::Ok, true, None, at);
                s.history.add(ProbeRow {
                    page: None,
                    at,
                    outcome: "ok",
                    good: i % 3 != 0,
                    ttft: Some(ttft),
                    ttfa: None,
                    tpot: Some(0.01),
                    e2e: Some(0.5),
                    input_tokens: 64,
                    output_tokens: 16,
                });
            }
        }
        board
    }

    #[test]
    fn every_scenario_gets_a_row_with_three_sparklines() {
        let page = status_page(&board(), 6_300.0, true);
        assert_eq!(page.matches("<tr class=\"scenario\">").count(), 2);
        assert_eq!(page.matches("<svg class=\"spark").count(), 6);
        // Each scenario's last hour is the row right under its figures, across them all.
        let rows: Vec<&str> = page.split("<tr class=\"scenario\">").skip(1).collect();
        let span = format!(
            "<tr class=\"trend\"><td colspan=\"{}\"",
            SCENARIO_COLUMNS.len()
        );
        for r in rows {
            let (_, next) = r.split_once("</tr>\n").unwrap();
            assert!(next.starts_with(&span), "{next}");
            assert_eq!(
                next.split("</tr>").next().unwrap().matches("<svg").count(),
                3
            );
        }
        // A column that does not apply to a row says so with `-`, which a phone leaves out.
        assert!(page.contains("<td class=\"none\" data-label=\"golden accuracy\">-</td>"));
        assert!(page.contains(">long</td>") && page.contains(">short</td>"));
        assert!(page.contains("66.7 %"), "two thirds good");
        assert!(
            page.contains("193 ms / 193 ms"),
            "0.2 s in its 2^(1/4) bucket"
        );
        assert!(page.contains("http-equiv=\"refresh\""));
        // The target link is one escaped path segment.
        assert!(page.contains("href=\"/target/prod%2Feu\""));
        assert!(!page.contains("<script"));
        let off = status_page(&board(), 6_300.0, false);
        assert!(!off.contains("http-equiv=\"refresh\"") && off.contains("turn on"));
    }

    #[test]
    fn the_target_page_lists_the_last_probes_newest_first() {
        let page = target_page(&board(), "prod/eu", 6_300.0, true).unwrap();
        let rows = page.matches("<tr class=\"probe\">").count();
        assert_eq!(rows, 60);
        let first = page.find("01:44:50").expect("newest probe");
        let older = page.find("01:40:00").expect("oldest probe");
        assert!(first < older);
        assert!(target_page(&board(), "nope", 6_300.0, true).is_none());
    }

    #[test]
    fn figures_of_a_young_scenario_say_over_how_long() {
        // Four minutes after the start: 63 good probes, 15.75/min in both windows.
        let board = StatusBoard::new();
        let h = board.scenario("t", "m", "s");
        let t0 = 6_000.0;
        {
            let mut s = h.lock().unwrap();
            s.history = super::super::history::History::started_at(t0);
            for i in 0..63 {
                let at = t0 + 1.0 + f64::from(i) * 3.8;
                s.record(Outcome::Ok, true, None, at);
                s.history.add(ProbeRow {
                    page: None,
                    at,
                    outcome: "ok",
                    good: true,
                    ttft: Some(0.05),
                    ttfa: None,
                    tpot: Some(0.01),
                    e2e: Some(0.5),
                    input_tokens: 64,
                    output_tokens: 16,
                });
            }
        }
        let page = status_page(&board, t0 + 240.0, true);
        let note = "<small class=\"covered\">over 4m</small>";
        let (five, hour) = (
            "<span class=\"win\">5m</span>",
            "<span class=\"win\">1h</span>",
        );
        let goodput = format!(
            "data-label=\"goodput\"><div class=\"windows\">{five} 15.8/min {note}<br>\
             {hour} 15.8/min {note}</div></td>"
        );
        assert!(page.contains(&goodput), "{page}");
        assert!(page.contains(&format!("{hour} 100.0 % {note}</div>")));
        assert_eq!(page.matches(note).count(), 6, "every windowed figure");
        // Ten minutes in, only the hour is short of its window.
        let page = status_page(&board, t0 + 600.0, true);
        assert!(page.contains(&format!(
            "data-label=\"goodput\"><div class=\"windows\">{five} –<br>"
        )));
        assert!(page.contains("data-label=\"TTFT p50 / p99\">– / –</td>"));
        assert_eq!(page.matches("over 10m").count(), 2, "SLO 1h, goodput 1h");
        assert!(page.contains("6.3/min <small class=\"covered\">over 10m</small>"));
    }

    #[test]
    fn replicas_follow_their_target_and_are_escaped() {
        let board = board();
        let hostile = "<img src=x onerror=alert(1)>:80";
        board.replica("prod/eu", "llama", hostile);
        let h = board.replica("prod/eu", "llama", "10.0.0.7:8000");
        let mut r = crate::record::RequestRecord::new(
            1,
            std::time::Duration::ZERO,
            std::time::Duration::ZERO,
        );
        r.outcome = Outcome::Http5xx;
        h.lock()
            .unwrap()
            .record_probe(&r, false, Some("down".into()), 6_290.0);
        for page in [
            status_page(&board, 6_300.0, true),
            target_page(&board, "prod/eu", 6_300.0, true).unwrap(),
        ] {
            assert_eq!(page.matches("<tr class=\"replica\">").count(), 2);
            assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;:80"));
            assert!(!page.contains("<img"));
            let failing = page.find(">10.0.0.7:8000</td>").unwrap();
            let fresh = page.find("&lt;img").unwrap();
            assert!(failing < fresh, "the failing replica first");
            assert!(page.contains("10s ago · <span class=\"bad\">http_5xx</span>"));
            assert!(page.contains("no probe yet"));
        }
        board.remove_replicas("prod/eu");
        let page = status_page(&board, 6_300.0, true);
        assert!(!page.contains("<tr class=\"replica\">") && !page.contains("Replicas"));
    }

    #[test]
    fn a_held_target_says_until_when() {
        let board = board();
        board.update_hold("prod/eu", |h| {
            h.rate_limited_until = Some(6_330.0);
            h.budget_spent = Some(crate::status::board::BudgetHold {
                spent: 5.004,
                budget: 5.0,
                resumes_at: 86_400.0,
            });
        });
        let page = status_page(&board, 6_300.0, true);
        assert!(page.contains("rate-limited until 01:45:30 UTC"), "{page}");
        assert!(page.contains(
            "budget spent: $5.00 of $5.00 today</span> · probing resumes at 00:00:00 UTC"
        ));
        let target = target_page(&board, "prod/eu", 6_300.0, true).unwrap();
        assert!(target.contains("rate-limited until 01:45:30 UTC"));
        // Once its time has passed, a hold is over and not shown.
        let later = status_page(&board, 6_330.0, true);
        assert!(!later.contains("rate-limited") && later.contains("budget spent"));
        assert!(!status_page(&board, 86_400.0, true).contains("budget spent"));
    }

    #[test]
    fn a_fleet_says_what_its_engines_hold() {
        let board = board();
        board.replica("prod/eu", "llama", "10.0.0.7:8000");
        board.start_fleet("prod/eu");
        let page = status_page(&board, 6_300.0, true);
        assert!(page.contains("<p class=\"engine\">Fleet engines: no scrape round yet</p>"));
        assert!(!page.contains("not scraped"), "{page}");
        board.set_fleet(
            "prod/eu",
            FleetState {
                replicas: 3,
                scraped: 2,
                running: Some(7.0),
                waiting: Some(1.0),
                kv_cache_usage_ratio: Some(0.25),
                headroom: Some(0.0),
            },
        );
        let page = status_page(&board, 6_300.0, true);
        assert!(
            page.contains(
                "<p class=\"engine\">Fleet engines: <span class=\"warn\">2 of 3 scraped</span> · \
                 running 7 · waiting 1 · KV cache 25.0 % · headroom 0.0 %</p>"
            ),
            "{page}"
        );
        assert!(!page.contains("Engine:"), "no engine of its own: {page}");
        // One that also scrapes its front door's engine shows both.
        board.update_engine("prod/eu", |e| e.scrape_ok = Some(true));
        let page = status_page(&board, 6_300.0, true);
        let own = page
            .find("Engine: <span class=\"ok\">scrape ok</span>")
            .expect("own");
        assert!(own < page.find("Fleet engines:").unwrap());
        // A target without discovered replicas keeps its one line.
        board.remove_fleet("prod/eu");
        let page = status_page(&board, 6_300.0, true);
        assert!(!page.contains("Fleet engines") && page.contains("Engine: "));
    }
}
