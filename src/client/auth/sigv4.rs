//! AWS Signature Version 4 (`AWS4-HMAC-SHA256`) in the `Authorization` header: the
//! canonical request, the string to sign, the derived key and the signature.
//!
//! The path a request carries on the wire is already percent-encoded (a Bedrock model id's
//! `:` travels as `%3A`); every service but S3 encodes it once more for the canonical
//! request (`%253A`) and normalises it (dot segments and empty segments dropped). The
//! query string is decoded and encoded again by AWS's own rule (only `A-Za-z0-9-_.~` kept),
//! then sorted. Signed headers: `host`, `content-type` and every `x-amz-*`.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use ring::{digest, hmac};

use crate::secret::Secret;

/// The hex SHA-256 of an empty payload.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// One set of AWS credentials. `Debug` shows the access key id only (it names the key; it
/// is not the secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Option<Secret>,
}

/// What the canonical request is made of, every part in its wire form.
#[derive(Clone, Debug)]
pub struct CanonicalInput<'a> {
    pub method: &'a str,
    /// The path as sent (percent-encoded where the URL encodes it).
    pub path: &'a str,
    /// The query string as sent, without `?`.
    pub query: &'a str,
    /// Every header to sign, `host` and the `x-amz-*` ones included; names in any case.
    pub headers: &'a [(String, String)],
    /// Hex SHA-256 of the body.
    pub payload_sha256: &'a str,
    /// Drop dot and empty segments (every service but S3).
    pub normalize_path: bool,
    /// Encode the wire path once more (every service but S3).
    pub encode_path: bool,
}

/// Every intermediate of one signature, for tests against published vectors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    pub canonical_request: String,
    pub string_to_sign: String,
    pub signature: String,
    pub authorization: String,
}

/// Signs `input` for `region`/`service` at `at` (whose `x-amz-date` must be among the
/// headers already: see [`amz_date`]).
pub fn sign_canonical(
    input: &CanonicalInput<'_>,
    creds: &AwsCredentials,
    region: &str,
    service: &str,
    at: SystemTime,
) -> Signed {
    let (canonical_headers, signed_headers) = canonical_headers(input.headers);
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        input.method,
        canonical_uri(input.path, input.normalize_path, input.encode_path),
        canonical_query(input.query),
        canonical_headers,
        signed_headers,
        input.payload_sha256
    );
    let amz_date = amz_date(at);
    let day = &amz_date[..8];
    let scope = format!("{day}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let secret = format!("AWS4{}", creds.secret_access_key.expose());
    let mut key = hmac_sha256(secret.as_bytes(), day.as_bytes());
    for part in [region, service, "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes());
    }
    let signature = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));
    let authorization = format!(
        "{ALGORITHM} Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        creds.access_key_id
    );
    Signed {
        canonical_request,
        string_to_sign,
        signature,
        authorization,
    }
}

/// Signs one request and returns the headers to add to it: `x-amz-date`,
/// `x-amz-security-token` (with a session token) and `authorization`. Of `headers`, the
/// `content-type` and `x-amz-*` ones are signed, with `host` taken from the URL (its port
/// when it is not the scheme's default).
#[allow(clippy::too_many_arguments)]
pub fn sign(
    method: &str,
    url: &reqwest::Url,
    headers: &[(String, String)],
    body: &[u8],
    creds: &AwsCredentials,
    region: &str,
    service: &str,
    at: SystemTime,
) -> Vec<(String, String)> {
    let host = match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        (None, _) => String::new(),
    };
    let mut added = vec![("x-amz-date".to_string(), amz_date(at))];
    if let Some(token) = &creds.session_token {
        added.push((
            "x-amz-security-token".to_string(),
            token.expose().to_string(),
        ));
    }
    let mut signed: Vec<(String, String)> = vec![("host".to_string(), host)];
    signed.extend(
        headers
            .iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                name == "content-type" || name.starts_with("x-amz-")
            })
            .cloned(),
    );
    signed.extend(added.iter().cloned());
    let s3 = service == "s3";
    let input = CanonicalInput {
        method,
        path: url.path(),
        query: url.query().unwrap_or(""),
        headers: &signed,
        payload_sha256: &sha256_hex(body),
        normalize_path: !s3,
        encode_path: !s3,
    };
    let out = sign_canonical(&input, creds, region, service, at);
    added.push(("authorization".to_string(), out.authorization));
    added
}

/// `YYYYMMDD'T'HHMMSS'Z'` in UTC (a time before 1970 signs as the epoch).
pub fn amz_date(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, data).as_ref().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// AWS's URI encoding: every byte but `A-Za-z0-9-_.~` as `%XX` (upper case); `/` kept
/// when `keep_slash`.
fn uri_encode(bytes: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else if b == b'/' && keep_slash {
            out.push('/');
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// One path segment (a Bedrock model id) as the AWS SDKs put it in a URL: every byte but
/// `A-Za-z0-9-_.~` percent-encoded, so `:` travels as `%3A` (and signs as `%253A`).
pub fn encode_path_segment(segment: &str) -> String {
    uri_encode(segment.as_bytes(), false)
}

/// `%XX` decoded (an invalid escape stays as it is); `+` is not a space here.
fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex_at = |j: usize| bytes.get(j).and_then(|&c| (c as char).to_digit(16));
        match (bytes[i], hex_at(i + 1), hex_at(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

fn canonical_uri(path: &str, normalize: bool, encode: bool) -> String {
    let path = if path.is_empty() { "/" } else { path };
    let path = if normalize {
        normalize_path(path)
    } else {
        path.to_string()
    };
    if encode {
        uri_encode(path.as_bytes(), true)
    } else {
        path
    }
}

/// Dot segments resolved and empty segments dropped; a trailing slash is kept (as
/// botocore does: `/a/b/..` is `/a`).
fn normalize_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = format!("/{}", segments.join("/"));
    if path.ends_with('/') && !segments.is_empty() {
        out.push('/');
    }
    out
}

fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    pairs.sort();
    let pairs: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.join("&")
}

/// The canonical header block (names lower-cased and sorted, values trimmed with inner
/// runs of spaces folded, repeated names joined by `,` in their order) and the signed
/// header list.
fn canonical_headers(headers: &[(String, String)]) -> (String, String) {
    let mut merged: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        let name = name.trim().to_ascii_lowercase();
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        match merged.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => {
                v.push(',');
                v.push_str(&value);
            }
            None => merged.push((name, value)),
        }
    }
    merged.sort_by(|a, b| a.0.cmp(&b.0));
    let block: String = merged.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
    let names: Vec<&str> = merged.iter().map(|(n, _)| n.as_str()).collect();
    (block, names.join(";"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn creds(token: Option<&str>) -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: token.map(Secret::from),
        }
    }

    #[test]
    fn dates_are_utc_in_amz_form() {
        let at = UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        assert_eq!(amz_date(at), "20150830T123600Z");
        assert_eq!(amz_date(UNIX_EPOCH), "19700101T000000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400 + 86_399);
        assert_eq!(amz_date(leap), "20000229T235959Z");
    }

    #[test]
    fn bedrock_model_ids_are_encoded_twice_in_the_canonical_path() {
        let model = encode_path_segment("anthropic.claude-3:0");
        let url = reqwest::Url::parse(&format!(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/converse"
        ))
        .unwrap();
        assert_eq!(url.path(), "/model/anthropic.claude-3%3A0/converse");
        assert_eq!(
            canonical_uri("/model/anthropic.claude-3%3A0/converse", true, true),
            "/model/anthropic.claude-3%253A0/converse"
        );
        assert_eq!(
            canonical_uri("/a%20b//c/./d/../", false, false),
            "/a%20b//c/./d/../"
        );
        assert_eq!(canonical_uri("//a//b/../c/", true, true), "/a/c/");
        assert_eq!(canonical_uri("/a/b/..", true, true), "/a");
        assert_eq!(canonical_uri("", true, true), "/");
    }

    #[test]
    fn query_strings_are_decoded_reencoded_and_sorted() {
        assert_eq!(
            canonical_query("b=2&a=x%20y&a=1&c&e=%7e+/"),
            "a=1&a=x%20y&b=2&c=&e=~%2B%2F"
        );
        assert_eq!(canonical_query(""), "");
    }

    #[test]
    fn sign_adds_date_token_and_authorization_and_signs_only_its_headers() {
        let url = reqwest::Url::parse("https://example.amazonaws.com:8443/p?x=1").unwrap();
        let headers = vec![
            ("Content-Type".to_string(), "application/json".to_string()),
            ("accept".to_string(), "*/*".to_string()),
        ];
        let at = UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        let added = sign(
            "POST",
            &url,
            &headers,
            b"{}",
            &creds(Some("tok")),
            "eu-west-1",
            "bedrock",
            at,
        );
        let names: Vec<&str> = added.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["x-amz-date", "x-amz-security-token", "authorization"]
        );
        assert_eq!(added[1].1, "tok");
        assert!(added[2].1.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-1/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
        ));
        let plain = sign(
            "POST",
            &url,
            &headers,
            b"{}",
            &creds(None),
            "eu-west-1",
            "bedrock",
            at,
        );
        assert_eq!(plain.len(), 2);
        assert!(
            plain[1]
                .1
                .contains("SignedHeaders=content-type;host;x-amz-date,")
        );
    }

    #[test]
    fn debug_never_shows_the_secret_or_the_token() {
        let text = format!("{:?}", creds(Some("token-canary")));
        assert!(
            !text.contains("wJalr") && !text.contains("token-canary"),
            "{text}"
        );
        assert!(text.contains("AKIDEXAMPLE"));
    }
}
