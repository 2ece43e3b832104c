//! The replica set: replicas as `host:port` with the base URL's scheme and the SD
//! labels that the allow-list lets through, bounded by `max_replicas` in a stable order.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use super::DiscoveryError;

/// How many replicas a set keeps unless configured otherwise.
pub const DEFAULT_MAX_REPLICAS: usize = 64;

/// One address a source found, before the set's rules apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `host:port` (an IPv6 host in brackets), checked by [`host_port`].
    pub host_port: String,
    /// The SD labels of the address's target group (empty for static and DNS).
    pub labels: BTreeMap<String, String>,
}

impl Found {
    pub fn new(host_port: String) -> Self {
        Found {
            host_port,
            labels: BTreeMap::new(),
        }
    }

    pub fn from_socket(addr: SocketAddr) -> Self {
        Found::new(addr.to_string())
    }
}

/// One replica of a target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Replica {
    /// `host:port`: the value of the `replica` label.
    pub host_port: String,
    /// SD labels that passed the allow-list.
    pub labels: BTreeMap<String, String>,
}

/// A target's replicas, sorted by `host:port`, at most `max_replicas` of them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplicaSet {
    /// `http` or `https`: the target's base URL scheme, used for every replica.
    pub scheme: String,
    pub replicas: Vec<Replica>,
    /// How many distinct addresses were found beyond `max_replicas` and left out.
    pub refused: usize,
}

impl ReplicaSet {
    /// The base URL of one replica (`http://10.0.0.5:8000`).
    pub fn url(&self, replica: &Replica) -> String {
        format!("{}://{}", self.scheme, replica.host_port)
    }

    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }
}

/// Which SD label names may become series labels; all others are dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelAllowList(BTreeSet<String>);

impl LabelAllowList {
    /// Each name must be a Prometheus label name, not reserved (`__*`) and none of the
    /// labels llmprobe sets itself ([`OWN_LABELS`]).
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(
        names: I,
    ) -> Result<Self, DiscoveryError> {
        let mut set = BTreeSet::new();
        for name in names {
            let name = name.into();
            check_label_name(&name)?;
            set.insert(name);
        }
        Ok(LabelAllowList(set))
    }

    fn filter(&self, labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        labels
            .iter()
            .filter(|(k, _)| self.0.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// The labels llmprobe's replica series carry already.
pub const OWN_LABELS: [&str; 4] = ["target", "model", "scenario", "replica"];

fn check_label_name(name: &str) -> Result<(), DiscoveryError> {
    let what = format!("labels: {name:?}");
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(DiscoveryError::input(
            what,
            "not a label name ([a-zA-Z_][a-zA-Z0-9_]*)",
        ));
    }
    if name.starts_with("__") || OWN_LABELS.contains(&name) {
        return Err(DiscoveryError::input(
            what,
            "reserved: `__` names and llmprobe's own labels (target, model, scenario, replica) cannot come from SD",
        ));
    }
    Ok(())
}

/// The rules a set is built by: the scheme, the allow-list and the bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetRules {
    pub scheme: String,
    pub allow: LabelAllowList,
    pub max_replicas: usize,
}

impl SetRules {
    /// `scheme` is the target's base URL scheme; `max_replicas` must be at least 1.
    pub fn new(
        scheme: &str,
        allow: LabelAllowList,
        max_replicas: usize,
    ) -> Result<Self, DiscoveryError> {
        if scheme != "http" && scheme != "https" {
            return Err(DiscoveryError::input(
                format!("scheme {scheme:?}"),
                "must be http or https",
            ));
        }
        if max_replicas == 0 {
            return Err(DiscoveryError::input(
                "max_replicas: 0",
                "must be at least 1",
            ));
        }
        Ok(SetRules {
            scheme: scheme.to_string(),
            allow,
            max_replicas,
        })
    }

    /// The set of what was found: duplicates merged (the first one's labels kept),
    /// sorted by `host:port` so that the bound keeps the same replicas on every refresh.
    pub fn build(&self, found: Vec<Found>) -> ReplicaSet {
        let mut by_address: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for f in found {
            by_address
                .entry(f.host_port)
                .or_insert_with(|| self.allow.filter(&f.labels));
        }
        let refused = by_address.len().saturating_sub(self.max_replicas);
        let replicas = by_address
            .into_iter()
            .take(self.max_replicas)
            .map(|(host_port, labels)| Replica { host_port, labels })
            .collect();
        ReplicaSet {
            scheme: self.scheme.clone(),
            replicas,
            refused,
        }
    }
}

/// Checks `host:port` (an IPv6 host in brackets) and returns it unchanged.
pub fn host_port(text: &str, origin: &str) -> Result<String, DiscoveryError> {
    let bad = |reason: &str| DiscoveryError::input(format!("{origin}: {text:?}"), reason);
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| bad("not host:port (the port is required)"))?;
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
        }
    };
    if !host_ok {
        return Err(bad("bad host (an IPv6 address goes in brackets)"));
    }
    check_port(port).map_err(|reason| bad(&reason))?;
    Ok(text.to_string())
}

/// A TCP port: 1..=65535.
pub fn check_port(port: &str) -> Result<u16, String> {
    match port.parse::<u16>() {
        Ok(0) => Err("port 0 is not a port".into()),
        Ok(p) => Ok(p),
        Err(_) => Err(format!("bad port {port:?} (1..65535)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(h: &str, labels: &[(&str, &str)]) -> Found {
        Found {
            host_port: h.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn the_allow_list_keeps_only_its_labels() {
        let rules = SetRules::new("http", LabelAllowList::new(["zone"]).unwrap(), 64).unwrap();
        let set = rules.build(vec![found("a:1", &[("zone", "z1"), ("pod", "p-123")])]);
        let labels: Vec<_> = set.replicas[0].labels.iter().collect();
        assert_eq!(labels, [(&"zone".to_string(), &"z1".to_string())]);
        assert_eq!(set.url(&set.replicas[0]), "http://a:1");
    }

    #[test]
    fn the_allow_list_refuses_reserved_and_bad_names() {
        for bad in [
            "replica", "target", "model", "scenario", "__meta_x", "1abc", "a-b", "",
        ] {
            let e = LabelAllowList::new([bad]).unwrap_err();
            assert_eq!(e.reason(), "input", "{bad}: {e}");
        }
    }

    #[test]
    fn max_replicas_keeps_the_first_in_address_order_and_counts_the_rest() {
        let rules = SetRules::new("https", LabelAllowList::default(), 2).unwrap();
        let set = rules.build(vec![
            found("c:1", &[]),
            found("a:1", &[]),
            found("b:1", &[]),
            found("a:1", &[]),
        ]);
        let kept: Vec<_> = set.replicas.iter().map(|r| r.host_port.as_str()).collect();
        assert_eq!(kept, ["a:1", "b:1"]);
        assert_eq!(set.refused, 1);
        // The same input in another order gives the same set.
        let again = rules.build(vec![
            found("b:1", &[]),
            found("a:1", &[]),
            found("c:1", &[]),
        ]);
        assert_eq!(again, set);
    }

    #[test]
    fn rules_refuse_a_zero_bound_and_an_unknown_scheme() {
        assert!(SetRules::new("http", LabelAllowList::default(), 0).is_err());
        assert!(SetRules::new("ftp", LabelAllowList::default(), 1).is_err());
    }

    #[test]
    fn host_port_takes_names_ipv4_and_bracketed_ipv6() {
        for ok in ["vllm-0.svc:8000", "10.0.0.5:8000", "[::1]:80"] {
            assert_eq!(host_port(ok, "t").unwrap(), ok);
        }
        for bad in [
            "10.0.0.5", ":8000", "h:0", "h:70000", "h:x", "::1:80", "a b:1",
        ] {
            assert!(host_port(bad, "t").is_err(), "{bad}");
        }
    }
}
