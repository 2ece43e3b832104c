//! Replica discovery: the addresses behind a target's front door, from a static list,
//! Prometheus file_sd or HTTP SD, DNS A/AAAA or SRV records, re-read on an interval
//! into a bounded, stable replica set. Nothing here probes: the set is handed on.

mod dns;
mod error;
mod file_sd;
mod http_sd;
mod refresher;
mod replica;
mod sd_format;
mod source;
mod static_list;

pub use dns::{DnsName, Resolver, SrvName, check_name as check_dns_name, parse_server};
pub use error::DiscoveryError;
pub use file_sd::FileSd;
pub use http_sd::HttpSd;
pub use refresher::{Refresh, Refresher};
pub use replica::{
    DEFAULT_MAX_REPLICAS, Found, LabelAllowList, Replica, ReplicaSet, SetRules, check_port,
    host_port,
};
pub use sd_format::{Syntax, parse as parse_target_groups};
pub use source::Source;
pub use static_list::StaticList;
