//! The accept loop and one connection's service.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use super::spec::LimitsSpec;
use super::tls::ReloadableTls;
use crate::forward::{ClientInfo, Proxy};

/// Flips once, on SIGTERM/SIGINT: listeners stop accepting and drain.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    pub fn new() -> (watch::Sender<bool>, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (tx, Shutdown(rx))
    }

    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// Serves one listener until shutdown, then gives in-flight requests `limits.shutdown_grace`.
/// `connections` is shared by all listeners: it is the process-wide connection limit.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<ReloadableTls>>,
    proxy: Arc<Proxy>,
    limits: LimitsSpec,
    connections: Arc<Semaphore>,
    mut shutdown: Shutdown,
) {
    let builder = Arc::new(http_builder(&limits));
    let graceful = GracefulShutdown::new();
    loop {
        // Wait for room before accepting: excess clients queue in the kernel's backlog.
        let permit = tokio::select! {
            p = connections.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = shutdown.wait() => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // EMFILE and friends: back off briefly rather than spin.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.wait() => break,
        };
        let _ = tcp.set_nodelay(true);
        let proxy = proxy.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let handshake_timeout = limits.header_read_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                None => serve_conn(&builder, watcher, tcp, peer, false, proxy).await,
                Some(tls) => {
                    let accepting = tls.acceptor().accept(tcp);
                    match tokio::time::timeout(handshake_timeout, accepting).await {
                        Ok(Ok(stream)) => {
                            serve_conn(&builder, watcher, stream, peer, true, proxy).await
                        }
                        Ok(Err(err)) => {
                            tracing::debug!(%peer, error = %err, "TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("shutdown grace period ended with requests still in flight");
    }
}

async fn serve_conn<I>(
    builder: &auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    io: I,
    peer: SocketAddr,
    tls: bool,
    proxy: Arc<Proxy>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // One shared value per connection: each request costs one reference count, not two.
    let conn_state = Arc::new((proxy, ClientInfo::new(peer.ip(), tls)));
    let service = service_fn(move |req| {
        let state = conn_state.clone();
        async move { Ok::<_, std::convert::Infallible>(state.0.handle(req, &state.1).await) }
    });
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    if let Err(err) = watcher.watch(conn.into_owned()).await {
        tracing::debug!(%peer, error = %err, "client connection ended with an error");
    }
}

fn http_builder(limits: &LimitsSpec) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // Also runs while a keep-alive connection waits for its next request.
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX))
        .keep_alive_interval(Some(limits.idle_timeout / 2))
        .keep_alive_timeout(std::time::Duration::from_secs(20));
    builder
}

/// Binds a listener; the error names the address.
pub async fn bind(address: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))
}
