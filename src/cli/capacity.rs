use clap::Args;

/// Flags of `llmprobe capacity` (names kept from capacity.py).
#[derive(Debug, Clone, Args)]
pub struct CapacityArgs {
    /// List the built-in model presets and exit.
    #[arg(long)]
    pub list_presets: bool,
}
