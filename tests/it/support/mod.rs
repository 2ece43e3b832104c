//! Helpers shared by the integration tests: one module per front end under test.

pub mod bench;
pub mod client;
pub mod daemon;
pub mod mock;
