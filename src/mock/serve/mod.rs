//! The mock over HTTP: bind and routes (`server.rs`), connections a fault can close or
//! reset (`conn.rs`), error replies, and one generating request answered: checked and
//! planned (`generate.rs`, `job.rs`), then streamed (`stream.rs`) or whole (`whole.rs`).

mod aws_auth;
mod conn;
mod generate;
mod hosted;
mod job;
mod reply;
mod server;
mod stream;
mod whole;

pub use conn::ConnCtl;
pub use reply::protocol_error;
pub use server::{MockServer, start, start_with_emissions};
pub use stream::TRICKLE_BYTE_GAP;
