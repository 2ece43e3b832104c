//! What a source of replicas is, whichever kind: its block under `replicas_from:`
//! ([`SourceKind`]: the YAML type, its checks, how it is built) and the finder built
//! from it ([`Discoverer`]), which the refresher asks at each interval. Each kind is one
//! file implementing both; `registry.rs` lists the kinds once.

use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::DiscoveryError;
use super::replica::Found;

/// How often a source is read again unless it says otherwise: a lookup or a directory
/// read is cheap, and a new pod should be probed soon.
pub const DEFAULT_LOOKUP_INTERVAL: Duration = Duration::from_secs(30);

/// One look's outcome, boxed so that every kind fits behind `dyn Discoverer`.
pub type Finding<'a> = BoxFuture<'a, Result<Vec<Found>, DiscoveryError>>;

/// A built source: the addresses it names now, asked once per refresh.
pub trait Discoverer: fmt::Debug + Send + Sync {
    /// The kind's name as the configuration spells it.
    fn kind(&self) -> &'static str;

    /// The addresses this source names now. `timeout` bounds a look that has no bound
    /// of its own (DNS lookups have the resolver's timeout and retries).
    fn find(&self, timeout: Duration) -> Finding<'_>;
}

/// What building a source may need besides its block.
#[derive(Debug, Clone, Copy)]
pub struct Needs<'a> {
    /// The target's base URL scheme (`http`, `https`).
    pub scheme: &'a str,
    /// `resolver:`, checked: the DNS server of the kinds that resolve.
    pub resolver: Option<&'a str>,
    /// The target's HTTP client, for the kinds that ask over HTTP.
    pub http: &'a reqwest::Client,
}

/// One kind of source as configured: its block's YAML type, with the kind's row (name,
/// help, what it uses) and its own checks. Listed once in `registry.rs`.
pub trait SourceKind:
    Serialize + DeserializeOwned + JsonSchema + Clone + PartialEq + fmt::Debug + Send + Sync
{
    /// Its key under `replicas_from:`.
    const NAME: &'static str;
    /// What it reads, for the schema (`docs/config.schema.json`).
    const HELP: &'static str;
    /// Whether its lookups go to `resolver:`.
    const RESOLVES: bool = false;
    /// Whether its targets carry SD labels, which `labels:` lets through.
    const LABELS: bool = false;
    /// How often it is read again unless its block says.
    const DEFAULT_INTERVAL: Duration = DEFAULT_LOOKUP_INTERVAL;

    /// The interval its block sets, if any.
    fn interval(&self) -> Option<Duration> {
        None
    }

    /// Its values checked for a target of `scheme`, each error at its place in the block.
    fn check(&self, scheme: &str) -> Result<(), BlockError>;

    /// Its finder. Runtime parts (a resolver reading the system's configuration) are
    /// made here, when the daemon starts the target, not when the config loads.
    fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError>;
}

/// One step into a block: a key or a list index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Key(&'static str),
    Index(usize),
}

/// A bad value in a source's block: where in the block (no steps: the block itself) and
/// why, so that the config can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockError {
    pub at: Vec<Step>,
    pub message: String,
}

impl BlockError {
    pub fn at(at: &[Step], message: impl fmt::Display) -> Self {
        BlockError {
            at: at.to_vec(),
            message: message.to_string(),
        }
    }
}
