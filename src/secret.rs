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
}
