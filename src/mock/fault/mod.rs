//! The mock's faults: the table that declares each one (`table.rs`), what each does on
//! the wire (`inject.rs`, one function per acting point the answer paths call) and the
//! test that walks the table against the mock over HTTP (`walk.rs`). The faults that act
//! on what the answer says are the voice's (`answer/voice.rs`).

pub mod inject;
mod table;
#[cfg(test)]
mod walk;

pub use table::{Act, FAULT_HEADER, FAULT_NAMES, FaultKind, FaultSpec, kinds_help};
