//! The `dns` and `srv` sources: the A/AAAA records of a name with a configured port (a
//! Kubernetes headless Service), or the SRV records of a name, each record's target
//! resolved to its addresses and paired with the record's port. Lookups go to the
//! system's resolver or to one `resolver: IP:PORT`, with no cache of their own so that
//! each refresh asks again. A name's IPv4 addresses are used if it has any, else its
//! IPv6 ones: a dual-stack pod is one replica, not two.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{
    ConnectionConfig, LookupIpStrategy, NameServerConfig, ResolverConfig,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;

use super::DiscoveryError;
use super::replica::Found;

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

    async fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, DiscoveryError> {
        let lookup = self
            .0
            .lookup_ip(name)
            .await
            .map_err(|e| dns_error(name, e))?;
        Ok(lookup.iter().collect())
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

/// The `dns` source: every A/AAAA address of `name`, at `port`.
#[derive(Debug, Clone)]
pub struct DnsName {
    name: String,
    port: u16,
    resolver: Resolver,
}

impl DnsName {
    pub fn new(name: &str, port: u16, resolver: Resolver) -> Result<Self, DiscoveryError> {
        if port == 0 {
            return Err(DiscoveryError::input("dns: port 0", "must be 1..65535"));
        }
        Ok(DnsName {
            name: check_name(name, "dns")?,
            port,
            resolver,
        })
    }

    pub async fn find(&self) -> Result<Vec<Found>, DiscoveryError> {
        let ips = self.resolver.addresses(&self.name).await?;
        Ok(ips
            .into_iter()
            .map(|ip| Found::from_socket(SocketAddr::new(ip, self.port)))
            .collect())
    }
}

/// The `srv` source: every SRV record of `name`; each record's target resolved.
#[derive(Debug, Clone)]
pub struct SrvName {
    name: String,
    resolver: Resolver,
}

impl SrvName {
    pub fn new(name: &str, resolver: Resolver) -> Result<Self, DiscoveryError> {
        Ok(SrvName {
            name: check_name(name, "srv")?,
            resolver,
        })
    }

    pub async fn find(&self) -> Result<Vec<Found>, DiscoveryError> {
        let lookup = (self.resolver.0.srv_lookup(self.name.as_str()).await)
            .map_err(|e| dns_error(&self.name, e))?;
        let mut found = Vec::new();
        for record in lookup.answers() {
            let RData::SRV(srv) = &record.data else {
                continue;
            };
            if srv.port == 0 {
                continue;
            }
            let target = srv.target.to_utf8();
            for ip in self.resolver.addresses(&target).await? {
                found.push(Found::from_socket(SocketAddr::new(ip, srv.port)));
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_names_ports_and_servers_are_input_errors() {
        let resolver = Resolver::new(Some("127.0.0.1:53")).unwrap();
        assert!(DnsName::new("", 80, resolver.clone()).is_err());
        assert!(DnsName::new("a.b", 0, resolver.clone()).is_err());
        assert!(SrvName::new("  ", resolver.clone()).is_err());
        assert!(DnsName::new("svc.cluster.local", 8000, resolver).is_ok());
        for bad in ["10.96.0.10", "dns:53", "10.96.0.10:99999", "::1:53"] {
            assert_eq!(
                Resolver::new(Some(bad)).unwrap_err().reason(),
                "input",
                "{bad}"
            );
        }
    }
}
