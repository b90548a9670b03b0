//! Opening one upstream connection: resolve, TCP, optional TLS, HTTP handshake.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::body::RequestBody;
use super::h2pool::{Signals, WatchedIo};
use super::raw::{RawConn, RawIo};
use crate::deadline::{Deadline, DeadlineIo};
use crate::stats::UpstreamError;
use crate::table_spec::Http2PoolSpec;

pub enum Sender {
    H1(H1Conn),
    H2(http2::SendRequest<RequestBody>),
}

/// An HTTP/1 connection's sender and the deadline its IO enforces (the response timeout).
pub struct H1Conn {
    pub(super) sender: http1::SendRequest<RequestBody>,
    pub(super) deadline: Deadline,
}

pub(super) struct TlsTarget {
    pub config: Arc<ClientConfig>,
    pub name: ServerName<'static>,
}

async fn resolve(address: &str) -> Result<SocketAddr, UpstreamError> {
    if let Ok(addr) = address.parse::<SocketAddr>() {
        return Ok(addr);
    }
    match tokio::net::lookup_host(address).await {
        Ok(mut addrs) => addrs.next().ok_or(UpstreamError::Connect),
        Err(err) => {
            tracing::debug!(%address, error = %err, "upstream name did not resolve");
            Err(UpstreamError::Connect)
        }
    }
}

async fn tcp(address: &str) -> Result<TcpStream, UpstreamError> {
    let addr = resolve(address).await?;
    let tcp = TcpStream::connect(addr).await.map_err(|err| {
        tracing::debug!(%address, error = %err, "upstream connect failed");
        UpstreamError::Connect
    })?;
    // Requests are small and latency matters more than segment count.
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
}

async fn tls_handshake(
    address: &str,
    target: &TlsTarget,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, UpstreamError> {
    let connector = tokio_rustls::TlsConnector::from(target.config.clone());
    connector
        .connect(target.name.clone(), tcp)
        .await
        .map_err(|err| {
            tracing::debug!(%address, error = %err, "upstream TLS handshake failed");
            UpstreamError::Tls
        })
}

/// A byte stream for the HTTP/1 forwarding engine; the caller bounds it with the connect
/// timeout.
pub(super) async fn open_raw(
    address: &str,
    tls: Option<&TlsTarget>,
) -> Result<RawConn, UpstreamError> {
    let tcp = tcp(address).await?;
    let io: Box<dyn RawIo> = match tls {
        None => Box::new(tcp),
        Some(target) => Box::new(tls_handshake(address, target, tcp).await?),
    };
    Ok(RawConn::new(io))
}

/// An HTTP/1 connection up to a usable sender; the caller bounds it with the connect timeout.
pub(super) async fn open_h1(
    address: &str,
    tls: Option<&TlsTarget>,
    upgrades: bool,
) -> Result<H1Conn, UpstreamError> {
    let tcp = tcp(address).await?;
    match tls {
        None => handshake_h1(tcp, upgrades).await,
        Some(target) => handshake_h1(tls_handshake(address, target, tcp).await?, upgrades).await,
    }
}

async fn handshake_h1<I>(io: I, upgrades: bool) -> Result<H1Conn, UpstreamError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let deadline = Deadline::default();
    let io = TokioIo::new(DeadlineIo::new(io, deadline.clone()));
    let (sender, conn) = http1::Builder::new()
        .handshake::<_, RequestBody>(io)
        .await
        .map_err(|_| UpstreamError::Protocol)?;
    if upgrades {
        tokio::spawn(async move {
            if let Err(err) = conn.with_upgrades().await {
                tracing::debug!(error = %err, "upstream connection ended");
            }
        });
    } else {
        tokio::spawn(async move {
            if let Err(err) = conn.await {
                tracing::debug!(error = %err, "upstream connection ended");
            }
        });
    }
    Ok(H1Conn { sender, deadline })
}

/// An HTTP/2 connection of a pool, its reads watched for SETTINGS and GOAWAY (`signals`);
/// the caller bounds it with the connect timeout.
pub(super) async fn open_h2(
    address: &str,
    tls: Option<&TlsTarget>,
    spec: &Http2PoolSpec,
    signals: Arc<Signals>,
) -> Result<http2::SendRequest<RequestBody>, UpstreamError> {
    let tcp = tcp(address).await?;
    let sender = match tls {
        None => handshake_h2(WatchedIo::new(tcp, signals.clone()), spec).await?,
        Some(target) => {
            let stream = tls_handshake(address, target, tcp).await?;
            handshake_h2(WatchedIo::new(stream, signals.clone()), spec).await?
        }
    };
    // The server's SETTINGS come first on the connection (RFC 9113 §3.4): one round trip.
    signals.settled().await;
    Ok(sender)
}

async fn handshake_h2<I>(
    io: I,
    spec: &Http2PoolSpec,
) -> Result<http2::SendRequest<RequestBody>, UpstreamError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        // Until the server's SETTINGS arrive, no more streams than the pool would give it.
        .initial_max_send_streams(spec.max_streams_per_connection as usize);
    if let Some(interval) = spec.keepalive_interval {
        // Only while streams are open (hyper's default): an idle connection needs no
        // probing, and gRPC servers count PINGs without calls as abuse.
        builder
            .keep_alive_interval(interval)
            .keep_alive_timeout(spec.keepalive_timeout);
    }
    let (sender, conn) = builder
        .handshake::<_, RequestBody>(TokioIo::new(io))
        .await
        .map_err(|_| UpstreamError::Protocol)?;
    tokio::spawn(async move {
        if let Err(err) = conn.await {
            tracing::debug!(error = %err, "upstream h2 connection ended");
        }
    });
    Ok(sender)
}
