//! The fingerprint table of a target on `/` and `/target/NAME`: one row per fingerprint
//! scenario with its state, its last run against the limits its baseline's noise sets,
//! and its failed runs.

use super::fingerprint_status::{FingerprintState, FingerprintStatus};
use super::history::span;
use super::html::{Column, covered_note, escape, header_cells, row, runs_cell};

/// A scenario's entry as of the page's time.
pub struct FingerprintView {
    pub status: FingerprintStatus,
    pub now: f64,
}

pub const FINGERPRINT_COLUMNS: &[Column<FingerprintView>] = &[
    Column {
        head: "fingerprint",
        title: "the fingerprint scenario",
        cell: |v| escape(&v.status.scenario),
    },
    Column {
        head: "state",
        title: "same model (last run within the baseline's noise), drift, run failing \
                (the newest run failed), or no run yet",
        cell: state_cell,
    },
    Column {
        head: "last run",
        title: "how long ago the last run completed, and how often it runs",
        cell: |v| {
            let every = covered_note(&format!("every {}", span(v.status.every)));
            match &v.status.last {
                Some(run) => format!("{} ago{every}", span(v.now - run.at)),
                None => format!("–{every}"),
            }
        },
    },
    Column {
        head: "divergence",
        title: "mean total-variation distance of the top-k distributions from the \
                baseline's, last run; drift above the limit the baseline's noise sets",
        cell: |v| {
            let limit = covered_note(&format!("limit {:.4}", v.status.threshold.divergence));
            match &v.status.last {
                Some(run) => {
                    flagged(
                        &format!("{:.4}", run.divergence.divergence),
                        v.status.threshold.divergence_beyond(&run.divergence),
                    ) + &limit
                }
                None => format!("–{limit}"),
            }
        },
    },
    Column {
        head: "token agreement",
        title: "tokens matching the baseline's before the first difference, last run; \
                drift below the limit the baseline's noise sets",
        cell: |v| {
            let limit = covered_note(&format!(
                "limit {:.1} %",
                v.status.threshold.token_agreement * 100.0
            ));
            match &v.status.last {
                Some(run) => {
                    flagged(
                        &format!("{:.1} %", run.divergence.token_agreement * 100.0),
                        v.status.threshold.agreement_below(&run.divergence),
                    ) + &limit
                }
                None => format!("–{limit}"),
            }
        },
    },
    Column {
        head: "first divergence",
        title: "earliest token position where an answer left its baseline, last run",
        cell: |v| match &v.status.last {
            Some(run) => match run.divergence.first_divergence {
                Some(p) => format!("token {p}"),
                None => "none".to_string(),
            },
            None => "–".to_string(),
        },
    },
    Column {
        head: "runs",
        title: "runs completed since the scenario started, the failed ones and the \
                last failure",
        cell: runs_of,
    },
];

/// Appends the fingerprint table of one target (nothing when it has none) as of `now`.
pub fn fingerprint_table(out: &mut String, fingerprints: Vec<FingerprintStatus>, now: f64) {
    if fingerprints.is_empty() {
        return;
    }
    out.push_str(
        "<h3>Fingerprints <small>the model's answers at temperature 0 against its recorded \
         baseline</small></h3>\n<div class=\"scroll\"><table class=\"fingerprints\"><thead><tr>",
    );
    header_cells(out, FINGERPRINT_COLUMNS);
    out.push_str("</tr></thead><tbody>\n");
    for status in fingerprints {
        row(
            out,
            "fingerprint",
            FINGERPRINT_COLUMNS,
            &FingerprintView { status, now },
        );
    }
    out.push_str("</tbody></table></div>\n");
}

fn flagged(text: &str, bad: bool) -> String {
    if bad {
        format!("<span class=\"bad\">{text}</span>")
    } else {
        text.to_string()
    }
}

fn state_cell(v: &FingerprintView) -> String {
    let state = v.status.state();
    let class = match state {
        FingerprintState::Drift | FingerprintState::Failing => "bad",
        FingerprintState::NoRunYet => "warn",
        FingerprintState::Same => "ok",
    };
    format!("<span class=\"{class}\">{}</span>", state.as_str())
}

fn runs_of(v: &FingerprintView) -> String {
    let s = &v.status;
    runs_cell(s.runs, s.failures, s.last_failure.as_ref(), v.now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::{Divergence, Threshold};

    fn status() -> FingerprintStatus {
        let threshold = Threshold {
            divergence: 0.025,
            token_agreement: 0.9,
        };
        FingerprintStatus::new("t", "m", "fp<1>", threshold, 600.0)
    }

    fn page(s: FingerprintStatus, now: f64) -> String {
        let mut out = String::new();
        fingerprint_table(&mut out, vec![s], now);
        out
    }

    #[test]
    fn a_drifted_run_shows_its_figures_against_the_limits() {
        let mut s = status();
        s.record_run(
            1_000.0,
            Divergence {
                divergence: 0.2278,
                token_agreement: 0.3125,
                first_divergence: Some(2),
                positions: 40,
            },
        );
        let html = page(s, 1_090.0);
        assert_eq!(html.matches("<tr class=\"fingerprint\">").count(), 1);
        assert!(html.contains(">fp&lt;1&gt;</td>"), "escaped: {html}");
        assert!(html.contains("<span class=\"bad\">drift</span>"));
        assert!(html.contains(
            "<span class=\"bad\">0.2278</span> <small class=\"covered\">limit 0.0250</small>"
        ));
        assert!(html.contains(
            "<span class=\"bad\">31.2 %</span> <small class=\"covered\">limit 90.0 %</small>"
        ));
        assert!(html.contains(">token 2</td>"));
        assert!(html.contains(">1m 30s ago <small class=\"covered\">every 10m</small></td>"));
    }

    #[test]
    fn a_quiet_run_and_a_later_failure() {
        let mut s = status();
        s.record_run(
            1_000.0,
            Divergence {
                divergence: 0.0,
                token_agreement: 1.0,
                first_divergence: None,
                positions: 128,
            },
        );
        let html = page(s.clone(), 1_010.0);
        assert!(html.contains("<span class=\"ok\">same model</span>"));
        assert!(html.contains(">0.0000 <small"), "not flagged: {html}");
        assert!(html.contains(">none</td>"));
        s.record_failure(1_600.0, "POST /v1/chat/completions: <refused>".into());
        let html = page(s, 1_630.0);
        assert!(html.contains("<span class=\"bad\">run failing</span>"));
        assert!(html.contains("1 <span class=\"bad\">(1 failed)</span>"));
        assert!(html.contains("30s ago: POST /v1/chat/completions: &lt;refused&gt;"));
    }

    #[test]
    fn no_fingerprint_no_table() {
        let mut out = String::new();
        fingerprint_table(&mut out, Vec::new(), 0.0);
        assert!(out.is_empty());
        let html = page(status(), 5.0);
        assert!(html.contains("<span class=\"warn\">no run yet</span>"));
    }
}
