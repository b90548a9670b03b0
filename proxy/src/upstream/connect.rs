//! Opening one upstream connection: resolve, TCP, optional TLS, HTTP handshake.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use bytes::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::body::RequestBody;
use super::h2pool::{drive, KeepAlive, Signals, WatchedIo};
use super::raw::{RawConn, RawIo};
use crate::deadline::{Deadline, DeadlineIo};
use crate::stats::UpstreamError;
use crate::table_spec::Http2PoolSpec;

pub enum Sender {
    H1(H1Conn),
    H2(h2::client::SendRequest<Bytes>),
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

/// An HTTP/1 connection of hyper's client, for one request that may upgrade it; the caller
/// bounds it with the connect timeout.
pub(super) async fn open_for_upgrade(
    address: &str,
    tls: Option<&TlsTarget>,
) -> Result<H1Conn, UpstreamError> {
    let tcp = tcp(address).await?;
    match tls {
        None => handshake_h1(tcp).await,
        Some(target) => handshake_h1(tls_handshake(address, target, tcp).await?).await,
    }
}

async fn handshake_h1<I>(io: I) -> Result<H1Conn, UpstreamError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let deadline = Deadline::default();
    let io = TokioIo::new(DeadlineIo::new(io, deadline.clone()));
    let (sender, conn) = http1::Builder::new()
        .handshake::<_, RequestBody>(io)
        .await
        .map_err(|_| UpstreamError::Protocol)?;
    tokio::spawn(async move {
        if let Err(err) = conn.with_upgrades().await {
            tracing::debug!(error = %err, "upstream connection ended");
        }
    });
    Ok(H1Conn { sender, deadline })
}

/// An HTTP/2 connection of a pool, its reads watched for SETTINGS and GOAWAY (`signals`),
/// its task probing it while `in_flight` streams are open; the caller bounds it with the
/// connect timeout.
pub(super) async fn open_h2(
    address: &str,
    tls: Option<&TlsTarget>,
    spec: &Http2PoolSpec,
    signals: Arc<Signals>,
    in_flight: Arc<AtomicU32>,
) -> Result<h2::client::SendRequest<Bytes>, UpstreamError> {
    let tcp = tcp(address).await?;
    let sender = match tls {
        None => {
            handshake_h2(
                WatchedIo::new(tcp, signals.clone()),
                spec,
                signals.clone(),
                in_flight,
            )
            .await?
        }
        Some(target) => {
            let stream = tls_handshake(address, target, tcp).await?;
            handshake_h2(
                WatchedIo::new(stream, signals.clone()),
                spec,
                signals.clone(),
                in_flight,
            )
            .await?
        }
    };
    // The server's SETTINGS come first on the connection (RFC 9113 §3.4): one round trip.
    signals.settled().await;
    Ok(sender)
}

/// Flow control and buffers: windows far above the protocol's 64 KiB default, so that a
/// 4 MiB gRPC message or a long server stream runs at the link's speed, not one window per
/// round trip (the values hyper's client uses: 5 MiB for the connection, 2 MiB per stream).
const CONNECTION_WINDOW: u32 = 5 << 20;
const STREAM_WINDOW: u32 = 2 << 20;
/// What h2 may hold of one stream's body beyond what the window lets out.
const SEND_BUFFER: usize = 1 << 20;
/// The largest response head taken (hyper's default too).
const MAX_HEADER_LIST: u32 = 16 << 10;
/// Streams this side reset for an error of its own, before the connection is given up.
const MAX_LOCAL_RESETS: usize = 1024;

async fn handshake_h2<I>(
    io: I,
    spec: &Http2PoolSpec,
    signals: Arc<Signals>,
    in_flight: Arc<AtomicU32>,
) -> Result<h2::client::SendRequest<Bytes>, UpstreamError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = h2::client::Builder::new()
        // Until the server's SETTINGS arrive, no more streams than the pool would give it.
        .initial_max_send_streams(spec.max_streams_per_connection as usize)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_send_buffer_size(SEND_BUFFER)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_local_error_reset_streams(Some(MAX_LOCAL_RESETS))
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|_| UpstreamError::Protocol)?;
    let keepalive = spec.keepalive_interval.map(|interval| KeepAlive {
        interval,
        timeout: spec.keepalive_timeout,
    });
    tokio::spawn(drive(conn, keepalive, signals, in_flight));
    Ok(sender)
}
