//! The status pages' HTML pieces that every table shares: columns as data, cells with
//! their phone label, escaping, and how numbers, times and outcomes are written.

use std::fmt::Write as _;

use super::history::span;

/// A column of a table: its header, a hover explanation, and its cell's HTML.
pub struct Column<R: ?Sized> {
    pub head: &'static str,
    pub title: &'static str,
    pub cell: fn(&R) -> String,
}

/// What a cell says when its column does not apply to the row (no golden set, no
/// answer check failed): a phone leaves such cells out.
pub const NONE: &str = "-";

/// A table cell; its column's name rides along for the phone layout (one card per row).
pub fn cell(out: &mut String, head: &str, html: &str) {
    let class = if html == NONE { " class=\"none\"" } else { "" };
    let _ = write!(
        out,
        "<td{class} data-label=\"{}\">{html}</td>",
        escape(head)
    );
}

pub fn header_cells<R>(out: &mut String, columns: &[Column<R>]) {
    for c in columns {
        let _ = write!(
            out,
            "<th title=\"{}\">{}</th>",
            escape(c.title),
            escape(c.head)
        );
    }
}

/// One row of `columns` over `row`, with the row's class.
pub fn row<R>(out: &mut String, class: &str, columns: &[Column<R>], row: &R) {
    let _ = write!(out, "<tr class=\"{class}\">");
    for c in columns {
        cell(out, c.head, &(c.cell)(row));
    }
    out.push_str("</tr>\n");
}

pub fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{:.1} %", v * 100.0))
}

pub fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{:.0} ms", v * 1e3))
}

pub fn pair(a: Option<f64>, b: Option<f64>) -> String {
    format!("{} / {}", ms(a), ms(b))
}

/// A count as a whole number, `–` when unknown.
pub fn whole(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.0}"))
}

/// Most characters of an error text a table cell shows.
pub const ERROR_CHARS: usize = 160;

/// An error text cut to [`ERROR_CHARS`], escaped.
pub fn short_error(text: &str) -> String {
    escape(&text.chars().take(ERROR_CHARS).collect::<String>())
}

/// The muted note after a figure that says what it covers: ` over 4m`.
pub fn covered_note(text: &str) -> String {
    format!(" <small class=\"covered\">{}</small>", escape(text))
}

/// `over 4m` when a window covered only `seconds`.
pub fn over(seconds: Option<f64>) -> String {
    seconds.map_or_else(String::new, |s| covered_note(&format!("over {}", span(s))))
}

pub fn outcome(o: &str, good: bool) -> String {
    let class = match (o, good) {
        ("ok", true) => "ok",
        ("ok", false) => "warn",
        _ => "bad",
    };
    let shown = if o == "ok" && !good {
        "ok, SLO missed"
    } else {
        o
    };
    format!("<span class=\"{class}\">{}</span>", escape(shown))
}

/// `HH:MM:SS` of a Unix time (UTC).
pub fn clock(at: f64) -> String {
    let secs = at.max(0.0) as u64 % 86_400;
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// A target name as one URL path segment.
pub fn url_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// HTML escaping for text and attribute values (error texts and replica names come from
/// remote servers).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A loop's runs as a cell: completed runs, the failed ones and the last failure
/// (`at`, its scrubbed error) as of `now`.
pub fn runs_cell(
    runs: u64,
    failures: u64,
    last_failure: Option<&(f64, String)>,
    now: f64,
) -> String {
    let mut cell = runs.to_string();
    if failures > 0 {
        cell.push_str(&format!(" <span class=\"bad\">({failures} failed)</span>"));
    }
    if let Some((at, error)) = last_failure {
        cell.push_str(&format!(
            "<br><small class=\"err\">{} ago: {}</small>",
            span(now - at),
            short_error(error)
        ));
    }
    cell
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_text_and_attributes() {
        assert_eq!(
            escape("<a href='x'>\"&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(url_segment("prod/eu 1"), "prod%2Feu%201");
        assert_eq!(over(None), "");
        assert_eq!(
            over(Some(240.0)),
            " <small class=\"covered\">over 4m</small>"
        );
    }
}
