//! Durations as people write them, parsed by one rule everywhere (the command line,
//! config files, the mock's settings): a humantime span (`500ms`, `30s`, `2m`,
//! `1h 30m`) or a bare number of seconds (`90`, `1.5`). Surrounding whitespace is
//! ignored; a bare number must be finite and >= 0.
//!
//! Also the serde helpers of such durations in config files ([`human`], [`opt_human`]).
//! A record's times are not written by this rule: they are seconds as floats, the
//! record format (`crate::record::secs`).

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

/// The error of a config value that is not a duration by [`parse`]'s rule.
fn invalid<E: serde::de::Error>(text: &str, e: DurationError) -> E {
    E::custom(format!(
        "invalid duration {text:?} ({e}); use e.g. 500ms, 30s, 2m"
    ))
}

/// `#[serde(with = "crate::duration::human")]`: a duration as a human string
/// (`"500ms"`, `"30s"`, `"2m"`), read by [`parse`]'s rule and written by humantime.
pub mod human {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        super::parse(&text).map_err(|e| super::invalid(&text, e))
    }
}

/// `#[serde(with = "crate::duration::opt_human")]`: an optional [`human`] duration
/// (null when absent).
pub mod opt_human {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::human::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => super::parse(&text)
                .map(Some)
                .map_err(|e| super::invalid(&text, e)),
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

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Config {
        #[serde(with = "human")]
        every: Duration,
        #[serde(with = "opt_human", default)]
        limit: Option<Duration>,
    }

    #[test]
    fn config_durations_round_trip_as_human_text() {
        let c: Config = serde_json::from_str(r#"{"every": "90", "limit": "1m 30s"}"#).unwrap();
        let d = Duration::from_secs(90);
        assert_eq!(
            c,
            Config {
                every: d,
                limit: Some(d)
            }
        );
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"every":"1m 30s","limit":"1m 30s"}"#
        );
        let none: Config = serde_json::from_str(r#"{"every": "2s", "limit": null}"#).unwrap();
        assert_eq!(none.limit, None);
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"every":"2s","limit":null}"#
        );
        let e = serde_json::from_str::<Config>(r#"{"every": "soon"}"#).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid duration \"soon\" ("),
            "{e}"
        );
        assert!(e.to_string().contains("; use e.g. 500ms, 30s, 2m"), "{e}");
    }
}
