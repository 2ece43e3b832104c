//! llmprobe's SigV4 signer against AWS's published test-suite vectors
//! (tests/fixtures/sigv4/README.md names their source): the canonical request, the
//! string to sign, the signature and the `Authorization` header of every vector.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use llmprobe::client::auth::sigv4::{self, AwsCredentials, CanonicalInput};
use llmprobe::secret::Secret;

/// 2015-08-30T12:36:00Z, every vector's `timestamp` (checked below).
const VECTOR_TIME: u64 = 1_440_938_160;

struct Request {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// `request.txt`: a request line (whose path may hold raw spaces and UTF-8), headers
/// with folded continuation lines, a blank line and the body.
fn parse_request(text: &str) -> Request {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let line = lines.next().unwrap();
    let (method, rest) = line.split_once(' ').unwrap();
    let target = rest.rsplit_once(' ').unwrap().0;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines {
        if line.starts_with([' ', '\t']) {
            let last = headers.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(line.trim());
        } else {
            let (name, value) = line.split_once(':').unwrap();
            headers.push((name.to_string(), value.to_string()));
        }
    }
    Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body: body.as_bytes().to_vec(),
    }
}

fn check_vector(dir: &Path) {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let context: serde_json::Value = serde_json::from_str(&read("context.json")).unwrap();
    assert_eq!(context["timestamp"], "2015-08-30T12:36:00Z", "{name}");
    let cred = &context["credentials"];
    let token = cred["token"].as_str();
    let creds = AwsCredentials {
        access_key_id: cred["access_key_id"].as_str().unwrap().to_string(),
        secret_access_key: Secret::new(cred["secret_access_key"].as_str().unwrap()),
        session_token: token.map(Secret::new),
    };
    let at = UNIX_EPOCH + Duration::from_secs(VECTOR_TIME);
    let request = parse_request(&read("request.txt"));
    let payload = sigv4::sha256_hex(&request.body);
    let mut headers = request.headers.clone();
    headers.push(("X-Amz-Date".into(), sigv4::amz_date(at)));
    if let Some(token) = token
        && context["omit_session_token"] != true
    {
        headers.push(("X-Amz-Security-Token".into(), token.into()));
    }
    if context["sign_body"] == true {
        headers.push(("X-Amz-Content-Sha256".into(), payload.clone()));
    }
    let input = CanonicalInput {
        method: &request.method,
        path: &request.path,
        query: &request.query,
        headers: &headers,
        payload_sha256: &payload,
        normalize_path: context["normalize"] == true,
        encode_path: true,
    };
    let region = context["region"].as_str().unwrap();
    let service = context["service"].as_str().unwrap();
    let signed = sigv4::sign_canonical(&input, &creds, region, service, at);
    assert_eq!(
        signed.canonical_request,
        read("header-canonical-request.txt"),
        "{name}: canonical request"
    );
    assert_eq!(
        signed.string_to_sign,
        read("header-string-to-sign.txt"),
        "{name}: string to sign"
    );
    assert_eq!(
        signed.signature,
        read("header-signature.txt").trim(),
        "{name}: signature"
    );
    let authorization = read("header-signed-request.txt")
        .lines()
        .find_map(|l| l.strip_prefix("Authorization:").map(str::to_string))
        .unwrap();
    assert_eq!(signed.authorization, authorization, "{name}: authorization");
}

#[test]
fn every_published_vector_signs_as_aws_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sigv4");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 38, "the copied vectors");
    for dir in &dirs {
        check_vector(dir);
    }
}
