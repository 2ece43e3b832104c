//! The golden set: questions with the answer a validated model gives, each judged by
//! its own rule (`exact` after normalising, `regex`, or a `number` within a
//! tolerance), read from a JSONL file or the built-in set (`golden/builtin.jsonl`).
//! Every line's reference answer must pass its own rule, so a set that cannot be
//! answered right is refused when it loads. Pure but for reading the file.

use std::sync::{Arc, LazyLock};

use regex::Regex;
use serde::Deserialize;

use super::excerpt;

/// The name that selects the built-in set instead of a file.
pub const BUILTIN: &str = "builtin";
const BUILTIN_TEXT: &str = include_str!("../../golden/builtin.jsonl");
/// Largest golden file read: questions, not a corpus.
const MAX_FILE_BYTES: u64 = 4 << 20;
/// The characters an exact answer may carry around it (a full stop, quotes, markdown
/// emphasis) without being wrong.
const EXACT_TRIMMED: &[char] = &['.', '!', '"', '\'', '*', '`'];

/// A question's rule for a correct answer.
#[derive(Debug)]
pub enum Expected {
    /// Equal after [`normalise`] (the stored text is normalised).
    Exact(String),
    /// The regex matches somewhere in the answer.
    Regex(Regex),
    /// The answer's last number is within `tolerance` of `value`.
    Number { value: f64, tolerance: f64 },
}

impl Expected {
    fn passes(&self, answer: &str) -> bool {
        match self {
            Expected::Exact(want) => normalise(answer) == *want,
            Expected::Regex(re) => re.is_match(answer),
            Expected::Number { value, tolerance } => {
                last_number(answer).is_some_and(|got| (got - value).abs() <= *tolerance)
            }
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Exact(s) => write!(f, "exact {s:?}"),
            Expected::Regex(re) => write!(f, "/{}/", re.as_str()),
            Expected::Number { value, tolerance } => write!(f, "{value} ± {tolerance}"),
        }
    }
}

/// One question of a set.
#[derive(Debug)]
pub struct Question {
    /// Its line in the file (1-based), which names it in verdicts.
    pub line: u32,
    pub text: String,
    pub expected: Expected,
    /// What a validated model answers (the mock answers it).
    pub answer: String,
}

/// A golden set, loaded and checked.
#[derive(Debug)]
pub struct GoldenSet {
    /// The file it came from, or [`BUILTIN`].
    pub source: String,
    questions: Vec<Question>,
}

/// Why a golden set was refused: where (`file:line`, line 0 for the whole file) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", at(.file, *.line))]
pub struct GoldenError {
    pub file: String,
    pub line: u32,
    pub message: String,
}

fn at(source: &str, line: u32) -> String {
    if line == 0 {
        format!("{source}: ")
    } else {
        format!("{source}:{line}: ")
    }
}

/// One line as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    question: String,
    #[serde(default)]
    exact: Option<String>,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    number: Option<f64>,
    #[serde(default)]
    tolerance: Option<f64>,
    #[serde(default)]
    answer: Option<String>,
}

impl GoldenSet {
    /// The built-in set, or the file at `source`.
    pub fn load(source: &str) -> Result<GoldenSet, GoldenError> {
        if source == BUILTIN {
            return Self::parse(BUILTIN_TEXT, BUILTIN);
        }
        use std::io::Read;
        let refuse = |message: String| GoldenError {
            file: source.to_string(),
            line: 0,
            message,
        };
        let mut text = String::new();
        std::fs::File::open(source)
            .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
            .map_err(|e| refuse(format!("cannot read the golden set: {e}")))?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(refuse(format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        Self::parse(&text, source)
    }

    /// Parses JSONL text: one question a line; blank lines and lines starting with `#`
    /// are skipped. `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<GoldenSet, GoldenError> {
        let mut questions: Vec<Question> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let refuse = |message: String| GoldenError {
                file: source.to_string(),
                line,
                message,
            };
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let l: Line = serde_json::from_str(trimmed).map_err(|e| refuse(e.to_string()))?;
            let q = question(l, line).map_err(refuse)?;
            if let Some(first) = questions.iter().find(|p| p.text == q.text) {
                return Err(refuse(format!("the same question as line {}", first.line)));
            }
            questions.push(q);
        }
        if questions.is_empty() {
            return Err(GoldenError {
                file: source.to_string(),
                line: 0,
                message: "the golden set has no questions".into(),
            });
        }
        Ok(GoldenSet {
            source: source.to_string(),
            questions,
        })
    }

    pub fn questions(&self) -> &[Question] {
        &self.questions
    }

    /// Whether two sets ask the same questions with the same rules.
    pub fn same_as(&self, other: &GoldenSet) -> bool {
        self.source == other.source
            && self.questions.len() == other.questions.len()
            && self.questions.iter().zip(&other.questions).all(|(a, b)| {
                a.text == b.text
                    && a.answer == b.answer
                    && a.expected.to_string() == b.expected.to_string()
            })
    }
}

/// One line's question, checked: one rule, a compilable regex, a finite number and a
/// tolerance ≥ 0, and a reference answer that passes the rule.
fn question(l: Line, line: u32) -> Result<Question, String> {
    if l.question.trim().is_empty() {
        return Err("the question must not be empty".into());
    }
    if l.tolerance.is_some() && l.number.is_none() {
        return Err("tolerance goes with number".into());
    }
    let (expected, default_answer) = match (l.exact, l.regex, l.number) {
        (Some(e), None, None) => {
            let want = normalise(&e);
            if want.is_empty() {
                return Err("exact must not be empty".into());
            }
            (Expected::Exact(want), Some(e))
        }
        (None, Some(r), None) => {
            let re = regex::RegexBuilder::new(&r)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| format!("regex: {e}"))?;
            (Expected::Regex(re), None)
        }
        (None, None, Some(value)) => {
            let tolerance = l.tolerance.unwrap_or(0.0);
            if !value.is_finite() {
                return Err("number must be finite".into());
            }
            if !(tolerance.is_finite() && tolerance >= 0.0) {
                return Err(format!("tolerance must be 0 or more, not {tolerance}"));
            }
            (
                Expected::Number { value, tolerance },
                Some(value.to_string()),
            )
        }
        _ => return Err("set exactly one of exact, regex or number".into()),
    };
    let Some(answer) = l.answer.or(default_answer) else {
        return Err("a regex question needs the answer a right model gives (answer)".into());
    };
    if !expected.passes(&answer) {
        return Err(format!(
            "the answer {answer:?} does not pass its own rule {expected}"
        ));
    }
    Ok(Question {
        line,
        text: l.question,
        expected,
        answer,
    })
}

/// One question of a set, as a request asks it.
#[derive(Debug, Clone)]
pub struct Asked {
    pub set: Arc<GoldenSet>,
    pub index: usize,
}

impl Asked {
    pub fn question(&self) -> &Question {
        &self.set.questions[self.index]
    }

    /// The verdict on `answer` (the answer text, reasoning excluded): correct, or wrong
    /// with what was expected and an excerpt of what came.
    pub fn judge(&self, answer: &str) -> Result<(), String> {
        let q = self.question();
        if q.expected.passes(answer) {
            Ok(())
        } else {
            Err(format!(
                "{}:{}: expected {}, got «{}»",
                self.set.source,
                q.line,
                q.expected,
                excerpt(answer)
            ))
        }
    }
}

/// How `exact` compares: lower case, every run of whitespace one space, and the
/// whitespace and [`EXACT_TRIMMED`] characters at either end removed.
pub fn normalise(s: &str) -> String {
    let lower = s.to_lowercase();
    let joined = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    joined
        .trim_matches(|c: char| c.is_whitespace() || EXACT_TRIMMED.contains(&c))
        .to_string()
}

/// Decimal numbers with optional thousands separators and fraction.
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?").expect("the number pattern compiles")
});

/// The last number of `text`: digits with optional `,` thousands separators and a
/// `.` fraction, negative when a `-` precedes it that does not follow a letter or
/// digit (`2023-03` is 2023 and 3).
pub fn last_number(text: &str) -> Option<f64> {
    let m = NUMBER.find_iter(text).last()?;
    let mut s = m.as_str();
    if let Some(rest) = s.strip_prefix('-')
        && text[..m.start()]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
    {
        s = rest;
    }
    s.replace(',', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_set_loads_and_each_reference_passes_its_own_rule() {
        let set = GoldenSet::load(BUILTIN).unwrap();
        let n = set.questions().len();
        assert!((40..=60).contains(&n), "{n}");
        for (index, q) in set.questions().iter().enumerate() {
            let asked = Asked {
                set: Arc::new(GoldenSet::load(BUILTIN).unwrap()),
                index,
            };
            assert_eq!(asked.judge(&q.answer), Ok(()), "line {}", q.line);
            // A model that does not know is wrong on every question.
            assert!(asked.judge("I do not know.").is_err(), "line {}", q.line);
        }
    }

    #[test]
    fn exact_answers_are_normalised() {
        assert_eq!(normalise("  **Green.**\n"), "green");
        assert_eq!(normalise("New   York\tCity!"), "new york city");
        assert_eq!(normalise("\"tac\""), "tac");
        assert_ne!(normalise("greenish"), "green");
    }

    #[test]
    fn the_last_number_is_read() {
        assert_eq!(last_number("17 + 25 = 42."), Some(42.0));
        assert_eq!(last_number("It is 1,024 bytes"), Some(1024.0));
        assert_eq!(last_number("about -3.5 degrees"), Some(-3.5));
        assert_eq!(last_number("2023-03-01"), Some(1.0));
        assert_eq!(last_number("12,34"), Some(34.0));
        assert_eq!(last_number("none"), None);
    }

    fn refused(text: &str) -> String {
        GoldenSet::parse(text, "qa.jsonl").unwrap_err().to_string()
    }

    #[test]
    fn bad_lines_are_refused_with_file_and_line() {
        let ok = r#"{"question": "2+2?", "number": 4}"#;
        assert_eq!(
            refused(&format!("{ok}\n{{not json\n")),
            "qa.jsonl:2: key must be a string at line 1 column 2"
        );
        assert_eq!(
            refused(&format!(
                "{ok}\n\n{{\"question\": \"x\", \"regex\": \"(\", \"answer\": \"x\"}}\n"
            )),
            "qa.jsonl:3: regex: regex parse error:\n    (\n    ^\nerror: unclosed group"
        );
        assert_eq!(
            refused(r#"{"question": "pi?", "number": 3.14, "tolerance": -0.1}"#),
            "qa.jsonl:1: tolerance must be 0 or more, not -0.1"
        );
        assert_eq!(
            refused("# only a comment\n\n"),
            "qa.jsonl: the golden set has no questions"
        );
        assert_eq!(
            refused(r#"{"question": "x", "exact": "a", "number": 1}"#),
            "qa.jsonl:1: set exactly one of exact, regex or number"
        );
        assert_eq!(
            refused(r#"{"question": "capital?", "regex": "Paris"}"#),
            "qa.jsonl:1: a regex question needs the answer a right model gives (answer)"
        );
        assert_eq!(
            refused(r#"{"question": "capital?", "regex": "Paris", "answer": "Lyon"}"#),
            "qa.jsonl:1: the answer \"Lyon\" does not pass its own rule /Paris/"
        );
        assert_eq!(
            refused(&format!("{ok}\n{ok}\n")),
            "qa.jsonl:2: the same question as line 1"
        );
        assert_eq!(
            refused(r#"{"question": "x", "exact": "a", "typo": 1}"#),
            "qa.jsonl:1: unknown field `typo`, expected one of `question`, `exact`, `regex`, `number`, `tolerance`, `answer` at line 1 column 38"
        );
        let missing = GoldenSet::load("/nonexistent/qa.jsonl").unwrap_err();
        assert_eq!(missing.line, 0);
        assert!(
            missing
                .to_string()
                .starts_with("/nonexistent/qa.jsonl: cannot read")
        );
    }

    #[test]
    fn verdicts_follow_each_rule() {
        let set = Arc::new(
            GoldenSet::parse(
                concat!(
                    r#"{"question": "a", "exact": "Green"}"#,
                    "\n",
                    r#"{"question": "b", "regex": "(?i)\\bparis\\b", "answer": "Paris"}"#,
                    "\n",
                    r#"{"question": "c", "number": 273.15, "tolerance": 0.15}"#,
                ),
                "s",
            )
            .unwrap(),
        );
        let q = |index| Asked {
            set: set.clone(),
            index,
        };
        assert_eq!(q(0).judge("green."), Ok(()));
        assert_eq!(
            q(0).judge("dark green"),
            Err("s:1: expected exact \"green\", got «dark green»".into())
        );
        assert_eq!(q(1).judge("It is Paris."), Ok(()));
        assert!(q(1).judge("Lyon").is_err());
        assert_eq!(q(2).judge("273 K"), Ok(()));
        assert_eq!(
            q(2).judge("274"),
            Err("s:3: expected 273.15 ± 0.15, got «274»".into())
        );
        assert!(q(2).judge("no idea").is_err());
    }
}
