//! `ProbeRate`: a probe rate in config files, per second, minute or hour (`"2/min"`,
//! `"0.5/s"`, `"30/h"`, or a bare number meaning per second). Validated while parsing,
//! so a bad rate is reported with its line and column.
//!
//! A probe rate is not [`crate::rate::Rate`], the request rate of `bench`: it remembers
//! the unit it was written in (so `/config` shows the user's own spelling), is always
//! finite, and is written back as `"2/min"`; its value is [`ProbeRate::hz`] per second.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Probes per second, always finite and > 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeRate {
    per_second: f64,
    /// How it was written, kept so `/config` shows the user's own unit.
    unit: RateUnit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RateUnit {
    Second,
    Minute,
    Hour,
}

impl RateUnit {
    fn seconds(self) -> f64 {
        match self {
            RateUnit::Second => 1.0,
            RateUnit::Minute => 60.0,
            RateUnit::Hour => 3600.0,
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            RateUnit::Second => "s",
            RateUnit::Minute => "min",
            RateUnit::Hour => "h",
        }
    }
}

impl ProbeRate {
    /// The default probe rate of a target.
    pub const ONE_PER_MINUTE: ProbeRate = ProbeRate {
        per_second: 1.0 / 60.0,
        unit: RateUnit::Minute,
    };

    /// The default rate of the daemon's self-check.
    pub const SIX_PER_MINUTE: ProbeRate = ProbeRate {
        per_second: 0.1,
        unit: RateUnit::Minute,
    };

    pub fn per_second(v: f64) -> Result<ProbeRate, String> {
        ProbeRate::new(v, RateUnit::Second)
    }

    fn new(count: f64, unit: RateUnit) -> Result<ProbeRate, String> {
        if !count.is_finite() || count <= 0.0 {
            return Err(format!(
                "rate must be a positive number, got {count}/{}",
                unit.suffix()
            ));
        }
        Ok(ProbeRate {
            per_second: count / unit.seconds(),
            unit,
        })
    }

    /// Probes per second.
    pub fn hz(self) -> f64 {
        self.per_second
    }

    /// This rate divided among `n` runners (a target's rate shared by its scenarios).
    pub fn split(self, n: usize) -> ProbeRate {
        ProbeRate {
            per_second: self.per_second / n.max(1) as f64,
            unit: self.unit,
        }
    }
}

impl std::str::FromStr for ProbeRate {
    type Err = String;

    fn from_str(s: &str) -> Result<ProbeRate, String> {
        let t = s.trim();
        let (num, unit) = match t.split_once('/') {
            None => (t, RateUnit::Second),
            Some((n, u)) => {
                let unit = match u.trim() {
                    "s" | "sec" | "second" => RateUnit::Second,
                    "m" | "min" | "minute" => RateUnit::Minute,
                    "h" | "hour" => RateUnit::Hour,
                    other => {
                        return Err(format!(
                            "invalid rate {s:?}: unknown unit {other:?} (use /s, /min or /h)"
                        ));
                    }
                };
                (n.trim(), unit)
            }
        };
        let count: f64 = num.parse().map_err(|_| {
            format!("invalid rate {s:?}: expected a number and a unit, e.g. \"2/min\" or \"0.5/s\"")
        })?;
        ProbeRate::new(count, unit)
    }
}

impl fmt::Display for ProbeRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.per_second * self.unit.seconds();
        // Round away float noise from the division (2/min → 0.0333…/s → 2).
        let count = (count * 1e9).round() / 1e9;
        write!(f, "{count}/{}", self.unit.suffix())
    }
}

impl Serialize for ProbeRate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ProbeRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProbeRate, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ProbeRate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rate such as \"2/min\", \"0.5/s\" or a number per second")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ProbeRate, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ProbeRate, E> {
                ProbeRate::per_second(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ProbeRate, E> {
                ProbeRate::per_second(v as f64).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ProbeRate, E> {
                ProbeRate::per_second(v as f64).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for ProbeRate {
    fn schema_name() -> Cow<'static, str> {
        // The name `docs/config.schema.json` publishes; the config key is `rate`.
        "Rate".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Probes per second as a number, or \"N/s\", \"N/min\", \"N/h\".",
            "oneOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {"type": "string", "pattern": "^\\s*[0-9.eE+-]+\\s*(/\\s*(s|sec|second|m|min|minute|h|hour)\\s*)?$"}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        let r: ProbeRate = "2/min".parse().unwrap();
        assert!((r.hz() - 2.0 / 60.0).abs() < 1e-12);
        assert_eq!(r.to_string(), "2/min");
        assert_eq!("0.5/s".parse::<ProbeRate>().unwrap().hz(), 0.5);
        assert_eq!("36/h".parse::<ProbeRate>().unwrap().hz(), 0.01);
        assert_eq!("3".parse::<ProbeRate>().unwrap().hz(), 3.0);
        let y: ProbeRate = serde_yaml_ng::from_str("1.5").unwrap();
        assert_eq!(y.hz(), 1.5);
    }

    #[test]
    fn rejects_bad_rates() {
        assert_eq!(
            "0/s".parse::<ProbeRate>().unwrap_err(),
            "rate must be a positive number, got 0/s"
        );
        assert!(
            "5/day"
                .parse::<ProbeRate>()
                .unwrap_err()
                .contains("unknown unit \"day\"")
        );
        assert!(
            "fast"
                .parse::<ProbeRate>()
                .unwrap_err()
                .contains("expected a number")
        );
        assert!("-1/min".parse::<ProbeRate>().is_err());
        assert!("inf".parse::<ProbeRate>().is_err());
    }

    #[test]
    fn split_shares_the_rate() {
        let r: ProbeRate = "3/min".parse().unwrap();
        assert!((r.split(3).hz() - 1.0 / 60.0).abs() < 1e-12);
    }
}
