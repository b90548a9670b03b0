//! A bounded background load: a few keep-alive clients at a steady total rate, until stopped
//! or until `limit` passes, whichever comes first.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::H1;

pub struct Load {
    stop: Arc<AtomicBool>,
    pub sent: Arc<AtomicU64>,
    /// Answers with status ≥ 500 seen by clients.
    pub failed: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    pub fn start(addr: SocketAddr, rate: u32, limit: Duration) -> Load {
        Load::start_at(addr, "/", rate, limit)
    }

    /// The same, each request for `path`.
    pub fn start_at(addr: SocketAddr, path: &'static str, rate: u32, limit: Duration) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let clients = 4;
        let deadline = Instant::now() + limit;
        let tasks = (0..clients)
            .map(|_| {
                let (stop, sent, failed) = (stop.clone(), sent.clone(), failed.clone());
                tokio::spawn(async move {
                    let mut tick = tokio::time::interval(Duration::from_secs(1) * clients / rate);
                    let mut client = H1::connect(addr).await;
                    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                        tick.tick().await;
                        match client
                            .try_send(
                                http::Request::get(path)
                                    .header("host", "t")
                                    .body(Default::default())
                                    .unwrap(),
                            )
                            .await
                        {
                            Ok(r) => {
                                sent.fetch_add(1, Ordering::SeqCst);
                                if r.status.as_u16() >= 500 {
                                    failed.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                            Err(_) => client = H1::connect(addr).await,
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            sent,
            failed,
            tasks,
        }
    }

    pub async fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.tasks {
            let _ = t.await;
        }
        (
            self.sent.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
        )
    }
}
