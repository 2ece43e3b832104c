//! `ConfigError`: a config problem located in its file, printed as
//! `FILE:LINE:COLUMN: FIELD: MESSAGE` (the shape compilers use, so editors can jump to it).

use std::fmt;

use crate::yaml_locate::{Path, locate};

/// A config file that cannot be used. Always the user's to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// The field path (`targets[0].rate`), when known.
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        f.write_str(": ")?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// An error about the node at `path` in `text`, located by walking the document.
    pub fn at(file: &str, text: &str, path: &Path, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_string(),
            position: locate(text, path),
            field: (!path.0.is_empty()).then(|| path.to_string()),
            message: message.into(),
        }
    }

    /// An error without a position (the file could not be read).
    pub fn file(file: &str, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_string(),
            position: None,
            field: None,
            message: message.into(),
        }
    }

    /// A serde_yaml_ng error: its message is `PATH: MESSAGE at line L column C`; the
    /// parts are split out so every config error prints the same way.
    pub fn from_yaml(file: &str, err: &serde_yaml_ng::Error) -> Self {
        let position = err.location().map(|l| (l.line(), l.column()));
        let mut text = err.to_string();
        if let Some((line, column)) = position {
            let suffix = format!(" at line {line} column {column}");
            if let Some(stripped) = text.strip_suffix(&suffix) {
                text = stripped.to_string();
            }
        }
        let (field, message) = match text.split_once(": ") {
            Some((path, rest)) if is_path(path) => (Some(path.to_string()), rest.to_string()),
            _ => (None, text),
        };
        ConfigError {
            file: file.to_string(),
            position,
            field,
            message: crate::secret::redact_quoted_values(&message),
        }
    }
}

/// Whether serde_yaml_ng's message prefix is a field path (`targets[0].rate`) rather
/// than the start of a sentence.
fn is_path(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']'))
}

impl From<ConfigError> for crate::exit::UsageError {
    fn from(e: ConfigError) -> Self {
        crate::exit::UsageError::new(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_a_yaml_type_error_is_not_echoed() {
        let text = "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    headers: \"Bearer sk-CANARY-9\"\n";
        let e = crate::config::plan::load_str(text, "c.yaml").unwrap_err();
        let shown = e.to_string();
        assert!(!shown.contains("CANARY"), "{shown}");
        assert!(shown.contains("<value>"), "{shown}");
    }

    #[test]
    fn prints_like_a_compiler() {
        let e = ConfigError {
            file: "d.yaml".into(),
            position: Some((3, 7)),
            field: Some("targets[0].rate".into()),
            message: "bad".into(),
        };
        assert_eq!(e.to_string(), "d.yaml:3:7: targets[0].rate: bad");
        assert_eq!(
            ConfigError::file("d.yaml", "no such file").to_string(),
            "d.yaml: no such file"
        );
    }
}
