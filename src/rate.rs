//! The request rate: one type for the command line (`--rate 8`, `--rate inf`), the
//! runs, and the reports, where it is a number of requests/s or the string `"inf"` (as
//! vLLM writes it, since JSON has no infinity).

use std::fmt;
use std::str::FromStr;

/// A request rate in requests per second; `f64::INFINITY` sends everything at t = 0.
/// [`Rate::new`] and parsing accept only rates > 0; a rate read back from a report is
/// taken as written ([`Rate::as_written`]). The field is private so that no rate skips
/// one of those doors.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(f64);

impl Rate {
    pub const INFINITE: Rate = Rate(f64::INFINITY);

    /// One request per second (the default start of the max-rate search).
    pub const ONE_PER_SECOND: Rate = Rate(1.0);

    /// A finite positive rate or infinity; anything else is refused.
    pub fn new(per_second: f64) -> Option<Rate> {
        (per_second > 0.0 && !per_second.is_nan()).then_some(Rate(per_second))
    }

    /// A rate read back from a report or a `--records` file: taken as written, unchecked
    /// (the file is shown as it is, not judged).
    pub fn as_written(per_second: f64) -> Rate {
        Rate(per_second)
    }

    pub fn per_second(self) -> f64 {
        self.0
    }

    pub fn is_infinite(self) -> bool {
        self.0.is_infinite()
    }

    /// This rate split over `n` shards (infinity stays infinity).
    pub fn divided(self, n: u32) -> Rate {
        Rate(self.0 / f64::from(n.max(1)))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_infinite() {
            f.write_str("inf")
        } else {
            // Shortest form that round-trips: 8, 0.5, 12.25.
            write!(f, "{}", self.0)
        }
    }
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Rate, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("infinity") {
            return Ok(Rate::INFINITE);
        }
        let v: f64 = t
            .parse()
            .map_err(|_| format!("{s:?} is not a number of requests per second or `inf`"))?;
        Rate::new(v).ok_or_else(|| format!("{s:?}: a rate must be greater than 0"))
    }
}

/// In JSON: a number of requests/s, or the string `"inf"`.
impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_infinite() {
            s.serialize_str("inf")
        } else {
            s.serialize_f64(self.0)
        }
    }
}

impl<'de> serde::Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(v) => Ok(Rate::as_written(v)),
            Raw::Text(t) if t == "inf" => Ok(Rate::INFINITE),
            Raw::Text(t) => Err(serde::de::Error::custom(format!(
                "rate {t:?} is neither a number nor \"inf\""
            ))),
        }
    }
}
