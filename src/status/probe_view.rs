//! The HTML of `/probe/ID`: one probe's page (`probe_pages::ProbePage`) as a table of
//! its fields, timestamps first. No auto-refresh: a probe does not change.

use std::fmt::Write as _;

use super::html::{clock, escape, outcome, url_segment};
use super::page::head;
use super::probe_pages::ProbePage;

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.1} ms"))
}

/// The page of one probe.
pub fn probe_page(p: &ProbePage) -> String {
    let here = format!("/probe/{}", p.id);
    let mut out = head(&format!("probe {} · llmprobe", p.id), false, &here);
    let _ = write!(
        out,
        "<section><h2>Probe {} <small>{} · {}</small></h2><p><a href=\"/target/{}\">{}</a> \
         · <a href=\"{here}?format=json\">JSON</a></p>\n<div class=\"scroll\"><table><tbody>\n",
        p.id,
        escape(&p.target),
        escape(&p.scenario),
        url_segment(&p.target),
        escape(&p.target),
    );
    let mut row = |k: &str, v: String| {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{v}</td></tr>",
            escape(k)
        );
    };
    row(
        "scheduled (UTC)",
        format!("{} ({:.3})", clock(p.scheduled_at), p.scheduled_at),
    );
    row("sent", ms(Some(p.sent_ms)));
    row("response headers", ms(p.headers_ms));
    row("first token", ms(p.first_token_ms));
    row("first answer token", ms(p.first_answer_token_ms));
    row("end", ms(p.end_ms));
    row("TTFT", ms(p.ttft_ms));
    row("TTFA", ms(p.ttfa_ms));
    row("TPOT", ms(p.tpot_ms));
    row("E2E", ms(p.e2e_ms));
    row("outcome", outcome(p.outcome, p.good));
    row(
        "HTTP status",
        p.http_status.map_or_else(|| "–".into(), |s| s.to_string()),
    );
    row("model", escape(&p.model));
    row(
        "replica",
        p.replica
            .as_deref()
            .map_or_else(|| "front door".into(), escape),
    );
    row(
        "tokens",
        format!(
            "{} in ({} cached) → {} out ({} reasoning), max {}",
            p.prompt_tokens,
            p.cached_tokens
                .map_or_else(|| "–".into(), |c| c.to_string()),
            p.output_tokens,
            p.reasoning_tokens,
            p.max_tokens
        ),
    );
    if let Some(e) = &p.served_endpoint {
        row("served by", format!("<code>{}</code> (gateway)", escape(e)));
    }
    row("streamed", p.streamed.to_string());
    row(
        "trace ID",
        p.trace_id.as_deref().map_or_else(
            || "– (traceparent off)".into(),
            |t| format!("<code>{}</code>", escape(t)),
        ),
    );
    if let Some(e) = &p.error {
        row("error", escape(e));
    }
    for c in &p.checks {
        let verdict = if c.passed {
            "passed".to_string()
        } else {
            format!(
                "failed: {}{}",
                escape(c.reason.as_deref().unwrap_or("")),
                c.excerpt
                    .as_deref()
                    .map_or_else(String::new, |x| format!(" · <q>{}</q>", escape(x)))
            )
        };
        row(&format!("check {}", c.check.as_str()), verdict);
    }
    out.push_str("</tbody></table></div>\n");
    out.push_str(
        "<p>Times are after the probe was scheduled; TTFT, TTFA, TPOT and E2E are \
                  from its send, as the histograms define them (docs/measurement.md).</p>\n",
    );
    out.push_str("</section></main></body></html>\n");
    out
}
