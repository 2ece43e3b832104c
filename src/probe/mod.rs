//! One probe, defined once for bench, daemon and self-check: what it asks of an
//! endpoint and the rules between those parts ([`ProbeSpec`]), and how an arrival of
//! the schedule becomes its record ([`Prober`]). The front ends only translate their
//! syntax (flags, YAML) into these.

mod prober;
mod spec;

pub use prober::{Conversations, Prober};
pub use spec::{Part, ProbeSpec, Refusal, Syntax};
