//! `llmprobe capacity`'s flags live with the command in `crate::capacity::command`.

pub use crate::capacity::CapacityArgs;
