//! The `dns` source, its block (`dns: {name, port, interval}`) and its finder: every
//! A/AAAA address of a name at a configured port (a Kubernetes headless Service),
//! looked up through the target's resolver.

use std::net::SocketAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::DiscoveryError;
use super::replica::Found;
use super::resolver::{Resolver, check_name};
use super::source::{BlockError, Discoverer, Finding, Needs, SourceKind, Step};

/// `dns: {name, port, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DnsFrom {
    pub name: String,
    /// The port every address is probed at.
    pub port: u16,
    /// How often the name is looked up again (default 30s).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

impl SourceKind for DnsFrom {
    const NAME: &'static str = "dns";
    const HELP: &'static str = "The A/AAAA records of a name (a Kubernetes headless \
        Service) at `port`; read\nagain every `interval` (default 30s).";
    const RESOLVES: bool = true;

    fn interval(&self) -> Option<Duration> {
        self.interval
    }

    fn check(&self, _scheme: &str) -> Result<(), BlockError> {
        check_name(&self.name, Self::NAME).map_err(|e| BlockError::at(&[Step::Key("name")], e))?;
        if self.port == 0 {
            return Err(BlockError::at(&[Step::Key("port")], "must be 1..65535"));
        }
        Ok(())
    }

    fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        let resolver = Resolver::new(needs.resolver)?;
        Ok(Box::new(DnsName::new(&self.name, self.port, resolver)?))
    }
}

/// Every A/AAAA address of `name`, at `port`.
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
            name: check_name(name, DnsFrom::NAME)?,
            port,
            resolver,
        })
    }
}

impl Discoverer for DnsName {
    fn kind(&self) -> &'static str {
        DnsFrom::NAME
    }

    fn find(&self, _timeout: Duration) -> Finding<'_> {
        Box::pin(async move {
            let ips = self.resolver.addresses(&self.name).await?;
            Ok(ips
                .into_iter()
                .map(|ip| Found::from_socket(SocketAddr::new(ip, self.port)))
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_names_and_ports_are_input_errors() {
        let resolver = Resolver::new(Some("127.0.0.1:53")).unwrap();
        assert!(DnsName::new("", 80, resolver.clone()).is_err());
        assert!(DnsName::new("a.b", 0, resolver.clone()).is_err());
        assert!(DnsName::new("svc.cluster.local", 8000, resolver).is_ok());
    }
}
