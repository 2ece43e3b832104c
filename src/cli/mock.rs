//! `llmprobe mock`'s flags live with the command in `crate::mock::command`.

pub use crate::mock::MockArgs;
