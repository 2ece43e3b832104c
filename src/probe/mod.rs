//! One probe, defined once for bench, daemon and self-check: what it asks of an
//! endpoint and the rules between those parts ([`ProbeSpec`], its [`PromptSource`]),
//! and how an arrival of the schedule becomes its record ([`Prober`]). The front ends
//! only translate their syntax (flags, YAML) into these ([`Syntax`]).

mod prober;
mod prompt_source;
mod spec;
mod syntax;

pub use prober::{Conversations, Prober};
pub use prompt_source::{Origin, PromptSource};
pub use spec::ProbeSpec;
pub use syntax::{Part, Refusal, Syntax};
