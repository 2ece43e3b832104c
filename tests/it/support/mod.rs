//! Helpers shared by the integration tests: one module per front end under test,
//! `process` for the binary run as a server, `faults` for the per-fault tables, and
//! `alone` for a test that needs the process to itself.

pub mod alone;
pub mod bench;
pub mod client;
pub mod daemon;
pub mod dnsmasq;
pub mod faults;
pub mod mock;
pub mod process;
