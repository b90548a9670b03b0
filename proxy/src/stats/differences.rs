//! Whether the two answers of a mirrored pair (`super::pairs`) were the same (issue 50, item 6):
//! the status, and the body by its length and a hash of its first `HASHED` bytes. Reported,
//! never a verdict: many services answer the same request differently each time (a date, an
//! id, an order), so a difference is something for a person to look at, not evidence against
//! the canary. A route keeps its counts and a handful of example paths, each with what
//! differed.

use std::collections::hash_map::DefaultHasher;
use std::collections::VecDeque;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Bytes of each body that are hashed: a body longer than this is compared by its length and
/// its first `HASHED` bytes, so a difference only past them, in bodies of equal length, is not
/// seen. Bounds what a copy costs whatever the bodies' size.
pub const HASHED: u64 = 64 * 1024;

/// Example paths a route keeps: the most recent distinct (path, what differed).
pub const EXAMPLES: usize = 8;

/// Longest path kept in an example, in bytes (a longer one is cut, marked with "…").
const PATH_LIMIT: usize = 200;

/// A body as it goes by: its length, and a hash of its first `HASHED` bytes. The same bytes
/// hash the same however they were split into reads.
pub struct Hashing {
    hasher: DefaultHasher,
    len: u64,
}

impl Default for Hashing {
    fn default() -> Self {
        Hashing {
            // Fixed keys: both sides of a pair, in one process, hash alike.
            hasher: DefaultHasher::new(),
            len: 0,
        }
    }
}

impl Hashing {
    pub fn add(&mut self, bytes: &[u8]) {
        let room = HASHED.saturating_sub(self.len);
        if room > 0 {
            let take = bytes.len().min(room as usize);
            self.hasher.write(&bytes[..take]);
        }
        self.len += bytes.len() as u64;
    }

    pub fn digest(&self) -> BodyDigest {
        BodyDigest {
            len: self.len,
            hash: self.hasher.finish(),
        }
    }
}

/// A whole body's length and hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyDigest {
    pub len: u64,
    pub hash: u64,
}

/// What a pair's two answers, each with a status, came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Difference {
    /// The same status, and bodies of the same length and hash.
    Same,
    /// Different statuses (whatever the bodies).
    Status,
    /// The same status, different bodies.
    Body,
    /// The same status, but a body was not read to its end (cut, or its client went away):
    /// not compared.
    Unread,
}

impl Difference {
    pub const ALL: [Difference; 4] = [
        Difference::Same,
        Difference::Status,
        Difference::Body,
        Difference::Unread,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Difference::Same => "same",
            Difference::Status => "status",
            Difference::Body => "body",
            Difference::Unread => "unread",
        }
    }

    /// Two answers' statuses and their bodies' digests (None: not read whole).
    pub fn of(
        statuses: (u16, u16),
        bodies: (Option<BodyDigest>, Option<BodyDigest>),
    ) -> Difference {
        if statuses.0 != statuses.1 {
            return Difference::Status;
        }
        match bodies {
            (Some(a), Some(b)) if a == b => Difference::Same,
            (Some(_), Some(_)) => Difference::Body,
            _ => Difference::Unread,
        }
    }
}

/// A request whose two answers differed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    pub path: String,
    pub what: Difference,
    /// The client's answer's status, and the copy's.
    pub primary_status: u16,
    pub copy_status: u16,
    /// Times it was seen since it entered the examples (at least this many).
    pub seen: u64,
    /// The number of the pair it was last seen in (`Differences::compared`'s count then).
    pub last: u64,
}

/// A route's differences: counts by kind, and the latest examples.
#[derive(Default)]
pub struct Differences {
    counts: [AtomicU64; Difference::ALL.len()],
    examples: Mutex<VecDeque<Example>>,
}

impl Differences {
    /// Counts, in `Difference::ALL`'s order.
    pub fn counts(&self) -> [u64; Difference::ALL.len()] {
        self.counts
            .each_ref()
            .map(|count| count.load(Ordering::Relaxed))
    }

    /// Pairs compared so far, whatever they came to.
    pub fn compared(&self) -> u64 {
        self.counts().iter().sum()
    }

    /// The examples, oldest first.
    pub fn examples(&self) -> Vec<Example> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Example>> {
        // Plain data: consistent whatever a holder did.
        self.examples.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one pair; one that differed (status or body) becomes the newest example.
    pub fn record(&self, what: Difference, path: &str, statuses: (u16, u16)) {
        self.counts[what as usize].fetch_add(1, Ordering::Relaxed);
        if !matches!(what, Difference::Status | Difference::Body) {
            return;
        }
        let last = self.compared();
        let mut examples = self.lock();
        let seen = match examples
            .iter()
            .position(|e| e.what == what && e.path == path)
        {
            Some(at) => examples.remove(at).map_or(1, |e| e.seen + 1),
            None => 1,
        };
        if examples.len() == EXAMPLES {
            examples.pop_front();
        }
        examples.push_back(Example {
            path: path.to_string(),
            what,
            primary_status: statuses.0,
            copy_status: statuses.1,
            seen,
            last,
        });
    }
}

/// A request's path as an example names it: without its query (which may carry what is not
/// for a status page), as text with any control character or space percent-encoded (it is
/// shown on terminals and pages), at most `PATH_LIMIT` bytes.
pub fn example_path(path: &[u8]) -> Box<str> {
    let end = path.iter().position(|&b| b == b'?').unwrap_or(path.len());
    let lossy = String::from_utf8_lossy(&path[..end]);
    let text: String = if lossy.chars().any(|c| c.is_control() || c == ' ') {
        lossy
            .chars()
            .map(|c| match c.is_control() || c == ' ' {
                true => format!("%{:02X}", c as u32),
                false => c.to_string(),
            })
            .collect()
    } else {
        lossy.into_owned()
    };
    if text.len() <= PATH_LIMIT {
        return text.into();
    }
    let mut cut = PATH_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashed(parts: &[&[u8]]) -> BodyDigest {
        let mut h = Hashing::default();
        for part in parts {
            h.add(part);
        }
        h.digest()
    }

    #[test]
    fn a_body_hashes_alike_however_it_was_read() {
        let whole = hashed(&[b"hello, canary"]);
        assert_eq!(hashed(&[b"hel", b"lo, ", b"", b"canary"]), whole);
        assert_ne!(hashed(&[b"hello, canarY"]), whole);
        assert_eq!(whole.len, 13);
    }

    #[test]
    fn past_the_bound_only_the_length_counts() {
        let a = vec![b'a'; HASHED as usize];
        let (mut one, mut two) = (a.clone(), a.clone());
        one.extend_from_slice(b"xyz");
        two.extend_from_slice(b"XYZ");
        assert_eq!(hashed(&[&one]), hashed(&[&two[..10], &two[10..]]));
        assert_eq!(hashed(&[&one]).len, HASHED + 3);
        // Within the bound a difference is seen; past it, one of length is.
        one[5] = b'b';
        assert_ne!(hashed(&[&one]), hashed(&[&two]));
        assert_ne!(hashed(&[&a, b"x"]), hashed(&[&a, b"xy"]));
    }

    #[test]
    fn status_first_then_bodies() {
        let d = |s: &[u8]| Some(hashed(&[s]));
        assert_eq!(
            Difference::of((200, 200), (d(b"a"), d(b"a"))),
            Difference::Same
        );
        assert_eq!(
            Difference::of((200, 200), (d(b"a"), d(b"b"))),
            Difference::Body
        );
        assert_eq!(
            Difference::of((200, 404), (d(b"a"), d(b"a"))),
            Difference::Status
        );
        assert_eq!(
            Difference::of((200, 404), (None, d(b"a"))),
            Difference::Status
        );
        assert_eq!(
            Difference::of((200, 200), (None, d(b"a"))),
            Difference::Unread
        );
    }

    #[test]
    fn examples_are_the_latest_distinct_differences() {
        let diffs = Differences::default();
        diffs.record(Difference::Same, "/same", (200, 200));
        diffs.record(Difference::Body, "/price", (200, 200));
        diffs.record(Difference::Status, "/gone", (200, 404));
        diffs.record(Difference::Body, "/price", (200, 200));
        assert_eq!(diffs.counts(), [1, 1, 2, 0]);
        let examples = diffs.examples();
        assert_eq!(examples.len(), 2);
        assert_eq!((examples[0].path.as_str(), examples[0].seen), ("/gone", 1));
        assert_eq!(
            (
                examples[1].path.as_str(),
                examples[1].seen,
                examples[1].last
            ),
            ("/price", 2, 4)
        );
        for n in 0..EXAMPLES + 3 {
            diffs.record(Difference::Body, &format!("/p{n}"), (200, 200));
        }
        let examples = diffs.examples();
        assert_eq!(examples.len(), EXAMPLES);
        assert_eq!(examples[0].path, "/p3");
        assert_eq!(examples[EXAMPLES - 1].path, format!("/p{}", EXAMPLES + 2));
    }

    #[test]
    fn an_example_path_is_bounded_and_without_its_query() {
        assert_eq!(&*example_path(b"/a/b?token=secret"), "/a/b");
        let long = "é".repeat(150);
        let cut = example_path(long.as_bytes());
        assert!(cut.len() <= PATH_LIMIT + "…".len());
        assert!(cut.ends_with('…'));
        assert_eq!(&*example_path(b"/\xff"), "/\u{fffd}");
        assert_eq!(&*example_path(b"/a\x1b[2J b"), "/a%1B[2J%20b");
    }
}
