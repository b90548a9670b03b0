//! The accept loop and one connection's service.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::CONNECTION;
use http::{HeaderValue, StatusCode};
use http_body::{Body, Frame, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::server::TlsStream;

use super::drain::{Drain, Graceful, Member, Watched};
use super::h2::{H2Connection, H2Settings};
use super::limit::{Admitted, ConnectionLimit};
use super::park::{self, Parking};
use super::spec::{Http1Engine, LimitsSpec};
use super::tls::ReloadableTls;
use crate::deadline::{Deadline, DeadlineIo};
use crate::forward::body::{BoxError, ResponseBody};
use crate::forward::local_response;
use crate::h1::gate::{self, Gate};
use crate::h1::{self, Finished, ToHyper};
use crate::identity;
use crate::interim::Interleave;
use crate::pipeline::{ClientInfo, ConnState, Proxy};
use crate::upstream::Received;

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

/// An HTTP/1 keep-alive connection (plaintext, on the passthrough engine) that has waited this
/// long for its next request is parked (`park`): it then holds about a tenth of the memory, and
/// its next request pays a few system calls and a task more. A second is long past the gap
/// between a busy client's requests, and short beside how long keep-alive clients stay idle.
const PARK_AFTER: Duration = Duration::from_secs(1);

/// Serves one listener until shutdown, then gives in-flight requests `limits.shutdown_grace`.
/// `connections` is shared by all listeners: it is the process-wide connection limit.
pub async fn serve(
    listener: TcpListener,
    name: Arc<str>,
    tls: Option<Arc<ReloadableTls>>,
    proxy: Arc<Proxy>,
    limits: LimitsSpec,
    connections: Arc<ConnectionLimit>,
    mut shutdown: Shutdown,
) {
    let drain = Drain::default();
    let listening = Listening::start(
        name,
        &limits,
        tls.is_none(),
        proxy,
        drain.clone(),
        &connections,
        &shutdown,
    );
    loop {
        // Wait for room before accepting: excess clients queue in the kernel's backlog.
        let room = tokio::select! {
            r = connections.room() => match r { Some(r) => r, None => break },
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
        let conn = Box::new(Conn {
            listening: listening.clone(),
            member: drain.join(),
            peer,
            accepted: Instant::now(),
            admitted: connections.admit(room),
            identity: None,
        });
        let tls = tls.clone();
        // What the task captures stays in it for the connection's whole life, even once moved
        // on (an async block keeps its captures apart from what it moves them into): so it
        // captures little — the socket, the TLS settings, and the rest boxed (`Conn`), freed
        // once the connection is served.
        tokio::spawn(async move {
            match tls {
                None => plaintext(conn, tcp, None).await,
                // Boxed: inline, a TLS connection's state would size the task of every
                // connection, plaintext ones too, for as long as each stays open (idle
                // keep-alive connections are most of a sidecar's or an edge's).
                Some(tls) => Box::pin(serve_tls(conn, tcp, tls)).await,
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, drain.drain())
        .await
        .is_err()
    {
        tracing::warn!("shutdown grace period ended with requests still in flight");
    }
}

/// A plaintext client connection: its protocol by its first bytes (known already for one
/// coming back from the parking), served, and parked whenever it idles long enough.
async fn plaintext(conn: Box<Conn>, tcp: TcpStream, protocol: Option<Protocol>) {
    let protocol = match protocol {
        Some(protocol) => protocol,
        // Boxed: its timers are 400 bytes, and inline they would size the task of every
        // connection for as long as it stays open, not just while its first bytes come.
        None => match Box::pin(sniff(&tcp, conn.listening.builders.head_timeout)).await {
            Some(protocol) => protocol,
            None => {
                tracing::debug!(
                    peer = %conn.peer,
                    "connection closed, silent, or an HTTP/2 preface begun and broken, before a request"
                );
                return;
            }
        },
    };
    if let Some(idle) = conn.serve(tcp, protocol, false).await {
        idle.park();
    }
}

/// A TLS client connection: the handshake within the header-read timeout, then its protocol by
/// ALPN. (Never parked: its TLS state is most of what it holds.)
async fn serve_tls(mut conn: Box<Conn>, tcp: TcpStream, tls: Arc<ReloadableTls>) {
    // Boxed: a handshake's state is 1.3 KB, needed only until it ends; inline it would be part
    // of this future for the connection's life.
    let handshaking = handshake(tcp, tls, &conn.listening, conn.peer);
    if let Some((stream, protocol)) = Box::pin(handshaking).await {
        // Mutual TLS: who the verified certificate says the client is.
        conn.identity = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(identity::of_certificate)
            .map(Arc::from);
        conn.serve(stream, protocol, true).await;
    }
}

/// The TLS stream, boxed (it is 1.2 KB, and the futures that serve a connection hold their
/// stream in more than one place: an async fn's argument and the local it moves to; inline, an
/// HTTP/1 connection's future was 4.6 KB instead of 1.0), and its protocol.
async fn handshake(
    tcp: TcpStream,
    tls: Arc<ReloadableTls>,
    listening: &Listening,
    peer: SocketAddr,
) -> Option<(Box<TlsStream<TcpStream>>, Protocol)> {
    let limit = listening.builders.head_timeout;
    let accepting = tls.acceptor().accept(tcp);
    match tokio::time::timeout(limit, accepting).await {
        Ok(Ok(stream)) => {
            // HTTP/2 over TLS is chosen by ALPN (RFC 9113 §3.2); anything else is HTTP/1.1.
            let protocol = match stream.get_ref().1.alpn_protocol() {
                Some(b"h2") => Protocol::Http2,
                _ => Protocol::Http1,
            };
            Some((Box::new(stream), protocol))
        }
        Ok(Err(err)) => {
            let reason = identity::refusal_reason(&err);
            listening
                .proxy
                .metrics()
                .tls_handshake_failed(&listening.name, reason);
            // A client certificate refused is worth an operator's eye; the rest (scanners,
            // clients that hang up) is noise at info.
            if matches!(reason, "io" | "protocol") {
                tracing::debug!(%peer, error = %err, "TLS handshake failed");
            } else {
                tracing::info!(%peer, listener = %listening.name, reason = %reason, error = %err, "TLS handshake refused a client certificate");
            }
            None
        }
        Err(_) => {
            listening
                .proxy
                .metrics()
                .tls_handshake_failed(&listening.name, "timeout");
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Protocol {
    Http1,
    Http2,
}

/// The cleartext HTTP/2 connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The preface's request line: a client that has sent it has begun HTTP/2, whatever follows.
const H2_PREFACE_LINE: usize = b"PRI * HTTP/2.0".len();

/// Tells HTTP/1 from prior-knowledge HTTP/2 by peeking at the first bytes, so that hyper reads
/// the socket itself (no rewind layer on every read). `None`: closed or silent until `limit`,
/// or a preface begun and broken: once a client has sent `PRI * HTTP/2.0` it speaks HTTP/2,
/// and what does not complete the preface is a connection error (RFC 9113 §3.4), not an
/// HTTP/1 request to answer with a 400 — the connection is closed.
async fn sniff(tcp: &TcpStream, limit: Duration) -> Option<Protocol> {
    let peeking = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        loop {
            let n = tcp.peek(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            if buf[..n] != H2_PREFACE[..n] {
                let matched = buf[..n]
                    .iter()
                    .zip(H2_PREFACE)
                    .take_while(|(a, b)| a == b)
                    .count();
                if matched >= H2_PREFACE_LINE {
                    return None;
                }
                return Some(Protocol::Http1);
            }
            if n == H2_PREFACE.len() {
                return Some(Protocol::Http2);
            }
            // Part of the preface so far (rare: it is one small write): let the rest arrive.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(limit, peeking).await.ok().flatten()
}

/// How client connections are served, configured once per listener: hyper's HTTP/1 server,
/// weir's HTTP/2 one.
struct Builders {
    h1: http1::Builder,
    h2: H2Settings,
    head_timeout: Duration,
    h1_limits: h1::Limits,
    passthrough: bool,
}

impl Builders {
    /// `parks`: idle HTTP/1 connections are parked (plaintext listeners).
    fn new(limits: &LimitsSpec, parks: bool) -> Self {
        let passthrough = limits.http1_engine == Http1Engine::Passthrough;
        let mut h1 = http1::Builder::new();
        h1.timer(TokioTimer::new())
            // Enforced by the connection's `DeadlineIo` instead: hyper's costs a timer per
            // request.
            .header_read_timeout(None)
            .max_buf_size(limits.max_header_bytes.max(8192))
            .max_headers(limits.max_headers);
        Builders {
            h1,
            h2: H2Settings::new(limits),
            head_timeout: limits.header_read_timeout,
            h1_limits: h1::Limits {
                head_timeout: limits.header_read_timeout,
                // A connection whose head is due within the second is closed, not parked.
                park_after: (parks && passthrough && PARK_AFTER < limits.header_read_timeout)
                    .then_some(PARK_AFTER),
                max_header_bytes: limits.max_header_bytes,
                max_headers: limits.max_headers,
            },
            passthrough,
        }
    }
}

/// What a listener's connections share: how they are served, and where idle ones are parked.
struct Listening {
    /// The listener's name in the config (the access log's `listener`).
    name: Arc<str>,
    builders: Builders,
    proxy: Arc<Proxy>,
    drain: Drain,
    /// None on TLS listeners, with `http1_engine: hyper`, or if no epoll set could be made.
    parking: Option<Arc<Parking<Asleep>>>,
}

/// What a parked connection keeps besides its socket.
struct Asleep {
    admitted: Admitted,
    peer: SocketAddr,
    /// When it went idle: its next head is due `header_read_timeout` after.
    since: Instant,
}

impl Listening {
    /// The listener's shared part, and for a plaintext one its parking's attendant, which
    /// serves each parked connection again when its bytes come (until `shutdown`).
    fn start(
        name: Arc<str>,
        limits: &LimitsSpec,
        cleartext: bool,
        proxy: Arc<Proxy>,
        drain: Drain,
        connections: &ConnectionLimit,
        shutdown: &Shutdown,
    ) -> Arc<Listening> {
        let mut builders = Builders::new(limits, cleartext);
        let mut parking = None;
        if builders.h1_limits.park_after.is_some() {
            match Parking::new(connections.parked()) {
                Ok(made) => parking = Some(made),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot park idle connections: each keeps its task");
                    builders.h1_limits.park_after = None;
                }
            }
        }
        let listening = Arc::new(Listening {
            name,
            builders,
            proxy,
            drain,
            parking: parking.as_ref().map(|(lot, _)| lot.clone()),
        });
        if let Some((lot, attendant)) = parking {
            let owner = listening.clone();
            let resume = move |tcp: TcpStream, asleep: Asleep| {
                let conn = Box::new(Conn {
                    listening: owner.clone(),
                    member: owner.drain.join(),
                    peer: asleep.peer,
                    accepted: asleep.since,
                    admitted: asleep.admitted,
                    identity: None,
                });
                tokio::spawn(plaintext(conn, tcp, Some(Protocol::Http1)));
            };
            let mut shutdown = shutdown.clone();
            let stop = async move { shutdown.wait().await };
            tokio::spawn(park::attend(lot, attendant, resume, stop));
        }
        listening
    }
}

/// An HTTP/1 connection idle for `PARK_AFTER`, on its way to the parking.
struct Idle<I> {
    io: I,
    asleep: Asleep,
    listening: Arc<Listening>,
}

impl Idle<TcpStream> {
    fn park(self) {
        let Some(parking) = &self.listening.parking else {
            return;
        };
        let due = self.asleep.since + self.listening.builders.head_timeout;
        match self.io.into_std() {
            Ok(socket) => parking.park(socket, due, self.asleep),
            Err(err) => tracing::debug!(
                peer = %self.asleep.peer,
                error = %err,
                "cannot park an idle client connection: closed"
            ),
        }
    }
}

/// One accepted client connection, before its protocol is known.
struct Conn {
    listening: Arc<Listening>,
    member: Member,
    peer: SocketAddr,
    /// The first request head is due `header_read_timeout` after this, however long the
    /// protocol sniff or the TLS handshake took of it (for a connection back from the parking:
    /// when it went idle).
    accepted: Instant,
    /// Counted open until the connection closes.
    admitted: Admitted,
    /// The client's verified identity (mutual TLS), once its handshake is done.
    identity: Option<Arc<str>>,
}

impl Conn {
    /// Serves the connection until it ends or idles long enough to be parked. Only what it
    /// needs to its end is kept across the wait (an async fn's arguments stay in its future
    /// for its whole life, so they are small: `Conn` is boxed and freed when the connection
    /// starts); what starts it is plain functions.
    async fn serve<I>(self: Box<Self>, io: I, protocol: Protocol, tls: bool) -> Option<Idle<I>>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let Conn {
            listening,
            member,
            peer,
            accepted,
            admitted,
            identity,
        } = *self;
        let started = Started {
            listening: listening.clone(),
            member,
            peer,
            accepted,
            identity,
        };
        let ended = match protocol {
            Protocol::Http1 if listening.builders.passthrough => {
                started.passthrough(io, tls).await.map_err(BoxError::from)
            }
            Protocol::Http1 => (started.hyper(io, tls).await)
                .map(|()| Finished::Closed)
                .map_err(BoxError::from),
            Protocol::Http2 => (started.h2(io, tls).await)
                .map(|()| Finished::Closed)
                .map_err(BoxError::from),
        };
        match ended {
            Ok(Finished::Idle { io, since }) => Some(Idle {
                io,
                asleep: Asleep {
                    admitted,
                    peer,
                    since,
                },
                listening,
            }),
            Ok(Finished::Closed) => None,
            Err(err) => {
                tracing::debug!(%peer, error = %err, "client connection ended with an error");
                None
            }
        }
    }
}

/// A connection being started: what its engine is made from.
struct Started {
    listening: Arc<Listening>,
    member: Member,
    peer: SocketAddr,
    accepted: Instant,
    identity: Option<Arc<str>>,
}

impl Started {
    /// The watcher's place, the listener, and the value every request on the connection
    /// shares.
    fn parts(self, tls: bool) -> (Member, Arc<Listening>, ConnState) {
        let proxy = self.listening.proxy.clone();
        let client = ClientInfo::new(self.peer, tls, self.listening.name.clone())
            .with_identity(self.identity);
        let state = Arc::new((proxy, client));
        (self.member, self.listening, state)
    }

    /// What both HTTP/1 engines start from: the watcher's place, the listener's settings, the
    /// connection's shared state, and `io` under the header-read deadline — from the
    /// connection's start, and from the end of each response, until the next request head is
    /// complete (keep-alive idle included).
    fn http1<I>(
        self,
        io: I,
        tls: bool,
    ) -> (Member, Arc<Listening>, ConnState, Deadline, DeadlineIo<I>) {
        let accepted = self.accepted;
        let (member, listening, state) = self.parts(tls);
        let deadline = Deadline::default();
        deadline.set(accepted, listening.builders.head_timeout);
        let io = DeadlineIo::new(io, deadline.clone());
        (member, listening, state, deadline, io)
    }

    /// HTTP/1 on weir's own engine, handed to hyper's server for what it does not serve.
    fn passthrough<I>(
        self,
        io: I,
        tls: bool,
    ) -> Watched<impl Graceful<Output = Result<Finished<I>, hyper::Error>>>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (member, listening, state, deadline, io) = self.http1(io, tls);
        // `park_after` is None on TLS listeners already (`Builders::new`).
        let limits = listening.builders.h1_limits;
        let to_hyper: ToHyper<I> = {
            let (deadline, state) = (deadline.clone(), state.clone());
            Box::new(move |io| Box::pin(hyper_h1(&listening.builders, io, deadline, state)))
        };
        member.watch(h1::connection(io, deadline, state, limits, to_hyper))
    }

    /// HTTP/1 on hyper's server (`http1_engine: hyper`).
    fn hyper<I>(self, io: I, tls: bool) -> Watched<impl Graceful<Output = Result<(), hyper::Error>>>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (member, listening, state, deadline, io) = self.http1(io, tls);
        let limits = listening.builders.h1_limits;
        let io = Gate::new(
            Bytes::new(),
            io,
            limits.max_header_bytes,
            limits.max_headers,
        );
        member.watch(hyper_h1(&listening.builders, io, deadline, state))
    }

    /// HTTP/2, prior knowledge or by ALPN.
    fn h2<I>(self, io: I, tls: bool) -> Watched<impl Graceful<Output = std::io::Result<()>>>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let accepted = self.accepted;
        let (member, listening, state) = self.parts(tls);
        let start = move |req, stream| {
            let state = state.clone();
            let handler = move |req| crate::forward::handle(state, req);
            super::h2::serve(handler, req, stream)
        };
        member.watch(H2Connection::new(
            io,
            &listening.builders.h2,
            accepted,
            start,
        ))
    }
}

/// hyper's HTTP/1 server on a connection, behind the strict rules' gate: every request
/// through the hyper engine, but for a head the gate refused, answered with its refusal.
fn hyper_h1<J>(
    builders: &Builders,
    io: J,
    deadline: Deadline,
    state: ConnState,
) -> impl Graceful<Output = Result<(), hyper::Error>> + Send
where
    J: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let head_timeout = builders.head_timeout;
    // Upstreams' interim (1xx) heads go out between hyper's writes (`crate::interim`).
    let io = Interleave::new(io, state.clone());
    let service = service_fn(move |req| {
        deadline.clear();
        let state = state.clone();
        let deadline = deadline.clone();
        async move {
            if let Some(refusal) = gate::refusal_of(req.headers()) {
                let mut resp = local_response(refusal.status(), refusal.cause());
                resp.headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
                return Ok(resp.map(|body| Served {
                    body,
                    next_head: None,
                }));
            }
            let req = req.map(Received::Http1);
            let resp = crate::forward::handle(state, req).await;
            // A switched protocol is a tunnel now: no more request heads.
            let next_head = (resp.status() != StatusCode::SWITCHING_PROTOCOLS)
                .then_some((deadline, head_timeout));
            Ok::<_, Infallible>(resp.map(|body| Served { body, next_head }))
        }
    });
    builders
        .h1
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades()
}

/// A response body as hyper sees it on an HTTP/1 connection. hyper drops it when the response
/// has been written (or the connection failed): from then on the connection waits for its next
/// request head, and the header-read deadline runs.
struct Served {
    body: ResponseBody,
    next_head: Option<(Deadline, Duration)>,
}

impl Body for Served {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some((deadline, limit)) = &self.next_head {
            deadline.set(Instant::now(), *limit);
        }
    }
}

/// Binds a listener; the error names the address.
pub async fn bind(address: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn sniffed(first: &[&[u8]]) -> Option<Protocol> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let parts: Vec<Vec<u8>> = first.iter().map(|p| p.to_vec()).collect();
        let client = tokio::spawn(async move {
            let mut tcp = TcpStream::connect(addr).await.expect("connect");
            for part in parts {
                tcp.write_all(&part).await.expect("write");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
        let (tcp, _) = listener.accept().await.expect("accept");
        let protocol = sniff(&tcp, Duration::from_millis(150)).await;
        client.abort();
        protocol
    }

    #[tokio::test]
    async fn sniff_tells_http1_from_the_h2_preface() {
        assert_eq!(
            sniffed(&[b"GET / HTTP/1.1\r\n"]).await,
            Some(Protocol::Http1)
        );
        assert_eq!(sniffed(&[H2_PREFACE]).await, Some(Protocol::Http2));
        // The preface in two writes, and a method that merely starts like it.
        assert_eq!(
            sniffed(&[&H2_PREFACE[..5], &H2_PREFACE[5..]]).await,
            Some(Protocol::Http2)
        );
        assert_eq!(
            sniffed(&[b"PRIX / HTTP/1.1\r\n"]).await,
            Some(Protocol::Http1)
        );
        // The preface begun and broken: HTTP/2 begun, not an HTTP/1 request, so no answer.
        assert_eq!(sniffed(&[b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"]).await, None);
        assert_eq!(sniffed(&[b"PRI * HTTP/2.0\n"]).await, None);
        assert_eq!(
            sniffed(&[b"PRI * HTTP/2.1\r\n\r\n"]).await,
            Some(Protocol::Http1)
        );
        // Silent past the limit.
        assert_eq!(sniffed(&[]).await, None);
    }
}
