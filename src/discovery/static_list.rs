//! The `static` source: a fixed list of replica base URLs.

use super::DiscoveryError;
use super::replica::Found;

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

    pub fn find(&self) -> Vec<Found> {
        self.found.clone()
    }
}

fn replica_of(text: &str, scheme: &str) -> Result<Found, DiscoveryError> {
    let bad = |reason: &str| DiscoveryError::input(format!("static: {text:?}"), reason);
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
        let got: Vec<_> = list.find().into_iter().map(|f| f.host_port).collect();
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
