//! Durations as people write them, parsed by one rule everywhere (the command line,
//! config files, the mock's settings): a humantime span (`500ms`, `30s`, `2m`,
//! `1h 30m`) or a bare number of seconds (`90`, `1.5`). Surrounding whitespace is
//! ignored; a bare number must be finite and >= 0.

use std::fmt;
use std::time::Duration;

/// Why a text is not a duration.
#[derive(Debug, Clone, PartialEq)]
pub enum DurationError {
    /// A bare number that is negative, not finite, or too large for a [`Duration`].
    Seconds,
    /// Not a number, and not a humantime span either.
    Span(humantime::DurationError),
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Seconds => f.write_str("a number of seconds must be finite and >= 0"),
            DurationError::Span(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DurationError {}

/// Parses a duration by the rule of this module.
pub fn parse(s: &str) -> Result<Duration, DurationError> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| DurationError::Seconds);
    }
    humantime::parse_duration(t).map_err(DurationError::Span)
}

/// Serde for an optional human duration in a config file (`500ms`, `2m`, or bare
/// seconds), written back in humantime's format.
pub mod opt_duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.collect_str(&humantime::format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => super::parse(&text).map(Some).map_err(|e| {
                serde::de::Error::custom(format!(
                    "invalid duration {text:?} ({e}); use e.g. 500ms, 30s, 2m"
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_bare_seconds() {
        assert_eq!(parse("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse(" 1.5 "), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("-1"), Err(DurationError::Seconds));
        assert_eq!(parse("inf"), Err(DurationError::Seconds));
        assert!(matches!(parse("soon"), Err(DurationError::Span(_))));
    }
}
