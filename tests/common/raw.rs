//! A raw HTTP/1 upstream's side of the wire, for tests that script their own answers.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads the next request from `tcp` (bytes past it stay in `buf`): its head, lower-cased, and
/// its body's length on the wire — by Content-Length, or up to a chunked body's last chunk. None when the
/// connection ends first.
pub async fn read_request(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, usize)> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let chunked = head.contains("transfer-encoding: chunked");
            loop {
                let whole = if chunked {
                    buf[end + 4..]
                        .windows(5)
                        .position(|w| w == b"0\r\n\r\n")
                        .map(|at| (end + 4 + at + 5, at))
                } else {
                    (buf.len() >= end + 4 + length).then_some((end + 4 + length, length))
                };
                if let Some((taken, body)) = whole {
                    buf.drain(..taken);
                    return Some((head, body));
                }
                read_more(tcp, buf).await?;
            }
        }
        read_more(tcp, buf).await?;
    }
}

async fn read_more(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 4096];
    match tcp.read(&mut chunk).await {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Some(())
        }
    }
}
