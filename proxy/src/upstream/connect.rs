//! Opening one upstream connection: resolve, TCP, optional TLS, HTTP handshake.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::body::RequestBody;
use super::h2pool::{Driver, KeepAlive, Link, Signals};
use super::raw::{RawConn, RawIo};
use crate::deadline::{Deadline, DeadlineIo};
use crate::stats::UpstreamError;
use crate::table_spec::Http2PoolSpec;

pub enum Sender {
    H1(H1Conn),
    H2(Arc<Link>),
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

/// An HTTP/2 connection of a pool: weir's client connection (`h2wire::client`) with a
/// driver task of its own that feeds `signals` (SETTINGS, GOAWAY, its end) and probes it while
/// streams are open; returned once the server's SETTINGS came. The caller bounds it with the
/// connect timeout.
pub(super) async fn open_h2(
    address: &str,
    tls: Option<&TlsTarget>,
    spec: &Http2PoolSpec,
    signals: Arc<Signals>,
) -> Result<Arc<Link>, UpstreamError> {
    let tcp = tcp(address).await?;
    let link = match tls {
        None => start_h2(tcp, spec, signals.clone()),
        Some(target) => start_h2(
            tls_handshake(address, target, tcp).await?,
            spec,
            signals.clone(),
        ),
    };
    // Until the pool holds it, a connection that fails to settle (or whose opening is given up
    // at the connect timeout) is let go, so that its task closes it.
    let unclaimed = Unclaimed(Some(link));
    // The server's SETTINGS come first on the connection (RFC 9113 §3.4): one round trip.
    if !signals.settled().await {
        tracing::debug!(%address, "upstream h2 connection closed before its SETTINGS");
        return Err(UpstreamError::Protocol);
    }
    unclaimed.claim().ok_or(UpstreamError::Protocol)
}

/// A connection not yet handed to the pool.
struct Unclaimed(Option<Arc<Link>>);

impl Unclaimed {
    fn claim(mut self) -> Option<Arc<Link>> {
        self.0.take()
    }
}

impl Drop for Unclaimed {
    fn drop(&mut self) {
        if let Some(link) = self.0.take() {
            link.abandon();
        }
    }
}

/// Flow control: windows far above the protocol's 64 KiB default, so that a 4 MiB gRPC
/// message or a long server stream runs at the link's speed, not one window per round trip
/// (the values hyper's client uses: 5 MiB for the connection, 2 MiB per stream).
const CONNECTION_WINDOW: u32 = 5 << 20;
const STREAM_WINDOW: u32 = 2 << 20;
/// The largest response head taken (hyper's default too).
const MAX_HEADER_LIST: u32 = 16 << 10;

fn start_h2<I>(io: I, spec: &Http2PoolSpec, signals: Arc<Signals>) -> Arc<Link>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let config = crate::h2wire::client::Config {
        stream_window: STREAM_WINDOW,
        connection_window: CONNECTION_WINDOW,
        max_header_list_size: MAX_HEADER_LIST,
        ..Default::default()
    };
    // The preface and SETTINGS are queued: the driver's first turn writes them.
    let link = Arc::new(Link::new(crate::h2wire::client::ClientConn::new(config)));
    let keepalive = spec.keepalive_interval.map(|interval| KeepAlive {
        interval,
        timeout: spec.keepalive_timeout,
    });
    tokio::spawn(Driver::new(io, link.clone(), signals, keepalive));
    link
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn an_h2_connection_given_up_before_its_settings_is_closed() {
        // A server that takes the connection and says nothing.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut sink = Vec::new();
            // Returns once the client closes.
            tcp.read_to_end(&mut sink).await.map(|_| sink.len())
        });
        let signals = Arc::new(Signals::new(Counter::default()));
        let spec = Http2PoolSpec::default();
        let opening = open_h2(&address, None, &spec, signals.clone());
        let given_up = tokio::time::timeout(Duration::from_millis(200), opening).await;
        assert!(given_up.is_err(), "no SETTINGS came: still opening");
        let read = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the abandoned connection was closed")
            .unwrap()
            .unwrap();
        // The preface and SETTINGS, then GOAWAY on the way out.
        assert!(read > 24, "{read} bytes");
        assert!(signals.closed());
    }
}
