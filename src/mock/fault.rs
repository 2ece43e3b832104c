//! Fault kinds the mock can inject, their parameters and their parsing from
//! `--fault KIND[=PARAM][:PROBABILITY]` and the `x-mock-fault: KIND[=PARAM]` header.
//! The wire behaviour of each kind lives in `server.rs`; docs/mock.md describes it.

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

/// One way for a request to go wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    Http500,
    Http503,
    Http429 {
        retry_after_secs: u32,
    },
    CloseBeforeResponse,
    ResetMidStream {
        after_tokens: u32,
    },
    StallBeforeHeaders,
    StallAfterTokens {
        after_tokens: u32,
    },
    MalformedJson,
    NoDone,
    InvalidUtf8,
    HugeLine {
        bytes: usize,
    },
    Trickle,
    WrongContentType,
    JsonInsteadOfSse,
    ErrorEvent,
    EmptyCompletion,
    /// Fast and wrong: random words.
    Garbage,
    /// Fast and wrong: one token looped.
    Repeat,
    /// Fast and wrong: another model's name in the response.
    WrongModel,
    /// Fast and wrong: JSON that never closes.
    BadJson,
    /// Fast and wrong: chat-template control tokens in the answer.
    TemplateLeak,
    /// Fast and wrong: plain text where an offered tool should have been called.
    NoToolCall,
}

/// Every kind's name, in documentation order (error messages list them).
pub const FAULT_NAMES: &[&str] = &[
    "http_500",
    "http_503",
    "http_429",
    "close_before_response",
    "reset_mid_stream",
    "stall_before_headers",
    "stall_after_tokens",
    "malformed_json",
    "no_done",
    "invalid_utf8",
    "huge_line",
    "trickle",
    "wrong_content_type",
    "json_instead_of_sse",
    "error_event",
    "empty_completion",
    "garbage",
    "repeat",
    "wrong_model",
    "bad_json",
    "template_leak",
    "no_tool_call",
];

impl FaultKind {
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Http500 => "http_500",
            FaultKind::Http503 => "http_503",
            FaultKind::Http429 { .. } => "http_429",
            FaultKind::CloseBeforeResponse => "close_before_response",
            FaultKind::ResetMidStream { .. } => "reset_mid_stream",
            FaultKind::StallBeforeHeaders => "stall_before_headers",
            FaultKind::StallAfterTokens { .. } => "stall_after_tokens",
            FaultKind::MalformedJson => "malformed_json",
            FaultKind::NoDone => "no_done",
            FaultKind::InvalidUtf8 => "invalid_utf8",
            FaultKind::HugeLine { .. } => "huge_line",
            FaultKind::Trickle => "trickle",
            FaultKind::WrongContentType => "wrong_content_type",
            FaultKind::JsonInsteadOfSse => "json_instead_of_sse",
            FaultKind::ErrorEvent => "error_event",
            FaultKind::EmptyCompletion => "empty_completion",
            FaultKind::Garbage => "garbage",
            FaultKind::Repeat => "repeat",
            FaultKind::WrongModel => "wrong_model",
            FaultKind::BadJson => "bad_json",
            FaultKind::TemplateLeak => "template_leak",
            FaultKind::NoToolCall => "no_tool_call",
        }
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
        fn num<T: FromStr>(name: &str, p: Option<&str>, default: T) -> Result<T, UsageError> {
            match p {
                None => Ok(default),
                Some(p) => p.parse().map_err(|_| {
                    UsageError::new(format!(
                        "fault {name}: parameter {p:?} is not a non-negative integer"
                    ))
                }),
            }
        }
        let no_param = |kind: FaultKind| match param {
            None => Ok(kind),
            Some(p) => Err(UsageError::new(format!(
                "fault {name} takes no parameter (got {p:?})"
            ))),
        };
        match name {
            "http_500" => no_param(FaultKind::Http500),
            "http_503" => no_param(FaultKind::Http503),
            "http_429" => Ok(FaultKind::Http429 {
                retry_after_secs: num(name, param, DEFAULT_RETRY_AFTER_SECS)?,
            }),
            "close_before_response" => no_param(FaultKind::CloseBeforeResponse),
            "reset_mid_stream" => Ok(FaultKind::ResetMidStream {
                after_tokens: num(name, param, DEFAULT_AFTER_TOKENS)?,
            }),
            "stall_before_headers" => no_param(FaultKind::StallBeforeHeaders),
            "stall_after_tokens" => Ok(FaultKind::StallAfterTokens {
                after_tokens: num(name, param, DEFAULT_AFTER_TOKENS)?,
            }),
            "malformed_json" => no_param(FaultKind::MalformedJson),
            "no_done" => no_param(FaultKind::NoDone),
            "invalid_utf8" => no_param(FaultKind::InvalidUtf8),
            "huge_line" => {
                let bytes = num(name, param, DEFAULT_HUGE_LINE_BYTES)?;
                if !(1024..=MAX_HUGE_LINE_BYTES).contains(&bytes) {
                    return Err(UsageError::new(format!(
                        "fault huge_line: size must be between 1024 and {MAX_HUGE_LINE_BYTES} bytes, got {bytes}"
                    )));
                }
                Ok(FaultKind::HugeLine { bytes })
            }
            "trickle" => no_param(FaultKind::Trickle),
            "wrong_content_type" => no_param(FaultKind::WrongContentType),
            "json_instead_of_sse" => no_param(FaultKind::JsonInsteadOfSse),
            "error_event" => no_param(FaultKind::ErrorEvent),
            "empty_completion" => no_param(FaultKind::EmptyCompletion),
            "garbage" => no_param(FaultKind::Garbage),
            "repeat" => no_param(FaultKind::Repeat),
            "wrong_model" => no_param(FaultKind::WrongModel),
            "bad_json" => no_param(FaultKind::BadJson),
            "template_leak" => no_param(FaultKind::TemplateLeak),
            "no_tool_call" => no_param(FaultKind::NoToolCall),
            _ => Err(UsageError::new(format!(
                "unknown fault {name:?}; expected one of: {}",
                FAULT_NAMES.join(", ")
            ))),
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Http429 { retry_after_secs } => write!(f, "http_429={retry_after_secs}"),
            FaultKind::ResetMidStream { after_tokens } => {
                write!(f, "reset_mid_stream={after_tokens}")
            }
            FaultKind::StallAfterTokens { after_tokens } => {
                write!(f, "stall_after_tokens={after_tokens}")
            }
            FaultKind::HugeLine { bytes } => write!(f, "huge_line={bytes}"),
            other => f.write_str(other.name()),
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
