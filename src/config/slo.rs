//! `slo:` in the config file: the same [`Slo`] as bench and the reports, written with
//! human durations (`ttft: 500ms`). Its keys, and their schema, are the latency
//! catalogue's objectives.

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;
use std::time::Duration;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::duration::opt_human;
use crate::latency::{Latency, Slo};

/// Latency objectives; a probe is good when it succeeds and meets every one set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SloConfig(pub Slo);

impl SloConfig {
    /// Objective by objective: a value set here wins over `fallback`'s.
    pub fn or(self, fallback: SloConfig) -> SloConfig {
        SloConfig(self.0.or(fallback.0))
    }
}

/// The keys `slo:` accepts, for serde's "expected one of" message.
static KEYS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| Latency::objectives().map(Latency::name).collect());

/// One value: a human duration (`500ms`, `2s`) or null.
struct Human(Option<Duration>);

impl<'de> Deserialize<'de> for Human {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Human, D::Error> {
        opt_human::deserialize(d).map(Human)
    }
}

impl Serialize for Human {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        opt_human::serialize(&self.0, s)
    }
}

impl Serialize for SloConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (l, limit) in self.0.iter() {
            map.serialize_entry(l.name(), &Human(Some(limit)))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SloConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SloConfig, D::Error> {
        d.deserialize_map(SloVisitor)
    }
}

struct SloVisitor;

impl<'de> Visitor<'de> for SloVisitor {
    type Value = SloConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("latency objectives such as `ttft: 500ms`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SloConfig, A::Error> {
        let mut slo = Slo::default();
        let mut seen = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some(l) = Latency::objectives().find(|l| l.name() == key) else {
                return Err(serde::de::Error::unknown_field(&key, &KEYS));
            };
            if seen.contains(&l) {
                return Err(serde::de::Error::duplicate_field(l.name()));
            }
            seen.push(l);
            let Human(limit) = map.next_value()?;
            slo.set(l, limit).map_err(serde::de::Error::custom)?;
        }
        Ok(SloConfig(slo))
    }
}

impl schemars::JsonSchema for SloConfig {
    fn schema_name() -> Cow<'static, str> {
        "SloConfig".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let properties: serde_json::Map<String, serde_json::Value> = Latency::objectives()
            .filter_map(|l| l.objective().map(|o| (l, o)))
            .map(|(l, o)| {
                let property = serde_json::json!({
                    "description": o.config_help,
                    "type": ["string", "null"],
                });
                (l.name().to_string(), property)
            })
            .collect();
        schemars::json_schema!({
            "description": "Latency objectives; a probe is good when it succeeds and meets every one set.",
            "type": "object",
            "properties": properties,
            "additionalProperties": false
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_round_trip_and_unknown_keys_are_named() {
        let slo: SloConfig = serde_yaml_ng::from_str("ttft: 500ms\nttfa: 2s\n").unwrap();
        assert_eq!(slo.0.limit(Latency::Ttft), Some(Duration::from_millis(500)));
        assert_eq!(slo.0.limit(Latency::Ttfa), Some(Duration::from_secs(2)));
        assert_eq!(
            serde_json::to_string(&slo).unwrap(),
            r#"{"ttft":"500ms","ttfa":"2s"}"#
        );
        let err = serde_yaml_ng::from_str::<SloConfig>("ttfb: 1s\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("unknown field `ttfb`, expected one of `ttft`, `tpot`, `e2e`, `ttfa`"),
            "{err}"
        );
        assert!(serde_yaml_ng::from_str::<SloConfig>("itl: 1s\n").is_err());
    }
}
