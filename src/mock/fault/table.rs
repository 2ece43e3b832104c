//! Every fault the mock can inject, declared once in [`faults!`]'s table: its name,
//! parameter (with default and range), where it acts on the wire ([`Act`]) and its
//! one-line description. Parsing (`--fault KIND[=PARAM][:PROBABILITY]`, the
//! `x-mock-fault: KIND[=PARAM]` header), `Display`, the `--help` list and the dispatch
//! all read that table. The wire behaviour sits in `inject.rs`, one function per acting
//! point (the voice's in `answer/voice.rs`); docs/mock.md describes it, and a test walks
//! the table (`walk.rs`).

use std::fmt;
use std::str::FromStr;

use crate::exit::UsageError;

/// Request header that forces one fault for that request (overrides `--fault`).
pub const FAULT_HEADER: &str = "x-mock-fault";

/// Default token count after which `reset_mid_stream` and `stall_after_tokens` act.
pub const DEFAULT_AFTER_TOKENS: u32 = 2;
/// Default `Retry-After` seconds of `http_429`.
pub const DEFAULT_RETRY_AFTER_SECS: u32 = 1;
/// Default length of the `huge_line` line: 16 MiB.
pub const DEFAULT_HUGE_LINE_BYTES: usize = 16 << 20;
/// Upper bound for `huge_line=BYTES` so a typo cannot ask for terabytes.
const MAX_HUGE_LINE_BYTES: usize = 1 << 30;

/// Where a fault acts on the wire, in the order a response passes these points. Each
/// point is one function of `inject.rs` (`Voice`: `answer/voice.rs`), which acts only
/// on the faults whose row lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Before the status line: the connection closed, or the headers held back.
    BeforeHeaders,
    /// An error status instead of the answer.
    Status,
    /// The response's framing: its content type, its chunking, streamed or not.
    Framing,
    /// Around the answer's token chunks.
    Tokens,
    /// The answer's end: its end marker, or the connection instead.
    End,
    /// The bytes of a whole (non-streamed) body.
    Body,
    /// What the answer says: its text, model or tool call.
    Voice,
}

/// A fault's numeric parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its placeholder in `KIND[=NAME]`.
    pub name: &'static str,
    /// What it is, for errors (`size`).
    pub what: &'static str,
    pub unit: &'static str,
    pub default: u64,
    pub min: u64,
    pub max: u64,
}

impl Param {
    const fn tokens(default: u32) -> Option<Param> {
        Some(Param {
            name: "N",
            what: "token count",
            unit: "tokens",
            default: default as u64,
            min: 0,
            max: u32::MAX as u64,
        })
    }
}

/// One row of the fault table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub name: &'static str,
    pub param: Option<Param>,
    /// Where it acts (every point whose function handles it).
    pub acts: &'static [Act],
    /// One line for `--help` and the docs.
    pub help: &'static str,
}

impl Fault {
    /// `name` or `name[=PARAM]`, as `--help` lists it.
    pub fn usage(&self) -> String {
        match self.param {
            Some(p) => format!("{}[={}]", self.name, p.name),
            None => self.name.to_string(),
        }
    }
}

/// Declares the faults: the `FaultKind` enum, the [`FAULTS`] table and [`FAULT_NAMES`]
/// from one list, each row `Variant { field: type } => "name", param, acts, help`.
macro_rules! faults {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident $({ $field:ident: $ty:ty })? => $name:literal,
        param: $param:expr,
        acts: [$($act:ident),+],
        help: $help:literal;
    )+) => {
        /// One way for a request to go wrong.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum FaultKind {
            $( $(#[doc = $doc])* $variant $({ $field: $ty })?, )+
        }

        /// The variants without their parameters, numbered in table order.
        #[derive(Clone, Copy)]
        enum Tag { $( $variant, )+ }

        /// Every fault, in documentation order.
        pub const FAULTS: &[Fault] = &[
            $( Fault { name: $name, param: $param, acts: &[$(Act::$act),+], help: $help }, )+
        ];

        /// Every fault's name, in documentation order (error messages list them).
        pub const FAULT_NAMES: &[&str] = &[$( $name, )+];

        impl FaultKind {
            fn tag(&self) -> Tag {
                match self { $( FaultKind::$variant { .. } => Tag::$variant, )+ }
            }

            /// Its parameter's value, if it takes one.
            pub fn param(&self) -> Option<u64> {
                match *self {
                    $( FaultKind::$variant $({ $field })? => param_value!($($field)?), )+
                }
            }

            /// The fault of row `row` with parameter `value` (already in range; 0 when
            /// it takes none).
            fn of_row(row: &Fault, value: u64) -> Option<FaultKind> {
                match row.name {
                    $( $name => Some(FaultKind::$variant $({
                        $field: <$ty>::try_from(value).unwrap_or(<$ty>::MAX)
                    })?), )+
                    _ => None,
                }
            }
        }
    };
}

macro_rules! param_value {
    () => {
        None
    };
    ($field:ident) => {
        Some(u64::try_from($field).unwrap_or(u64::MAX))
    };
}

faults! {
    Http500 => "http_500",
        param: None, acts: [Status],
        help: "at once: 500 with an OpenAI-style error body";
    Http503 => "http_503",
        param: None, acts: [Status],
        help: "at once: 503 with an OpenAI-style error body";
    Http429 { retry_after_secs: u32 } => "http_429",
        param: Some(Param { name: "RETRY_AFTER_S", what: "Retry-After", unit: "seconds",
            default: DEFAULT_RETRY_AFTER_SECS as u64, min: 0, max: u32::MAX as u64 }),
        acts: [Status],
        help: "at once: 429 with Retry-After";
    CloseBeforeResponse => "close_before_response",
        param: None, acts: [BeforeHeaders],
        help: "the connection closed (FIN) without a response byte";
    ResetMidStream { after_tokens: u32 } => "reset_mid_stream",
        param: Param::tokens(DEFAULT_AFTER_TOKENS), acts: [Tokens, End],
        help: "TCP RST after N tokens (whole answers: instead of the body)";
    StallBeforeHeaders => "stall_before_headers",
        param: None, acts: [BeforeHeaders],
        help: "nothing for --stall-ms, then the normal answer";
    StallAfterTokens { after_tokens: u32 } => "stall_after_tokens",
        param: Param::tokens(DEFAULT_AFTER_TOKENS), acts: [Tokens],
        help: "nothing for --stall-ms after N tokens, then the rest";
    MalformedJson => "malformed_json",
        param: None, acts: [Tokens, Body],
        help: "an event cut in half after the first chunk (whole: the body cut)";
    NoDone => "no_done",
        param: None, acts: [End],
        help: "the stream ends without its end marker ([DONE])";
    InvalidUtf8 => "invalid_utf8",
        param: None, acts: [Tokens, Body],
        help: "bytes 0xFF 0xFE after the first token's text";
    HugeLine { bytes: usize } => "huge_line",
        param: Some(Param { name: "BYTES", what: "size", unit: "bytes",
            default: DEFAULT_HUGE_LINE_BYTES as u64, min: 1024,
            max: MAX_HUGE_LINE_BYTES as u64 }),
        acts: [Tokens],
        help: "one event line of BYTES bytes before the first token";
    Trickle => "trickle",
        param: None, acts: [Framing],
        help: "every body byte its own HTTP chunk, 1 ms apart";
    WrongContentType => "wrong_content_type",
        param: None, acts: [Framing],
        help: "the normal body as text/plain";
    JsonInsteadOfSse => "json_instead_of_sse",
        param: None, acts: [Framing],
        help: "a streamed request answered with one JSON body";
    ErrorEvent => "error_event",
        param: None, acts: [Tokens],
        help: "the protocol's error event after the first chunk";
    EmptyCompletion => "empty_completion",
        param: None, acts: [Tokens],
        help: "an answer of no tokens that stops at once";
    /// Fast and wrong: random words.
    Garbage => "garbage",
        param: None, acts: [Voice],
        help: "fast but wrong: random words";
    /// Fast and wrong: one token looped.
    Repeat => "repeat",
        param: None, acts: [Voice],
        help: "fast but wrong: the first token over and over";
    /// Fast and wrong: another model's name in the response.
    WrongModel => "wrong_model",
        param: None, acts: [Voice],
        help: "fast but wrong: another model's name";
    /// Fast and wrong: JSON that never closes.
    BadJson => "bad_json",
        param: None, acts: [Voice],
        help: "fast but wrong: JSON that never closes";
    /// Fast and wrong: chat-template control tokens in the answer.
    TemplateLeak => "template_leak",
        param: None, acts: [Voice],
        help: "fast but wrong: chat-template control tokens before the answer";
    /// Fast and wrong: an answer no question expects.
    WrongAnswer => "wrong_answer",
        param: None, acts: [Voice],
        help: "fast but wrong: \"I do not know.\" instead of the answer";
    /// Fast and wrong: plain text where an offered tool should have been called.
    NoToolCall => "no_tool_call",
        param: None, acts: [Voice],
        help: "fast but wrong: plain text where an offered tool should be called";
}

/// The `--fault` flag's list of kinds, one per line with its description, from
/// [`FAULTS`].
pub fn kinds_help() -> String {
    let width = FAULTS.iter().map(|f| f.usage().len()).max().unwrap_or(0);
    FAULTS
        .iter()
        .map(|f| match f.param {
            Some(p) => format!(
                "  {:width$}  {} ({} default {})",
                f.usage(),
                f.help,
                p.name,
                p.default
            ),
            None => format!("  {:width$}  {}", f.usage(), f.help),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl FaultKind {
    /// Its row of [`FAULTS`].
    pub fn fault(&self) -> &'static Fault {
        &FAULTS[self.tag() as usize]
    }

    pub fn name(&self) -> &'static str {
        self.fault().name
    }

    /// Whether it acts at `act` (its row lists that point).
    pub fn acts_at(&self, act: Act) -> bool {
        self.fault().acts.contains(&act)
    }

    /// Parses `name` or `name=param`; `name:param` is accepted too (header form).
    pub fn parse_with_param(s: &str) -> Result<Self, UsageError> {
        let s = s.trim();
        let (name, param) = match s.split_once(['=', ':']) {
            Some((n, p)) => (n.trim(), Some(p.trim())),
            None => (s, None),
        };
        Self::build(name, param)
    }

    fn build(name: &str, param: Option<&str>) -> Result<Self, UsageError> {
        let Some(row) = FAULTS.iter().find(|f| f.name == name) else {
            return Err(UsageError::new(format!(
                "unknown fault {name:?}; expected one of: {}",
                FAULT_NAMES.join(", ")
            )));
        };
        let value = match (row.param, param) {
            (None, None) => 0,
            (None, Some(p)) => {
                return Err(UsageError::new(format!(
                    "fault {name} takes no parameter (got {p:?})"
                )));
            }
            (Some(spec), None) => spec.default,
            (Some(spec), Some(p)) => param_in_range(name, spec, p)?,
        };
        FaultKind::of_row(row, value)
            .ok_or_else(|| UsageError::new(format!("unknown fault {name:?}")))
    }
}

/// `p` parsed as the parameter `spec` of fault `name`, within its range.
fn param_in_range(name: &str, spec: Param, p: &str) -> Result<u64, UsageError> {
    let v: u64 = p.parse().map_err(|_| {
        UsageError::new(format!(
            "fault {name}: parameter {p:?} is not a non-negative integer"
        ))
    })?;
    if !(spec.min..=spec.max).contains(&v) {
        return Err(UsageError::new(format!(
            "fault {name}: {} must be between {} and {} {}, got {v}",
            spec.what, spec.min, spec.max, spec.unit
        )));
    }
    Ok(v)
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.param() {
            Some(v) => write!(f, "{}={v}", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

/// A configured fault: `kind` happens to a request with `probability`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaultSpec {
    pub kind: FaultKind,
    pub probability: f64,
}

impl FromStr for FaultSpec {
    type Err = UsageError;

    /// `KIND[=PARAM][:PROBABILITY]`, probability in [0, 1], default 1.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (kind_part, prob) = match s.split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (s, None),
        };
        let (name, param) = match kind_part.split_once('=') {
            Some((n, p)) => (n.trim(), Some(p.trim())),
            None => (kind_part.trim(), None),
        };
        let kind = FaultKind::build(name, param)?;
        let probability = match prob {
            None => 1.0,
            Some(p) => {
                let v: f64 = p.trim().parse().map_err(|_| {
                    UsageError::new(format!(
                        "fault {s:?}: probability {p:?} is not a number (a parameter goes after '=', e.g. stall_after_tokens=3:0.5)"
                    ))
                })?;
                if !(0.0..=1.0).contains(&v) {
                    return Err(UsageError::new(format!(
                        "fault {s:?}: probability must be in [0, 1], got {p} (a parameter goes after '=', e.g. stall_after_tokens=3:0.5)"
                    )));
                }
                v
            }
        };
        Ok(FaultSpec { kind, probability })
    }
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.probability)
    }
}

impl<'de> serde::Deserialize<'de> for FaultSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_round_trips() {
        for name in FAULT_NAMES {
            let k = FaultKind::parse_with_param(name).unwrap();
            assert_eq!(k.name(), *name);
            let again = FaultKind::parse_with_param(&k.to_string()).unwrap();
            assert_eq!(again, k);
        }
    }

    #[test]
    fn the_table_and_the_enum_agree() {
        assert_eq!(FAULTS.len(), FAULT_NAMES.len());
        for (i, row) in FAULTS.iter().enumerate() {
            let k = FaultKind::parse_with_param(row.name).unwrap();
            assert_eq!(k.fault(), &FAULTS[i], "{}", row.name);
            assert_eq!(k.param(), row.param.map(|p| p.default), "{}", row.name);
            assert!(!row.acts.is_empty() && !row.help.is_empty());
        }
        let help = kinds_help();
        assert!(help.contains("huge_line[=BYTES]") && help.contains("random words"));
    }

    #[test]
    fn params_and_probabilities() {
        assert_eq!(
            FaultKind::parse_with_param("stall_after_tokens:5").unwrap(),
            FaultKind::StallAfterTokens { after_tokens: 5 }
        );
        assert_eq!(
            FaultKind::parse_with_param("http_429=7").unwrap(),
            FaultKind::Http429 {
                retry_after_secs: 7
            }
        );
        let spec: FaultSpec = "http_500:0.25".parse().unwrap();
        assert_eq!(
            spec,
            FaultSpec {
                kind: FaultKind::Http500,
                probability: 0.25
            }
        );
        let spec: FaultSpec = "reset_mid_stream=4:0.5".parse().unwrap();
        assert_eq!(spec.kind, FaultKind::ResetMidStream { after_tokens: 4 });
        assert_eq!(spec.probability, 0.5);
        assert_eq!("no_done".parse::<FaultSpec>().unwrap().probability, 1.0);
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let e = "http_600".parse::<FaultSpec>().unwrap_err();
        assert!(
            e.0.contains("unknown fault") && e.0.contains("http_503"),
            "{e}"
        );
        let e = "stall_after_tokens:3".parse::<FaultSpec>().unwrap_err();
        assert!(e.0.contains("probability must be in [0, 1]"), "{e}");
        assert!("http_500:x".parse::<FaultSpec>().is_err());
        assert!("http_500=3".parse::<FaultSpec>().is_err());
        assert!("huge_line=10".parse::<FaultSpec>().is_err());
        assert!("stall_after_tokens=-1".parse::<FaultSpec>().is_err());
    }
}
