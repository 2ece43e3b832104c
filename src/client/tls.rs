//! TLS for `https://` targets: a `rustls::ClientConfig` built with the `ring` provider
//! from a [`TlsConfig`] (system roots plus an optional CA file, optional client
//! certificate for mTLS, an explicit `insecure_skip_verify`), and the test that tells a
//! TLS failure from other connection failures.

use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::config::TlsConfig;

/// Installs rustls' `ring` crypto provider as the process default. reqwest is built
/// without a provider of its own (`rustls-no-provider`), so this must run before any
/// HTTP client is built. Idempotent.
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Builds the rustls client configuration for one target. File problems are
/// [`UsageError`](crate::exit::UsageError)s naming the file.
pub fn client_config(tls: &TlsConfig) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("rustls protocol versions")?;
    let builder = if tls.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(
                provider.signature_verification_algorithms,
            )))
    } else {
        builder.with_root_certificates(root_store(tls.ca_file.as_deref())?)
    };
    let mut config = match (&tls.client_cert_file, &tls.client_key_file) {
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert)?;
            let key = match PrivateKeyDer::from_pem_file(key) {
                Ok(k) => k,
                Err(e) => crate::usage_bail!(
                    "tls.client_key_file {}: no usable PEM private key ({e})",
                    key.display()
                ),
            };
            match builder.with_client_auth_cert(chain, key) {
                Ok(c) => c,
                Err(e) => crate::usage_bail!(
                    "tls.client_cert_file {} / tls.client_key_file {}: {e}",
                    cert.display(),
                    key_path(tls).display()
                ),
            }
        }
        _ => builder.with_no_client_auth(),
    };
    // HTTP/1.1 only: one request per connection at a time keeps timing comparable with
    // other benchmark clients and avoids HTTP/2 head-of-line effects in the numbers.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn key_path(tls: &TlsConfig) -> &Path {
    tls.client_key_file.as_deref().unwrap_or(Path::new(""))
}

/// The system roots, read once per process and shared by every client without a
/// `ca_file`: each parsed copy costs about 100 KiB, and a daemon holds a client per
/// target, scenario and replica.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            let native = rustls_native_certs::load_native_certs();
            let (added, _ignored) = roots.add_parsable_certificates(native.certs);
            if added == 0 {
                tracing::warn!(
                    "no system CA certificates found: https targets without tls.ca_file will fail"
                );
            }
            Arc::new(roots)
        })
        .clone()
}

/// System roots plus the certificates of `ca_file`.
fn root_store(ca_file: Option<&Path>) -> anyhow::Result<Arc<RootCertStore>> {
    let Some(path) = ca_file else {
        return Ok(system_roots());
    };
    let mut roots = (*system_roots()).clone();
    for cert in read_certs(path)? {
        if let Err(e) = roots.add(cert) {
            crate::usage_bail!(
                "tls.ca_file {}: unusable CA certificate ({e})",
                path.display()
            );
        }
    }
    Ok(Arc::new(roots))
}

fn read_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let iter = match CertificateDer::pem_file_iter(path) {
        Ok(it) => it,
        Err(e) => crate::usage_bail!("cannot read certificate file {}: {e}", path.display()),
    };
    let certs = match iter.collect::<Result<Vec<_>, _>>() {
        Ok(c) => c,
        Err(e) => crate::usage_bail!("certificate file {}: bad PEM ({e})", path.display()),
    };
    if certs.is_empty() {
        crate::usage_bail!(
            "certificate file {} holds no PEM certificate",
            path.display()
        );
    }
    Ok(certs)
}

/// `insecure_skip_verify`: any certificate is accepted, but handshake signatures are
/// still checked so the connection is at least consistent with the presented key.
#[derive(Debug)]
struct AcceptAnyCert(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// Whether a TLS error is anywhere in the error's source chain. rustls errors reach
/// us wrapped in `io::Error`s, whose `source()` skips the wrapped error, so each
/// `io::Error` is unwrapped by hand.
pub fn is_tls_error(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<rustls::Error>() {
            return true;
        }
        if let Some(inner) = e.downcast_ref::<io::Error>().and_then(|io| io.get_ref())
            && is_tls_error(inner)
        {
            return true;
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_errors_are_found_inside_io_errors() {
        let inner = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = io::Error::new(io::ErrorKind::InvalidData, inner);
        let wrapped = anyhow::Error::new(io).context("connecting");
        assert!(is_tls_error(wrapped.as_ref()));
        let plain = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        assert!(!is_tls_error(&plain));
    }

    #[test]
    fn bad_files_are_usage_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a pem").unwrap();
        let cfg = TlsConfig {
            ca_file: Some(ca.clone()),
            ..TlsConfig::default()
        };
        let err = client_config(&cfg).unwrap_err();
        assert_eq!(crate::exit::code_for(&err), crate::exit::USAGE);
        assert!(err.to_string().contains("ca.pem"), "{err}");
        let missing = TlsConfig {
            ca_file: Some(dir.path().join("missing.pem")),
            ..TlsConfig::default()
        };
        let err = client_config(&missing).unwrap_err();
        assert!(err.to_string().contains("missing.pem"), "{err}");
    }

    #[test]
    fn insecure_and_default_configs_build() {
        client_config(&TlsConfig::default()).unwrap();
        let c = client_config(&TlsConfig {
            insecure_skip_verify: true,
            ..TlsConfig::default()
        })
        .unwrap();
        assert_eq!(c.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
