//! The mock's Google OAuth2 token endpoint state: the service account it trusts (the
//! public half of its key, its email), the access tokens it issued with their expiry,
//! and the check of a Vertex request's bearer token against them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::client::auth::jwt::{self, CLOUD_PLATFORM_SCOPE};

/// Issues an access token for a JWT assertion signed by the trusted account's key.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The trusted service account, as the mock is started with it.
#[derive(Clone, PartialEq, Eq)]
pub struct MockGoogle {
    /// The DER `RSAPublicKey` of the account's key.
    pub public_key_der: Vec<u8>,
    pub client_email: String,
    /// How long an issued token is valid.
    pub token_ttl: Duration,
}

/// Tokens issued and when each expires (wall clock, as Google's `expires_in` is read).
#[derive(Default)]
pub struct TokenStore {
    issued: Mutex<HashMap<String, SystemTime>>,
    count: std::sync::atomic::AtomicU64,
}

/// A granted token.
pub struct Grant {
    pub access_token: String,
    pub expires_in: u64,
}

impl TokenStore {
    /// Checks `assertion` for `account` (signature, `aud` = `token_url`, times, issuer,
    /// scope) and issues a token; the error is the message of a 400.
    pub fn grant(
        &self,
        account: &MockGoogle,
        assertion: &str,
        token_url: &str,
        now: SystemTime,
    ) -> Result<Grant, String> {
        let claims = jwt::verify_assertion(assertion, &account.public_key_der, token_url, now)?;
        if claims.iss != account.client_email {
            return Err(format!(
                "the assertion's iss {:?} is not the trusted account",
                claims.iss
            ));
        }
        if !claims
            .scope
            .split_whitespace()
            .any(|s| s == CLOUD_PLATFORM_SCOPE)
        {
            return Err("the assertion does not ask for the cloud-platform scope".into());
        }
        let n = self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let token = format!("ya29.mock-{n}-{:016x}", rand::random::<u64>());
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        issued.retain(|_, exp| *exp > now);
        issued.insert(token.clone(), now + account.token_ttl);
        Ok(Grant {
            access_token: token,
            expires_in: account.token_ttl.as_secs(),
        })
    }

    /// Whether `token` was issued here and has not expired at `now`.
    pub fn valid(&self, token: &str, now: SystemTime) -> bool {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        issued.get(token).is_some_and(|exp| *exp > now)
    }

    /// How many tokens were issued (for tests of refreshing).
    pub fn issued(&self) -> u64 {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }
}
