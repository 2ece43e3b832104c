//! The words a rule is refused in: the [`Part`]s of a probe, the [`Syntax`] a front end
//! names them in (bench flags, the daemon's YAML keys), and the [`Refusal`] a broken
//! rule becomes. The rules themselves are in `spec.rs` and `prompt_source.rs`.

use crate::client::Endpoint;
use crate::latency::Latency;
use crate::record::CheckKind;

/// A part of a probe definition, which a front end names in its own syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Endpoint,
    InputTokens,
    OutputTokens,
    SharedPrefix,
    /// What turns streaming off (`--no-stream`, `stream: false`).
    NoStream,
    Objective(Latency),
    Check(CheckKind),
    StructuredOutput,
    /// One question as text.
    Prompt,
    /// One question read from a file.
    PromptFile,
    /// One question as a message list.
    Messages,
    /// A dataset's prompts, by format.
    Dataset,
    /// A dataset's file, when it is named without a format.
    DatasetPath,
    /// A trace replayed.
    Trace,
    /// What sends prompts without the unique nonce (`--no-nonce`, `nonce: false`).
    NoNonce,
    Turns,
    Golden,
    /// The documents a rerank or score request ranks.
    Documents,
    /// The images a request carries.
    Images,
}

/// How a front end spells the parts.
pub trait Syntax {
    /// The name of a part as users wrote it: `--slo-ttft-ms`, `slo.ttft`.
    fn name(&self, part: Part) -> String;

    /// Whether users of this front end can give the part at all: a refusal that lists
    /// what would do instead names only these.
    fn offers(&self, _part: Part) -> bool {
        true
    }
}

/// A rule a probe definition breaks: which part, and why in the front end's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub part: Part,
    /// Without the part's own name (a front end that points at the part says it
    /// there), unless `sentence`.
    pub reason: String,
    /// The reason is a whole sentence whose subject is the part, named
    /// (`--no-nonce needs …`), rather than what follows its name (`--turns: …`).
    pub sentence: bool,
}

impl Refusal {
    /// The part's name and the reason (`--turns: …`), or the sentence.
    pub fn message(&self, syntax: &dyn Syntax) -> String {
        if self.sentence {
            return self.reason.clone();
        }
        format!("{}: {}", syntax.name(self.part), self.reason)
    }
}

/// The refusal of `part`, the reason following its name.
pub(super) fn refuse(part: Part, reason: String) -> Result<(), Refusal> {
    Err(Refusal {
        part,
        reason,
        sentence: false,
    })
}

/// The refusal of `part`, the reason a sentence that names it.
pub(super) fn refuse_sentence(part: Part, reason: String) -> Result<(), Refusal> {
    Err(Refusal {
        part,
        reason,
        sentence: true,
    })
}

/// The endpoint as users chose it: `--endpoint embeddings`, `endpoint embeddings`.
pub(super) fn endpoint_named(endpoint: Endpoint, syntax: &dyn Syntax) -> String {
    format!("{} {}", syntax.name(Part::Endpoint), endpoint.as_str())
}

/// The endpoints whose API has a property: `chat and responses`.
pub(super) fn names_of(has: impl Fn(&crate::client::protocol::Api) -> bool) -> String {
    let names: Vec<&str> = Endpoint::ALL
        .into_iter()
        .filter(|e| has(e.api()))
        .map(Endpoint::as_str)
        .collect();
    crate::exit::listed(&names, "and")
}

/// The names of the parts of `parts` that `syntax` offers: `--prompt, --prompt-file or
/// --dataset`.
pub(super) fn offered(parts: &[Part], syntax: &dyn Syntax, conjunction: &str) -> String {
    let names: Vec<String> = parts
        .iter()
        .filter(|p| syntax.offers(**p))
        .map(|p| syntax.name(*p))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::exit::listed(&names, conjunction)
}

/// Both front ends' own spellings, for the rules' tests (test code may reach above
/// this layer): the daemon's YAML keys and the bench flags.
#[cfg(test)]
pub(super) mod spelled {
    pub(crate) use crate::bench::options::Flags;
    pub(crate) use crate::config::probe::Yaml;
}
