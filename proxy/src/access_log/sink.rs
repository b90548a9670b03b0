//! Where finished lines go: a bounded buffer per worker thread, emptied by one writer thread
//! that owns the file. A worker only ever appends to its own buffer under its own lock (taken
//! by the writer for the moment of a swap); it never waits for a write. A line that finds its
//! buffer full is dropped and counted — the request is never delayed for the log.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::Thread;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;

/// Buffers, one for each of up to this many threads (more share them, by index).
const SHARDS: usize = 16;
/// Bytes a buffer holds before lines are dropped: about 2,500 lines of 400 bytes, half a second
/// of a busy worker's log should the writer stall.
const SHARD_CAP: usize = 1 << 20;
/// A buffer past this wakes the writer before its next tick.
const WAKE_AT: usize = 64 << 10;
/// The writer empties the buffers at least this often: a quiet log is still written promptly.
const TICK: Duration = Duration::from_millis(200);

/// Where lines are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
}

#[derive(Default)]
struct Shard {
    buf: Vec<u8>,
    lines: u64,
    dropped: u64,
}

/// Counted by the writer as it empties the buffers: the data path touches no shared counter.
#[derive(Clone, Default)]
pub struct Counters {
    pub lines: Counter,
    pub dropped: Counter,
}

pub(super) struct Sink {
    shards: Box<[Mutex<Shard>]>,
    output: Mutex<Output>,
    reopen: AtomicBool,
    writer: OnceLock<Thread>,
    counters: Counters,
}

struct Output {
    destination: Option<Destination>,
    file: Option<File>,
    /// The last write failed: warned once, not once a line.
    failing: bool,
}

impl Sink {
    pub(super) fn new(counters: Counters) -> Arc<Self> {
        Arc::new(Sink {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            output: Mutex::new(Output {
                destination: None,
                file: None,
                failing: false,
            }),
            reopen: AtomicBool::new(false),
            writer: OnceLock::new(),
            counters,
        })
    }

    /// Writes to `destination` from now on (a file is opened now: an error leaves the output
    /// as it was), starting the writer thread the first time.
    pub(super) fn direct(self: &Arc<Self>, destination: &Destination) -> io::Result<()> {
        let file = match destination {
            Destination::Stdout => None,
            Destination::File(path) => Some(open(path)?),
        };
        {
            let mut output = lock(&self.output);
            output.destination = Some(destination.clone());
            output.file = file;
            output.failing = false;
        }
        if self.writer.get().is_none() {
            let weak = Arc::downgrade(self);
            let spawned = std::thread::Builder::new()
                .name("weir-access-log".into())
                .spawn(move || write_loop(weak))?;
            let _ = self.writer.set(spawned.thread().clone());
        }
        Ok(())
    }

    /// Appends a whole line to this thread's buffer, or drops it when the buffer is full.
    pub(super) fn push(&self, line: &[u8]) {
        let index = SHARD_INDEX.with(|i| *i) % self.shards.len();
        let wake = {
            let mut shard = lock(&self.shards[index]);
            let before = shard.buf.len();
            if before + line.len() > SHARD_CAP {
                shard.dropped += 1;
                false
            } else {
                shard.buf.extend_from_slice(line);
                shard.lines += 1;
                before < WAKE_AT && shard.buf.len() >= WAKE_AT
            }
        };
        if wake {
            self.wake();
        }
    }

    /// The file is opened again before the next write (logrotate moved it: SIGUSR1, reload).
    pub(super) fn reopen(&self) {
        self.reopen.store(true, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        if let Some(writer) = self.writer.get() {
            writer.unpark();
        }
    }

    /// Writes out every buffer now (the writer's round, or a drain before exit).
    pub(super) fn flush(&self) {
        let mut spare = Vec::new();
        let mut output = lock(&self.output);
        if self.reopen.swap(false, Ordering::AcqRel) {
            if let Some(Destination::File(path)) = &output.destination {
                match open(path) {
                    Ok(file) => output.file = Some(file),
                    Err(err) => tracing::warn!(
                        path = %path.display(),
                        error = %err,
                        "access log: cannot reopen; writing on to the file as it was"
                    ),
                }
            }
        }
        for shard in self.shards.iter() {
            let (lines, dropped) = {
                let mut shard = lock(shard);
                if shard.buf.is_empty() && shard.dropped == 0 {
                    continue;
                }
                std::mem::swap(&mut shard.buf, &mut spare);
                (
                    std::mem::take(&mut shard.lines),
                    std::mem::take(&mut shard.dropped),
                )
            };
            self.counters.dropped.inc_by(dropped);
            if spare.is_empty() {
                continue;
            }
            match output.write(&spare) {
                Ok(()) => {
                    self.counters.lines.inc_by(lines);
                    if std::mem::take(&mut output.failing) {
                        tracing::info!("access log: writing again");
                    }
                }
                Err(err) => {
                    self.counters.dropped.inc_by(lines);
                    if !std::mem::replace(&mut output.failing, true) {
                        tracing::warn!(error = %err, "access log: write failed; lines are dropped (and counted) until a write succeeds");
                    }
                }
            }
            spare.clear();
            // A burst's buffer is not kept at its peak size.
            spare.shrink_to(SHARD_CAP / 4);
        }
    }
}

impl Output {
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match (&self.destination, &mut self.file) {
            (Some(Destination::File(_)), Some(file)) => file.write_all(bytes),
            (Some(Destination::Stdout), _) => {
                let mut out = io::stdout().lock();
                out.write_all(bytes)?;
                out.flush()
            }
            _ => Ok(()),
        }
    }
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", path.display())))
}

fn write_loop(sink: Weak<Sink>) {
    loop {
        std::thread::park_timeout(TICK);
        let Some(sink) = sink.upgrade() else {
            return;
        };
        sink.flush();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's buffer: threads take them in turn, so each worker has its own.
    static SHARD_INDEX: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weir-sink-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        dir
    }

    #[test]
    fn lines_reach_the_file_and_are_counted() {
        let counters = Counters::default();
        let sink = Sink::new(counters.clone());
        let path = temp("lines");
        sink.direct(&Destination::File(path.clone())).unwrap();
        for i in 0..100 {
            sink.push(format!("line {i}\n").as_bytes());
        }
        sink.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 100);
        assert_eq!(counters.lines.get(), 100);
        assert_eq!(counters.dropped.get(), 0);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_full_buffer_drops_and_counts() {
        let counters = Counters::default();
        let sink = Sink::new(counters.clone());
        // No destination and no writer: nothing empties the buffer.
        let line = vec![b'x'; 1023];
        let fits = SHARD_CAP / line.len();
        for _ in 0..fits + 10 {
            sink.push(&line);
        }
        let shard = lock(&sink.shards[SHARD_INDEX.with(|i| *i) % SHARDS]);
        assert_eq!(shard.lines as usize, fits);
        assert_eq!(shard.dropped, 10);
    }

    #[test]
    fn reopen_follows_a_rotated_file() {
        let sink = Sink::new(Counters::default());
        let path = temp("rotate");
        let rotated = temp("rotate.1");
        sink.direct(&Destination::File(path.clone())).unwrap();
        sink.push(b"before\n");
        sink.flush();
        std::fs::rename(&path, &rotated).unwrap();
        sink.reopen();
        sink.push(b"after\n");
        sink.flush();
        assert_eq!(std::fs::read_to_string(&rotated).unwrap(), "before\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "after\n");
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&rotated);
    }

    #[test]
    fn a_file_that_cannot_be_opened_is_an_error_naming_it() {
        let sink = Sink::new(Counters::default());
        let err = sink
            .direct(&Destination::File("/nonexistent-dir/access.log".into()))
            .unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent-dir/access.log"),
            "{err}"
        );
    }
}
