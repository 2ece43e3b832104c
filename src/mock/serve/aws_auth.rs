//! The mock's check of a Bedrock request's AWS Signature V4: the `Authorization`
//! header's shape and `x-amz-date` always; with credentials configured (`--aws-*`),
//! the access key id, the region and service of the scope, and the signature itself,
//! computed again over the request as received (path as sent, query, the headers it
//! names, the body).

use axum::http::{HeaderMap, Uri, header};

use crate::client::auth::sigv4::{self, AwsCredentials, CanonicalInput};
use crate::mock::config::MockAws;

/// The parts of an `AWS4-HMAC-SHA256` authorization header.
struct Authorization<'a> {
    access_key_id: &'a str,
    day: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn parse(value: &str) -> Option<Authorization<'_>> {
    let rest = value.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=')?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => return None,
        }
    }
    let mut scope = credential?.split('/');
    let auth = Authorization {
        access_key_id: scope.next()?,
        day: scope.next()?,
        region: scope.next()?,
        service: scope.next()?,
        signed_headers: signed?.split(';').collect(),
        signature: signature?,
    };
    (scope.next() == Some("aws4_request") && scope.next().is_none()).then_some(auth)
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn parse_amz_date(s: &str) -> Option<std::time::SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &s[0..4],
        &s[4..6],
        &s[6..8],
        &s[9..11],
        &s[11..13],
        &s[13..15]
    );
    humantime::parse_rfc3339(&rfc3339).ok()
}

/// Checks the request's signature; the error is the message of a 403.
pub fn check(
    aws: Option<&MockAws>,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), String> {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or("Missing Authentication Token")?;
    let auth = parse(value).ok_or("Authorization header is not an AWS4-HMAC-SHA256 signature")?;
    let amz_date = headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .ok_or("missing x-amz-date")?;
    let at = parse_amz_date(amz_date).ok_or("x-amz-date is not YYYYMMDDTHHMMSSZ")?;
    if !amz_date.starts_with(auth.day) || auth.service != "bedrock" {
        return Err("Credential should be scoped to a valid date and the bedrock service".into());
    }
    let Some(aws) = aws else { return Ok(()) };
    if auth.access_key_id != aws.access_key_id {
        return Err("The security token included in the request is invalid.".into());
    }
    if auth.region != aws.region {
        return Err(format!(
            "Credential should be scoped to a valid region ({})",
            aws.region
        ));
    }
    let mut signed = Vec::with_capacity(auth.signed_headers.len());
    for name in &auth.signed_headers {
        let v = headers
            .get(*name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        signed.push((name.to_string(), v.to_string()));
    }
    let input = CanonicalInput {
        method: "POST",
        path: uri.path(),
        query: uri.query().unwrap_or(""),
        headers: &signed,
        payload_sha256: &sigv4::sha256_hex(body),
        normalize_path: true,
        encode_path: true,
    };
    let creds = AwsCredentials {
        access_key_id: aws.access_key_id.clone(),
        secret_access_key: aws.secret_access_key.clone(),
        session_token: None,
    };
    let want = sigv4::sign_canonical(&input, &creds, &aws.region, "bedrock", at);
    if want.signature != auth.signature {
        return Err(
            "The request signature we calculated does not match the signature you \
                    provided."
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    #[test]
    fn a_signature_made_by_the_client_signer_passes_and_a_changed_body_fails() {
        let aws = MockAws {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1".into(),
        };
        let creds = AwsCredentials {
            access_key_id: aws.access_key_id.clone(),
            secret_access_key: aws.secret_access_key.clone(),
            session_token: Some(Secret::new("session-1")),
        };
        let url = reqwest::Url::parse("http://127.0.0.1:9/model/a.b-v1%3A0/converse").unwrap();
        let body = br#"{"messages":[]}"#;
        let ct = [("content-type".to_string(), "application/json".to_string())];
        let added = sigv4::sign(
            "POST",
            &url,
            &ct,
            body,
            &creds,
            "us-east-1",
            "bedrock",
            std::time::SystemTime::now(),
        );
        let mut headers = HeaderMap::new();
        headers.insert("host", "127.0.0.1:9".parse().unwrap());
        headers.insert("content-type", "application/json".parse().unwrap());
        for (k, v) in added {
            headers.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let uri: Uri = "/model/a.b-v1%3A0/converse".parse().unwrap();
        check(Some(&aws), &uri, &headers, body).unwrap();
        assert!(
            check(Some(&aws), &uri, &headers, b"{}")
                .unwrap_err()
                .contains("signature")
        );
        let other = MockAws {
            region: "eu-west-1".into(),
            ..aws.clone()
        };
        assert!(
            check(Some(&other), &uri, &headers, body)
                .unwrap_err()
                .contains("region")
        );
        headers.remove("authorization");
        assert!(check(None, &uri, &headers, body).is_err());
    }
}
