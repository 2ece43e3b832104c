//! A small, pure parser for the Prometheus text exposition format (0.0.4), enough to
//! read an inference engine's own `/metrics`: metric name (colons allowed, as in
//! `vllm:num_requests_running`), labels with escaped values, value, optional timestamp.
//! Comments (`# HELP`, `# TYPE`) are skipped.
//!
//! Why not a crate: the maintained `prometheus-parse` matches names with `\w+`, which
//! rejects the colon-namespaced names every vLLM and SGLang metric uses.
//! Format reference: prometheus/docs "Exposition formats", text-based format.

use std::borrow::Cow;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    pub name: &'a str,
    pub labels: Vec<(&'a str, Cow<'a, str>)>,
    pub value: f64,
}

impl Sample<'_> {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_ref())
    }
}

/// A line that is not valid exposition format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub reason: &'static str,
}

/// Parses every sample in `text`. Fails on the first malformed line.
pub fn parse(text: &str) -> Result<Vec<Sample<'_>>, ParseError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(parse_line(line).map_err(|reason| ParseError {
            line: i + 1,
            reason,
        })?);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Result<Sample<'_>, &'static str> {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    if name_end == 0 {
        return Err("missing metric name");
    }
    if line.as_bytes()[0].is_ascii_digit() {
        return Err("metric name starts with a digit");
    }
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = parse_labels(after, &mut labels)?;
    }
    let mut fields = rest.split_ascii_whitespace();
    let value = fields.next().ok_or("missing value")?;
    let value = parse_value(value).ok_or("invalid value")?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().map_err(|_| "invalid timestamp")?;
    }
    if fields.next().is_some() {
        return Err("trailing characters");
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Parses `name="value",...}` and returns what follows the closing brace.
fn parse_labels<'a>(
    mut s: &'a str,
    labels: &mut Vec<(&'a str, Cow<'a, str>)>,
) -> Result<&'a str, &'static str> {
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Ok(after);
        }
        let eq = s.find('=').ok_or("label without '='")?;
        let key = s[..eq].trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err("invalid label name");
        }
        s = s[eq + 1..].trim_start();
        s = s.strip_prefix('"').ok_or("label value not quoted")?;
        let (value, after) = parse_quoted(s)?;
        labels.push((key, value));
        s = after.trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return Err("expected ',' or '}' after a label");
        }
    }
}

/// Parses the inside of a quoted label value (after the opening quote) with the
/// format's escapes (`\\`, `\"`, `\n`); returns the value and what follows the quote.
fn parse_quoted(s: &str) -> Result<(Cow<'_, str>, &str), &'static str> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut owned: Option<String> = None;
    let mut start = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let value = match owned {
                    None => Cow::Borrowed(&s[..i]),
                    Some(mut o) => {
                        o.push_str(&s[start..i]);
                        Cow::Owned(o)
                    }
                };
                return Ok((value, &s[i + 1..]));
            }
            b'\\' => {
                let o = owned.get_or_insert_with(String::new);
                o.push_str(&s[start..i]);
                match bytes.get(i + 1) {
                    Some(b'n') => o.push('\n'),
                    Some(b'\\') => o.push('\\'),
                    Some(b'"') => o.push('"'),
                    _ => return Err("invalid escape in label value"),
                }
                i += 2;
                start = i;
            }
            _ => i += 1,
        }
    }
    Err("unterminated label value")
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_colon_names_labels_and_specials() {
        let text = r#"
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 12
plain_metric 1e-3 1700000000000
escaped{path="a\"b\\c\nd",} NaN
"#;
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[0].name, "vllm:num_requests_running");
        assert_eq!(s[0].label("model_name"), Some("m"));
        assert_eq!(s[0].value, 3.0);
        assert_eq!(s[1].label("le"), Some("+Inf"));
        assert_eq!(s[2].value, 0.001);
        assert_eq!(s[3].label("path"), Some("a\"b\\c\nd"));
        assert!(s[3].value.is_nan());
    }

    #[test]
    fn reports_the_bad_line() {
        let err = parse("ok 1\nbad{x=1} 2\n").unwrap_err();
        assert_eq!(
            err,
            ParseError {
                line: 2,
                reason: "label value not quoted"
            }
        );
        assert!(parse("m{a=\"x\" 1").is_err());
        assert!(parse("m abc").is_err());
        assert!(parse("{a=\"b\"} 1").is_err());
        assert!(parse("m 1 2 3").is_err());
    }

    #[test]
    fn never_panics_on_garbage() {
        for s in [
            "{",
            "m{",
            "m{a",
            "m{a=",
            "m{a=\"",
            "m{a=\"\\",
            "m{a=\"x\"",
            "m{}",
            "é 1",
        ] {
            let _ = parse(s);
        }
    }
}
