//! [`Slo`]: the latency objectives a request must meet to count as good, keyed by
//! latency. One type for bench flags, the daemon's config and the reports; this file
//! also holds its report format (seconds, as every record time is). The config file's
//! format (human durations) is the config's (`config/slo.rs`).

use std::fmt;
use std::time::Duration;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Latency;

/// A threshold per latency an objective may bound; `None` = not configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slo {
    limits: [Option<Duration>; Latency::COUNT],
}

impl Slo {
    /// The configured threshold of one latency, if any.
    pub fn limit(&self, l: Latency) -> Option<Duration> {
        self.limits[l.index()]
    }

    /// Sets (or clears) one threshold. Refused for a latency no objective may bound.
    pub fn set(&mut self, l: Latency, limit: Option<Duration>) -> Result<(), String> {
        if l.objective().is_none() {
            return Err(format!("no objective can bound {l}"));
        }
        self.limits[l.index()] = limit;
        Ok(())
    }

    /// The same objectives with `l` bounded by `limit`. Refused like [`Slo::set`].
    pub fn with(mut self, l: Latency, limit: Duration) -> Result<Slo, String> {
        self.set(l, Some(limit))?;
        Ok(self)
    }

    /// Objectives from `(latency, threshold)` pairs. Refused like [`Slo::set`].
    pub fn of(limits: impl IntoIterator<Item = (Latency, Duration)>) -> Result<Slo, String> {
        limits
            .into_iter()
            .try_fold(Slo::default(), |slo, (l, d)| slo.with(l, d))
    }

    /// Every configured objective, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Latency, Duration)> + '_ {
        Latency::objectives().filter_map(|l| self.limit(l).map(|d| (l, d)))
    }

    /// What a report writes, in order: vLLM's objectives always (`None` when unset),
    /// llmprobe's own only when set, so reports read like vLLM's.
    pub fn reported(&self) -> impl Iterator<Item = (Latency, Option<Duration>)> + '_ {
        Latency::objectives()
            .map(|l| (l, self.limit(l)))
            .filter(|(l, limit)| limit.is_some() || l.user().is_some_and(|u| u.vllm))
    }

    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Objective by objective: a value set here wins over `fallback`'s.
    pub fn or(mut self, fallback: Slo) -> Slo {
        for (mine, theirs) in self.limits.iter_mut().zip(fallback.limits) {
            *mine = mine.or(theirs);
        }
        self
    }

    /// The first objective a whole (non-streamed) answer cannot meet: one on a latency
    /// only a streamed answer has.
    pub fn needing_streaming(&self) -> Option<Latency> {
        self.iter().map(|(l, _)| l).find(|l| l.needs_streaming())
    }
}

/// The report format: an object keyed by latency name with seconds
/// ([`Slo::reported`]).
impl Serialize for Slo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (l, limit) in self.reported() {
            map.serialize_entry(l.name(), &limit.map(|d| d.as_secs_f64()))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Slo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Slo, D::Error> {
        d.deserialize_map(SecondsVisitor)
    }
}

struct SecondsVisitor;

impl<'de> Visitor<'de> for SecondsVisitor {
    type Value = Slo;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("latency objectives in seconds")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slo, A::Error> {
        let mut slo = Slo::default();
        let mut seen = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            // Reports from other versions may carry keys this one does not know, with
            // any value.
            let Some(l) = Latency::objectives().find(|l| l.name() == key) else {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            };
            if seen.contains(&l) {
                return Err(serde::de::Error::duplicate_field(l.name()));
            }
            seen.push(l);
            let secs: Option<f64> = map.next_value()?;
            let limit = secs
                .map(|v| Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom))
                .transpose()?;
            slo.set(l, limit).map_err(serde::de::Error::custom)?;
        }
        Ok(slo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn the_report_format_writes_vllms_objectives_always_and_ttfa_when_set() {
        let slo = Slo::default().with(Latency::Ttft, ms(500)).unwrap();
        assert_eq!(
            serde_json::to_string(&slo).unwrap(),
            r#"{"ttft":0.5,"tpot":null,"e2e":null}"#
        );
        let slo = slo.with(Latency::Ttfa, ms(2000)).unwrap();
        let json = serde_json::to_string(&slo).unwrap();
        assert_eq!(json, r#"{"ttft":0.5,"tpot":null,"e2e":null,"ttfa":2.0}"#);
        assert_eq!(serde_json::from_str::<Slo>(&json).unwrap(), slo);
        assert!(serde_json::from_str::<Slo>(r#"{"ttft":-1}"#).is_err());
        let newer = r#"{"ttft":0.5,"future":{"a":[1]},"later":"x","itl":null}"#;
        let read = serde_json::from_str::<Slo>(newer).unwrap();
        assert_eq!(read, Slo::default().with(Latency::Ttft, ms(500)).unwrap());
        let twice = serde_json::from_str::<Slo>(r#"{"ttft":0.5,"ttft":0.9}"#);
        assert!(
            twice
                .unwrap_err()
                .to_string()
                .contains("duplicate field `ttft`")
        );
    }

    #[test]
    fn only_objective_latencies_are_settable_and_fallbacks_fill_gaps() {
        assert!(Slo::default().with(Latency::Itl, ms(1)).is_err());
        let mine = Slo::default().with(Latency::Ttft, ms(100)).unwrap();
        let theirs = Slo::default()
            .with(Latency::Ttft, ms(900))
            .and_then(|s| s.with(Latency::E2e, ms(5000)))
            .unwrap();
        let both = mine.or(theirs);
        assert_eq!(both.limit(Latency::Ttft), Some(ms(100)));
        assert_eq!(both.limit(Latency::E2e), Some(ms(5000)));
        assert_eq!(both.needing_streaming(), Some(Latency::Ttft));
        let e2e_only = Slo::default().with(Latency::E2e, ms(1)).unwrap();
        assert_eq!(e2e_only.needing_streaming(), None);
    }
}
