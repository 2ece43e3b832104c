//! The table of a target's scenarios whose kind has no table of its own (on `/` and
//! `/target/NAME`): per scenario its kind, state, last run, findings and failed runs.

use super::history::span;
use super::html::{Column, covered_note, escape, header_cells, row, runs_cell};
use super::kind_status::{KindState, KindStatus};

/// An entry as of the page's time.
pub struct KindView {
    pub status: KindStatus,
    pub now: f64,
}

pub const KIND_COLUMNS: &[Column<KindView>] = &[
    Column {
        head: "scenario",
        title: "the scenario and its kind",
        cell: |v| escape(&v.status.scenario) + &covered_note(&format!("kind {}", v.status.kind)),
    },
    Column {
        head: "state",
        title: "the last run's verdict, run failing (the newest run failed), or no run yet",
        cell: state_cell,
    },
    Column {
        head: "last run",
        title: "how long ago the last run completed, and how often it runs",
        cell: |v| {
            // Sub-second intervals (tests, demos) read in ms rather than as "every 0s".
            let every = match v.status.every {
                e if e > 0.0 && e < 1.0 => format!("every {:.0}ms", e * 1000.0),
                e => format!("every {}", span(e)),
            };
            let every = covered_note(&every);
            match &v.status.last {
                Some(run) => format!("{} ago{every}", span(v.now - run.at)),
                None => format!("–{every}"),
            }
        },
    },
    Column {
        head: "found",
        title: "what the last run found",
        cell: |v| match &v.status.last {
            Some(run) if !run.findings.is_empty() => run
                .findings
                .iter()
                .map(|(k, val)| format!("{}: {}", escape(k), escape(val)))
                .collect::<Vec<_>>()
                .join("<br>"),
            _ => "–".to_string(),
        },
    },
    Column {
        head: "runs",
        title: "runs completed since the scenario started, the failed ones and the \
                last failure",
        cell: runs_of,
    },
];

/// Appends the table of one target's such scenarios (nothing when it has none).
pub fn kind_table(out: &mut String, entries: Vec<KindStatus>, now: f64) {
    if entries.is_empty() {
        return;
    }
    out.push_str(
        "<h3>Other scenarios <small>scenario kinds that run on their own</small></h3>\n\
         <div class=\"scroll\"><table class=\"kinds\"><thead><tr>",
    );
    header_cells(out, KIND_COLUMNS);
    out.push_str("</tr></thead><tbody>\n");
    for status in entries {
        row(out, "kind", KIND_COLUMNS, &KindView { status, now });
    }
    out.push_str("</tbody></table></div>\n");
}

fn state_cell(v: &KindView) -> String {
    let (class, text) = match (v.status.state(), &v.status.last) {
        (KindState::NoRunYet, _) => ("warn", "no run yet"),
        (KindState::Failing, _) => ("bad", "run failing"),
        (KindState::Bad, Some(run)) => ("bad", run.verdict.as_str()),
        (KindState::Ok, Some(run)) => ("ok", run.verdict.as_str()),
        (_, None) => ("warn", "no run yet"),
    };
    format!("<span class=\"{class}\">{}</span>", escape(text))
}

fn runs_of(v: &KindView) -> String {
    let s = &v.status;
    runs_cell(s.runs, s.failures, s.last_failure.as_ref(), v.now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::kind_status::KindRun;

    #[test]
    fn a_row_shows_the_verdict_findings_and_escaped_failure() {
        let mut s = KindStatus::new("t", "m", "models", "model_list", 60.0);
        s.record_run(KindRun {
            at: 100.0,
            verdict: "model missing".into(),
            ok: false,
            findings: vec![("listed".into(), "a, <b>".into())],
        });
        s.record_failure(130.0, "<script>".into());
        let mut out = String::new();
        kind_table(&mut out, vec![s], 160.0);
        assert!(
            out.contains("<span class=\"bad\">run failing</span>"),
            "{out}"
        );
        assert!(out.contains("listed: a, &lt;b&gt;"), "{out}");
        assert!(
            out.contains("1 <span class=\"bad\">(1 failed)</span>"),
            "{out}"
        );
        assert!(out.contains("30s ago: &lt;script&gt;"), "{out}");
        assert!(!out.contains("<script>"));
        let mut empty = String::new();
        kind_table(&mut empty, Vec::new(), 0.0);
        assert!(empty.is_empty());
    }
}
