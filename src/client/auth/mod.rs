//! The credentials and wire framings of hosted APIs, each self-contained: AWS Signature
//! Version 4 and its credential sources, AWS's binary event-stream framing, and Google's
//! service-account OAuth2 tokens. The protocols call these; nothing here sends a probe.

pub mod aws_credentials;
#[cfg(test)]
mod aws_credentials_tests;
pub mod event_stream;
#[cfg(test)]
mod event_stream_tests;
pub mod google_token;
#[cfg(test)]
mod google_token_tests;
pub mod jwt;
#[cfg(test)]
mod jwt_tests;
pub mod sigv4;
