//! The `static` source, its block and its finder: a fixed list of replica base URLs.

use std::borrow::Cow;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use super::DiscoveryError;
use super::replica::Found;
use super::source::{BlockError, Discoverer, Finding, Needs, SourceKind, Step};

/// `static: [URL, ...]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StaticUrls(pub Vec<String>);

// Described in place as the list of strings it is, not as a type of its own.
impl JsonSchema for StaticUrls {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "StaticUrls".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        Vec::<String>::json_schema(g)
    }
}

impl SourceKind for StaticUrls {
    const NAME: &'static str = "static";
    const HELP: &'static str = "A fixed list of replica base URLs (`http://10.0.0.5:8000`, the \
        base URL's scheme,\nno path).";

    fn check(&self, scheme: &str) -> Result<(), BlockError> {
        if self.0.is_empty() {
            return Err(BlockError::at(&[], "needs at least one URL"));
        }
        for (i, url) in self.0.iter().enumerate() {
            replica_of(url, scheme).map_err(|e| BlockError::at(&[Step::Index(i)], e))?;
        }
        Ok(())
    }

    fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        Ok(Box::new(StaticList::new(&self.0, needs.scheme)?))
    }
}

/// Replicas written out in the configuration. Each URL must have the target's scheme,
/// a host and no path, so that probing it means the same as probing the front door.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticList {
    found: Vec<Found>,
}

impl StaticList {
    pub fn new<S: AsRef<str>>(urls: &[S], scheme: &str) -> Result<Self, DiscoveryError> {
        let found = urls
            .iter()
            .map(|u| replica_of(u.as_ref(), scheme))
            .collect::<Result<_, _>>()?;
        Ok(StaticList { found })
    }

    pub fn found(&self) -> &[Found] {
        &self.found
    }
}

impl Discoverer for StaticList {
    fn kind(&self) -> &'static str {
        StaticUrls::NAME
    }

    fn find(&self, _timeout: Duration) -> Finding<'_> {
        Box::pin(std::future::ready(Ok(self.found.clone())))
    }
}

fn replica_of(text: &str, scheme: &str) -> Result<Found, DiscoveryError> {
    let bad =
        |reason: &str| DiscoveryError::input(format!("{}: {text:?}", StaticUrls::NAME), reason);
    let url = reqwest::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    if url.scheme() != scheme {
        return Err(bad(&format!(
            "the scheme must be the base URL's ({scheme})"
        )));
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| bad("no host"))?;
    if url.path() != "/" || url.query().is_some() || !url.username().is_empty() {
        return Err(bad(
            "a replica is scheme://host:port, with no path, query or user",
        ));
    }
    let port = url.port_or_known_default().ok_or_else(|| bad("no port"))?;
    Ok(Found::new(format!("{host}:{port}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_become_host_port_with_the_default_port_filled_in() {
        let list = StaticList::new(
            &["http://10.0.0.5:8000", "http://a.b", "http://[::1]:81/"],
            "http",
        )
        .unwrap();
        let got: Vec<_> = list.found().iter().map(|f| f.host_port.as_str()).collect();
        assert_eq!(got, ["10.0.0.5:8000", "a.b:80", "[::1]:81"]);
    }

    #[test]
    fn bad_urls_are_clear_errors() {
        for bad in [
            "10.0.0.5:8000",
            "https://a:1",
            "http://a:1/v1",
            "http://a:99999",
            "http://",
            "http://u:p@a:1",
        ] {
            let e = StaticList::new(&[bad], "http").unwrap_err();
            assert!(e.to_string().contains(bad), "{bad}: {e}");
        }
    }
}
