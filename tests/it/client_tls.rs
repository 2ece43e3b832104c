//! TLS against a local rustls server on 127.0.0.1 with certificates made by rcgen:
//! the right CA works, a wrong CA is a `tls` failure, `insecure_skip_verify` skips
//! verification, and mutual TLS works with a client certificate and fails without.

use crate::support::client as client_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use client_support::{Script, read_request, run_steps};
use llmprobe::client::{Client, ClientConfig, TlsConfig};
use llmprobe::record::{Outcome, RequestRecord};
use llmprobe::workload::RequestSpec;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

/// A CA and a certificate + key it signed, written as PEM files.
struct Pki {
    ca_pem: PathBuf,
    cert_pem: PathBuf,
    key_pem: PathBuf,
}

fn make_pki(dir: &Path, name: &str, sans: &[&str]) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("{name} test CA"));
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let pki = Pki {
        ca_pem: dir.join(format!("{name}-ca.pem")),
        cert_pem: dir.join(format!("{name}-cert.pem")),
        key_pem: dir.join(format!("{name}-key.pem")),
    };
    std::fs::write(&pki.ca_pem, ca.pem()).unwrap();
    std::fs::write(&pki.cert_pem, cert.pem()).unwrap();
    std::fs::write(&pki.key_pem, key.serialize_pem()).unwrap();
    pki
}

fn stream_script() -> Script {
    Script::sse()
        .wait_ms(20)
        .content("secure", None)
        .wait_ms(5)
        .content(" hello", None)
        .done()
        .end()
}

/// A TLS server presenting `server`'s certificate; when `client_ca` is set it demands
/// a client certificate signed by that CA.
async fn tls_server(server: &Pki, client_ca: Option<&Path>) -> std::net::SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = vec![CertificateDer::from_pem_file(&server.cert_pem).unwrap()];
    let key = PrivateKeyDer::from_pem_file(&server.key_pem).unwrap();
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let config = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_file(ca).unwrap())
                .unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder
                .with_client_cert_verifier(verifier)
                .with_single_cert(chain, key)
                .unwrap()
        }
        None => builder
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap(),
    };
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(sock).await else {
                    return;
                };
                while let Ok(Some(_req)) = read_request(&mut tls).await {
                    if run_steps(&mut tls, &stream_script().steps).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn send(addr: std::net::SocketAddr, tls: TlsConfig) -> RequestRecord {
    let cfg = ClientConfig {
        base_url: format!("https://{addr}"),
        model: "m".into(),
        tls,
        timeouts: llmprobe::client::Timeouts {
            total: Duration::from_secs(20),
            ..Default::default()
        },
        ..ClientConfig::default()
    };
    let client = Client::new(cfg, None).unwrap();
    let spec = RequestSpec {
        prompt: "p".into(),
        prompt_tokens: 1,
        max_tokens: 4,
        history: Vec::new(),
        system: None,
        model: None,
    };
    client.send(&spec, 0, Duration::ZERO, Instant::now()).await
}

#[tokio::test]
async fn the_right_ca_works() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path(), "srv", &["127.0.0.1", "localhost"]);
    let addr = tls_server(&pki, None).await;
    let r = send(
        addr,
        TlsConfig {
            ca_file: Some(pki.ca_pem.clone()),
            ..TlsConfig::default()
        },
    )
    .await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(r.chunks.len(), 2);
    assert!(r.ttft().unwrap() >= Duration::from_millis(20));
}

#[tokio::test]
async fn a_wrong_ca_is_a_tls_failure() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path(), "srv", &["127.0.0.1"]);
    let other = make_pki(dir.path(), "other", &["127.0.0.1"]);
    let addr = tls_server(&pki, None).await;
    for tls in [
        TlsConfig {
            ca_file: Some(other.ca_pem.clone()),
            ..TlsConfig::default()
        },
        // System roots only.
        TlsConfig::default(),
    ] {
        let r = send(addr, tls).await;
        assert_eq!(r.outcome, Outcome::Tls, "{:?}", r.error);
        let err = r.error.unwrap();
        assert!(err.contains("certificate"), "{err}");
        assert_eq!(r.http_status, None);
    }
}

#[tokio::test]
async fn a_name_mismatch_is_a_tls_failure_and_insecure_skip_verify_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path(), "srv", &["some.other.name"]);
    let addr = tls_server(&pki, None).await;
    let r = send(
        addr,
        TlsConfig {
            ca_file: Some(pki.ca_pem.clone()),
            ..TlsConfig::default()
        },
    )
    .await;
    assert_eq!(r.outcome, Outcome::Tls, "{:?}", r.error);
    let r = send(
        addr,
        TlsConfig {
            insecure_skip_verify: true,
            ..TlsConfig::default()
        },
    )
    .await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
}

#[tokio::test]
async fn mutual_tls_needs_the_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let srv = make_pki(dir.path(), "srv", &["127.0.0.1"]);
    let client = make_pki(dir.path(), "client", &["probe.client"]);
    let addr = tls_server(&srv, Some(&client.ca_pem)).await;
    let with_cert = TlsConfig {
        ca_file: Some(srv.ca_pem.clone()),
        client_cert_file: Some(client.cert_pem.clone()),
        client_key_file: Some(client.key_pem.clone()),
        insecure_skip_verify: false,
    };
    let r = send(addr, with_cert).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);

    let without = TlsConfig {
        ca_file: Some(srv.ca_pem.clone()),
        ..TlsConfig::default()
    };
    let r = send(addr, without).await;
    assert_eq!(r.outcome, Outcome::Tls, "{:?}", r.error);
}

#[test]
fn a_bad_client_key_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path(), "c", &["x"]);
    let bad_key = dir.path().join("bad-key.pem");
    std::fs::write(
        &bad_key,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let cfg = ClientConfig {
        tls: TlsConfig {
            client_cert_file: Some(pki.cert_pem.clone()),
            client_key_file: Some(bad_key),
            ..TlsConfig::default()
        },
        ..ClientConfig::default()
    };
    let err = Client::new(cfg, None).unwrap_err();
    assert_eq!(llmprobe::exit::code_for(&err), llmprobe::exit::USAGE);
    assert!(format!("{err:#}").contains("bad-key.pem"), "{err:#}");
}
