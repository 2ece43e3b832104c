//! Which upstream a request goes to: round-robin, or by a header's value on a
//! consistent hash (rendezvous hashing: each key goes to the upstream with the highest
//! hash of key and upstream, so a key stays on its upstream and only the keys of an
//! upstream that goes move). A request without the header goes round-robin.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::exit::UsageError;
use crate::schedule::splitmix64;

/// How the gateway picks an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    RoundRobin,
    /// By the value of this request header (lower case).
    Header(String),
}

impl std::str::FromStr for Route {
    type Err = UsageError;

    /// `round-robin` or `header:NAME`.
    fn from_str(s: &str) -> Result<Route, UsageError> {
        if s == "round-robin" {
            return Ok(Route::RoundRobin);
        }
        match s.strip_prefix("header:") {
            Some(name) if crate::client::valid_header_name(name) => {
                Ok(Route::Header(name.to_ascii_lowercase()))
            }
            Some(name) => Err(UsageError::new(format!(
                "--gateway-route header:{name}: {name:?} is not a valid header name"
            ))),
            None => Err(UsageError::new(format!(
                "--gateway-route {s:?}: expected round-robin or header:NAME"
            ))),
        }
    }
}

/// Where one request goes, and whether a routing key decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub upstream: usize,
    pub keyed: bool,
}

/// The picker over `n` upstreams.
#[derive(Debug)]
pub struct Router {
    route: Route,
    n: usize,
    next: AtomicU64,
}

impl Router {
    pub fn new(route: Route, n: usize) -> Router {
        Router {
            route,
            n: n.max(1),
            next: AtomicU64::new(0),
        }
    }

    pub fn route(&self) -> &Route {
        &self.route
    }

    /// The upstream of a request with `key` (the routing header's value, if any).
    pub fn pick(&self, key: Option<&[u8]>) -> Pick {
        match (&self.route, key) {
            (Route::Header(_), Some(key)) => Pick {
                upstream: rendezvous(key, self.n),
                keyed: true,
            },
            _ => {
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                Pick {
                    upstream: (i % self.n as u64) as usize,
                    keyed: false,
                }
            }
        }
    }
}

/// FNV-1a of `bytes`: a stable key hash (no per-process seed, so a key lands on the
/// same upstream in every run).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The upstream of `key` among `n` by rendezvous hashing.
fn rendezvous(key: &[u8], n: usize) -> usize {
    let k = fnv1a(key);
    (0..n)
        .max_by_key(|i| splitmix64(k ^ splitmix64(*i as u64)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_cycles_and_a_key_stays_on_its_upstream() {
        let rr = Router::new(Route::RoundRobin, 3);
        let order: Vec<usize> = (0..6).map(|_| rr.pick(Some(b"k")).upstream).collect();
        assert_eq!(order, [0, 1, 2, 0, 1, 2]);
        let keyed = Router::new(Route::Header("x-session-token".into()), 3);
        let first = keyed.pick(Some(b"session-7"));
        assert!(first.keyed);
        for _ in 0..5 {
            assert_eq!(keyed.pick(Some(b"session-7")), first);
        }
        // Without the header: round-robin, not keyed.
        assert_eq!(
            keyed.pick(None),
            Pick {
                upstream: 0,
                keyed: false
            }
        );
        // Keys spread over every upstream.
        let mut seen = [false; 3];
        for i in 0..64 {
            seen[keyed.pick(Some(format!("s{i}").as_bytes())).upstream] = true;
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn a_key_moves_only_when_its_upstream_goes() {
        // With one upstream more, a key either stays or moves to the new one.
        for i in 0..64 {
            let key = format!("s{i}");
            let (a, b) = (rendezvous(key.as_bytes(), 3), rendezvous(key.as_bytes(), 4));
            assert!(a == b || b == 3, "{key}: {a} -> {b}");
        }
    }

    #[test]
    fn routes_parse_with_clear_errors() {
        assert_eq!("round-robin".parse::<Route>().unwrap(), Route::RoundRobin);
        assert_eq!(
            "header:X-Session-Token".parse::<Route>().unwrap(),
            Route::Header("x-session-token".into())
        );
        let e = "header:bad header".parse::<Route>().unwrap_err();
        assert!(e.to_string().contains("not a valid header name"), "{e}");
        let e = "random".parse::<Route>().unwrap_err();
        assert!(e.to_string().contains("round-robin or header:NAME"), "{e}");
    }
}
