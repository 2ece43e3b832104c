//! `Secret`: a string that must never be printed (API keys, auth headers). Its `Debug`,
//! `Display` and `Serialize` all print `<secret>`; the only way to the value is
//! [`Secret::expose`], so a leak has to be written on purpose and is easy to grep for.
//!
//! It deserializes from a plain string so config files can carry it; reading it from a
//! file or an environment variable (the only places a key should live) is done with
//! [`Secret::from_file`] / [`Secret::from_env`].

use std::fmt;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What every redacted value prints as.
pub const REDACTED: &str = "<secret>";

/// A secret string. Compare with [`Secret::expose`]; there is deliberately no `Deref`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value. Call it only where the value is sent (an HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads a secret from a file (a Kubernetes Secret mounted as a file, typically).
    /// Surrounding whitespace, including the trailing newline editors add, is removed.
    /// The error names the file, never the content.
    pub fn from_file(path: &Path) -> anyhow::Result<Secret> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading secret file {}", path.display()))?;
        let value = text.trim();
        if value.is_empty() {
            crate::usage_bail!("secret file {} is empty", path.display());
        }
        Ok(Secret(value.to_string()))
    }

    /// Reads a secret from an environment variable; `None` when it is unset or empty.
    pub fn from_env(var: &str) -> Option<Secret> {
        std::env::var(var)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(Secret)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

impl schemars::JsonSchema for Secret {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Secret".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A secret value; printed as <secret> everywhere."
        })
    }
}

/// Shortest tail of a cut-off text that is treated as the start of a secret.
const SECRET_PREFIX_MIN: usize = 4;

/// Replaces every secret in a text with `<secret>`: servers and gateways may echo the
/// rejected key or headers in their error bodies, and such texts go to logs, status
/// pages and bench's `--records`. The text may have been cut short (an error body is
/// truncated), so a text that ends with the start of a secret (at least
/// [`SECRET_PREFIX_MIN`] bytes of it, before a `…` mark) loses that tail too. Empty
/// secrets are ignored.
pub fn scrub<'a>(text: &str, secrets: impl IntoIterator<Item = &'a str>) -> String {
    let mut text = text.to_string();
    for secret in secrets.into_iter().filter(|s| !s.is_empty()) {
        if text.contains(secret) {
            text = text.replace(secret, REDACTED);
        }
        let body = text.strip_suffix('…').unwrap_or(&text);
        let cut = (SECRET_PREFIX_MIN..secret.len())
            .rev()
            .filter(|&i| secret.is_char_boundary(i))
            .find(|&i| body.ends_with(&secret[..i]));
        if let Some(i) = cut {
            let keep = body.len() - i;
            text = format!("{}{REDACTED}…", &text[..keep]);
        }
    }
    text
}

/// A URL as `/config` shows it: a userinfo password and the query string (where
/// gateways take tokens, `?key=…`) become `<secret>`; scheme, user, host, port and path
/// stay. Works on the text, so it never re-encodes what it keeps.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:{REDACTED}@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => match query.split_once('#') {
            Some((_, fragment)) => format!("{path}?{REDACTED}#{fragment}"),
            None => format!("{path}?{REDACTED}"),
        },
        None => tail.to_string(),
    };
    match scheme {
        Some(s) => format!("{s}://{authority}{tail}"),
        None => format!("{authority}{tail}"),
    }
}

/// What a value quoted in a parse error is replaced by.
pub const REDACTED_VALUE: &str = "<value>";

/// Replaces every value serde_yaml_ng quotes in a message (`string "…"`, `unknown
/// variant `…``) by `<value>`: the value may be a secret pasted in the wrong place
/// (`headers: "Bearer sk-…"`), and these messages reach logs, `/-/reload` replies and
/// `--config.check` output. Field names and the expected alternatives stay.
pub fn redact_quoted_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find('"') {
        out.push_str(&rest[..start]);
        // Rust's `{:?}` quoting: a closing quote is one not preceded by a backslash.
        let body = &rest[start + 1..];
        let mut end = None;
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        out.push_str(REDACTED_VALUE);
        match end {
            Some(i) => rest = &body[i + 1..],
            None => return out,
        }
    }
    out.push_str(rest);
    const VARIANT: &str = "unknown variant `";
    if let Some(i) = out.find(VARIANT)
        && let Some(len) = out[i + VARIANT.len()..].find('`')
    {
        let value_end = i + VARIANT.len() + len + 1;
        out.replace_range(i + VARIANT.len() - 1..value_end, REDACTED_VALUE);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "sk-canary-5f1e2d";

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new(CANARY);
        assert_eq!(format!("{s}"), REDACTED);
        assert_eq!(format!("{s:?}"), REDACTED);
        assert_eq!(format!("{:?}", Some(&s)), "Some(<secret>)");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"<secret>\"");
        assert_eq!(s.expose(), CANARY);
    }

    #[test]
    fn deserializes_from_a_plain_string() {
        let s: Secret = serde_json::from_str(&format!("\"{CANARY}\"")).unwrap();
        assert_eq!(s.expose(), CANARY);
    }

    #[test]
    fn reads_files_trimmed_and_rejects_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, format!("{CANARY}\n")).unwrap();
        assert_eq!(Secret::from_file(&path).unwrap().expose(), CANARY);
        std::fs::write(&path, "\n").unwrap();
        let err = Secret::from_file(&path).unwrap_err();
        assert_eq!(crate::exit::code_for(&err), crate::exit::USAGE);
        let missing = Secret::from_file(&dir.path().join("nope")).unwrap_err();
        assert!(format!("{missing:#}").contains("nope"));
    }

    #[test]
    fn secrets_are_scrubbed_even_when_cut_off() {
        let secrets = ["sk-abcdef123", "hdr-value", ""];
        let scrub = |t: &str| scrub(t, secrets);
        assert_eq!(
            scrub("401: bad key Bearer sk-abcdef123 (hdr-value, sk-abcdef123)"),
            "401: bad key Bearer <secret> (<secret>, <secret>)"
        );
        assert_eq!(scrub("echo: Bearer sk-abcd…"), "echo: Bearer <secret>…");
        assert_eq!(scrub("echo: Bearer sk-abcd"), "echo: Bearer <secret>…");
        // Three bytes of a secret are not treated as one (they would hit ordinary text).
        assert_eq!(scrub("ends with sk-"), "ends with sk-");
        assert_eq!(scrub("nothing here"), "nothing here");
    }

    #[test]
    fn urls_lose_passwords_and_query_strings() {
        assert_eq!(
            redact_url("https://user:pa:ss@llm.example:8443/v1?key=sk-1&x=2#f"),
            "https://user:<secret>@llm.example:8443/v1?<secret>#f"
        );
        assert_eq!(
            redact_url("http://user@llm:8000/v1"),
            "http://user@llm:8000/v1"
        );
        assert_eq!(redact_url("http://llm:8000"), "http://llm:8000");
        assert_eq!(
            redact_url("http://llm:8000/metrics?token=t"),
            "http://llm:8000/metrics?<secret>"
        );
    }

    #[test]
    fn quoted_values_are_redacted() {
        assert_eq!(
            redact_quoted_values(r#"invalid type: string "Bearer sk-CANARY", expected a map"#),
            "invalid type: string <value>, expected a map"
        );
        assert_eq!(
            redact_quoted_values(r#"bad "a \"q\" b" and "c""#),
            "bad <value> and <value>"
        );
        assert_eq!(redact_quoted_values(r#"open "sk-x"#), "open <value>");
        assert_eq!(
            redact_quoted_values("unknown variant `sk-x`, expected `chat` or `completions`"),
            "unknown variant <value>, expected `chat` or `completions`"
        );
        assert_eq!(
            redact_quoted_values("unknown field `foo`, expected one of `a`"),
            "unknown field `foo`, expected one of `a`"
        );
    }
}
