//! The source kinds, listed once (`kinds!` below), in the order errors name them and the
//! configuration prints them. From the list come [`SourceBlock`] (a configured block of
//! whichever kind), [`KINDS`] (each kind's name, help, what it uses, its block's
//! schema), which the config's parsing, schema and error texts read, and the dispatch to
//! each kind's checks and builder.

use std::time::Duration;

use schemars::{Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::MapAccess;

use super::DiscoveryError;
use super::dns::DnsFrom;
use super::file_sd::FileSdFrom;
use super::http_sd::HttpSdFrom;
use super::source::{BlockError, Discoverer, Needs, SourceKind};
use super::srv::SrvFrom;
use super::static_list::StaticUrls;

/// A kind as the config's schema and error texts see it, before any block is read.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// Its key under `replicas_from:`.
    pub name: &'static str,
    /// What it reads, for the schema.
    pub help: &'static str,
    /// Whether its lookups go to `resolver:`.
    pub resolves: bool,
    /// Whether its targets carry SD labels.
    pub labels: bool,
    /// Its block's schema as an optional key.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
}

impl Kind {
    const fn of<K: SourceKind>() -> Kind {
        Kind {
            name: K::NAME,
            help: K::HELP,
            resolves: K::RESOLVES,
            labels: K::LABELS,
            schema: optional_schema::<K>,
        }
    }
}

fn optional_schema<K: SourceKind>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<Option<K>>()
}

/// Declares the kinds from one list of `Variant(BlockType)`, each block type a
/// [`SourceKind`]: the [`SourceBlock`] enum, [`KINDS`] and the reading of a block.
macro_rules! kinds {
    ($($variant:ident($block:ty),)+) => {
        /// One source's block as configured, of whichever kind.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum SourceBlock {
            $($variant($block),)+
        }

        /// Every kind, in the order errors list them and the configuration prints them.
        pub const KINDS: &[Kind] = &[$(Kind::of::<$block>(),)+];

        impl SourceBlock {
            /// The next value of `map` read as the block of the kind `name` (`None`
            /// inside for a null); `None` when no kind is called `name`.
            pub fn next_value<'de, A: MapAccess<'de>>(
                name: &str,
                map: &mut A,
            ) -> Option<Result<Option<SourceBlock>, A::Error>> {
                $(
                    if name == <$block as SourceKind>::NAME {
                        let block = map.next_value::<Option<$block>>();
                        return Some(block.map(|b| b.map(SourceBlock::$variant)));
                    }
                )+
                None
            }

            fn kind(&self) -> &dyn AnyKind {
                match self {
                    $(SourceBlock::$variant(b) => b,)+
                }
            }
        }
    };
}

kinds! {
    Dns(DnsFrom),
    Srv(SrvFrom),
    FileSd(FileSdFrom),
    HttpSd(HttpSdFrom),
    Static(StaticUrls),
}

impl SourceBlock {
    /// Its kind's name.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Its kind's place in [`KINDS`].
    pub fn rank(&self) -> usize {
        let name = self.name();
        KINDS
            .iter()
            .position(|k| k.name == name)
            .unwrap_or(KINDS.len())
    }

    /// Whether its lookups go to `resolver:`.
    pub fn resolves(&self) -> bool {
        self.kind().resolves()
    }

    /// The interval its block sets, if any.
    pub fn own_interval(&self) -> Option<Duration> {
        self.kind().own_interval()
    }

    /// How often it is read again: its own interval, else its kind's default.
    pub fn interval(&self) -> Duration {
        self.own_interval()
            .unwrap_or_else(|| self.kind().default_interval())
    }

    /// Its values checked for a target of `scheme`.
    pub fn check(&self, scheme: &str) -> Result<(), BlockError> {
        self.kind().check(scheme)
    }

    /// Its finder.
    pub fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        self.kind().build(needs)
    }
}

/// What [`SourceBlock`] asks of its kind, as a trait object (a [`SourceKind`]'s
/// constants make it unfit for one).
trait AnyKind {
    fn name(&self) -> &'static str;
    fn resolves(&self) -> bool;
    fn own_interval(&self) -> Option<Duration>;
    fn default_interval(&self) -> Duration;
    fn check(&self, scheme: &str) -> Result<(), BlockError>;
    fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError>;
}

impl<K: SourceKind> AnyKind for K {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn resolves(&self) -> bool {
        K::RESOLVES
    }

    fn own_interval(&self) -> Option<Duration> {
        SourceKind::interval(self)
    }

    fn default_interval(&self) -> Duration {
        K::DEFAULT_INTERVAL
    }

    fn check(&self, scheme: &str) -> Result<(), BlockError> {
        SourceKind::check(self, scheme)
    }

    fn build(&self, needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        SourceKind::build(self, needs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_and_blocks_know_their_row() {
        let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        assert_eq!(names, ["dns", "srv", "file_sd", "http_sd", "static"]);
        let block = SourceBlock::Static(StaticUrls(vec!["http://a:1".into()]));
        assert_eq!((block.name(), block.rank()), ("static", 4));
        assert_eq!(block.interval(), Duration::from_secs(30));
        let sd = SourceBlock::HttpSd(HttpSdFrom {
            url: "http://sd/x".into(),
            interval: None,
        });
        assert_eq!(sd.interval(), Duration::from_secs(60));
    }
}
