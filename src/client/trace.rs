//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): each request carries a
//! `traceparent` header with a fresh trace ID and the sampled flag, so an engine that
//! exports OpenTelemetry spans (vLLM, SGLang) records its span of the request under the
//! probe's trace ID. The record keeps both IDs: the span ID is the parent of the engine's
//! span, and the daemon's OTLP export gives the probe's own span exactly that ID.

use rand::RngExt;
use reqwest::header::{HeaderName, HeaderValue};

/// The request header's name.
pub const HEADER: &str = "traceparent";

/// [`HEADER`] as a header name, built at compile time (not parsed per request).
pub const HEADER_NAME: HeaderName = HeaderName::from_static(HEADER);

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Writes the low `out.len()` hex digits of `v`, most significant first, lower case:
/// the header is built per request, and `format!` costs several times this.
fn hex(v: u128, out: &mut [u8]) {
    let n = out.len();
    for (i, b) in out.iter_mut().enumerate() {
        *b = HEX_DIGITS[((v >> (4 * (n - 1 - i))) & 0xf) as usize];
    }
}

/// ASCII hex digits as a `String`.
fn ascii(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// One request's trace context: a random trace ID and parent span ID, never all zero
/// (the specification makes an all-zero ID invalid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: u128,
    pub span_id: u64,
}

impl TraceContext {
    /// A new context from the thread's random source.
    pub fn random() -> TraceContext {
        let mut rng = rand::rng();
        TraceContext {
            trace_id: rng.random::<u128>().max(1),
            span_id: rng.random::<u64>().max(1),
        }
    }

    /// The `traceparent` value: version 00, the IDs in lower-case hex, flags 01 (sampled:
    /// the engine is asked to record its span).
    pub fn header(&self) -> String {
        ascii(&self.header_bytes())
    }

    /// [`header`](Self::header) as the value a request carries.
    pub fn header_value(&self) -> HeaderValue {
        HeaderValue::from_bytes(&self.header_bytes()).expect("hex digits and dashes")
    }

    fn header_bytes(&self) -> [u8; 55] {
        let mut b = *b"00-00000000000000000000000000000000-0000000000000000-01";
        hex(self.trace_id, &mut b[3..35]);
        hex(u128::from(self.span_id), &mut b[36..52]);
        b
    }

    /// The trace ID as the header, exemplars and span exporters write it (32 hex digits).
    pub fn trace_id_hex(&self) -> String {
        let mut b = [0u8; 32];
        hex(self.trace_id, &mut b);
        ascii(&b)
    }

    /// The parent span ID as the header and span exporters write it (16 hex digits).
    pub fn span_id_hex(&self) -> String {
        let mut b = [0u8; 16];
        hex(u128::from(self.span_id), &mut b);
        ascii(&b)
    }

    /// Parses a `traceparent` value of version 00 (for the mock and tests): `None` for a
    /// malformed one, an all-zero ID, or another version.
    pub fn parse(value: &str) -> Option<TraceContext> {
        let parts: Vec<&str> = value.split('-').collect();
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let [version, trace, span, flags] = parts[..] else {
            return None;
        };
        if version != "00" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok()?;
        let span_id = u64::from_str_radix(span, 16).ok()?;
        (trace_id != 0 && span_id != 0).then_some(TraceContext { trace_id, span_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_version_00_sampled_with_lower_hex_ids() {
        let t = TraceContext {
            trace_id: 0x4bf92f3577b34da6a3ce929d0e0e4736,
            span_id: 0x00f067aa0ba902b7,
        };
        assert_eq!(
            t.header(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(t.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.span_id_hex(), "00f067aa0ba902b7");
        assert_eq!(TraceContext::parse(&t.header()), Some(t));
        assert_eq!(t.header_value().to_str().unwrap(), t.header());
        let max = TraceContext {
            trace_id: u128::MAX,
            span_id: u64::MAX,
        };
        assert_eq!(
            max.header(),
            format!("00-{}-{}-01", "f".repeat(32), "f".repeat(16))
        );
    }

    #[test]
    fn random_contexts_are_valid_and_distinct() {
        let a = TraceContext::random();
        let b = TraceContext::random();
        assert_ne!(a.trace_id, b.trace_id);
        assert_eq!(TraceContext::parse(&a.header()), Some(a));
        let short = TraceContext {
            trace_id: 1,
            span_id: 1,
        };
        assert_eq!(
            short.header(),
            "00-00000000000000000000000000000001-0000000000000001-01"
        );
    }

    #[test]
    fn malformed_values_do_not_parse() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad}");
        }
    }
}
