//! One source of replicas, whichever kind: the one place that asks each kind to look.

use std::time::Duration;

use super::DiscoveryError;
use super::dns::{DnsName, SrvName};
use super::file_sd::FileSd;
use super::http_sd::HttpSd;
use super::replica::Found;
use super::static_list::StaticList;

/// Where a target's replicas come from.
#[derive(Debug, Clone)]
pub enum Source {
    Static(StaticList),
    FileSd(FileSd),
    HttpSd { sd: HttpSd, http: reqwest::Client },
    Dns(DnsName),
    Srv(SrvName),
}

impl Source {
    /// The addresses this source names now. `timeout` bounds an http_sd request (DNS
    /// lookups have the resolver's own timeout and retries).
    pub async fn find(&self, timeout: Duration) -> Result<Vec<Found>, DiscoveryError> {
        match self {
            Source::Static(list) => Ok(list.find()),
            Source::FileSd(files) => files.find(),
            Source::HttpSd { sd, http } => sd.find(http, timeout).await,
            Source::Dns(name) => name.find().await,
            Source::Srv(name) => name.find().await,
        }
    }

    /// The kind's name as the configuration spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Static(_) => "static",
            Source::FileSd(_) => "file_sd",
            Source::HttpSd { .. } => "http_sd",
            Source::Dns(_) => "dns",
            Source::Srv(_) => "srv",
        }
    }
}
