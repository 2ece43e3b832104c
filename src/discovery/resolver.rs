//! The resolver of the `dns` and `srv` sources, and the checks of what they are given
//! (a DNS name, `resolver: IP:PORT`). Lookups go to the system's resolver or to that
//! one server, with no cache of their own so that each refresh asks again. A name's
//! IPv4 addresses are used if it has any, else its IPv6 ones: a dual-stack pod is one
//! replica, not two.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{
    ConnectionConfig, LookupIpStrategy, NameServerConfig, ResolverConfig,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;

use super::DiscoveryError;

/// A resolver shared by a target's lookups.
#[derive(Clone)]
pub struct Resolver(Arc<TokioResolver>);

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

impl Resolver {
    /// `server` is `IP:PORT` of one DNS server (UDP, then TCP for long answers); `None`
    /// reads the system's configuration (`/etc/resolv.conf`).
    pub fn new(server: Option<&str>) -> Result<Self, DiscoveryError> {
        let mut builder = match server {
            Some(text) => {
                let addr = parse_server(text)?;
                let mut udp = ConnectionConfig::udp();
                udp.port = addr.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = addr.port();
                let server = NameServerConfig::new(addr.ip(), true, vec![udp, tcp]);
                let config = ResolverConfig::from_name_servers(vec![server]);
                TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
            }
            None => TokioResolver::builder_tokio().map_err(|e| {
                DiscoveryError::input("the system's DNS configuration", e.to_string())
            })?,
        };
        // Every refresh asks the server: membership changes must show within one interval.
        builder.options_mut().cache_size = 0;
        builder.options_mut().ip_strategy = LookupIpStrategy::Ipv4thenIpv6;
        let resolver = builder
            .build()
            .map_err(|e| DiscoveryError::input("resolver", e.to_string()))?;
        Ok(Resolver(Arc::new(resolver)))
    }

    /// Every address of `name` (its IPv4 ones if it has any).
    pub async fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, DiscoveryError> {
        let lookup = self
            .0
            .lookup_ip(name)
            .await
            .map_err(|e| dns_error(name, e))?;
        Ok(lookup.iter().collect())
    }

    /// The SRV records of `name`: each target host and port, port 0 (no service) left
    /// out.
    pub async fn services(&self, name: &str) -> Result<Vec<(String, u16)>, DiscoveryError> {
        let lookup = (self.0.srv_lookup(name).await).map_err(|e| dns_error(name, e))?;
        Ok(lookup
            .answers()
            .iter()
            .filter_map(|record| match &record.data {
                RData::SRV(srv) if srv.port != 0 => Some((srv.target.to_utf8(), srv.port)),
                _ => None,
            })
            .collect())
    }
}

/// Checks `resolver: IP:PORT` without building a resolver (for `--config.check`).
pub fn parse_server(text: &str) -> Result<SocketAddr, DiscoveryError> {
    text.parse().map_err(|_| {
        DiscoveryError::input(
            format!("resolver: {text:?}"),
            "must be IP:PORT (an IPv6 address in brackets)",
        )
    })
}

fn dns_error(name: &str, e: hickory_resolver::net::NetError) -> DiscoveryError {
    let reason = if e.is_no_records_found() {
        "no records".to_string()
    } else {
        e.to_string()
    };
    DiscoveryError::Dns {
        name: name.to_string(),
        reason,
    }
}

/// Checks a DNS name of the `source` kind (`dns`, `srv`) and returns it trimmed.
pub fn check_name(name: &str, source: &str) -> Result<String, DiscoveryError> {
    let trimmed = name.trim();
    if trimmed.is_empty() || trimmed == "." {
        return Err(DiscoveryError::input(
            format!("{source}: {name:?}"),
            "empty name",
        ));
    }
    hickory_resolver::proto::rr::Name::from_utf8(trimmed)
        .map_err(|e| DiscoveryError::input(format!("{source}: {name:?}"), e.to_string()))?;
    Ok(trimmed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_servers_and_names_are_input_errors() {
        for bad in ["10.96.0.10", "dns:53", "10.96.0.10:99999", "::1:53"] {
            assert_eq!(
                Resolver::new(Some(bad)).unwrap_err().reason(),
                "input",
                "{bad}"
            );
        }
        assert!(check_name(" ", "dns").is_err());
        assert_eq!(check_name(" a.b ", "srv").unwrap(), "a.b");
    }
}
