//! The access log: one line per request, written off the data path.
//!
//! An engine asks [`AccessLog::begin`] for a [`Pending`] line once a request is matched (none
//! when the log is off, or the route's is), tells it what came back ([`Pending::answered`]),
//! and ends it when the response's last byte is gone ([`Pending::end`]). A route may log
//! every request, none, or a sample; a sampled-out request is still written when it failed
//! (a 5xx, or no answer at all), which is what an abort's first question is about.
//!
//! `line` formats (pure), `sink` buffers and writes (a thread of its own). Settings change
//! with a reload; the file is reopened on SIGUSR1 or reload, for logrotate.

mod line;
mod sink;

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

pub use line::{Answer, Format, RequestSide, Totals};
pub use sink::{Counters, Destination};

use sink::Sink;

/// The `access_log:` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessLogSpec {
    pub destination: Destination,
    pub format: Format,
    /// Keep the query in `path` (off by default: queries carry tokens and personal data).
    pub query: bool,
    /// The share of requests logged on routes that do not say, in basis points.
    pub sample_bp: u16,
}

impl Default for AccessLogSpec {
    fn default() -> Self {
        AccessLogSpec {
            destination: Destination::Stdout,
            format: Format::Json,
            query: false,
            sample_bp: MAX_BP,
        }
    }
}

/// A route's own choice (`routes[].access_log`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutePolicy {
    /// The section's `sample`.
    #[default]
    Inherit,
    Off,
    /// This share of requests, in basis points (10000: all).
    Sample(u16),
}

const MAX_BP: u16 = 10_000;

/// The data plane's access log: off until configured.
pub struct AccessLog {
    on: AtomicBool,
    format: AtomicU8,
    query: AtomicBool,
    sample_bp: AtomicU16,
    sink: Arc<Sink>,
}

impl AccessLog {
    pub fn new(counters: Counters) -> Self {
        AccessLog {
            on: AtomicBool::new(false),
            format: AtomicU8::new(0),
            query: AtomicBool::new(false),
            sample_bp: AtomicU16::new(MAX_BP),
            sink: Sink::new(counters),
        }
    }

    /// Puts `spec` in force (None: off). A file is opened first: on an error nothing changes.
    /// The same file again is reopened (a reload after logrotate).
    pub fn configure(&self, spec: Option<&AccessLogSpec>) -> std::io::Result<()> {
        let Some(spec) = spec else {
            self.on.store(false, Ordering::Release);
            self.sink.flush();
            return Ok(());
        };
        self.sink.direct(&spec.destination)?;
        self.format.store(
            match spec.format {
                Format::Json => 0,
                Format::Logfmt => 1,
            },
            Ordering::Relaxed,
        );
        self.query.store(spec.query, Ordering::Relaxed);
        self.sample_bp
            .store(spec.sample_bp.min(MAX_BP), Ordering::Relaxed);
        self.on.store(true, Ordering::Release);
        Ok(())
    }

    /// Reopens the file before the next write (SIGUSR1).
    pub fn reopen(&self) {
        self.sink.reopen();
    }

    /// Writes out what is buffered (before exit).
    pub fn flush(&self) {
        self.sink.flush();
    }

    /// Whether the log is on: the one check a request pays (an atomic load) when it is off.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Whether a request on a route with `policy` is logged at all.
    #[inline]
    pub(crate) fn wants(&self, policy: RoutePolicy) -> bool {
        self.on.load(Ordering::Relaxed) && policy != RoutePolicy::Off
    }

    /// Starts a line for a request (`wants` said yes), its head read at `started`.
    pub(crate) fn begin(
        &self,
        policy: RoutePolicy,
        started: Instant,
        req: &mut RequestSide<'_>,
    ) -> Pending {
        let share = match policy {
            RoutePolicy::Sample(bp) => bp,
            RoutePolicy::Inherit | RoutePolicy::Off => self.sample_bp.load(Ordering::Relaxed),
        };
        let sampled = share >= MAX_BP || below(share);
        let format = match self.format.load(Ordering::Relaxed) {
            0 => Format::Json,
            _ => Format::Logfmt,
        };
        req.query = self.query.load(Ordering::Relaxed);
        let mut buf = take_buffer();
        line::begin(&mut buf, format, SystemTime::now(), req);
        Pending {
            buf,
            format,
            started,
            sampled,
        }
    }

    fn push(&self, line: &[u8]) {
        self.sink.push(line);
    }
}

/// A line begun: the request's side written, the rest to come.
pub struct Pending {
    buf: Vec<u8>,
    format: Format,
    started: Instant,
    sampled: bool,
}

impl Pending {
    /// When the request's head was read: durations are measured from here.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// What came back. None when the line is not to be written after all: sampled out, and
    /// neither a 5xx nor a failure.
    pub fn answered(mut self, answer: &Answer<'_>) -> Option<Self> {
        let failed = answer.failure.is_some() || answer.status.is_none_or(|s| s >= 500);
        if !self.sampled && !failed {
            return None;
        }
        line::answered(&mut self.buf, self.format, answer);
        Some(self)
    }

    /// The line, whole, to the log.
    pub fn end(mut self, log: &AccessLog, totals: &Totals) {
        line::end(&mut self.buf, self.format, totals);
        log.push(&self.buf);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.buf));
    }
}

/// Line buffers kept per thread: a request's line costs no allocation once warm.
const SPARE_BUFFERS: usize = 64;
const BUFFER_CAPACITY: usize = 512;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static RNG: Cell<u64> = Cell::new(seed());
}

fn take_buffer() -> Vec<u8> {
    SPARE
        .with(|s| s.borrow_mut().pop())
        .unwrap_or_else(|| Vec::with_capacity(BUFFER_CAPACITY))
}

fn give_back(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > 8 * BUFFER_CAPACITY {
        return;
    }
    buf.clear();
    SPARE.with(|s| {
        let mut spare = s.borrow_mut();
        if spare.len() < SPARE_BUFFERS {
            spare.push(buf);
        }
    });
}

/// True with probability `bp`/10000: a per-thread xorshift, for a sample not a secret.
fn below(bp: u16) -> bool {
    RNG.with(|rng| {
        let mut x = rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rng.set(x);
        (x % u64::from(MAX_BP)) < u64::from(bp)
    })
}

fn seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let here = &nanos as *const u64 as u64;
    (nanos ^ here.rotate_left(32)) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_keeps_about_its_share() {
        let kept = (0..100_000).filter(|_| below(1_000)).count();
        assert!((9_000..11_000).contains(&kept), "{kept} of 100000 at 10 %");
        assert_eq!((0..1_000).filter(|_| below(0)).count(), 0);
    }

    fn request() -> RequestSide<'static> {
        RequestSide {
            listener: "main",
            client: "127.0.0.1:1".parse().unwrap(),
            identity: None,
            protocol: "HTTP/1.1",
            method: b"GET",
            authority: None,
            target: b"/x?secret=1",
            query: true,
            route: Some("web"),
            traceparent: None,
            request_id: None,
        }
    }

    fn answer(status: Option<u16>) -> Answer<'static> {
        Answer {
            backend: Some("stable"),
            upstream: None,
            status,
            failure: None,
            first_byte: None,
            retries: 0,
            fallback: false,
        }
    }

    #[test]
    fn a_sampled_out_request_is_written_only_when_it_failed() {
        let log = AccessLog::new(Counters::default());
        log.configure(Some(&AccessLogSpec {
            sample_bp: 0,
            ..AccessLogSpec::default()
        }))
        .unwrap();
        let begin = || log.begin(RoutePolicy::Inherit, Instant::now(), &mut request());
        assert!(begin().answered(&answer(Some(200))).is_none());
        assert!(begin().answered(&answer(Some(404))).is_none());
        assert!(begin().answered(&answer(Some(502))).is_some());
        assert!(begin().answered(&answer(None)).is_some());
        // The section's query setting wins over what the engine passed.
        let p = begin();
        assert!(!String::from_utf8_lossy(&p.buf).contains("secret"));
    }

    #[test]
    fn a_route_that_is_off_is_not_logged_and_the_log_is_off_until_configured() {
        let log = AccessLog::new(Counters::default());
        assert!(!log.wants(RoutePolicy::Inherit));
        log.configure(Some(&AccessLogSpec::default())).unwrap();
        assert!(log.wants(RoutePolicy::Inherit));
        assert!(!log.wants(RoutePolicy::Off));
        log.configure(None).unwrap();
        assert!(!log.wants(RoutePolicy::Sample(10_000)));
    }
}
