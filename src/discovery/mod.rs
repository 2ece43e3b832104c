//! Replica discovery: the addresses behind a target's front door, from a static list,
//! Prometheus file_sd or HTTP SD, DNS A/AAAA or SRV records, re-read on an interval
//! into a bounded, stable replica set. Nothing here probes: the set is handed on.
//!
//! Each kind of source is one file: its configuration block ([`SourceKind`]) and its
//! finder ([`Discoverer`]); `registry.rs` lists the kinds once, and the config reads
//! its keys, schema and error texts from there.

mod dns;
mod error;
mod file_sd;
mod http_sd;
mod refresher;
mod registry;
mod replica;
mod resolver;
mod sd_format;
mod source;
mod srv;
mod static_list;

pub use dns::{DnsFrom, DnsName};
pub use error::DiscoveryError;
pub use file_sd::{FileSd, FileSdFrom, FileSdFull};
pub use http_sd::{HttpSd, HttpSdFrom};
pub use refresher::{Refresh, Refresher};
pub use registry::{KINDS, Kind, SourceBlock};
pub use replica::{
    DEFAULT_MAX_REPLICAS, Found, LabelAllowList, Replica, ReplicaSet, SetRules, check_port,
    host_port,
};
pub use resolver::{Resolver, parse_server};
pub use sd_format::{Syntax, parse as parse_target_groups};
pub use source::{
    BlockError, DEFAULT_LOOKUP_INTERVAL, Discoverer, Finding, Needs, SourceKind, Step,
};
pub use srv::{SrvFrom, SrvFull, SrvName};
pub use static_list::{StaticList, StaticUrls};
