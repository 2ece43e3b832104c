//! The YAML of a target's `replicas_from:` (where the replicas behind its front door
//! are found): one key per source kind, read, printed and described from discovery's
//! list of kinds ([`KINDS`]), plus the keys every kind shares. `replicas.rs` checks and
//! plans it.

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::discovery::{DEFAULT_MAX_REPLICAS, KINDS, Kind, SourceBlock};

/// The path of each replica's engine metrics unless `engine_metrics_path` says.
pub const DEFAULT_ENGINE_METRICS_PATH: &str = "/metrics";

// The keys every kind shares, in the order they print.
const RESOLVER: &str = "resolver";
const LABELS: &str = "labels";
const MAX_REPLICAS: &str = "max_replicas";

/// Every key `replicas_from:` takes, for serde's "expected one of" message.
static KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let kinds = KINDS.iter().map(|k| k.name);
    kinds.chain([RESOLVER, LABELS, MAX_REPLICAS]).collect()
});

/// Where a target's replicas come from: exactly one source, plus how to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicasFrom {
    /// The sources set, in the order of [`KINDS`]; the checks let exactly one through.
    pub sources: Vec<SourceBlock>,
    /// `resolver:`: the DNS server of the kinds that resolve, `IP:PORT`.
    pub resolver: Option<String>,
    /// `labels:`: the SD labels that become series labels.
    pub labels: Vec<String>,
    /// `max_replicas:`: most replicas probed.
    pub max_replicas: u32,
}

fn default_max_replicas() -> u32 {
    u32::try_from(DEFAULT_MAX_REPLICAS).unwrap_or(u32::MAX)
}

/// The names of the kinds that `pick` selects, written with `show`, joined by `, ` and
/// `last` before the last one (`dns, srv or static` with `last` = ` or `).
pub(super) fn kind_list(pick: fn(&Kind) -> bool, show: fn(&str) -> String, last: &str) -> String {
    let names: Vec<String> = KINDS
        .iter()
        .filter(|k| pick(k))
        .map(|k| show(k.name))
        .collect();
    match names.split_last() {
        Some((tail, head)) if !head.is_empty() => format!("{}{last}{tail}", head.join(", ")),
        _ => names.concat(),
    }
}

impl Serialize for ReplicasFrom {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for source in &self.sources {
            map.serialize_entry(source.name(), source)?;
        }
        if let Some(r) = &self.resolver {
            map.serialize_entry(RESOLVER, r)?;
        }
        if !self.labels.is_empty() {
            map.serialize_entry(LABELS, &self.labels)?;
        }
        map.serialize_entry(MAX_REPLICAS, &self.max_replicas)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ReplicasFrom {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ReplicasFrom, D::Error> {
        d.deserialize_map(ReplicasFromVisitor)
    }
}

struct ReplicasFromVisitor;

impl<'de> Visitor<'de> for ReplicasFromVisitor {
    type Value = ReplicasFrom;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct ReplicasFrom")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReplicasFrom, A::Error> {
        let mut from = ReplicasFrom {
            sources: Vec::new(),
            resolver: None,
            labels: Vec::new(),
            max_replicas: default_max_replicas(),
        };
        let mut seen: Vec<&'static str> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some(&key) = KEYS.iter().find(|k| **k == key) else {
                return Err(de::Error::unknown_field(&key, &KEYS));
            };
            if seen.contains(&key) {
                return Err(de::Error::duplicate_field(key));
            }
            seen.push(key);
            match key {
                RESOLVER => from.resolver = map.next_value()?,
                LABELS => from.labels = map.next_value()?,
                MAX_REPLICAS => from.max_replicas = map.next_value()?,
                kind => match SourceBlock::next_value(kind, &mut map) {
                    Some(block) => from.sources.extend(block?),
                    None => {
                        map.next_value::<de::IgnoredAny>()?;
                    }
                },
            }
        }
        from.sources.sort_by_key(SourceBlock::rank);
        Ok(from)
    }
}

impl JsonSchema for ReplicasFrom {
    fn schema_name() -> Cow<'static, str> {
        "ReplicasFrom".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let mut properties = serde_json::Map::new();
        for kind in KINDS {
            properties.insert(kind.name.into(), described((kind.schema)(g), kind.help));
        }
        let resolver = format!(
            "The DNS server of {} lookups, `IP:PORT` (default: the system's).",
            kind_list(|k| k.resolves, |n| format!("`{n}`"), " and "),
        );
        let labels = format!(
            "SD labels ({}) that become series labels; all others are dropped,\nto bound the \
             series count.",
            kind_list(|k| k.labels, str::to_string, ", "),
        );
        let mut max_replicas = g.subschema_for::<u32>();
        max_replicas.insert("default".into(), default_max_replicas().into());
        for (key, schema, help) in [
            (
                RESOLVER,
                g.subschema_for::<Option<String>>(),
                resolver.as_str(),
            ),
            (LABELS, g.subschema_for::<Vec<String>>(), labels.as_str()),
            (
                MAX_REPLICAS,
                max_replicas,
                "Most replicas probed; more are refused (counted and logged).",
            ),
        ] {
            properties.insert(key.into(), described(schema, help));
        }
        schemars::json_schema!({
            "description": "Where a target's replicas come from: exactly one source, plus how to read it.",
            "type": "object",
            "properties": properties,
            "additionalProperties": false
        })
    }
}

fn described(mut schema: Schema, help: &str) -> serde_json::Value {
    schema.insert("description".into(), help.into());
    schema.to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ReplicasFrom, String> {
        serde_yaml_ng::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_block_prints_as_it_was_written_with_the_shared_keys_after() {
        let from = read("resolver: 127.0.0.1:53\nsrv: {name: _http._tcp.svc, interval: 5s}\n");
        let printed = serde_yaml_ng::to_string(&from.unwrap()).unwrap();
        assert_eq!(
            printed,
            "srv:\n  name: _http._tcp.svc\n  interval: 5s\nresolver: 127.0.0.1:53\nmax_replicas: 64\n"
        );
        let from = read("static: [http://a:1]\nlabels: [zone]\nmax_replicas: 3\n").unwrap();
        let printed = serde_yaml_ng::to_string(&from).unwrap();
        assert_eq!(
            printed,
            "static:\n- http://a:1\nlabels:\n- zone\nmax_replicas: 3\n"
        );
    }

    #[test]
    fn sources_are_kept_in_the_order_of_the_kinds_and_a_null_one_is_unset() {
        let from = read("static: [http://a:1]\ndns: {name: a, port: 1}\nsrv: null\n").unwrap();
        let kinds: Vec<&str> = from.sources.iter().map(SourceBlock::name).collect();
        assert_eq!(kinds, ["dns", "static"]);
    }

    #[test]
    fn unknown_and_repeated_keys_are_refused() {
        let e = read("dnss: a\n").unwrap_err();
        assert!(
            e.contains(
                "unknown field `dnss`, expected one of `dns`, `srv`, `file_sd`, `http_sd`, \
                 `static`, `resolver`, `labels`, `max_replicas`"
            ),
            "{e}"
        );
        let e = read("max_replicas: 1\nmax_replicas: 2\n").unwrap_err();
        assert!(e.contains("duplicate"), "{e}");
    }

    #[test]
    fn kind_lists_read_as_sentences() {
        assert_eq!(
            kind_list(|_| true, str::to_string, " or "),
            "dns, srv, file_sd, http_sd or static"
        );
        assert_eq!(
            kind_list(|k| k.resolves, |n| format!("`{n}`"), " and "),
            "`dns` and `srv`"
        );
        assert_eq!(
            kind_list(|k| k.labels, str::to_string, ", "),
            "file_sd, http_sd"
        );
        assert_eq!(kind_list(|_| false, str::to_string, " or "), "");
    }
}
