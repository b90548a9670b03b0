//! The owner's loop, cut down to what the interop tests need: one socket, written and read
//! in turn, its events handed to the test.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::h2wire::client::{ClientConn, Config, Event};

/// The owner's loop, cut down: the socket, the unread bytes, the events.
pub struct Driver {
    pub conn: ClientConn,
    pub io: TcpStream,
    pub buf: Vec<u8>,
    events: Vec<Event>,
}

enum Io {
    Wrote(usize),
    Read(usize),
}

impl Driver {
    pub async fn connect(addr: SocketAddr) -> Driver {
        let io = TcpStream::connect(addr).await.unwrap();
        Driver {
            conn: ClientConn::new(Config::default()),
            io,
            buf: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Writes some output or reads some input, whichever is ready first, and hands each event
    /// of what was read to `on` with the buffer its DATA ranges index. False at the end.
    pub async fn turn(&mut self, mut on: impl FnMut(&mut ClientConn, Event, &[u8])) -> bool {
        match self.io_step().await.unwrap() {
            Io::Wrote(n) => {
                self.conn.output().drain(..n);
                true
            }
            Io::Read(0) => false,
            Io::Read(_) => {
                let used = self.conn.receive(&self.buf, &mut self.events).unwrap();
                for event in self.events.drain(..) {
                    on(&mut self.conn, event, &self.buf);
                }
                self.buf.drain(..used);
                true
            }
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

    /// Turns until the server's SETTINGS came; returns its MAX_CONCURRENT_STREAMS.
    pub async fn settle(&mut self) -> Option<u32> {
        let mut max = None;
        while !self.conn.is_settled() {
            assert!(
                self.turn(|_, e, _| {
                    if let Event::Settings {
                        max_concurrent_streams,
                    } = e
                    {
                        max = max_concurrent_streams;
                    }
                })
                .await
            );
        }
        max
    }
}
