//! HTTP/2 (h2c and ALPN over TLS), TLS on both legs, gRPC trailers, and Upgrade pass-through.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::backend::{self, Behaviour};
use common::client::{collect, h2c, h2c_watched};
use common::tls::TestPki;
use common::weir::{sample, Weir};

fn one_route(backend: &str, listener_extra: &str, backend_extra: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"{listener_extra}}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{backend}\"]{backend_extra}}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_with_prior_knowledge_is_proxied_to_an_http1_upstream() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&one_route(&up.addr.to_string(), "", ""));
    let mut h2 = h2c(weir.addr).await;
    for _ in 0..3 {
        let req = Request::get("http://test.local/h2")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let r = collect(h2.send_request(req).await.unwrap()).await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.headers.get("x-backend").unwrap(), "stable");
        let echo = r.json();
        assert_eq!(
            echo["version"], "HTTP/1.1",
            "the upstream leg speaks HTTP/1.1"
        );
        assert_eq!(
            echo["headers"]["host"][0], "test.local",
            ":authority became Host"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_bodies_larger_than_the_windows_stream_both_ways() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&one_route(&up.addr.to_string(), "", ""));
    let mut h2 = h2c(weir.addr).await;
    // 3 MiB each way: three times weir's stream and connection windows (1 MiB), so neither
    // leg gets through without WINDOW_UPDATEs.
    let size = 3 << 20;
    let req = Request::post("http://test.local/upload")
        .header("x-body-bytes", size.to_string())
        .body(Full::new(Bytes::from(vec![b'u'; size])))
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(20), async {
        let resp = h2.send_request(req).await.unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, body)
    })
    .await
    .expect("3 MiB each way within 20 s");
    assert_eq!(resp.0, 200);
    assert_eq!(resp.1.len(), size, "the whole download reached the client");
    assert!(resp.1.iter().all(|&b| b == b'z'));
    assert_eq!(
        up.body_bytes.load(std::sync::atomic::Ordering::SeqCst),
        size as u64,
        "the whole upload reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_h2_client_connection_is_closed_but_not_in_the_middle_of_a_request() {
    let up = backend::start("stable", Behaviour::default()).await;
    let config = one_route(&up.addr.to_string(), "", "") + "limits: {idle_timeout: 1s}\n";
    let weir = Weir::start(&config);
    let (mut h2, conn) = h2c_watched(weir.addr).await;
    // A request that takes twice the idle timeout: the stream keeps the connection busy.
    let req = Request::get("http://test.local/slow")
        .header("x-delay-ms", "2000")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = h2
        .send_request(req)
        .await
        .expect("answered, not cut by the idle timeout");
    assert_eq!(resp.status(), 200);
    collect(resp).await.unwrap();
    assert!(!conn.is_finished(), "open while a request was in flight");
    // Then idle: GOAWAY and the connection ends (between 1 and 1.5 idle timeouts).
    let ended = tokio::time::timeout(Duration::from_secs(5), conn).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "an idle connection is closed cleanly: {ended:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_client_reset_drops_its_request_and_the_connection_serves_on() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&one_route(&up.addr.to_string(), "", ""));
    let mut h2 = h2c(weir.addr).await;
    let slow = Request::get("http://test.local/slow")
        .header("x-delay-ms", "2500")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let abandoned = tokio::spawn(h2.send_request(slow));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Dropping the response future resets the stream (RST_STREAM CANCEL).
    abandoned.abort();
    let req = Request::get("http://test.local/next")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(2), h2.send_request(req))
        .await
        .expect("the next stream is answered at once")
        .unwrap();
    assert_eq!(r.status(), 200);
    collect(r).await.unwrap();
    // Past the slow answer's time: had weir kept the reset request, it would be recorded by now.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let text = weir.metrics().await;
    assert_eq!(
        sample(
            &text,
            "weir_requests_total",
            &[("backend", "stable"), ("class", "2xx")]
        ),
        1.0,
        "only the request the client kept was carried to its end: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_an_h2_stream_in_flight_finish_then_closes_the_connection() {
    let up = backend::start("stable", Behaviour::default()).await;
    let mut weir = Weir::start(&one_route(&up.addr.to_string(), "", ""));
    let (mut h2, conn) = h2c_watched(weir.addr).await;
    let slow = Request::get("http://test.local/slow")
        .header("x-delay-ms", "1500")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let in_flight = tokio::spawn(h2.send_request(slow));
    tokio::time::sleep(Duration::from_millis(300)).await;
    weir.signal("TERM");
    let r = in_flight
        .await
        .unwrap()
        .expect("the stream in flight is answered");
    assert_eq!(r.status(), 200);
    collect(r).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), conn).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "GOAWAY, then the connection closes cleanly: {ended:?}"
    );
    let status = tokio::task::spawn_blocking(move || weir.wait_exit(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(
        status.is_some_and(|s| s.success()),
        "weir exits cleanly after draining: {status:?}"
    );
}

/// weir terminating TLS with `pki`'s certificate (its files in a new directory named after
/// `name`) in front of `backend`.
fn tls_weir(pki: &TestPki, name: &str, backend: &str) -> Weir {
    let dir = common::temp_dir(name);
    let (_, cert, key) = pki.write(&dir);
    let tls = format!(
        ", tls: {{cert: \"{}\", key: \"{}\"}}",
        cert.display(),
        key.display()
    );
    std::fs::write(dir.join("weir.yaml"), one_route(backend, &tls, "")).unwrap();
    Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[])
}

async fn tls_client(
    addr: std::net::SocketAddr,
    pki: &TestPki,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let connector = tokio_rustls::TlsConnector::from(pki.client_config(&[alpn]));
    let tcp = TcpStream::connect(addr).await.unwrap();
    connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_termination_negotiates_h2_and_http1_by_alpn() {
    let up = backend::start("stable", Behaviour::default()).await;
    let pki = TestPki::new();
    let weir = tls_weir(&pki, "tls", &up.addr.to_string());

    // ALPN h2.
    let stream = tls_client(weir.addr, &pki, b"h2").await;
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut h2, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get("https://localhost/secure")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let r = collect(h2.send_request(req).await.unwrap()).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["headers"]["x-forwarded-proto"][0], "https");

    // ALPN http/1.1.
    let stream = tls_client(weir.addr, &pki, b"http/1.1").await;
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (mut h1, conn) = http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let req = Request::get("/secure")
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let r = collect(h1.send_request(req).await.unwrap()).await.unwrap();
    assert_eq!(r.status, 200);

    // A client that speaks only TLS 1.2 is served (rustls has no code for anything older).
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(pki.ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let tls12_only = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls12_only));
    let tcp = TcpStream::connect(weir.addr).await.unwrap();
    let stream = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(
        stream.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_are_reloaded_with_the_config() {
    let up = backend::start("stable", Behaviour::default()).await;
    let (old, new) = (TestPki::new(), TestPki::new());
    let weir = tls_weir(&old, "tls-reload", &up.addr.to_string());
    let _ = tls_client(weir.addr, &old, b"http/1.1").await;

    // Rotate the files in place, then ask for a reload.
    new.write(&weir.dir);
    weir.signal("HUP");
    let connector = tokio_rustls::TlsConnector::from(new.client_config(&[b"http/1.1"]));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let tcp = TcpStream::connect(weir.addr).await.unwrap();
        if connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "new certificate never served; log:\n{}",
            weir.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client of `pki`'s CA that speaks only `version`, with its own session cache.
fn connector_for(
    pki: &TestPki,
    version: &'static rustls::SupportedProtocolVersion,
) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(pki.ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[version])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// One request on a new TLS connection, read to its end (which also takes in the session
/// tickets the server sent after the handshake); returns how the handshake went.
async fn one_request(
    connector: &tokio_rustls::TlsConnector,
    addr: std::net::SocketAddr,
) -> rustls::HandshakeKind {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let kind = tls.get_ref().1.handshake_kind().unwrap();
    tls.write_all(b"GET /resume HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    kind
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn returning_clients_resume_their_tls_sessions_across_reloads() {
    use rustls::HandshakeKind::{Full, Resumed};
    let up = backend::start("stable", Behaviour::default()).await;
    let pki = TestPki::new();
    let weir = tls_weir(&pki, "tls-resume", &up.addr.to_string());
    let tls13 = connector_for(&pki, &rustls::version::TLS13);
    let tls12 = connector_for(&pki, &rustls::version::TLS12);
    for (name, client) in [("TLS 1.3", &tls13), ("TLS 1.2", &tls12)] {
        assert_eq!(
            one_request(client, weir.addr).await,
            Full,
            "{name}: first visit"
        );
        assert_eq!(
            one_request(client, weir.addr).await,
            Resumed,
            "{name}: second visit"
        );
    }

    // A reload (here with the same certificate) keeps what lets clients resume.
    weir.signal("HUP");
    // Logged once the new certificates are installed, not only the routing table.
    weir.wait_log("config reloaded").await;
    for (name, client) in [("TLS 1.3", &tls13), ("TLS 1.2", &tls12)] {
        assert_eq!(
            one_request(client, weir.addr).await,
            Resumed,
            "{name}: after a reload"
        );
    }

    // A client that never came before does the full handshake.
    let stranger = connector_for(&pki, &rustls::version::TLS13);
    assert_eq!(one_request(&stranger, weir.addr).await, Full);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_the_upstream_with_a_given_ca() {
    let pki = TestPki::new();
    let up = backend::start(
        "stable",
        Behaviour {
            tls: Some(pki.server_config(&[b"http/1.1"])),
            ..Default::default()
        },
    )
    .await;
    let dir = common::temp_dir("up-tls");
    let (ca, _, _) = pki.write(&dir);
    let extra = format!(
        ", tls: {{server_name: localhost, ca: \"{}\"}}",
        ca.display()
    );
    std::fs::write(
        dir.join("weir.yaml"),
        one_route(&up.addr.to_string(), "", &extra),
    )
    .unwrap();
    let weir = Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[]);
    let mut c = common::client::H1::connect(weir.addr).await;
    for _ in 0..3 {
        let r = c.get("/", &[]).await;
        assert_eq!(
            (r.status.as_u16(), r.backend()),
            (200, "stable"),
            "{}",
            r.text()
        );
    }

    // Trusting the wrong CA: the handshake fails and is reported as such.
    let other = TestPki::new();
    std::fs::write(&ca, &other.ca_pem).unwrap();
    let generation = weir.generation().await;
    weir.write_config(&one_route(
        &up.addr.to_string(),
        "",
        &format!("{extra}, connect_timeout: 1s"),
    ));
    weir.wait_generation_above(generation).await;
    let r = common::client::H1::connect(weir.addr)
        .await
        .get("/", &[])
        .await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("TLS"), "{}", r.text());
    assert_eq!(
        sample(
            &weir.metrics().await,
            "weir_upstream_errors_total",
            &[("kind", "tls")]
        ),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_over_h2_keeps_its_trailers_and_server_faults_count_as_failures() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&one_route(&up.addr.to_string(), "", ", protocol: http2"));
    let mut h2 = h2c(weir.addr).await;
    // 13 INTERNAL and 14 UNAVAILABLE are the server's fault; 5 NOT_FOUND and 0 OK are not.
    for code in ["0", "13", "5", "14", "0"] {
        let req = Request::post("http://test.local/pkg.Service/Method")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("x-grpc-status", code)
            .body(Full::new(Bytes::from_static(b"\0\0\0\0\x02hi")))
            .unwrap();
        let resp = h2.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        let collected = resp.into_body().collect().await.unwrap();
        let trailers = collected
            .trailers()
            .cloned()
            .expect("trailers reach the client");
        assert_eq!(trailers.get("grpc-status").unwrap(), code);
        let echo: serde_json::Value = serde_json::from_slice(&collected.to_bytes()).unwrap();
        assert_eq!(echo["version"], "HTTP/2.0", "the upstream leg is HTTP/2");
        assert_eq!(echo["headers"]["te"][0], "trailers");
    }
    let text = weir.metrics().await;
    assert_eq!(
        sample(
            &text,
            "weir_requests_total",
            &[("backend", "stable"), ("class", "5xx")]
        ),
        2.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "weir_requests_total",
            &[("backend", "stable"), ("class", "2xx")]
        ),
        3.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_passes_through_and_bytes_flow_both_ways() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&one_route(&up.addr.to_string(), "", ""));
    let mut tcp = TcpStream::connect(weir.addr).await.unwrap();
    tcp.write_all(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        tokio::time::timeout(Duration::from_secs(5), tcp.read_exact(&mut byte))
            .await
            .unwrap()
            .unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: echo"), "{head}");
    for msg in [&b"ping"[..], b"second message", &[0u8, 255, 7]] {
        tcp.write_all(msg).await.unwrap();
        let mut back = vec![0u8; msg.len()];
        tokio::time::timeout(Duration::from_secs(5), tcp.read_exact(&mut back))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(back, msg);
    }
}

/// RFC 9113 §3.4: a client that has begun the preface speaks HTTP/2; a preface that does not
/// complete is a connection error, not an HTTP/1 request (it was answered with a 400 before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_http2_preface_is_closed_not_answered_as_http1() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&one_route(&up.addr.to_string(), "", ""));
    let started = std::time::Instant::now();
    let answer = common::client::raw(
        weir.addr,
        b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(answer, "", "no HTTP/1 answer to a broken preface");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "closed at once, not left to time out"
    );
    // A request with a method that merely starts like it is still HTTP/1's to answer.
    let answer = common::client::raw(
        weir.addr,
        b"PRIX / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
    assert_eq!(up.hits(), 1);
}
