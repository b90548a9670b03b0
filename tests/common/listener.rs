//! A data plane served in the test's own process, on a real listener on 127.0.0.1: for tests
//! that look inside it (its table, its pools) while clients talk to it over sockets.

use std::net::SocketAddr;
use std::sync::Arc;

use weir_proxy::listen::spec::LimitsSpec;
use weir_proxy::listen::{bind, serve, ConnectionLimit, Shutdown};
use weir_proxy::DataPlane;

pub struct Listening {
    pub addr: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<()>,
}

/// Serves `plane` with default limits and at most `max_connections` clients.
pub async fn listen(plane: &Arc<DataPlane>, max_connections: usize) -> Listening {
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, shutdown) = Shutdown::new();
    let server = tokio::spawn(serve(
        listener,
        "test".into(),
        None,
        plane.proxy.clone(),
        LimitsSpec::default(),
        ConnectionLimit::new(max_connections),
        shutdown,
    ));
    Listening { addr, stop, server }
}

impl Listening {
    /// Stops accepting, drains, and waits for the listener to finish.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        self.server.await.unwrap();
    }
}
