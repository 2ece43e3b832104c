//! [`ProbeSpec`]: what one probe asks of an endpoint (protocol, streaming, objectives,
//! answer checks, prompt shape, turns), with the one [`ProbeSpec::validate`] both front
//! ends call. A rule lives here once; each front end only names the parts in its own
//! syntax ([`Syntax`]: bench flags, or the daemon's YAML keys) and places the error
//! (a flag, or FILE:LINE:COL).

use super::prompt_source::PromptSource;
use super::syntax::{Part, Refusal, Syntax, endpoint_named, names_of, refuse};
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
    /// Whether streaming was asked for (the endpoint may still not stream).
    pub stream: bool,
    pub slo: Slo,
    /// The answer checks configured.
    pub checks: Vec<CheckKind>,
    /// Whether the answer is asked for in the API's structured-output field.
    pub structured_output: bool,
    /// Where the prompts come from, and what goes before each.
    pub prompt: PromptSource,
    /// Turns per conversation (1: single requests).
    pub turns: u32,
    /// Documents a rerank or score request ranks.
    pub documents: usize,
    /// The document the top-document check expects first, when it is configured.
    pub top_document: Option<u32>,
    /// Whether the prompt carries images.
    pub images: bool,
}

impl ProbeSpec {
    /// Whether the answers are streamed: asked for, and the API can.
    pub fn streamed(&self) -> bool {
        self.stream && self.endpoint.can_stream()
    }

    /// The first rule this definition breaks, if any, worded in `syntax`.
    pub fn validate(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        self.lengths_are_possible()?;
        self.objectives_are_measurable(syntax)?;
        self.checks_are_carried(syntax)?;
        self.documents_are_ranked(syntax)?;
        self.images_are_carried(syntax)?;
        self.prompt
            .validate(self.endpoint, self.input_tokens, self.turns, syntax)?;
        self.conversations_carry_on(syntax)
    }

    /// A prompt and an answer of at least one token; a prompt within bounds.
    fn lengths_are_possible(&self) -> Result<(), Refusal> {
        for (part, n) in [
            (Part::InputTokens, self.input_tokens),
            (Part::OutputTokens, self.output_tokens),
        ] {
            if n == 0 {
                return refuse(part, "must be at least 1".into());
            }
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
            format!(
                "{} is never streamed",
                endpoint_named(self.endpoint, syntax)
            )
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
        let endpoint = endpoint_named(self.endpoint, syntax);
        // What an answer without text can be checked for.
        let textless = |k: CheckKind| {
            k == CheckKind::ExpectModel || (api.documents && k == CheckKind::ExpectTopDocument)
        };
        if !api.generates
            && let Some(kind) = self.checks.iter().find(|k| !textless(**k))
        {
            let part = Part::Check(*kind);
            let can: Vec<String> = CheckKind::ALL
                .into_iter()
                .filter(|k| textless(*k))
                .map(|k| syntax.name(Part::Check(k)))
                .collect();
            let can: Vec<&str> = can.iter().map(String::as_str).collect();
            return refuse(
                part,
                format!(
                    "cannot check {endpoint}: it generates no text (only {} can)",
                    crate::exit::listed(&can, "and")
                ),
            );
        }
        if !api.documents && self.checks.contains(&CheckKind::ExpectTopDocument) {
            return refuse(
                Part::Check(CheckKind::ExpectTopDocument),
                format!(
                    "{endpoint} ranks no documents ({} do)",
                    names_of(|a| a.documents)
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

    /// Rerank and score rank documents, which the other APIs cannot carry; the expected
    /// top document is one of them.
    fn documents_are_ranked(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        let endpoint = endpoint_named(self.endpoint, syntax);
        let documents = syntax.name(Part::Documents);
        match (self.endpoint.api().documents, self.documents) {
            (true, 0) => {
                return refuse(
                    Part::Documents,
                    format!("{endpoint} needs documents to rank"),
                );
            }
            (false, n) if n > 0 => {
                return refuse(
                    Part::Documents,
                    format!(
                        "{endpoint} sends no documents (only {} do)",
                        names_of(|a| a.documents)
                    ),
                );
            }
            _ => {}
        }
        match self.top_document {
            Some(i) if i as usize >= self.documents => refuse(
                Part::Check(CheckKind::ExpectTopDocument),
                format!(
                    "document {i} is not among the {} {documents} (numbered from 0)",
                    self.documents
                ),
            ),
            _ => Ok(()),
        }
    }

    /// Images go in a user message of the APIs that take image parts.
    fn images_are_carried(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        if self.images && !self.endpoint.api().images {
            return refuse(
                Part::Images,
                format!(
                    "{} cannot carry images ({} can)",
                    endpoint_named(self.endpoint, syntax),
                    names_of(|a| a.images)
                ),
            );
        }
        Ok(())
    }

    /// A conversation needs answers to carry on with.
    fn conversations_carry_on(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        if self.turns > 1 && !self.endpoint.api().generates {
            return refuse(
                Part::Turns,
                format!(
                    "{} answers nothing to carry into a next turn",
                    endpoint_named(self.endpoint, syntax)
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::prompt_source::Origin;
    use super::super::syntax::spelled::{Flags, Yaml};
    use super::*;
    use std::time::Duration;

    fn spec(endpoint: Endpoint) -> ProbeSpec {
        ProbeSpec {
            endpoint,
            input_tokens: 40,
            output_tokens: 8,
            stream: true,
            turns: 1,
            documents: if endpoint.api().documents { 2 } else { 0 },
            ..ProbeSpec::default()
        }
    }

    #[test]
    fn documents_go_with_the_apis_that_rank_them() {
        for e in Endpoint::ALL {
            let ranks = e.api().documents;
            let top = ProbeSpec {
                checks: vec![CheckKind::ExpectTopDocument],
                top_document: Some(1),
                ..spec(e)
            };
            assert_eq!(top.validate(&Yaml).is_ok(), ranks, "{e:?}");
            let flipped = ProbeSpec {
                documents: if ranks { 0 } else { 3 },
                ..spec(e)
            };
            assert_eq!(flipped.validate(&Yaml).unwrap_err().part, Part::Documents);
        }
        let msg =
            |s: ProbeSpec, syntax: &dyn Syntax| s.validate(syntax).unwrap_err().message(syntax);
        assert_eq!(
            msg(
                ProbeSpec {
                    documents: 0,
                    ..spec(Endpoint::Rerank)
                },
                &Flags
            ),
            "--document: --endpoint rerank needs documents to rank"
        );
        assert_eq!(
            msg(
                ProbeSpec {
                    documents: 1,
                    ..spec(Endpoint::Chat)
                },
                &Yaml
            ),
            "documents: endpoint chat sends no documents (only rerank and score do)"
        );
        let out_of_range = ProbeSpec {
            checks: vec![CheckKind::ExpectTopDocument],
            top_document: Some(2),
            ..spec(Endpoint::Score)
        };
        assert_eq!(
            msg(out_of_range, &Yaml),
            "checks.expect_top_document: document 2 is not among the 2 documents (numbered from 0)"
        );
        let text = ProbeSpec {
            checks: vec![CheckKind::ExpectRegex],
            ..spec(Endpoint::Rerank)
        };
        assert_eq!(
            msg(text, &Yaml),
            "checks.expect_regex: cannot check endpoint rerank: it generates no text (only checks.expect_model and checks.expect_top_document can)"
        );
        let images = ProbeSpec {
            images: true,
            ..spec(Endpoint::Completions)
        };
        assert_eq!(
            msg(images, &Flags),
            "--images: --endpoint completions cannot carry images (chat, responses and messages can)"
        );
        for e in Endpoint::ALL {
            let images = ProbeSpec {
                images: true,
                ..spec(e)
            };
            assert_eq!(images.validate(&Yaml).is_ok(), e.api().images, "{e:?}");
        }
        let chat = ProbeSpec {
            checks: vec![CheckKind::ExpectTopDocument],
            ..spec(Endpoint::Chat)
        };
        assert_eq!(
            msg(chat, &Yaml),
            "checks.expect_top_document: endpoint chat ranks no documents (rerank and score do)"
        );
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
                prompt: asking(Origin::Messages),
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
        let refusal = s.validate(&Yaml).unwrap_err();
        assert_eq!(
            refusal.message(&Yaml),
            "turns: endpoint embeddings answers nothing to carry into a next turn"
        );
        assert_eq!(
            s.validate(&Flags).unwrap_err().message(&Flags),
            "--turns: --endpoint embeddings answers nothing to carry into a next turn"
        );
        s.endpoint = Endpoint::Chat;
        assert_eq!(s.validate(&Yaml), Ok(()));
        s.prompt = asking(Origin::Messages);
        assert_eq!(s.validate(&Yaml).unwrap_err().part, Part::Turns);
    }

    #[test]
    fn the_prompt_sources_rules_are_the_probes() {
        let mut s = ProbeSpec {
            prompt: asking(Origin::Golden),
            ..spec(Endpoint::Chat)
        };
        assert_eq!(s.validate(&Flags), Ok(()));
        s.prompt.given.insert(0, Origin::Prompt);
        assert_eq!(
            s.validate(&Flags).unwrap_err().message(&Flags),
            "--golden asks the golden set's questions: drop --prompt"
        );
        // The probe's own input length is the one a shared prefix must leave room in.
        s.prompt = PromptSource {
            shared_prefix_tokens: 40,
            ..PromptSource::default()
        };
        assert_eq!(s.validate(&Yaml).unwrap_err().part, Part::SharedPrefix);
        s.input_tokens = 49;
        assert_eq!(s.validate(&Yaml), Ok(()));
    }

    fn asking(origin: Origin) -> PromptSource {
        PromptSource {
            given: vec![origin],
            ..PromptSource::default()
        }
    }
}
