//! Where the daemon's config comes from: a file read again on every reload, or text
//! held in memory (the `--mock` demo).

use std::path::PathBuf;

use crate::config::{ConfigError, Overrides, Plan, plan};

/// Where the config comes from.
#[derive(Debug, Clone)]
pub enum ConfigSource {
    /// A file, read again on every reload.
    File(PathBuf),
    /// Text held in memory (`--mock`); `name` stands for the file in errors.
    Inline { name: String, text: String },
}

impl ConfigSource {
    pub fn load(&self) -> Result<Plan, ConfigError> {
        self.load_with(&Overrides::default())
    }

    /// Loads with the command line's overrides (`--location`, `--shard`).
    pub fn load_with(&self, overrides: &Overrides) -> Result<Plan, ConfigError> {
        match self {
            ConfigSource::File(path) => plan::load_with(path, overrides),
            ConfigSource::Inline { name, text } => plan::load_str_with(text, name, overrides),
        }
    }
}
