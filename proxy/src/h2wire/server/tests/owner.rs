//! The owner's loop, cut down to what the interop test needs: one socket, written and read in
//! turn, and a small application: `/echo` and `/grpc` send the request body back (gRPC with
//! trailers), `/big` 3 MiB, anything else a line.

use std::collections::HashMap;
use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::h2wire::server::{Config, Event, ServerConn};

pub const MIB: usize = 1 << 20;

/// Octets that say where they are: a body whose every byte can be checked.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

/// One request being served.
#[derive(Default)]
struct Job {
    path: String,
    tag: Vec<u8>,
    body: Vec<u8>,
    received: bool,
    responded: bool,
    content: Vec<u8>,
    sent: usize,
}

enum Io {
    Wrote(usize),
    Read(usize),
}

/// Serves one connection until the client closes it; returns how many requests completed.
/// At most `max_turns` turns of the loop.
pub async fn serve(io: TcpStream, max_turns: usize) -> io::Result<usize> {
    let mut owner = Owner {
        conn: ServerConn::new(Config::default()),
        io,
        buf: Vec::new(),
        jobs: HashMap::new(),
        done: 0,
    };
    for _ in 0..max_turns {
        owner.send();
        match owner.io_step().await? {
            Io::Wrote(n) => {
                owner.conn.output().drain(..n);
            }
            Io::Read(0) => return Ok(owner.done),
            Io::Read(_) => owner.receive(),
        }
    }
    Err(io::Error::other("too many turns"))
}

struct Owner {
    conn: ServerConn,
    io: TcpStream,
    buf: Vec<u8>,
    jobs: HashMap<u32, Job>,
    done: usize,
}

impl Owner {
    fn receive(&mut self) {
        let mut events = Vec::new();
        let used = self.conn.receive(&self.buf, &mut events).unwrap();
        for event in events {
            match event {
                Event::Request {
                    id,
                    head,
                    fields,
                    end_stream,
                } => {
                    let job = Job {
                        path: String::from_utf8(head.path().unwrap().to_vec()).unwrap(),
                        tag: fields.get(b"x-tag").unwrap_or_default().to_vec(),
                        received: end_stream,
                        ..Job::default()
                    };
                    self.jobs.insert(id, job);
                }
                Event::Data {
                    id,
                    data,
                    end_stream,
                } => {
                    let job = self.jobs.get_mut(&id).unwrap();
                    job.body.extend_from_slice(&self.buf[data.clone()]);
                    job.received |= end_stream;
                    self.conn.release(id, data.len());
                }
                Event::Trailers { id, .. } => self.jobs.get_mut(&id).unwrap().received = true,
                Event::Settings | Event::Capacity { .. } | Event::PingAck(_) => {}
                Event::GoAway { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        self.buf.drain(..used);
    }

    /// Answers what can be answered and sends what the windows allow.
    fn send(&mut self) {
        let mut finished = Vec::new();
        for (&id, job) in self.jobs.iter_mut() {
            if !job.received {
                continue;
            }
            let grpc = job.path == "/grpc";
            if !job.responded {
                job.content = match job.path.as_str() {
                    "/echo" | "/grpc" => std::mem::take(&mut job.body),
                    "/big" => pattern(3 * MIB, 0x5a),
                    _ => format!("hello {}", job.path).into_bytes(),
                };
                let length = job.content.len().to_string();
                let mut fields: Vec<(&[u8], &[u8])> = vec![(b"x-tag", &job.tag)];
                if grpc {
                    fields.push((b"content-type", b"application/grpc"));
                } else {
                    fields.push((b"content-length", length.as_bytes()));
                }
                assert!(self.conn.respond(id, 200, fields, false));
                job.responded = true;
            }
            let rest = &job.content[job.sent..];
            if rest.is_empty() && job.sent > 0 && !grpc {
                continue;
            }
            job.sent += self.conn.send_data(id, rest, !grpc);
            if job.sent == job.content.len() {
                if grpc {
                    let status: (&[u8], &[u8]) = (b"grpc-status", b"0");
                    let message: (&[u8], &[u8]) = (b"grpc-message", b"done");
                    assert!(self.conn.send_trailers(id, [status, message]));
                }
                finished.push(id);
            }
        }
        for id in finished {
            self.jobs.remove(&id);
            self.done += 1;
        }
    }

    async fn io_step(&mut self) -> io::Result<Io> {
        self.buf.reserve(64 << 10);
        let (mut rd, mut wr) = self.io.split();
        let out = self.conn.output().as_slice();
        if out.is_empty() {
            return rd.read_buf(&mut self.buf).await.map(Io::Read);
        }
        tokio::select! {
            wrote = wr.write(out) => wrote.map(Io::Wrote),
            read = rd.read_buf(&mut self.buf) => read.map(Io::Read),
        }
    }
}
