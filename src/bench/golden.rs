//! `bench --golden`: the golden set loaded and checked (a bad file is a usage error
//! naming its line), and the gates on golden-set figures held to a run that asks one.
//! What a golden question needs of the other flags, the endpoint and `--turns` is
//! [`crate::probe::PromptSource`]'s rule, as in the daemon.

use std::sync::Arc;

use crate::bench::args::BenchArgs;
use crate::check::GoldenSet;
use crate::exit::UsageError;
use crate::report::gate::Gate;

/// The set of `--golden`, when given.
pub fn parse_golden(a: &BenchArgs) -> Result<Option<Arc<GoldenSet>>, UsageError> {
    let Some(source) = &a.golden else {
        return Ok(None);
    };
    let set = GoldenSet::load(source).map_err(|e| UsageError::new(format!("--golden: {e}")))?;
    Ok(Some(Arc::new(set)))
}

/// `--min-golden-accuracy A` as the gate `golden-accuracy-upper>=A`.
pub fn min_accuracy_gate(a: &BenchArgs) -> Result<Option<Gate>, UsageError> {
    let Some(min) = &a.min_golden_accuracy else {
        return Ok(None);
    };
    let gate: Gate = format!("golden-accuracy-upper>={min}")
        .parse()
        .map_err(|_| {
            UsageError::new(format!(
                "--min-golden-accuracy {min:?}: expected an accuracy in [0, 1] (0.9) or a \
                 percentage (90%)"
            ))
        })?;
    Ok(Some(gate))
}

/// A gate on a golden-set figure needs `--golden`: without it the figure never exists
/// and the gate could only fail.
pub fn check_golden_gates(gates: &[Gate], golden: bool) -> Result<(), UsageError> {
    match gates.iter().find(|g| g.reads_golden()) {
        Some(g) if !golden => Err(UsageError::new(format!(
            "--gate {g} needs --golden FILE|builtin (the questions whose answers it judges)"
        ))),
        _ => Ok(()),
    }
}
