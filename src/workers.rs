//! The worker threads: one single-threaded tokio runtime each, as nginx runs one process and
//! HAProxy one thread per core. Every worker accepts from each listening socket itself and
//! serves what it accepted to the end on its own thread, with its own upstream connections
//! (`weir_proxy::worker`): no task moves between threads, and a connection's wake-ups stay on
//! the thread whose reactor watches it. (A single work-stealing runtime, as before, moved
//! connections' tasks between threads and woke them across threads.)
//!
//! Worker 0 is the main thread's runtime: it also runs the control plane, the admin listener
//! and the upkeep tasks. Workers 1.. run on threads of their own until the process ends.

use std::future::Future;
use std::num::NonZeroUsize;

use anyhow::Context;
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The main thread's runtime (worker 0) and the other workers' handles.
pub struct Workers {
    /// Workers 1..: their runtimes' handles, to start tasks on them.
    others: Vec<Handle>,
    /// Dropped when `Workers` is: each worker thread then leaves its runtime.
    _stops: Vec<oneshot::Sender<()>>,
}

/// One worker per core the process may run on, unless `--workers` says otherwise.
pub fn count(asked: Option<usize>) -> usize {
    asked
        .or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .map(NonZeroUsize::get)
        })
        .unwrap_or(1)
        .max(1)
}

/// The main thread's runtime, worker 0's.
pub fn main_runtime() -> std::io::Result<Runtime> {
    Builder::new_current_thread().enable_all().build()
}

impl Workers {
    /// Starts workers 1..`count` (worker 0 is the caller's thread, on `main_runtime`).
    pub fn start(count: usize) -> anyhow::Result<Workers> {
        let mut others = Vec::new();
        let mut stops = Vec::new();
        for index in 1..count {
            let runtime = Builder::new_current_thread()
                .enable_all()
                .build()
                .with_context(|| format!("cannot start the runtime of worker {index}"))?;
            others.push(runtime.handle().clone());
            let (stop, stopped) = oneshot::channel::<()>();
            stops.push(stop);
            std::thread::Builder::new()
                .name(format!("weir-worker-{index}"))
                .spawn(move || {
                    weir_proxy::worker::enter(index);
                    // Whatever ends it (the sender dropped or used), the worker stops.
                    let _ = runtime.block_on(stopped);
                })
                .with_context(|| format!("cannot start the thread of worker {index}"))?;
        }
        Ok(Workers {
            others,
            _stops: stops,
        })
    }

    /// How many workers serve, worker 0 included.
    pub fn count(&self) -> usize {
        self.others.len() + 1
    }

    /// For each worker, calls `make(index)` in that worker's runtime context (so that sockets
    /// it registers are watched by the worker's own reactor) and spawns the future it returns
    /// on the worker. Worker 0 is the caller's: call it from the main runtime.
    pub fn spawn_on_each<F, Fut>(&self, make: F) -> anyhow::Result<Vec<JoinHandle<()>>>
    where
        F: Fn(usize) -> anyhow::Result<Fut>,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut tasks = vec![tokio::spawn(make(0)?)];
        for (i, handle) in self.others.iter().enumerate() {
            let _context = handle.enter();
            tasks.push(handle.spawn(make(i + 1)?));
        }
        Ok(tasks)
    }
}
