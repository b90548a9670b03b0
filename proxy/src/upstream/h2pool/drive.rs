//! One pool connection's task: it drives the h2 connection (reads frames, writes what streams
//! queued) and, while streams are open, checks that the server still answers: after a silence
//! of `interval` a PING, and no PONG within `timeout` ends the connection, failing its streams
//! at once instead of at their response timeout. Idle connections are not probed: gRPC servers
//! count PINGs without calls as abuse, and an idle connection costs nothing when dead.

use std::future::poll_fn;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, MissedTickBehavior};

use super::Signals;

/// The PING schedule (`Http2PoolSpec::keepalive_interval`, `keepalive_timeout`).
#[derive(Clone, Copy)]
pub struct KeepAlive {
    pub interval: Duration,
    pub timeout: Duration,
}

/// Runs the connection until it ends; then the pool sees it closed.
pub async fn drive<T>(
    mut conn: h2::client::Connection<T, Bytes>,
    keepalive: Option<KeepAlive>,
    signals: Arc<Signals>,
    in_flight: Arc<AtomicU32>,
) where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let ping = keepalive.zip(conn.ping_pong());
    let ended = match ping {
        None => conn.await,
        Some((keepalive, ping)) => probed(&mut conn, keepalive, ping, &signals, &in_flight).await,
    };
    signals.close();
    if let Err(err) = ended {
        tracing::debug!(error = %err, "upstream h2 connection ended");
    }
}

async fn probed<T>(
    conn: &mut h2::client::Connection<T, Bytes>,
    keepalive: KeepAlive,
    mut ping: h2::PingPong,
    signals: &Signals,
    in_flight: &AtomicU32,
) -> Result<(), h2::Error>
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let mut tick =
        tokio::time::interval_at(Instant::now() + keepalive.interval, keepalive.interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut reads_seen = signals.reads();
    // When the PING in flight must have been answered.
    let mut answer_by: Option<Instant> = None;
    loop {
        let deadline = answer_by;
        tokio::select! {
            ended = &mut *conn => return ended,
            _ = tick.tick(), if answer_by.is_none() => {
                let reads = signals.reads();
                let silent = reads == reads_seen;
                reads_seen = reads;
                if silent && in_flight.load(Ordering::Relaxed) > 0 {
                    ping.send_ping(h2::Ping::opaque())?;
                    answer_by = Some(Instant::now() + keepalive.timeout);
                }
            }
            pong = poll_fn(|cx| ping.poll_pong(cx)), if answer_by.is_some() => {
                pong?;
                answer_by = None;
                reads_seen = signals.reads();
            }
            _ = sleep_until(deadline), if deadline.is_some() => {
                tracing::debug!(
                    timeout = ?keepalive.timeout,
                    "upstream h2 connection did not answer PING: closing it"
                );
                // Dropping the connection fails its streams now.
                return Ok(());
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
