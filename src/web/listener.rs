//! The daemon's listener for axum: plain TCP, or TLS with the server config in force at
//! each handshake (a rotated certificate applies to the next connection). Handshakes
//! run in their own tasks so a slow or silent client holds up nobody else.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a handler learns about its connection (`ConnectInfo<ConnInfo>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnInfo {
    pub remote: SocketAddr,
    /// The client presented a certificate the handshake accepted.
    pub client_cert: bool,
}

impl Connected<IncomingStream<'_, WebListener>> for ConnInfo {
    fn connect_info(stream: IncomingStream<'_, WebListener>) -> Self {
        *stream.remote_addr()
    }
}

/// Where the TLS listener gets the server config for the next handshake.
pub trait TlsSource: Send + Sync + 'static {
    fn tls(&self) -> Option<Arc<rustls::ServerConfig>>;
}

/// A bound listener: plain or TLS (decided at start).
pub struct WebListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(Stream, ConnInfo)>,
    acceptor: JoinHandle<()>,
}

impl Drop for WebListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl WebListener {
    /// Serves `tcp` in plain HTTP when `tls` is `None`, else with TLS from `source`.
    pub fn new(tcp: TcpListener, tls: Option<Arc<dyn TlsSource>>) -> io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = tokio::spawn(accept_loop(tcp, tls, tx));
        Ok(WebListener {
            local,
            ready,
            acceptor,
        })
    }
}

impl axum::serve::Listener for WebListener {
    type Io = Stream;
    type Addr = ConnInfo;

    async fn accept(&mut self) -> (Stream, ConnInfo) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accept loop only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<ConnInfo> {
        Ok(ConnInfo {
            remote: self.local,
            client_cert: false,
        })
    }
}

async fn accept_loop(
    tcp: TcpListener,
    tls: Option<Arc<dyn TlsSource>>,
    tx: mpsc::Sender<(Stream, ConnInfo)>,
) {
    loop {
        let (sock, remote) = match tcp.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let Some(source) = &tls else {
            let info = ConnInfo {
                remote,
                client_cert: false,
            };
            if tx.send((Stream::Plain(sock), info)).await.is_err() {
                return;
            }
            continue;
        };
        let Some(config) = source.tls() else { continue };
        let tx = tx.clone();
        tokio::spawn(async move {
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock)).await {
                Ok(Ok(stream)) => {
                    let client_cert = stream.get_ref().1.peer_certificates().is_some();
                    let info = ConnInfo {
                        remote,
                        client_cert,
                    };
                    let _ = tx.send((Stream::Tls(Box::new(stream)), info)).await;
                }
                // Plain HTTP to the TLS port, a refused client certificate: the client's
                // problem, not worth more than a debug line.
                Ok(Err(e)) => tracing::debug!(%remote, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%remote, "TLS handshake timed out"),
            }
        });
    }
}

/// One accepted connection.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
