//! Sharding and locations: which of N probers probes a target or a discovered replica
//! (a stable hash of its name, and of the replica's address, mod N), and the overrides
//! of the command line (`--shard I/N`, `--location`) on the config's own keys.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// This prober's share: index `index` of `count` shards (`0/1`: everything).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// This prober's shard, 0 ≤ index < count.
    pub index: u32,
    /// How many shards split the targets.
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// Checks 0 ≤ index < count.
    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            return Err("count must be at least 1".into());
        }
        if index >= count {
            return Err(format!(
                "index {index} is not below count {count} (shards are 0..{})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// Whether this shard probes the front door of target `name`.
    pub fn owns_target(&self, name: &str) -> bool {
        self.owns(&[name])
    }

    /// Whether this shard probes `replica` (`host:port`) of target `name`.
    pub fn owns_replica(&self, name: &str, replica: &str) -> bool {
        self.owns(&[name, replica])
    }

    fn owns(&self, parts: &[&str]) -> bool {
        self.count <= 1 || stable_hash(parts) % u64::from(self.count) == u64::from(self.index)
    }
}

/// FNV-1a over the parts, each followed by a 0 byte (so `("ab", "c")` and `("a",
/// "bc")` differ), then splitmix64's finalizer: FNV alone splits similar names unevenly
/// mod small counts. The same on every machine, build and run, unlike std's hasher.
pub fn stable_hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`, e.g. `0/3`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("{s:?} is not a shard I/N such as 0/3");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(i, n).map_err(|e| format!("{s:?}: {e}"))
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What the command line sets over the config file (`--location`, `--shard`): applied
/// before the config is checked, so `/config` shows what is in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub location: Option<String>,
    pub shard: Option<Shard>,
    /// `OTEL_SEMCONV_STABILITY_OPT_IN` as the process read it once at start: whose
    /// GenAI names the OTLP export emits (`otlp::semconv`); a reload keeps it.
    pub semconv_opt_in: Option<String>,
}

/// A location is a label value: short and printable.
pub fn check_location(location: &str) -> Result<(), String> {
    if location.is_empty() || location.len() > 128 {
        return Err("must be 1 to 128 characters".into());
    }
    if location.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_is_no_shard() {
        assert_eq!("1/3".parse::<Shard>(), Ok(Shard { index: 1, count: 3 }));
        assert_eq!("0/1".parse::<Shard>(), Ok(Shard::default()));
        for bad in ["3/3", "0/0", "a/b", "-1/2", "1", "1/2/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard::new(1, 3).unwrap().to_string(), "1/3");
    }

    #[test]
    fn every_name_has_exactly_one_shard_for_any_count() {
        let names: Vec<String> = (0..500).map(|i| format!("target-{i}")).collect();
        for count in 1..=5 {
            for name in &names {
                let owners = (0..count)
                    .filter(|&i| Shard::new(i, count).unwrap().owns_target(name))
                    .count();
                assert_eq!(owners, 1, "{name} in {count} shards");
                let replica_owners = (0..count)
                    .filter(|&i| {
                        Shard::new(i, count)
                            .unwrap()
                            .owns_replica(name, "10.0.0.5:8000")
                    })
                    .count();
                assert_eq!(replica_owners, 1);
            }
            // And the split is roughly even: no shard gets under half its share.
            for i in 0..count {
                let s = Shard::new(i, count).unwrap();
                let mine = names.iter().filter(|n| s.owns_target(n)).count();
                assert!(mine * 2 * count as usize >= names.len(), "{s}: {mine}");
            }
        }
    }

    #[test]
    fn the_hash_is_stable_and_separates_parts() {
        // Pinned: a change would move targets between shards on upgrade.
        assert_eq!(stable_hash(&["a"]), 0xd013_7a57_d0ef_408f);
        assert_ne!(stable_hash(&["ab", "c"]), stable_hash(&["a", "bc"]));
    }

    #[test]
    fn locations_are_short_printable_label_values() {
        assert!(check_location("eu-west-1").is_ok());
        assert!(check_location("").is_err());
        assert!(check_location("a\nb").is_err());
        assert!(check_location(&"x".repeat(129)).is_err());
    }
}
