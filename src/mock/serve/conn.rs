//! The mock's connections: the accept loop over hyper (hand-rolled, so a fault can
//! close or reset the TCP connection itself), one task per connection, and
//! [`ConnCtl`], the handle through which a response ends its own connection.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use axum::Router;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::sleep;
use tokio_util::sync::CancellationToken;
use tower::Service;

/// Accepts connections until `cancel`, then lets them finish for up to `grace`.
pub async fn accept_loop(
    listener: TcpListener,
    app: Router,
    cancel: CancellationToken,
    grace: Duration,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    // Small SSE events must leave at once (and `trickle` byte by byte).
                    let _ = stream.set_nodelay(true);
                    conns.spawn(serve_connection(stream, app.clone(), cancel.clone()));
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "mock accept failed");
                    sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    drop(listener);
    let drained =
        tokio::time::timeout(grace, async { while conns.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::debug!(
            left = conns.len(),
            "mock shutdown grace over, dropping connections"
        );
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}

/// Lets a handler end its own TCP connection: `close` = FIN without a response,
/// `reset` = RST (SO_LINGER 0) after what was already written is flushed.
#[derive(Clone)]
pub struct ConnCtl {
    kill: Arc<Notify>,
    rst: Arc<AtomicBool>,
}

impl ConnCtl {
    pub fn close(&self) {
        self.kill.notify_one();
    }

    pub fn reset(&self) {
        self.rst.store(true, Ordering::SeqCst);
        self.kill.notify_one();
    }
}
/// The connection's socket; on drop it turns a requested reset into a real RST.
struct CtlIo {
    inner: TcpStream,
    rst: Arc<AtomicBool>,
}

impl Drop for CtlIo {
    fn drop(&mut self) {
        if self.rst.load(Ordering::SeqCst) {
            // Linger 0 makes close() send RST instead of FIN; the close happens when
            // `inner` drops right after this, without blocking.
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl AsyncRead for CtlIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CtlIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

async fn serve_connection(stream: TcpStream, app: Router, cancel: CancellationToken) {
    let ctl = ConnCtl {
        kill: Arc::new(Notify::new()),
        rst: Arc::new(AtomicBool::new(false)),
    };
    let io = CtlIo {
        inner: stream,
        rst: ctl.rst.clone(),
    };
    let kill = ctl.kill.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ctl.clone());
        let mut app = app.clone();
        async move { app.call(req).await }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .serve_connection(hyper_util::rt::TokioIo::new(io), svc);
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        tokio::select! {
            biased;
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(error = %e, "mock connection ended with an error");
                }
                return;
            }
            // A fault asked to end the connection: dropping `conn` closes the socket
            // (with RST when `reset` was used). hyper has flushed what it could.
            _ = kill.notified() => return,
            _ = cancel.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}
