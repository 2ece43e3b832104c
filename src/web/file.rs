//! The `--web.config.file` format of the Prometheus exporter-toolkit, field for field:
//! `tls_server_config`, `http_server_config`, `basic_auth_users` and `rate_limit`, with
//! the toolkit's defaults and its strictness (an unknown key is an error). Relative file
//! paths are taken from the web config file's directory, as the toolkit does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::secret::Secret;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebFile {
    #[serde(default)]
    pub tls_server_config: TlsServerConfig,
    #[serde(default)]
    pub http_server_config: HttpServerConfig,
    /// User name → bcrypt hash. The hashes are kept as secrets: never printed.
    #[serde(default)]
    pub basic_auth_users: BTreeMap<String, Secret>,
    #[serde(default)]
    pub rate_limit: RateLimit,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsServerConfig {
    /// Inline PEM certificate (instead of `cert_file`).
    #[serde(default)]
    pub cert: Option<String>,
    /// Inline PEM private key (instead of `key_file`).
    #[serde(default)]
    pub key: Option<Secret>,
    /// Inline PEM client CA bundle (instead of `client_ca_file`).
    #[serde(default)]
    pub client_ca: Option<String>,
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    #[serde(default)]
    pub client_auth_type: Option<String>,
    #[serde(default)]
    pub client_ca_file: Option<PathBuf>,
    #[serde(default)]
    pub cipher_suites: Vec<String>,
    #[serde(default)]
    pub curve_preferences: Vec<String>,
    #[serde(default)]
    pub min_version: Option<String>,
    #[serde(default)]
    pub max_version: Option<String>,
    #[serde(default)]
    pub prefer_server_cipher_suites: Option<bool>,
    #[serde(default)]
    pub client_allowed_sans: Option<Vec<String>>,
}

impl TlsServerConfig {
    /// Whether any TLS field is set: the toolkit serves HTTPS exactly then.
    pub fn is_enabled(&self) -> bool {
        self.cert.is_some()
            || self.key.is_some()
            || self.client_ca.is_some()
            || self.cert_file.is_some()
            || self.key_file.is_some()
            || self.client_ca_file.is_some()
            || self
                .client_auth_type
                .as_deref()
                .is_some_and(|s| !s.is_empty())
    }

    /// Every file this section reads (to notice a rotated certificate).
    pub fn files(&self) -> Vec<PathBuf> {
        [&self.cert_file, &self.key_file, &self.client_ca_file]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpServerConfig {
    /// Accepted for compatibility; the daemon serves HTTP/1.1.
    #[serde(default)]
    pub http2: Option<bool>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    #[serde(default)]
    pub burst: u32,
    /// A Go duration (`1s`, `100ms`); empty or zero disables the limiter.
    #[serde(default)]
    pub interval: Option<String>,
}

/// Headers the toolkit lets a file set, with the values allowed when they are an
/// enumeration (matched exactly, as the toolkit does).
const ALLOWED_HEADERS: [(&str, &[&str]); 5] = [
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

/// Parses a web config file. Errors name the file and never quote a value from it (a
/// value may be a password hash or an inline private key).
pub fn load(path: &Path) -> anyhow::Result<WebFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("web config file {}: {e}", path.display()))?;
    parse(&text, path)
}

/// Parses the text of a web config file found at `path`.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<WebFile> {
    let mut file: WebFile = if text.trim().is_empty() {
        WebFile::default()
    } else {
        serde_yaml_ng::from_str(text)
            .map_err(|e| anyhow::anyhow!("web config file {}: {}", path.display(), quiet(&e)))?
    };
    check_headers(&file.http_server_config.headers)
        .map_err(|e| anyhow::anyhow!("web config file {}: {e}", path.display()))?;
    for (user, hash) in &file.basic_auth_users {
        if bcrypt_cost(hash.expose()).is_none() {
            anyhow::bail!(
                "web config file {}: basic_auth_users.{user}: not a bcrypt hash \
                 (make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)",
                path.display()
            );
        }
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let tls = &mut file.tls_server_config;
    for p in [
        &mut tls.cert_file,
        &mut tls.key_file,
        &mut tls.client_ca_file,
    ]
    .into_iter()
    .flatten()
    {
        if p.is_relative() {
            *p = dir.join(&*p);
        }
    }
    Ok(file)
}

/// The cost of a bcrypt hash (`$2a$`, `$2b$`, `$2x$` or `$2y$`), `None` when it is not
/// one.
pub fn bcrypt_cost(hash: &str) -> Option<u32> {
    let parts: Vec<&str> = hash.split('$').collect();
    match parts.as_slice() {
        ["", "2a" | "2b" | "2x" | "2y", cost, rest] if rest.len() == 53 => {
            cost.parse().ok().filter(|c| (4..=31).contains(c))
        }
        _ => None,
    }
}

fn check_headers(headers: &BTreeMap<String, String>) -> anyhow::Result<()> {
    for (name, value) in headers {
        let Some((_, allowed)) = ALLOWED_HEADERS.iter().find(|(n, _)| n == name) else {
            anyhow::bail!("http_server_config.headers: HTTP header {name:?} can not be configured");
        };
        if !allowed.is_empty() && !allowed.contains(&value.as_str()) {
            anyhow::bail!(
                "http_server_config.headers: invalid value for {name}: expected one of {allowed:?}, \
                 got {value:?}"
            );
        }
        if axum::http::HeaderValue::from_str(value).is_err() {
            anyhow::bail!("http_server_config.headers: {name}: not a valid header value");
        }
    }
    Ok(())
}

/// A YAML error without the double-quoted values serde puts in some messages
/// (`invalid type: string "…"`); field names (in backticks) stay.
fn quiet(e: &serde_yaml_ng::Error) -> String {
    let mut msg = String::new();
    let mut quoted = false;
    for c in e.to_string().chars() {
        if c == '"' {
            quoted = !quoted;
            if quoted {
                msg.push_str("\"…\"");
            }
        } else if !quoted {
            msg.push(c);
        }
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

    fn p(text: &str) -> anyhow::Result<WebFile> {
        parse(text, Path::new("/etc/llmprobe/web.yml"))
    }

    #[test]
    fn a_toolkit_file_parses_unchanged() {
        let f = p(&format!(
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: /abs/tls.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  \
             min_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  \
             curve_preferences: [X25519, CurveP256]\n  prefer_server_cipher_suites: true\n\
             http_server_config:\n  http2: true\n  headers:\n    X-Frame-Options: deny\n\
             basic_auth_users:\n  alice: {HASH}\nrate_limit:\n  burst: 10\n  interval: 1s\n"
        ))
        .unwrap();
        let t = &f.tls_server_config;
        assert!(t.is_enabled());
        assert_eq!(
            t.cert_file.as_deref(),
            Some(Path::new("/etc/llmprobe/tls.crt"))
        );
        assert_eq!(t.key_file.as_deref(), Some(Path::new("/abs/tls.key")));
        assert_eq!(f.basic_auth_users["alice"].expose(), HASH);
        assert_eq!(f.rate_limit.burst, 10);
    }

    #[test]
    fn unknown_keys_and_headers_are_errors() {
        assert!(p("tls_server_config:\n  certfile: x\n").is_err());
        let e = p("http_server_config:\n  headers:\n    X-Powered-By: me\n").unwrap_err();
        assert!(e.to_string().contains("can not be configured"), "{e}");
        let e = p("http_server_config:\n  headers:\n    X-Frame-Options: allow\n").unwrap_err();
        assert!(e.to_string().contains("X-Frame-Options"), "{e}");
    }

    #[test]
    fn a_bad_hash_is_named_by_user_and_never_quoted() {
        let e = p("basic_auth_users:\n  bob: hunter2-plaintext\n").unwrap_err();
        assert!(e.to_string().contains("bob"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = p("basic_auth_users: [\"hunter2-plaintext\"]\n").unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn bcrypt_costs_are_read() {
        assert_eq!(bcrypt_cost(HASH), Some(10));
        assert_eq!(bcrypt_cost("$2b$04$abc"), None);
        assert_eq!(bcrypt_cost("plain"), None);
        assert!(!p("").unwrap().tls_server_config.is_enabled());
    }
}
