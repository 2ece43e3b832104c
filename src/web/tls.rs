//! `tls_server_config` → a rustls `ServerConfig` (ring provider), with the toolkit's
//! client-auth types, versions, cipher suites, curves and `client_allowed_sans`.

use std::sync::Arc;

use anyhow::Context;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{NoClientAuth, WebPkiClientVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use super::file::TlsServerConfig;

/// How the handshake treats client certificates (the toolkit's `client_auth_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Request,
    RequireAny,
    VerifyIfGiven,
    RequireAndVerify,
}

impl ClientAuth {
    pub fn parse(s: Option<&str>) -> anyhow::Result<ClientAuth> {
        Ok(match s.unwrap_or("") {
            "" | "NoClientCert" => ClientAuth::None,
            "RequestClientCert" => ClientAuth::Request,
            // RequireClientCert is the toolkit's older spelling.
            "RequireAnyClientCert" | "RequireClientCert" => ClientAuth::RequireAny,
            "VerifyClientCertIfGiven" => ClientAuth::VerifyIfGiven,
            "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerify,
            other => anyhow::bail!(
                "tls_server_config.client_auth_type: invalid ClientAuth {other:?} (one of \
                 NoClientCert, RequestClientCert, RequireAnyClientCert, \
                 VerifyClientCertIfGiven, RequireAndVerifyClientCert)"
            ),
        })
    }

    /// Whether a connection without a client certificate is refused.
    pub fn required(self) -> bool {
        matches!(self, ClientAuth::RequireAny | ClientAuth::RequireAndVerify)
    }

    /// The same check with the certificate optional at the handshake (the HTTP layer then
    /// requires it on every path but the open health endpoints).
    pub fn optional(self) -> ClientAuth {
        match self {
            ClientAuth::RequireAny => ClientAuth::Request,
            ClientAuth::RequireAndVerify => ClientAuth::VerifyIfGiven,
            other => other,
        }
    }
}

/// Builds the server config. `auth` is the client-auth mode to apply at the handshake
/// (see [`ClientAuth::optional`]). Warnings (a setting rustls cannot honour, applied in
/// its safer form) are returned for the caller to log.
pub fn server_config(
    t: &TlsServerConfig,
    auth: ClientAuth,
) -> anyhow::Result<(Arc<rustls::ServerConfig>, Vec<String>)> {
    let mut warnings = Vec::new();
    let (chain, key) = cert_and_key(t)?;
    let provider = Arc::new(provider(t, &mut warnings)?);
    let versions = versions(t, &mut warnings)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .context("tls_server_config: no usable protocol version or cipher suite")?;
    let verifier = client_verifier(t, auth, &provider)?;
    let mut config = builder
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .context("tls_server_config: the certificate and key do not form a usable pair")?;
    config.ignore_client_order = t.prefer_server_cipher_suites.unwrap_or(true);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((Arc::new(config), warnings))
}

fn cert_and_key(
    t: &TlsServerConfig,
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let chain: Vec<CertificateDer<'static>> = match (&t.cert_file, &t.cert) {
        (Some(path), _) => CertificateDer::pem_file_iter(path)
            .and_then(|i| i.collect::<Result<_, _>>())
            .map_err(|e| anyhow::anyhow!("tls_server_config.cert_file {}: {e}", path.display()))?,
        (None, Some(text)) => CertificateDer::pem_slice_iter(text.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| anyhow::anyhow!("tls_server_config.cert: {e}"))?,
        (None, None) => anyhow::bail!("tls_server_config: missing one of cert or cert_file"),
    };
    if chain.is_empty() {
        anyhow::bail!("tls_server_config: the certificate holds no PEM CERTIFICATE block");
    }
    // The key's errors name the file or field, never the content.
    let key = match (&t.key_file, &t.key) {
        (Some(path), _) => PrivateKeyDer::from_pem_file(path).map_err(|e| {
            anyhow::anyhow!(
                "tls_server_config.key_file {}: no usable PEM private key ({e})",
                path.display()
            )
        })?,
        (None, Some(k)) => PrivateKeyDer::from_pem_slice(k.expose().as_bytes())
            .map_err(|_| anyhow::anyhow!("tls_server_config.key: no usable PEM private key"))?,
        (None, None) => anyhow::bail!("tls_server_config: missing one of key or key_file"),
    };
    Ok((chain, key))
}

fn versions(
    t: &TlsServerConfig,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Vec<&'static rustls::SupportedProtocolVersion>> {
    let rank = |field: &str, v: Option<&str>, default: u8| -> anyhow::Result<u8> {
        Ok(match v.unwrap_or("") {
            "" => default,
            "TLS10" => 10,
            "TLS11" => 11,
            "TLS12" => 12,
            "TLS13" => 13,
            other => anyhow::bail!(
                "tls_server_config.{field}: unknown TLS version {other:?} (TLS10, TLS11, TLS12, TLS13)"
            ),
        })
    };
    let min = rank("min_version", t.min_version.as_deref(), 12)?;
    let max = rank("max_version", t.max_version.as_deref(), 13)?;
    if min < 12 {
        warnings.push(format!(
            "tls_server_config.min_version TLS{min}: rustls speaks TLS 1.2 and 1.3 only; \
             TLS 1.2 is the minimum"
        ));
    }
    let mut out = Vec::new();
    if min <= 12 && max >= 12 {
        out.push(&rustls::version::TLS12);
    }
    if max >= 13 {
        out.push(&rustls::version::TLS13);
    }
    if out.is_empty() {
        anyhow::bail!(
            "tls_server_config: min_version/max_version leave no TLS version rustls speaks"
        );
    }
    Ok(out)
}

/// The ring provider narrowed to the file's TLS 1.2 cipher suites and curves. Names Go
/// knows and rustls lacks (CBC suites, P-521) are dropped with a warning; nothing left
/// is an error.
fn provider(t: &TlsServerConfig, warnings: &mut Vec<String>) -> anyhow::Result<CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    if !t.cipher_suites.is_empty() {
        let all = p.cipher_suites.clone();
        let mut kept: Vec<_> = all
            .iter()
            .filter(|s| s.tls13().is_some())
            .copied()
            .collect();
        for name in &t.cipher_suites {
            match all
                .iter()
                .find(|s| s.suite().as_str() == Some(name.as_str()))
            {
                Some(s) if s.tls13().is_none() => kept.push(*s),
                Some(_) => {}
                None => warnings.push(format!(
                    "tls_server_config.cipher_suites: {name} is not offered by rustls; skipped"
                )),
            }
        }
        if !kept.iter().any(|s| s.tls13().is_none()) {
            warnings.push(
                "tls_server_config.cipher_suites: no listed suite is offered by rustls; \
                 TLS 1.2 is off"
                    .into(),
            );
        }
        p.cipher_suites = kept;
    }
    if !t.curve_preferences.is_empty() {
        let all = p.kx_groups.clone();
        let mut kept = Vec::new();
        for name in &t.curve_preferences {
            let group = match name.as_str() {
                "CurveP256" => Some(rustls::NamedGroup::secp256r1),
                "CurveP384" => Some(rustls::NamedGroup::secp384r1),
                "X25519" => Some(rustls::NamedGroup::X25519),
                "CurveP521" => None,
                other => {
                    anyhow::bail!("tls_server_config.curve_preferences: unknown curve {other:?}")
                }
            };
            match group.and_then(|g| all.iter().find(|k| k.name() == g)) {
                Some(k) => kept.push(*k),
                None => warnings.push(format!(
                    "tls_server_config.curve_preferences: {name} is not offered by rustls; skipped"
                )),
            }
        }
        if kept.is_empty() {
            anyhow::bail!(
                "tls_server_config.curve_preferences: no listed curve is offered by rustls"
            );
        }
        p.kx_groups = kept;
    }
    Ok(p)
}

fn client_verifier(
    t: &TlsServerConfig,
    auth: ClientAuth,
    provider: &Arc<CryptoProvider>,
) -> anyhow::Result<Arc<dyn ClientCertVerifier>> {
    let declared = ClientAuth::parse(t.client_auth_type.as_deref())?;
    let has_ca = t.client_ca_file.is_some() || t.client_ca.is_some();
    if has_ca && declared == ClientAuth::None {
        anyhow::bail!(
            "tls_server_config: client CA's have been configured without a Client Auth Policy"
        );
    }
    if t.client_allowed_sans.is_some() && !declared.required() {
        anyhow::bail!(
            "tls_server_config.client_allowed_sans requires client_auth_type to be one of \
             RequireAnyClientCert or RequireAndVerifyClientCert"
        );
    }
    let algs = provider.signature_verification_algorithms;
    let inner: Arc<dyn ClientCertVerifier> = match auth {
        ClientAuth::None => Arc::new(NoClientAuth),
        ClientAuth::Request | ClientAuth::RequireAny => Arc::new(AnyClientCert {
            mandatory: auth.required(),
            algs,
        }),
        ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify => {
            let roots = Arc::new(client_roots(t)?);
            let b = WebPkiClientVerifier::builder_with_provider(roots, provider.clone());
            let b = if auth.required() {
                b
            } else {
                b.allow_unauthenticated()
            };
            b.build()
                .context("tls_server_config: cannot build the client certificate verifier")?
        }
    };
    Ok(match &t.client_allowed_sans {
        Some(sans) => Arc::new(AllowedSans {
            inner,
            sans: sans.clone(),
        }),
        None => inner,
    })
}

fn client_roots(t: &TlsServerConfig) -> anyhow::Result<RootCertStore> {
    let certs: Vec<CertificateDer<'static>> = match (&t.client_ca_file, &t.client_ca) {
        (Some(path), _) => CertificateDer::pem_file_iter(path)
            .and_then(|i| i.collect::<Result<_, _>>())
            .map_err(|e| {
                anyhow::anyhow!("tls_server_config.client_ca_file {}: {e}", path.display())
            })?,
        (None, Some(text)) => CertificateDer::pem_slice_iter(text.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| anyhow::anyhow!("tls_server_config.client_ca: {e}"))?,
        (None, None) => anyhow::bail!(
            "tls_server_config.client_auth_type verifies client certificates: it needs \
             client_ca_file or client_ca"
        ),
    };
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        anyhow::bail!("tls_server_config: the client CA holds no usable certificate");
    }
    Ok(roots)
}

/// `RequestClientCert` / `RequireAnyClientCert`: any certificate, unverified, but the
/// client must still prove it holds the key (the handshake signature is checked).
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    algs: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }
    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// `client_allowed_sans`: the inner check, then one SAN (DNS, email, IP or URI) of the
/// client certificate must be in the list.
#[derive(Debug)]
struct AllowedSans {
    inner: Arc<dyn ClientCertVerifier>,
    sans: Vec<String>,
}

impl ClientCertVerifier for AllowedSans {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }
    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }
    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let ok = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let found = sans_of(end_entity);
        if found.iter().any(|s| self.sans.contains(s)) {
            Ok(ok)
        } else {
            Err(rustls::Error::General(
                "could not find allowed SANs in client cert".into(),
            ))
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The SAN values of a certificate as strings (IP addresses in their usual text form).
fn sans_of(cert: &CertificateDer<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return Vec::new();
    };
    let Ok(Some(ext)) = parsed.subject_alternative_name() else {
        return Vec::new();
    };
    ext.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(s) | GeneralName::RFC822Name(s) | GeneralName::URI(s) => {
                Some((*s).to_string())
            }
            GeneralName::IPAddress(b) => match b.len() {
                4 => <[u8; 4]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::IpAddr::from(a).to_string()),
                16 => <[u8; 16]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::IpAddr::from(a).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(extra: impl FnOnce(&mut TlsServerConfig)) -> TlsServerConfig {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let mut t = TlsServerConfig {
            cert: Some(cert.pem()),
            key: Some(crate::secret::Secret::new(key.serialize_pem())),
            ..TlsServerConfig::default()
        };
        extra(&mut t);
        t
    }

    #[test]
    fn what_rustls_lacks_is_applied_in_its_safer_form_with_a_warning() {
        let t = tls(|t| {
            t.min_version = Some("TLS10".into());
            t.cipher_suites = vec![
                "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA".into(),
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into(),
            ];
            t.curve_preferences = vec!["CurveP521".into(), "X25519".into()];
        });
        let (_, warnings) = server_config(&t, ClientAuth::None).unwrap();
        let all = warnings.join("\n");
        assert!(all.contains("TLS 1.2 is the minimum"), "{all}");
        assert!(all.contains("AES_128_CBC_SHA is not offered"), "{all}");
        assert!(all.contains("CurveP521 is not offered"), "{all}");
        assert_eq!(warnings.len(), 3, "{all}");
    }

    #[test]
    fn bad_settings_are_errors_naming_the_field() {
        let err = |f: fn(&mut TlsServerConfig)| {
            format!(
                "{:#}",
                server_config(&tls(f), ClientAuth::None).unwrap_err()
            )
        };
        assert!(err(|t| t.min_version = Some("SSL3".into())).contains("min_version"));
        assert!(err(|t| t.curve_preferences = vec!["P-256".into()]).contains("unknown curve"));
        assert!(err(|t| t.client_ca = Some("x".into())).contains("without a Client Auth Policy"));
        assert!(
            err(|t| t.client_allowed_sans = Some(vec!["a".into()])).contains("client_allowed_sans")
        );
        assert!(err(|t| t.key = Some("not a key".into())).contains("no usable PEM private key"));
        let e = err(|t| t.key = Some("not a key".into()));
        assert!(!e.contains("not a key"), "the key is never quoted: {e}");
        let verify = tls(|t| t.client_auth_type = Some("RequireAndVerifyClientCert".into()));
        let e = format!(
            "{:#}",
            server_config(&verify, ClientAuth::RequireAndVerify).unwrap_err()
        );
        assert!(e.contains("client_ca_file"), "{e}");
    }

    #[test]
    fn required_client_auth_relaxes_for_open_health_endpoints() {
        assert_eq!(
            ClientAuth::RequireAndVerify.optional(),
            ClientAuth::VerifyIfGiven
        );
        assert_eq!(ClientAuth::RequireAny.optional(), ClientAuth::Request);
        assert_eq!(
            ClientAuth::parse(Some("RequireClientCert")).unwrap(),
            ClientAuth::RequireAny
        );
        assert!(ClientAuth::parse(Some("Always")).is_err());
    }
}
