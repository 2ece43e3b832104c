//! The service-account key and JWT assertion's unit tests, with the test-only keys of
//! tests/fixtures/google.

use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::jwt::*;

const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/google/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

fn key() -> ServiceAccountKey {
    ServiceAccountKey::from_json(&fixture("service-account.json")).unwrap()
}

fn other_key() -> ServiceAccountKey {
    let mut file: serde_json::Value =
        serde_json::from_str(&fixture("service-account.json")).unwrap();
    file["private_key"] = fixture("other-key.pem").into();
    ServiceAccountKey::from_json(&file.to_string()).unwrap()
}

#[test]
fn an_assertion_verifies_with_the_public_half() {
    let key = key();
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let jwt = key.assertion(CLOUD_PLATFORM_SCOPE, now).unwrap();
    let header = jwt.split('.').next().unwrap();
    let header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
    assert_eq!(
        header,
        serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": "test-key-1"})
    );
    let claims = verify_assertion(&jwt, &key.public_key_der(), TOKEN_URI, now).unwrap();
    assert_eq!(
        claims,
        Claims {
            iss: "prober@llmprobe-test.iam.gserviceaccount.com".into(),
            scope: CLOUD_PLATFORM_SCOPE.into(),
            aud: TOKEN_URI.into(),
            iat: 1_800_000_000,
            exp: 1_800_003_600,
        }
    );
    // Still good a second before it expires.
    let late = now + Duration::from_secs(3599);
    assert!(verify_assertion(&jwt, &key.public_key_der(), TOKEN_URI, late).is_ok());
}

#[test]
fn wrong_keys_audiences_times_and_edits_fail() {
    let key = key();
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let jwt = key.assertion("s", now).unwrap();
    let public = key.public_key_der();
    let err = verify_assertion(&jwt, &other_key().public_key_der(), TOKEN_URI, now).unwrap_err();
    assert_eq!(
        err,
        "the assertion's signature does not verify with the account's key"
    );
    let forged = other_key().assertion("s", now).unwrap();
    assert!(verify_assertion(&forged, &public, TOKEN_URI, now).is_err());
    let err = verify_assertion(&jwt, &public, "https://elsewhere/token", now).unwrap_err();
    assert!(err.starts_with("the assertion's aud is"), "{err}");
    let err =
        verify_assertion(&jwt, &public, TOKEN_URI, now + Duration::from_secs(3600)).unwrap_err();
    assert_eq!(
        err,
        "the assertion expired (exp 1800003600, now 1800003600)"
    );
    let err =
        verify_assertion(&jwt, &public, TOKEN_URI, now - Duration::from_secs(61)).unwrap_err();
    assert!(
        err.starts_with("the assertion is issued in the future"),
        "{err}"
    );
    // Claims edited after signing.
    let mut parts: Vec<String> = jwt.split('.').map(str::to_string).collect();
    let mut claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
    claims["scope"] = "other".into();
    parts[1] = URL_SAFE_NO_PAD.encode(claims.to_string());
    assert!(verify_assertion(&parts.join("."), &public, TOKEN_URI, now).is_err());
    assert!(
        verify_assertion("a.b", &public, TOKEN_URI, now)
            .unwrap_err()
            .contains("three")
    );
}

#[test]
fn key_file_errors_name_the_field_never_the_key() {
    let good: serde_json::Value = serde_json::from_str(&fixture("service-account.json")).unwrap();
    let pem = good["private_key"].as_str().unwrap().to_string();
    let body_line = pem.lines().nth(1).unwrap().to_string();
    let with = |field: &str, value: serde_json::Value| {
        let mut file = good.clone();
        file[field] = value;
        let err = ServiceAccountKey::from_json(&file.to_string()).unwrap_err();
        let text = format!("{err:#}");
        assert!(!text.contains(&body_line), "the key in an error: {text}");
        text
    };
    assert_eq!(
        with("type", "authorized_user".into()),
        "type is \"authorized_user\", not \"service_account\""
    );
    assert_eq!(
        with("client_email", serde_json::Value::Null),
        "no \"client_email\" field"
    );
    assert_eq!(with("private_key", "".into()), "no \"private_key\" field");
    assert_eq!(
        with("private_key", body_line.clone().into()),
        "private_key is not PEM (no -----BEGIN line)"
    );
    let cut: String = pem.lines().take(5).collect::<Vec<_>>().join("\n");
    assert!(with("private_key", cut.into()).contains("has no -----END PRIVATE KEY----- line"));
    let broken = pem.replace(&body_line, &"A".repeat(64));
    assert!(with("private_key", broken.into()).starts_with("private_key is not a usable RSA key"));
    let err = ServiceAccountKey::from_json("{\"type\": ").unwrap_err();
    assert!(err.to_string().starts_with("not a JSON key file"), "{err}");
    let debug = format!("{:?}", key());
    assert!(
        debug.contains("prober@llmprobe-test") && !debug.contains(&body_line),
        "{debug}"
    );
}
