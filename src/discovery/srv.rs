//! The `srv` source, its block (`srv: NAME` or `{name, interval}`) and its finder:
//! every SRV record of a name, each record's target resolved to its addresses and
//! paired with the record's port, through the target's resolver.

use std::net::SocketAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::DiscoveryError;
use super::replica::Found;
use super::resolver::{Resolver, check_name};
use super::source::{BlockError, Discoverer, Finding, Needs, SourceKind, Step};

/// `srv: NAME` or `srv: {name, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "srv: a DNS name or {name, interval}")]
pub enum SrvFrom {
    Name(String),
    Full(SrvFull),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SrvFull {
    pub name: String,
    /// How often the name is looked up again (default 30s).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

impl SrvFrom {
    /// The name, and where in the block it is.
    fn name_at(&self) -> (&str, &'static [Step]) {
        match self {
            SrvFrom::Name(n) => (n, &[]),
            SrvFrom::Full(f) => (&f.name, &[Step::Key("name")]),
        }
    }
}

impl SourceKind for SrvFrom {
    const NAME: &'static str = "srv";
    const HELP: &'static str = "The SRV records of a name (each record's host and port): \
        the name, or\n`{name, interval}` (default 30s).";
    const RESOLVES: bool = true;

    fn interval(&self) -> Option<Duration> {
        match self {
            SrvFrom::Full(f) => f.interval,
            SrvFrom::Name(_) => None,
        }
    }

    fn check(&self, _scheme: &str) -> Result<(), BlockError> {
        let (name, at) = self.name_at();
        check_name(name, Self::NAME).map_err(|e| BlockError::at(at, e))?;
        Ok(())
    }

    fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        let resolver = Resolver::new(needs.resolver)?;
        Ok(Box::new(SrvName::new(self.name_at().0, resolver)?))
    }
}

/// Every SRV record of `name`; each record's target resolved.
#[derive(Debug, Clone)]
pub struct SrvName {
    name: String,
    resolver: Resolver,
}

impl SrvName {
    pub fn new(name: &str, resolver: Resolver) -> Result<Self, DiscoveryError> {
        Ok(SrvName {
            name: check_name(name, SrvFrom::NAME)?,
            resolver,
        })
    }
}

impl Discoverer for SrvName {
    fn kind(&self) -> &'static str {
        SrvFrom::NAME
    }

    fn find(&self, _timeout: Duration) -> Finding<'_> {
        Box::pin(async move {
            let mut found = Vec::new();
            for (target, port) in self.resolver.services(&self.name).await? {
                for ip in self.resolver.addresses(&target).await? {
                    found.push(Found::from_socket(SocketAddr::new(ip, port)));
                }
            }
            Ok(found)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_empty_name_is_an_input_error() {
        let resolver = Resolver::new(Some("127.0.0.1:53")).unwrap();
        assert!(SrvName::new("  ", resolver.clone()).is_err());
        assert!(SrvName::new("_http._tcp.svc", resolver).is_ok());
    }
}
