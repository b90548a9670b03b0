//! Idle plaintext client connections parked outside the runtime.
//!
//! A keep-alive connection that has waited a while for its next request is mostly a task (384
//! bytes), its registration with tokio's reactor (256) and a timer (112) waiting for bytes
//! that may come in minutes, or never. Parked, it is its socket in one epoll set per listener
//! and an entry in a slab (about 100 bytes with what its owner keeps): one task — the attendant
//! — watches every parked socket, and hands one back (`resume`) when bytes come. A client that
//! closes, or stays silent past its deadline, is closed here; shutdown closes them all (they
//! are idle: nothing read, nothing lost).
//!
//! Parking and resuming cost a few system calls and a task each, so only connections idle for
//! a while are parked (the HTTP/1 engine decides when); a busy keep-alive connection never is.

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Registry, Token};
use prometheus_client::metrics::gauge::Gauge;
use slab::Slab;
use tokio::io::unix::AsyncFd;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Deadlines of parked connections are checked at most this often: one pass over the slab
/// (about 2 ns a parked connection) closes every connection due, so a connection is closed at
/// most this long after its deadline. Short, so that connections that went idle together
/// (thousands, after a burst) are closed spread out as they went idle, not in a few large
/// batches their clients then see all at once.
const SWEEP_EVERY: Duration = Duration::from_millis(10);

/// Up to this many expired connections are closed in the attendant's own task; more, off the
/// runtime's threads (each close is a system call and the kernel's FIN).
const CLOSE_INLINE: usize = 64;

/// How many readiness events one wait collects.
const EVENTS: usize = 256;

/// The parked connections of one listener. `T` is what the owner keeps with each socket to
/// serve it again.
pub struct Parking<T> {
    lot: Mutex<Lot<T>>,
    /// A second handle to the attendant's epoll set: parking registers from any thread.
    registry: Registry,
    /// Wakes the attendant when a connection is parked in an empty lot (its deadline is then
    /// the next one to watch).
    parked_first: Notify,
    /// Counts the connections parked (with every other listener's).
    gauge: Gauge,
}

struct Lot<T> {
    spots: Slab<Spot<T>>,
    /// The attendant has stopped: nothing more is parked.
    closed: bool,
}

struct Spot<T> {
    socket: MioStream,
    /// Closed if nothing came by then.
    due: Instant,
    value: T,
}

/// The half of a `Parking` that waits for parked sockets: run by `attend`.
pub struct Attendant {
    poll: Poll,
}

impl<T: Send + 'static> Parking<T> {
    /// A lot and its attendant, counting what is parked in `gauge`; fails only if the system
    /// will not make an epoll set.
    pub fn new(gauge: Gauge) -> io::Result<(Arc<Parking<T>>, Attendant)> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let parking = Arc::new(Parking {
            lot: Mutex::new(Lot {
                spots: Slab::new(),
                closed: false,
            }),
            registry,
            parked_first: Notify::new(),
            gauge,
        });
        Ok((parking, Attendant { poll }))
    }

    /// Parks an idle connection until bytes come, it closes, or `due`. `socket` must be in
    /// non-blocking mode (tokio's `into_std` leaves it so). Closed at once if the attendant
    /// has stopped or the socket cannot be watched.
    pub fn park(&self, socket: std::net::TcpStream, due: Instant, value: T) {
        let mut socket = MioStream::from_std(socket);
        let mut lot = self.lot();
        if lot.closed {
            return;
        }
        let entry = lot.spots.vacant_entry();
        let token = Token(entry.key());
        // Edge-triggered: bytes that came before this are reported by the next wait all the same.
        if let Err(err) = self
            .registry
            .register(&mut socket, token, Interest::READABLE)
        {
            tracing::debug!(error = %err, "cannot park an idle client connection: closed");
            return;
        }
        entry.insert(Spot { socket, due, value });
        self.gauge.inc();
        let first = lot.spots.len() == 1;
        drop(lot);
        if first {
            self.parked_first.notify_one();
        }
    }

    /// How many connections are parked.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lot().spots.len()
    }

    fn lot(&self) -> MutexGuard<'_, Lot<T>> {
        self.lot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A parked socket's news: bytes (handed back, no longer watched), its end (closed), or
    /// nothing after all (left parked).
    fn woken(&self, key: usize) -> Option<(MioStream, T)> {
        let mut lot = self.lot();
        let spot = lot.spots.get(key)?;
        // One byte's peek tells bytes from a close without taking them.
        let bytes = match spot.socket.peek(&mut [0u8; 1]) {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return None,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => return None,
            Ok(0) | Err(_) => false,
            Ok(_) => true,
        };
        let mut spot = lot.spots.remove(key);
        self.gauge.dec();
        self.tidy(&mut lot);
        if !bytes {
            // Dropped: closing the socket takes it out of the epoll set too.
            return None;
        }
        let _ = self.registry.deregister(&mut spot.socket);
        Some((spot.socket, spot.value))
    }

    /// Takes out every connection due by `now`, for the caller to close; and the earliest
    /// deadline left, if any.
    fn sweep(&self, now: Instant) -> (Vec<Spot<T>>, Option<Instant>) {
        let mut lot = self.lot();
        let due: Vec<usize> = (lot.spots.iter())
            .filter(|(_, spot)| spot.due <= now)
            .map(|(key, _)| key)
            .collect();
        let expired: Vec<Spot<T>> = due.into_iter().map(|key| lot.spots.remove(key)).collect();
        self.gauge.dec_by(count(expired.len()));
        self.tidy(&mut lot);
        (expired, earliest(&lot))
    }

    /// The slab keeps its slots once the many clients that needed them have left: frees them,
    /// moving the parked ones down (each watched under its new key). Rarely: each time leaves
    /// room for four times as many as are left.
    fn tidy(&self, lot: &mut Lot<T>) {
        if lot.spots.capacity() > 4 * lot.spots.len() + 1024 {
            let registry = &self.registry;
            lot.spots.compact(|spot, _, to| {
                registry
                    .reregister(&mut spot.socket, Token(to), Interest::READABLE)
                    .is_ok()
            });
        }
    }

    /// The earliest deadline, if any connection is parked.
    fn next_due(&self) -> Option<Instant> {
        earliest(&self.lot())
    }

    /// Stops parking and closes every parked connection.
    fn close_all(&self) {
        let mut lot = self.lot();
        lot.closed = true;
        self.gauge.dec_by(count(lot.spots.len()));
        lot.spots.clear();
    }
}

fn earliest<T>(lot: &Lot<T>) -> Option<Instant> {
    lot.spots.iter().map(|(_, spot)| spot.due).min()
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Watches the lot's parked sockets until `stop`: `resume` gets each whose bytes came (back
/// in tokio's reactor, in this task's runtime). Then every connection still parked is closed.
pub async fn attend<T, R>(
    parking: Arc<Parking<T>>,
    attendant: Attendant,
    mut resume: R,
    stop: impl Future<Output = ()>,
) where
    T: Send + 'static,
    R: FnMut(TcpStream, T),
{
    // SAFETY: `Poll` owns its epoll descriptor (closed only when the `Poll` is dropped) and
    // `as_raw_fd` returns that one for its whole life; the `AsyncFd` owns the `Poll`.
    let registered =
        unsafe { AsyncFd::register_with_interest(attendant.poll, tokio::io::Interest::READABLE) };
    let mut ready = match registered {
        Ok(ready) => ready,
        Err(err) => {
            tracing::warn!(error = %err, "cannot watch parked connections: none will be parked");
            parking.close_all();
            return;
        }
    };
    tokio::pin!(stop);
    let mut events = Events::with_capacity(EVENTS);
    let mut next_sweep: Option<Instant> = None;
    loop {
        let sweep_at = next_sweep.map(tokio::time::Instant::from_std);
        tokio::select! {
            biased;
            () = &mut stop => break,
            guard = ready.readable_mut() => {
                let mut guard = match guard {
                    Ok(guard) => guard,
                    Err(err) => {
                        tracing::warn!(error = %err, "parked connections unwatchable: closed");
                        break;
                    }
                };
                loop {
                    if let Err(err) = guard.get_inner_mut().poll(&mut events, Some(Duration::ZERO)) {
                        if err.kind() != io::ErrorKind::Interrupted {
                            tracing::warn!(error = %err, "waiting on parked connections failed");
                        }
                        break;
                    }
                    if events.is_empty() {
                        guard.clear_ready();
                        break;
                    }
                    for event in events.iter() {
                        if let Some((socket, value)) = parking.woken(event.token().0) {
                            match TcpStream::from_std(socket.into()) {
                                Ok(socket) => resume(socket, value),
                                Err(err) => tracing::debug!(
                                    error = %err,
                                    "cannot resume a parked client connection: closed"
                                ),
                            }
                        }
                    }
                }
            }
            () = sleep_until(sweep_at), if sweep_at.is_some() => {
                let now = Instant::now();
                let (expired, next) = parking.sweep(now);
                next_sweep = next.map(|due| due.max(now + SWEEP_EVERY));
                if expired.len() > CLOSE_INLINE {
                    tokio::task::spawn_blocking(move || drop(expired));
                } else {
                    drop(expired);
                }
                continue;
            }
            () = parking.parked_first.notified() => {}
        }
        // Something was parked or resumed: the next deadline to watch may have changed. Only
        // when none is watched yet: a watched one is never later than a new one by more than
        // the sweep's own slack, and the sweep finds the rest.
        if next_sweep.is_none() {
            next_sweep = parking.next_due();
        }
    }
    parking.close_all();
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    /// A connected pair: the client's end, and the server's as a non-blocking std socket.
    async fn pair(listener: &TcpListener) -> (TcpStream, std::net::TcpStream) {
        let addr = listener.local_addr().expect("addr");
        let client = TcpStream::connect(addr).await.expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        (client, server.into_std().expect("std"))
    }

    struct Attended {
        parking: Arc<Parking<u32>>,
        gauge: Gauge,
        resumed: mpsc::UnboundedReceiver<(TcpStream, u32)>,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        task: tokio::task::JoinHandle<()>,
    }

    fn attended() -> Attended {
        let gauge = Gauge::default();
        let (parking, attendant) = Parking::<u32>::new(gauge.clone()).expect("epoll");
        let (tx, resumed) = mpsc::unbounded_channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(attend(
            parking.clone(),
            attendant,
            move |socket, value| {
                let _ = tx.send((socket, value));
            },
            async move {
                let _ = stopped.await;
            },
        ));
        Attended {
            parking,
            gauge,
            resumed,
            stop: Some(stop),
            task,
        }
    }

    /// Reads until the peer closes; fails if it takes more than `limit`.
    async fn closed_within(client: &mut TcpStream, limit: Duration) {
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(limit, client.read(&mut buf))
            .await
            .expect("closed in time");
        assert!(matches!(read, Ok(0) | Err(_)), "closed, not {read:?}");
    }

    #[tokio::test]
    async fn bytes_resume_a_parked_connection_with_its_value_and_bytes_unread() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut a = attended();
        let (mut client, server) = pair(&listener).await;
        a.parking
            .park(server, Instant::now() + Duration::from_secs(30), 7);
        assert_eq!(a.parking.len(), 1);
        assert_eq!(a.gauge.get(), 1, "counted in the gauge");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(a.resumed.try_recv().is_err(), "nothing came yet");

        client
            .write_all(b"GET / HTTP/1.1\r\n")
            .await
            .expect("write");
        let (mut socket, value) = tokio::time::timeout(Duration::from_secs(5), a.resumed.recv())
            .await
            .expect("resumed in time")
            .expect("resumed");
        assert_eq!(value, 7);
        assert_eq!(a.parking.len(), 0);
        assert_eq!(a.gauge.get(), 0, "counted out when resumed");
        // The bytes are still there for whoever serves it, and it works as a tokio socket.
        let mut buf = [0u8; 16];
        socket.read_exact(&mut buf).await.expect("read");
        assert_eq!(&buf, b"GET / HTTP/1.1\r\n");
        socket.write_all(b"ok").await.expect("write");
        let mut got = [0u8; 2];
        client.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"ok");
    }

    #[tokio::test]
    async fn bytes_sent_before_parking_resume_it_too() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut a = attended();
        let (mut client, server) = pair(&listener).await;
        client.write_all(b"x").await.expect("write");
        tokio::time::sleep(Duration::from_millis(20)).await;
        a.parking
            .park(server, Instant::now() + Duration::from_secs(30), 1);
        let resumed = tokio::time::timeout(Duration::from_secs(5), a.resumed.recv())
            .await
            .expect("resumed in time");
        assert_eq!(resumed.map(|(_, v)| v), Some(1));
    }

    #[tokio::test]
    async fn a_client_that_closes_is_closed_and_not_resumed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut a = attended();
        let (client, server) = pair(&listener).await;
        a.parking
            .park(server, Instant::now() + Duration::from_secs(30), 1);
        drop(client);
        let waited = Instant::now();
        while a.parking.len() > 0 && waited.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(a.parking.len(), 0, "closed once the client closed");
        assert_eq!(a.gauge.get(), 0);
        assert!(a.resumed.try_recv().is_err(), "a close is not resumed");
    }

    #[tokio::test]
    async fn a_silent_connection_is_closed_at_its_deadline_not_before() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let a = attended();
        let (mut early, s1) = pair(&listener).await;
        let (mut late, s2) = pair(&listener).await;
        let parked = Instant::now();
        a.parking.park(s1, parked + Duration::from_millis(200), 1);
        a.parking.park(s2, parked + Duration::from_millis(600), 2);
        closed_within(&mut early, Duration::from_secs(5)).await;
        let took = parked.elapsed();
        assert!(
            took >= Duration::from_millis(200)
                && took < Duration::from_millis(200) + Duration::from_secs(1),
            "closed at its deadline ({took:?})"
        );
        assert_eq!(a.parking.len(), 1, "the later one is still parked");
        assert_eq!(a.gauge.get(), 1);
        closed_within(&mut late, Duration::from_secs(5)).await;
        assert!(parked.elapsed() >= Duration::from_millis(600));
        assert_eq!(a.parking.len(), 0);
    }

    #[tokio::test]
    async fn stopping_closes_every_parked_connection_and_parks_no_more() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut a = attended();
        let (mut c1, s1) = pair(&listener).await;
        let (mut c2, s2) = pair(&listener).await;
        let due = Instant::now() + Duration::from_secs(30);
        a.parking.park(s1, due, 1);
        a.parking.park(s2, due, 2);
        let _ = a.stop.take().map(|stop| stop.send(()));
        tokio::time::timeout(Duration::from_secs(5), &mut a.task)
            .await
            .expect("attendant stopped")
            .expect("task");
        closed_within(&mut c1, Duration::from_secs(5)).await;
        closed_within(&mut c2, Duration::from_secs(5)).await;
        assert_eq!(a.gauge.get(), 0);
        let (mut c3, s3) = pair(&listener).await;
        a.parking.park(s3, due, 3);
        assert_eq!(a.parking.len(), 0, "nothing parked after the stop");
        closed_within(&mut c3, Duration::from_secs(5)).await;
    }
}
