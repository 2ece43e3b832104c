//! What can go wrong in the capacity model: every variant is the caller's input.

use crate::exit::UsageError;

/// What went wrong; every variant is the caller's input (exit code 2 at the CLI).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapacityError {
    #[error("unknown preset {name:?}; valid presets: {valid}")]
    UnknownPreset { name: String, valid: String },
    #[error("unknown GPU {name:?}; valid GPUs: {valid}")]
    UnknownGpu { name: String, valid: String },
    #[error("no model given: pass --preset NAME or --hf-config PATH")]
    NoModel,
    #[error("--preset and --hf-config are mutually exclusive; pass one")]
    BothModels,
    #[error("cannot read {path}: {message}")]
    ReadConfig { path: String, message: String },
    #[error("{source_name}: not a valid config.json: {message}")]
    ConfigSyntax {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: config.json has no field {field:?} (needed by the capacity model)")]
    MissingField { source_name: String, field: String },
    #[error("{source_name}: config.json field {field:?} is invalid: {reason}")]
    InvalidField {
        source_name: String,
        field: String,
        reason: String,
    },
    #[error("{source_name}: {what} not modelled yet")]
    Unsupported { source_name: String, what: String },
    #[error(
        "invalid --tp {tp} for this model: {what}; vLLM shards Mamba/linear-attention state evenly, pick a tp that divides it"
    )]
    TpDoesNotShard { tp: u32, what: String },
    #[error("invalid --{flag} {value}: {reason}")]
    InvalidInput {
        flag: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error(
        "the weights do not fit: {weights_gib:.2} GiB of weights per GPU + {reserve_gib:.2} GiB reserve > util {util} × {memory_gib:.2} GiB = {usable_gib:.2} GiB; raise --tp, lower --weight-bytes or --activation-gib"
    )]
    WeightsDoNotFit {
        weights_gib: f64,
        reserve_gib: f64,
        util: f64,
        memory_gib: f64,
        usable_gib: f64,
    },
    #[error(
        "the KV pool cannot hold one sequence of {context} tokens: pool {pool_gib:.3} GiB per GPU, one sequence needs {sequence_gib:.3} GiB per GPU; lower --context, raise --tp or lower --kv-bytes"
    )]
    PoolTooSmall {
        context: u64,
        pool_gib: f64,
        sequence_gib: f64,
    },
}

impl From<CapacityError> for UsageError {
    fn from(e: CapacityError) -> Self {
        UsageError::new(e.to_string())
    }
}
