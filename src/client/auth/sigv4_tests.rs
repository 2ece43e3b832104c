//! The SigV4 signer's unit tests (AWS's published vectors are checked in
//! tests/it/sigv4_vectors.rs, botocore's signatures in tests/tools/aws_wire.sh).

use std::time::{Duration, UNIX_EPOCH};

use super::sigv4::*;
use crate::secret::Secret;

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
