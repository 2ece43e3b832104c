//! Google service-account keys and the RS256 JWT assertion of OAuth2's JWT-bearer flow:
//! the key file read, the assertion signed, and (for the mock's token endpoint) an
//! assertion verified with the key's public half.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{self, KeyPair, RsaKeyPair};
use serde::{Deserialize, Serialize};

/// The scope asked for when the configuration names none.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// How long an assertion is valid (Google accepts at most an hour).
pub const ASSERTION_LIFETIME_SECS: u64 = 3600;

/// Clock skew allowed between the signer and the verifier.
const SKEW_SECS: u64 = 60;

/// A service-account key. `Debug` names the account and key id, never the key.
#[derive(Clone)]
pub struct ServiceAccountKey {
    pub client_email: String,
    pub private_key_id: Option<String>,
    pub token_uri: String,
    key: Arc<RsaKeyPair>,
}

impl fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("client_email", &self.client_email)
            .field("private_key_id", &self.private_key_id)
            .field("token_uri", &self.token_uri)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_email: Option<String>,
    private_key: Option<String>,
    private_key_id: Option<String>,
    token_uri: Option<String>,
}

/// The claims of an assertion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub scope: String,
    pub aud: String,
    pub iat: u64,
    pub exp: u64,
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    typ: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
}

impl ServiceAccountKey {
    /// Reads a key file; errors name the file and the field, never the key.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the service-account key file {}", path.display()))?;
        Self::from_json(&text)
            .with_context(|| format!("the service-account key file {}", path.display()))
    }

    /// A key file's JSON (`type` must be `service_account`).
    pub fn from_json(text: &str) -> anyhow::Result<Self> {
        // serde_json's messages quote no values of a malformed file, only positions.
        let file: KeyFile = serde_json::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "not a JSON key file (line {}, column {})",
                e.line(),
                e.column()
            )
        })?;
        match file.kind.as_deref() {
            Some("service_account") => {}
            Some(other) => bail!("type is {other:?}, not \"service_account\""),
            None => {
                bail!("no \"type\" field (a service-account key file has type \"service_account\")")
            }
        }
        let need = |v: Option<String>, name: &str| {
            v.filter(|v| !v.trim().is_empty())
                .ok_or_else(|| anyhow::anyhow!("no {name:?} field"))
        };
        let client_email = need(file.client_email, "client_email")?;
        let token_uri = need(file.token_uri, "token_uri")?;
        let pem = need(file.private_key, "private_key")?;
        let key = rsa_key_from_pem(&pem)?;
        Ok(ServiceAccountKey {
            client_email,
            private_key_id: file.private_key_id.filter(|k| !k.is_empty()),
            token_uri,
            key: Arc::new(key),
        })
    }

    /// The public half, DER `RSAPublicKey`, as [`verify_assertion`] takes it.
    pub fn public_key_der(&self) -> Vec<u8> {
        self.key.public_key().as_ref().to_vec()
    }

    /// A signed assertion for `scope`, issued at `now` and valid for an hour.
    pub fn assertion(&self, scope: &str, now: SystemTime) -> anyhow::Result<String> {
        let iat = unix_secs(now);
        let header = Header {
            alg: "RS256".into(),
            typ: Some("JWT".into()),
            kid: self.private_key_id.clone(),
        };
        let claims = Claims {
            iss: self.client_email.clone(),
            scope: scope.to_string(),
            aud: self.token_uri.clone(),
            iat,
            exp: iat + ASSERTION_LIFETIME_SECS,
        };
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header)?),
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims)?)
        );
        let mut sig = vec![0u8; self.key.public().modulus_len()];
        let rng = ring::rand::SystemRandom::new();
        self.key
            .sign(
                &signature::RSA_PKCS1_SHA256,
                &rng,
                signing_input.as_bytes(),
                &mut sig,
            )
            .map_err(|_| anyhow::anyhow!("signing the JWT assertion failed"))?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

/// Seconds since the Unix epoch (0 before it).
pub fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// An RSA private key from PEM: PKCS#8 (`PRIVATE KEY`, what Google issues) or PKCS#1
/// (`RSA PRIVATE KEY`).
fn rsa_key_from_pem(pem: &str) -> anyhow::Result<RsaKeyPair> {
    let (label, der) = pem_block(pem)?;
    let key = match label.as_str() {
        "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der),
        "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der),
        other => bail!("private_key is a PEM {other:?} block, not a PRIVATE KEY"),
    };
    key.map_err(|e| anyhow::anyhow!("private_key is not a usable RSA key: {e}"))
}

/// The label and bytes of the first PEM block.
fn pem_block(pem: &str) -> anyhow::Result<(String, Vec<u8>)> {
    let mut lines = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("-----BEGIN "));
    let label = lines
        .next()
        .and_then(|l| l.strip_prefix("-----BEGIN ")?.strip_suffix("-----"))
        .ok_or_else(|| anyhow::anyhow!("private_key is not PEM (no -----BEGIN line)"))?
        .to_string();
    let end = format!("-----END {label}-----");
    let mut body = String::new();
    for line in lines.by_ref() {
        if line == end {
            let der = STANDARD
                .decode(body.as_bytes())
                .map_err(|_| anyhow::anyhow!("private_key's PEM body is not base64"))?;
            return Ok((label, der));
        }
        body.push_str(line);
    }
    bail!("private_key's PEM block has no {end} line")
}

/// Checks an assertion as Google's token endpoint does: RS256 signature by
/// `public_key_der` (DER `RSAPublicKey`), `aud` equal to `expected_aud`, issued no later
/// than `now` (plus a minute of skew), not expired, valid for at most an hour.
pub fn verify_assertion(
    jwt: &str,
    public_key_der: &[u8],
    expected_aud: &str,
    now: SystemTime,
) -> Result<Claims, String> {
    let mut parts = jwt.split('.');
    let (Some(header), Some(claims), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the assertion is not three dot-separated parts".into());
    };
    let decode = |part: &str, what: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| format!("the assertion's {what} is not base64url"))
    };
    let head: Header = serde_json::from_slice(&decode(header, "header")?)
        .map_err(|e| format!("the assertion's header is not JSON: {e}"))?;
    if head.alg != "RS256" {
        return Err(format!("the assertion's alg is {:?}, not RS256", head.alg));
    }
    let key =
        signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, public_key_der);
    let signing_input = &jwt[..header.len() + 1 + claims.len()];
    key.verify(signing_input.as_bytes(), &decode(sig, "signature")?)
        .map_err(|_| {
            "the assertion's signature does not verify with the account's key".to_string()
        })?;
    let claims: Claims = serde_json::from_slice(&decode(claims, "claims")?)
        .map_err(|e| format!("the assertion's claims are not what the flow needs: {e}"))?;
    let now = unix_secs(now);
    if claims.aud != expected_aud {
        return Err(format!(
            "the assertion's aud is {:?}, not {expected_aud:?}",
            claims.aud
        ));
    }
    if claims.iat > now + SKEW_SECS {
        return Err(format!(
            "the assertion is issued in the future (iat {}, now {now})",
            claims.iat
        ));
    }
    if claims.exp <= now {
        return Err(format!(
            "the assertion expired (exp {}, now {now})",
            claims.exp
        ));
    }
    if claims.exp.saturating_sub(claims.iat) > ASSERTION_LIFETIME_SECS {
        return Err("the assertion is valid for more than an hour".into());
    }
    Ok(claims)
}
