//! How long a server asks a client to wait: `retry-after-ms` (milliseconds, as OpenAI
//! and Azure OpenAI send it) before the standard `Retry-After` (RFC 9110 §10.2.3:
//! delay-seconds or an HTTP-date). The one reading of both for bench and daemon; a
//! protocol whose server says it elsewhere (a body's retry delay) sets
//! `RequestRecord::retry_after` itself.

use std::time::{Duration, SystemTime};

use reqwest::header::{self, HeaderMap};

/// The non-standard millisecond header, read first: it is the more precise.
pub const RETRY_AFTER_MS: &str = "retry-after-ms";

/// The delay a response's headers ask for, relative to `now`; `None` when neither
/// header is there or neither parses (a malformed value is ignored, never guessed).
pub fn from_headers(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    headers
        .get(RETRY_AFTER_MS)
        .and_then(|v| parse_millis(v.as_bytes()))
        .or_else(|| {
            headers
                .get(header::RETRY_AFTER)
                .and_then(|v| parse(v.as_bytes(), now))
        })
}

/// A `Retry-After` value: delay-seconds or an HTTP-date, the latter relative to `now`.
/// A date in the past is no delay; garbage is ignored.
pub fn parse(value: &[u8], now: SystemTime) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(text).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A `retry-after-ms` value: non-negative milliseconds, possibly fractional.
pub fn parse_millis(value: &[u8]) -> Option<Duration> {
    let ms: f64 = std::str::from_utf8(value).ok()?.trim().parse().ok()?;
    (ms.is_finite() && ms >= 0.0)
        .then(|| Duration::try_from_secs_f64(ms / 1000.0).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use std::time::UNIX_EPOCH;

    #[test]
    fn seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
        assert_eq!(parse(b"120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse(b" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse(b"Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse(b"Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse(b"soon", now), None);
        assert_eq!(parse(b"-5", now), None);
        assert_eq!(parse(&[0xff, 0xfe], SystemTime::now()), None);
    }

    #[test]
    fn milliseconds() {
        assert_eq!(parse_millis(b"1500"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_millis(b" 20.5 "), Some(Duration::from_micros(20_500)));
        assert_eq!(parse_millis(b"0"), Some(Duration::ZERO));
        for bad in [&b"-1"[..], b"NaN", b"inf", b"1e400", b"soon", b""] {
            assert_eq!(
                parse_millis(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn the_millisecond_header_wins_and_garbage_falls_back() {
        let now = UNIX_EPOCH;
        let mut h = HeaderMap::new();
        assert_eq!(from_headers(&h, now), None);
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(from_headers(&h, now), Some(Duration::from_secs(7)));
        h.insert(RETRY_AFTER_MS, HeaderValue::from_static("250"));
        assert_eq!(from_headers(&h, now), Some(Duration::from_millis(250)));
        h.insert(RETRY_AFTER_MS, HeaderValue::from_static("later"));
        assert_eq!(from_headers(&h, now), Some(Duration::from_secs(7)));
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("never"));
        assert_eq!(from_headers(&h, now), None);
    }
}
