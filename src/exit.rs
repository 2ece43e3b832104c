//! Exit codes and the error type that selects them. Everything that is the user's
//! fault (bad flag values, bad files) is a [`UsageError`] and exits with [`USAGE`].

use std::fmt;

/// Success (the bench plan's verdict when every gate passed).
pub const OK: u8 = 0;
/// A runtime failure (network, IO, a bug).
pub const FAILURE: u8 = 1;
/// Bad input: flags, config files, datasets. Same code clap uses for usage errors.
pub const USAGE: u8 = 2;
/// A run completed but an SLO gate failed (`bench`).
pub const SLO_FAILED: u8 = 3;

/// An error caused by the user's input. Its message must say what was wrong and,
/// where there is a short list, what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl UsageError {
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for `Err(UsageError::new(..).into())`.
#[macro_export]
macro_rules! usage_bail {
    ($($arg:tt)*) => {
        return Err($crate::exit::UsageError::new(format!($($arg)*)).into())
    };
}

/// The exit code for an error: [`USAGE`] when any error in the chain is a
/// [`UsageError`], [`FAILURE`] otherwise.
pub fn code_for(err: &anyhow::Error) -> u8 {
    if err
        .chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
    {
        USAGE
    } else {
        FAILURE
    }
}

/// Names as a message lists them: `a, b or c` with `conjunction` "or".
pub fn listed(names: &[&str], conjunction: &str) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            format!("{} {conjunction} {last}", rest.join(", "))
        }
        Some((last, _)) => (*last).to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn usage_errors_are_found_through_context() {
        let e: anyhow::Error = UsageError::new("bad --tp").into();
        let e = Err::<(), _>(e).context("reading flags").unwrap_err();
        assert_eq!(code_for(&e), USAGE);
        assert_eq!(code_for(&anyhow::anyhow!("io")), FAILURE);
    }
}
