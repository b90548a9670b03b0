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
use super::raw::{RawConn, RawIo};
use crate::deadline::{Deadline, DeadlineIo};
use crate::stats::UpstreamError;
use crate::table_spec::UpstreamProtocol;

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

/// Everything up to a usable sender; the caller bounds it with the connect timeout.
pub(super) async fn open(
    address: &str,
    protocol: UpstreamProtocol,
    tls: Option<&TlsTarget>,
    upgrades: bool,
) -> Result<Sender, UpstreamError> {
    let tcp = tcp(address).await?;
    match tls {
        None => handshake(tcp, protocol, upgrades).await,
        Some(target) => {
            let stream = tls_handshake(address, target, tcp).await?;
            handshake(stream, protocol, upgrades).await
        }
    }
}

async fn handshake<I>(
    io: I,
    protocol: UpstreamProtocol,
    upgrades: bool,
) -> Result<Sender, UpstreamError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match protocol {
        UpstreamProtocol::Http1 => {
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
            Ok(Sender::H1(H1Conn { sender, deadline }))
        }
        UpstreamProtocol::Http2 => {
            let (sender, conn) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake::<_, RequestBody>(TokioIo::new(io))
                .await
                .map_err(|_| UpstreamError::Protocol)?;
            tokio::spawn(async move {
                if let Err(err) = conn.await {
                    tracing::debug!(error = %err, "upstream h2 connection ended");
                }
            });
            Ok(Sender::H2(sender))
        }
    }
}
