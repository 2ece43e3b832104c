//! Basic auth against `basic_auth_users` (bcrypt), as the exporter-toolkit does it: an
//! unknown user is checked against a fixed hash so timing does not tell users apart,
//! one bcrypt runs at a time, and outcomes are cached so a scraper's every request does
//! not pay bcrypt's cost. bcrypt runs on the blocking pool: the daemon's one async
//! worker also times probes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;

/// bcrypt of "fakepassword" at cost 10 (the toolkit's decoy for unknown users).
const DECOY: &str = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

/// Cached outcomes; the cache is cleared when full rather than grown.
const CACHE_MAX: usize = 100;

/// Checks credentials; shared by every request.
#[derive(Default)]
pub struct BasicAuth {
    /// Key: user, hash, password (as the toolkit keys it); value: the verdict.
    cache: Mutex<HashMap<(String, String, String), bool>>,
    /// One bcrypt at a time: a burst of bad passwords costs one core, not all.
    bcrypt: tokio::sync::Mutex<()>,
}

impl BasicAuth {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Whether the `Authorization` header value carries a user of `users` with the right
    /// password.
    pub async fn check(&self, users: &HashMap<String, String>, header: Option<&str>) -> bool {
        let Some((user, password)) = header.and_then(parse_basic) else {
            return false;
        };
        let known = users.get(&user);
        let hash = known.map_or(DECOY, String::as_str).to_string();
        let key = (user, hash.clone(), password.clone());
        if let Some(&verdict) = self.lock_cache().get(&key) {
            return verdict && known.is_some();
        }
        let _one = self.bcrypt.lock().await;
        let matched = tokio::task::spawn_blocking(move || {
            bcrypt::verify(password.as_bytes(), &hash).unwrap_or(false)
        })
        .await
        .unwrap_or(false);
        let verdict = matched && known.is_some();
        let mut cache = self.lock_cache();
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        cache.insert(key, verdict);
        verdict
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String, String), bool>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `Basic base64(user:password)` → (user, password).
fn parse_basic(header: &str) -> Option<(String, String)> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user: &str, pw: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
        )
    }

    #[tokio::test]
    async fn right_wrong_and_unknown() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let users = HashMap::from([("alice".to_string(), hash)]);
        let auth = BasicAuth::new();
        assert!(auth.check(&users, Some(&header("alice", "s3cret"))).await);
        // Cached: the same answer again.
        assert!(auth.check(&users, Some(&header("alice", "s3cret"))).await);
        assert!(!auth.check(&users, Some(&header("alice", "wrong"))).await);
        assert!(
            !auth
                .check(&users, Some(&header("mallory", "fakepassword")))
                .await
        );
        assert!(!auth.check(&users, None).await);
        assert!(!auth.check(&users, Some("Bearer abc")).await);
        assert!(!auth.check(&users, Some("Basic !!!")).await);
    }
}
