//! [`ProbeSpec`]: what one probe asks of an endpoint (protocol, streaming, objectives,
//! answer checks, prompt shape, turns), with the one [`ProbeSpec::validate`] both front
//! ends call. A rule lives here once; each front end only names the parts in its own
//! syntax ([`Syntax`]: bench flags, or the daemon's YAML keys) and places the error
//! (a flag, or FILE:LINE:COL).

use crate::client::Endpoint;
use crate::latency::{Latency, Slo};
use crate::record::CheckKind;

/// Most prompt tokens a probe may ask for (2^20, past the longest context windows
/// served today): a longer prompt is a typo, and would take gigabytes to build.
pub const MAX_INPUT_TOKENS: u32 = 1 << 20;

/// One probe's definition, as far as the rules between its parts go.
#[derive(Debug, Clone, Default)]
pub struct ProbeSpec {
    pub endpoint: Endpoint,
    /// Prompt tokens asked for.
    pub input_tokens: u32,
    /// Output tokens asked for.
    pub output_tokens: u32,
    /// Prompt tokens shared by every probe (a prefix the server may cache).
    pub shared_prefix_tokens: u32,
    /// Whether streaming was asked for (the endpoint may still not stream).
    pub stream: bool,
    pub slo: Slo,
    /// The answer checks configured.
    pub checks: Vec<CheckKind>,
    /// Whether the answer is asked for in the API's structured-output field.
    pub structured_output: bool,
    /// Whether the prompt is a message list (a system message, a preamble).
    pub message_list: bool,
    /// Turns per conversation (1: single requests).
    pub turns: u32,
    /// Whether the prompts are a golden set's questions.
    pub golden: bool,
}

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
    Messages,
    Turns,
    Golden,
}

/// How a front end spells the parts.
pub trait Syntax {
    /// The name of a part as users wrote it: `--slo-ttft-ms`, `slo.ttft`.
    fn name(&self, part: Part) -> String;
}

/// A rule a probe definition breaks: which part, and why (in the front end's words,
/// without the part's own name: a front end that points at the part says it there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub part: Part,
    pub reason: String,
}

impl Refusal {
    /// The part's name and the reason: `--turns: …`.
    pub fn message(&self, syntax: &dyn Syntax) -> String {
        format!("{}: {}", syntax.name(self.part), self.reason)
    }
}

impl ProbeSpec {
    /// Whether the answers are streamed: asked for, and the API can.
    pub fn streamed(&self) -> bool {
        self.stream && self.endpoint.can_stream()
    }

    /// The first rule this definition breaks, if any, worded in `syntax`.
    pub fn validate(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        self.lengths_are_possible(syntax)?;
        self.objectives_are_measurable(syntax)?;
        self.checks_are_carried(syntax)?;
        self.prompt_fits(syntax)
    }

    /// A prompt and an answer of at least one token; a prompt within bounds, with a
    /// part of its own after any shared prefix.
    fn lengths_are_possible(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        for (part, n) in [
            (Part::InputTokens, self.input_tokens),
            (Part::OutputTokens, self.output_tokens),
        ] {
            if n == 0 {
                return refuse(part, "must be at least 1".into());
            }
        }
        if self.shared_prefix_tokens >= self.input_tokens {
            return refuse(
                Part::SharedPrefix,
                format!(
                    "must be smaller than {} ({}): every prompt needs a unique part",
                    syntax.name(Part::InputTokens),
                    self.input_tokens
                ),
            );
        }
        if self.input_tokens > MAX_INPUT_TOKENS {
            return refuse(
                Part::InputTokens,
                format!(
                    "{} is more than {MAX_INPUT_TOKENS} tokens",
                    self.input_tokens
                ),
            );
        }
        Ok(())
    }

    /// An objective on a latency the answers cannot have is refused, not silently
    /// missed: a non-streamed answer (and an embedding) has only an end-to-end latency.
    fn objectives_are_measurable(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        if self.streamed() {
            return Ok(());
        }
        let Some(l) = self.slo.needing_streaming() else {
            return Ok(());
        };
        let why = if self.endpoint.can_stream() {
            format!("{} turns streaming off", syntax.name(Part::NoStream))
        } else {
            format!("{} is never streamed", self.endpoint_named(syntax))
        };
        refuse(
            Part::Objective(l),
            format!(
                "cannot be met: {why}, so only the end-to-end latency exists (use {})",
                syntax.name(Part::Objective(Latency::E2e))
            ),
        )
    }

    /// A check needs what it reads: generated text, an offered tool, a
    /// structured-output field.
    fn checks_are_carried(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        let api = self.endpoint.api();
        let endpoint = self.endpoint_named(syntax);
        if !api.generates
            && let Some(kind) = self.checks.iter().find(|k| **k != CheckKind::ExpectModel)
        {
            let part = Part::Check(*kind);
            return refuse(
                part,
                format!(
                    "cannot check {endpoint}: it generates no text (only {} can)",
                    syntax.name(Part::Check(CheckKind::ExpectModel))
                ),
            );
        }
        if !api.tools && self.checks.contains(&CheckKind::ExpectToolCall) {
            let part = Part::Check(CheckKind::ExpectToolCall);
            return refuse(
                part,
                format!(
                    "{endpoint} cannot offer tools ({} can)",
                    names_of(|a| a.tools)
                ),
            );
        }
        if self.structured_output && api.structured_output.is_none() {
            return refuse(
                Part::StructuredOutput,
                format!(
                    "{endpoint} has no structured-output field ({} have one)",
                    names_of(|a| a.structured_output.is_some())
                ),
            );
        }
        Ok(())
    }

    /// A message list needs an API that takes one; a conversation needs answers to
    /// carry on with, and builds its own history; a golden question needs an answer
    /// to judge, in one request.
    fn prompt_fits(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        let api = self.endpoint.api();
        let endpoint = self.endpoint_named(syntax);
        if self.message_list && !api.message_list {
            return refuse(
                Part::Messages,
                format!(
                    "{endpoint} takes one text, not a message list ({} take one)",
                    names_of(|a| a.message_list)
                ),
            );
        }
        if self.turns > 1 && !api.generates {
            return refuse(
                Part::Turns,
                format!("{endpoint} answers nothing to carry into a next turn"),
            );
        }
        if self.golden && !api.generates {
            return refuse(Part::Golden, format!("{endpoint} answers no text to judge"));
        }
        if self.golden && self.turns > 1 {
            return refuse(
                Part::Golden,
                format!(
                    "a golden question is one request; {} makes conversations",
                    syntax.name(Part::Turns)
                ),
            );
        }
        if self.turns > 1 && self.message_list {
            return refuse(
                Part::Turns,
                format!(
                    "a conversation builds its own history, so it takes one message, not {}",
                    syntax.name(Part::Messages)
                ),
            );
        }
        Ok(())
    }
}

impl ProbeSpec {
    /// The endpoint as users chose it: `--endpoint embeddings`, `endpoint embeddings`.
    fn endpoint_named(&self, syntax: &dyn Syntax) -> String {
        format!("{} {}", syntax.name(Part::Endpoint), self.endpoint.as_str())
    }
}

fn refuse(part: Part, reason: String) -> Result<(), Refusal> {
    Err(Refusal { part, reason })
}

/// The endpoints whose API has a property: `chat and responses`.
fn names_of(has: impl Fn(&crate::client::protocol::Api) -> bool) -> String {
    let names: Vec<&str> = Endpoint::ALL
        .into_iter()
        .filter(|e| has(e.api()))
        .map(Endpoint::as_str)
        .collect();
    crate::exit::listed(&names, "and")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Names parts like the daemon's YAML, for the tests.
    struct Yaml;

    impl Syntax for Yaml {
        fn name(&self, part: Part) -> String {
            match part {
                Part::Endpoint => "endpoint".into(),
                Part::InputTokens => "input_tokens".into(),
                Part::OutputTokens => "output_tokens".into(),
                Part::SharedPrefix => "shared_prefix_tokens".into(),
                Part::NoStream => "stream: false".into(),
                Part::Objective(l) => format!("slo.{}", l.name()),
                Part::Check(k) => format!("checks.{k}"),
                Part::StructuredOutput => "checks.structured_output".into(),
                Part::Messages => "messages".into(),
                Part::Turns => "turns".into(),
                Part::Golden => "golden".into(),
            }
        }
    }

    fn spec(endpoint: Endpoint) -> ProbeSpec {
        ProbeSpec {
            endpoint,
            input_tokens: 40,
            output_tokens: 8,
            stream: true,
            turns: 1,
            ..ProbeSpec::default()
        }
    }

    #[test]
    fn objectives_on_streamed_latencies_need_a_stream() {
        let slo = Slo::of([(Latency::Ttft, Duration::from_millis(500))]).unwrap();
        let mut s = ProbeSpec {
            slo,
            ..spec(Endpoint::Chat)
        };
        assert_eq!(s.validate(&Yaml), Ok(()));
        s.stream = false;
        let refusal = s.validate(&Yaml).unwrap_err();
        assert_eq!(refusal.part, Part::Objective(Latency::Ttft));
        assert_eq!(
            refusal.message(&Yaml),
            "slo.ttft: cannot be met: stream: false turns streaming off, so only the end-to-end latency exists (use slo.e2e)"
        );
        s.slo = Slo::of([(Latency::E2e, Duration::from_secs(1))]).unwrap();
        assert_eq!(s.validate(&Yaml), Ok(()));
    }

    #[test]
    fn every_capability_rule_follows_the_apis_own_facts() {
        for e in Endpoint::ALL {
            let api = e.api();
            let tools = ProbeSpec {
                checks: vec![CheckKind::ExpectToolCall],
                ..spec(e)
            };
            assert_eq!(
                tools.validate(&Yaml).is_ok(),
                api.tools && api.generates,
                "{e:?}"
            );
            let structured = ProbeSpec {
                structured_output: true,
                ..spec(e)
            };
            let has_field = api.structured_output.is_some();
            assert_eq!(structured.validate(&Yaml).is_ok(), has_field, "{e:?}");
            let messages = ProbeSpec {
                message_list: true,
                ..spec(e)
            };
            assert_eq!(messages.validate(&Yaml).is_ok(), api.message_list, "{e:?}");
            let model = ProbeSpec {
                checks: vec![CheckKind::ExpectModel],
                ..spec(e)
            };
            assert_eq!(model.validate(&Yaml), Ok(()), "{e:?}");
        }
        let err = ProbeSpec {
            checks: vec![CheckKind::ExpectToolCall],
            ..spec(Endpoint::Messages)
        }
        .validate(&Yaml)
        .unwrap_err();
        assert_eq!(
            err.message(&Yaml),
            "checks.expect_tool_call: endpoint messages cannot offer tools (chat and responses can)"
        );
    }

    #[test]
    fn lengths_need_a_token_and_a_bound() {
        let mut s = spec(Endpoint::Chat);
        s.output_tokens = 0;
        assert_eq!(s.validate(&Yaml).unwrap_err().part, Part::OutputTokens);
        s.output_tokens = 1;
        s.input_tokens = MAX_INPUT_TOKENS + 1;
        let refusal = s.validate(&Yaml).unwrap_err();
        assert_eq!(
            refusal.message(&Yaml),
            "input_tokens: 1048577 is more than 1048576 tokens"
        );
        s.input_tokens = MAX_INPUT_TOKENS;
        assert_eq!(s.validate(&Yaml), Ok(()));
    }

    #[test]
    fn conversations_need_answers_and_their_own_history() {
        let mut s = ProbeSpec {
            turns: 3,
            ..spec(Endpoint::Embeddings)
        };
        assert_eq!(s.validate(&Yaml).unwrap_err().part, Part::Turns);
        s.endpoint = Endpoint::Chat;
        assert_eq!(s.validate(&Yaml), Ok(()));
        s.message_list = true;
        assert_eq!(s.validate(&Yaml).unwrap_err().part, Part::Turns);
    }

    #[test]
    fn golden_questions_need_text_in_one_request() {
        let mut s = ProbeSpec {
            golden: true,
            ..spec(Endpoint::Embeddings)
        };
        assert_eq!(
            s.validate(&Yaml).unwrap_err().message(&Yaml),
            "golden: endpoint embeddings answers no text to judge"
        );
        s.endpoint = Endpoint::Chat;
        assert_eq!(s.validate(&Yaml), Ok(()));
        s.turns = 2;
        assert_eq!(
            s.validate(&Yaml).unwrap_err().message(&Yaml),
            "golden: a golden question is one request; turns makes conversations"
        );
    }
}
