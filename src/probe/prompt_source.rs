//! [`PromptSource`]: where a probe's prompts come from (generated text, one fixed
//! question, a message list, a dataset, a golden set, a trace) and what goes before
//! each (the unique nonce, a shared prefix), with every rule about them. A front end
//! fills it with what was asked, two origins included, so that each refusal is said
//! here once.

use super::syntax::{
    Part, Refusal, Syntax, endpoint_named, names_of, offered, refuse, refuse_sentence,
};
use crate::client::Endpoint;

/// What gives a probe its prompts instead of generated text of the input length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// One question as text.
    Prompt,
    /// One question read from a file.
    PromptFile,
    /// One question as a message list (a system message, example exchanges).
    Messages,
    /// A dataset's prompts: its format as named (`sharegpt`), or `None` when only its
    /// file was named.
    Dataset(Option<String>),
    /// A golden set's questions, each answer judged.
    Golden,
    /// A trace's lengths and prefix blocks.
    Trace,
}

/// The origins that are questions given as text, one of which a probe may ask.
const QUESTIONS: [Part; 4] = [
    Part::Prompt,
    Part::PromptFile,
    Part::Messages,
    Part::Dataset,
];

impl Origin {
    /// The part that asked for it.
    fn part(&self) -> Part {
        match self {
            Origin::Prompt => Part::Prompt,
            Origin::PromptFile => Part::PromptFile,
            Origin::Messages => Part::Messages,
            Origin::Dataset(Some(_)) => Part::Dataset,
            Origin::Dataset(None) => Part::DatasetPath,
            Origin::Golden => Part::Golden,
            Origin::Trace => Part::Trace,
        }
    }

    /// Its part as users wrote it, a dataset with its format: `--dataset sharegpt`.
    fn named(&self, syntax: &dyn Syntax) -> String {
        match self {
            Origin::Dataset(Some(format)) => format!("{} {format}", syntax.name(self.part())),
            other => syntax.name(other.part()),
        }
    }
}

/// Where a probe's prompts come from, as asked, and what goes before each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptSource {
    /// Each origin asked for, in the front end's order (a refusal names the first that
    /// cannot go with another); none: generated prompts of the input length.
    pub given: Vec<Origin>,
    /// Whether the unique nonce goes in front of each prompt.
    pub nonce: bool,
    /// Prompt tokens shared by every probe (a prefix the server may cache).
    pub shared_prefix_tokens: u32,
}

impl Default for PromptSource {
    /// Generated prompts, each with its nonce, no shared prefix.
    fn default() -> Self {
        PromptSource {
            given: Vec::new(),
            nonce: true,
            shared_prefix_tokens: 0,
        }
    }
}

impl PromptSource {
    /// Whether the prompts are generated to a length (synthetic text, or a trace's
    /// blocks), not given as text.
    fn generated(&self) -> bool {
        self.given.iter().all(|o| *o == Origin::Trace)
    }

    /// Whether the prompts are a golden set's questions.
    fn golden(&self) -> bool {
        self.given.contains(&Origin::Golden)
    }

    /// Whether the prompt is a message list.
    fn message_list(&self) -> bool {
        self.given.contains(&Origin::Messages)
    }

    /// The first rule broken, worded in `syntax`, within the probe around it: its
    /// endpoint, the prompt tokens asked for and the turns per conversation.
    pub fn validate(
        &self,
        endpoint: Endpoint,
        input_tokens: u32,
        turns: u32,
        syntax: &dyn Syntax,
    ) -> Result<(), Refusal> {
        self.golden_is_asked_as_written(syntax)?;
        self.a_trace_gives_the_prompts(syntax)?;
        self.one_question(syntax)?;
        self.no_nonce_needs_a_question(syntax)?;
        self.prefix_leaves_room(input_tokens, syntax)?;
        self.message_list_fits(endpoint, turns, syntax)?;
        self.golden_is_judged(endpoint, turns, syntax)
    }

    /// A golden question goes out as written, so nothing else may give the prompts
    /// or stand before them.
    fn golden_is_asked_as_written(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        if !self.golden() {
            return Ok(());
        }
        let other = self
            .given
            .iter()
            .find(|o| **o != Origin::Golden)
            .map(Origin::part)
            .or((self.shared_prefix_tokens > 0).then_some(Part::SharedPrefix));
        match other {
            Some(part) => refuse_sentence(
                Part::Golden,
                format!(
                    "{} asks the golden set's questions: drop {}",
                    syntax.name(Part::Golden),
                    syntax.name(part)
                ),
            ),
            None => Ok(()),
        }
    }

    /// A trace gives every first message's lengths and prefix blocks, and a
    /// conversation's later messages are generated: given text has no place in either.
    fn a_trace_gives_the_prompts(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        if !self.given.contains(&Origin::Trace) {
            return Ok(());
        }
        match self.given.iter().find(|o| **o != Origin::Trace) {
            Some(other) => refuse_sentence(
                Part::Trace,
                format!(
                    "{} builds each request from the trace's lengths: {} does not apply \
                     (with {}, later turns are new messages of {} tokens)",
                    syntax.name(Part::Trace),
                    other.named(syntax),
                    syntax.name(Part::Turns),
                    syntax.name(Part::InputTokens)
                ),
            ),
            None => Ok(()),
        }
    }

    /// One question, or one dataset: with two, one would be silently dropped.
    fn one_question(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        match self.given.get(1) {
            Some(second) => refuse(
                second.part(),
                format!("set {}, not two of them", offered(&QUESTIONS, syntax, "or")),
            ),
            None => Ok(()),
        }
    }

    /// Without the nonce, every generated prompt of a length would be the same text.
    fn no_nonce_needs_a_question(&self, syntax: &dyn Syntax) -> Result<(), Refusal> {
        if self.nonce || !self.generated() {
            return Ok(());
        }
        let alternatives = [QUESTIONS.as_slice(), &[Part::Golden]].concat();
        refuse_sentence(
            Part::NoNonce,
            format!(
                "{} needs a fixed question ({}); synthetic prompts always carry the nonce",
                syntax.name(Part::NoNonce),
                offered(&alternatives, syntax, "or")
            ),
        )
    }

    /// A generated prompt holds the shared prefix, its nonce and a part of its own; a
    /// given question is sent whatever the input length says.
    fn prefix_leaves_room(&self, input_tokens: u32, syntax: &dyn Syntax) -> Result<(), Refusal> {
        if !self.generated() {
            return Ok(());
        }
        if self.shared_prefix_tokens >= input_tokens {
            return refuse(
                Part::SharedPrefix,
                format!(
                    "must be smaller than {} ({input_tokens}): every prompt needs a unique part",
                    syntax.name(Part::InputTokens)
                ),
            );
        }
        crate::workload::prompt::check_room(self.shared_prefix_tokens, input_tokens)
            .or_else(|e| refuse(Part::InputTokens, e.0))
    }

    /// A message list needs an API that takes one; a conversation builds its own
    /// history, so it starts from one message.
    fn message_list_fits(
        &self,
        endpoint: Endpoint,
        turns: u32,
        syntax: &dyn Syntax,
    ) -> Result<(), Refusal> {
        if !self.message_list() {
            return Ok(());
        }
        if !endpoint.api().message_list {
            return refuse(
                Part::Messages,
                format!(
                    "{} takes one text, not a message list ({} take one)",
                    endpoint_named(endpoint, syntax),
                    names_of(|a| a.message_list)
                ),
            );
        }
        if turns > 1 {
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

    /// A golden question needs an answer to judge, in one request.
    fn golden_is_judged(
        &self,
        endpoint: Endpoint,
        turns: u32,
        syntax: &dyn Syntax,
    ) -> Result<(), Refusal> {
        if !self.golden() {
            return Ok(());
        }
        if !endpoint.api().generates {
            return refuse(
                Part::Golden,
                format!(
                    "{} answers no text to judge",
                    endpoint_named(endpoint, syntax)
                ),
            );
        }
        if turns > 1 {
            return refuse(
                Part::Golden,
                format!(
                    "a golden question is one request; {} makes conversations",
                    syntax.name(Part::Turns)
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::syntax::spelled::{Flags, Yaml};
    use super::*;

    /// A chat probe of 128 prompt tokens, one turn, asking `given`.
    fn source(given: Vec<Origin>) -> PromptSource {
        PromptSource {
            given,
            ..PromptSource::default()
        }
    }

    /// The refusal in the daemon's words and in bench's, with the part refused.
    fn refused(s: &PromptSource, endpoint: Endpoint, turns: u32) -> (Part, String, String) {
        let yaml = s.validate(endpoint, 128, turns, &Yaml).unwrap_err();
        let flags = s.validate(endpoint, 128, turns, &Flags).unwrap_err();
        assert_eq!(yaml.part, flags.part);
        (yaml.part, yaml.message(&Yaml), flags.message(&Flags))
    }

    fn ok(s: &PromptSource, endpoint: Endpoint, turns: u32) -> bool {
        s.validate(endpoint, 128, turns, &Yaml).is_ok()
            && s.validate(endpoint, 128, turns, &Flags).is_ok()
    }

    #[test]
    fn a_golden_question_is_asked_alone_and_without_a_prefix() {
        assert!(ok(&source(vec![Origin::Golden]), Endpoint::Chat, 1));
        let s = source(vec![Origin::PromptFile, Origin::Prompt, Origin::Golden]);
        assert_eq!(
            refused(&s, Endpoint::Chat, 1),
            (
                Part::Golden,
                "golden asks the golden set's questions: drop prompt_file".into(),
                "--golden asks the golden set's questions: drop --prompt-file".into()
            )
        );
        let s = PromptSource {
            shared_prefix_tokens: 16,
            ..source(vec![Origin::Golden])
        };
        assert_eq!(
            refused(&s, Endpoint::Chat, 1),
            (
                Part::Golden,
                "golden asks the golden set's questions: drop shared_prefix_tokens".into(),
                "--golden asks the golden set's questions: drop --shared-prefix-len".into()
            )
        );
        // A dataset is named by the flag that asked for it.
        for (dataset, flag) in [
            (Some("sharegpt".into()), "--dataset"),
            (None, "--dataset-path"),
        ] {
            let s = source(vec![Origin::Dataset(dataset), Origin::Golden]);
            assert_eq!(
                refused(&s, Endpoint::Chat, 1).2,
                format!("--golden asks the golden set's questions: drop {flag}")
            );
        }
        // The golden rule goes first: a trace beside it is to drop, not to keep.
        let s = source(vec![Origin::Trace, Origin::Golden]);
        assert_eq!(
            refused(&s, Endpoint::Chat, 1).2,
            "--golden asks the golden set's questions: drop --trace"
        );
    }

    #[test]
    fn a_trace_gives_every_prompt() {
        assert!(ok(&source(vec![Origin::Trace]), Endpoint::Chat, 3));
        let s = source(vec![
            Origin::Dataset(Some("sharegpt".into())),
            Origin::Trace,
        ]);
        assert_eq!(
            refused(&s, Endpoint::Chat, 3),
            (
                Part::Trace,
                "trace builds each request from the trace's lengths: dataset sharegpt does not \
                 apply (with turns, later turns are new messages of input_tokens tokens)"
                    .into(),
                "--trace builds each request from the trace's lengths: --dataset sharegpt does \
                 not apply (with --turns, later turns are new messages of --input-len tokens)"
                    .into()
            )
        );
        let s = source(vec![Origin::Prompt, Origin::Trace]);
        assert!(
            refused(&s, Endpoint::Chat, 1)
                .2
                .contains(": --prompt does not apply")
        );
    }

    #[test]
    fn one_question_at_a_time() {
        for one in [Origin::Prompt, Origin::PromptFile, Origin::Messages] {
            assert!(ok(&source(vec![one]), Endpoint::Chat, 1));
        }
        let s = source(vec![Origin::Prompt, Origin::Messages]);
        assert_eq!(
            refused(&s, Endpoint::Chat, 1),
            (
                Part::Messages,
                "messages: set prompt, prompt_file or messages, not two of them".into(),
                "a message list: set --prompt, --prompt-file or --dataset, not two of them".into()
            )
        );
        let s = source(vec![Origin::Prompt, Origin::Dataset(Some("jsonl".into()))]);
        assert_eq!(
            refused(&s, Endpoint::Chat, 1),
            (
                Part::Dataset,
                "dataset: set prompt, prompt_file or messages, not two of them".into(),
                "--dataset: set --prompt, --prompt-file or --dataset, not two of them".into()
            )
        );
    }

    #[test]
    fn no_nonce_needs_a_question() {
        let off = |given| PromptSource {
            nonce: false,
            ..source(given)
        };
        for given in [
            vec![Origin::Prompt],
            vec![Origin::Messages],
            vec![Origin::Dataset(Some("jsonl".into()))],
            vec![Origin::Golden],
        ] {
            assert!(ok(&off(given.clone()), Endpoint::Chat, 1), "{given:?}");
        }
        for given in [vec![], vec![Origin::Trace]] {
            assert_eq!(
                refused(&off(given), Endpoint::Chat, 1),
                (
                    Part::NoNonce,
                    "nonce: false needs a fixed question (prompt, prompt_file, messages or \
                     golden); synthetic prompts always carry the nonce"
                        .into(),
                    "--no-nonce needs a fixed question (--prompt, --prompt-file, --dataset or \
                     --golden); synthetic prompts always carry the nonce"
                        .into()
                )
            );
        }
    }

    #[test]
    fn a_generated_prompt_leaves_room_after_its_prefix() {
        let prefixed = |given, shared_prefix_tokens| PromptSource {
            shared_prefix_tokens,
            ..source(given)
        };
        assert_eq!(
            refused(&prefixed(vec![], 128), Endpoint::Chat, 1),
            (
                Part::SharedPrefix,
                "shared_prefix_tokens: must be smaller than input_tokens (128): every prompt \
                 needs a unique part"
                    .into(),
                "--shared-prefix-len: must be smaller than --input-len (128): every prompt \
                 needs a unique part"
                    .into()
            )
        );
        // 120 + the nonce's 8 + one token of its own is 129.
        assert_eq!(
            refused(&prefixed(vec![Origin::Trace], 120), Endpoint::Chat, 1),
            (
                Part::InputTokens,
                "input_tokens: input length 128 is too short: the shared prefix (120) and the \
                 unique nonce (8) plus one token need 129"
                    .into(),
                "--input-len: input length 128 is too short: the shared prefix (120) and the \
                 unique nonce (8) plus one token need 129"
                    .into()
            )
        );
        assert!(ok(&prefixed(vec![], 119), Endpoint::Chat, 1));
        // A given question goes out whole after the prefix, whatever the input length.
        assert!(ok(&prefixed(vec![Origin::Prompt], 500), Endpoint::Chat, 1));
    }

    #[test]
    fn a_message_list_needs_an_api_that_takes_one_and_a_single_turn() {
        for e in Endpoint::ALL {
            let s = source(vec![Origin::Messages]);
            assert_eq!(ok(&s, e, 1), e.api().message_list, "{e:?}");
        }
        let s = source(vec![Origin::Messages]);
        assert_eq!(
            refused(&s, Endpoint::Completions, 1),
            (
                Part::Messages,
                "messages: endpoint completions takes one text, not a message list (chat, \
                 responses and messages take one)"
                    .into(),
                "a message list: --endpoint completions takes one text, not a message list \
                 (chat, responses and messages take one)"
                    .into()
            )
        );
        assert_eq!(
            refused(&s, Endpoint::Chat, 2),
            (
                Part::Turns,
                "turns: a conversation builds its own history, so it takes one message, not \
                 messages"
                    .into(),
                "--turns: a conversation builds its own history, so it takes one message, not \
                 a message list"
                    .into()
            )
        );
    }

    #[test]
    fn a_golden_question_needs_text_in_one_request() {
        let s = source(vec![Origin::Golden]);
        assert_eq!(
            refused(&s, Endpoint::Embeddings, 1),
            (
                Part::Golden,
                "golden: endpoint embeddings answers no text to judge".into(),
                "--golden: --endpoint embeddings answers no text to judge".into()
            )
        );
        assert_eq!(
            refused(&s, Endpoint::Chat, 2),
            (
                Part::Golden,
                "golden: a golden question is one request; turns makes conversations".into(),
                "--golden: a golden question is one request; --turns makes conversations".into()
            )
        );
    }
}
