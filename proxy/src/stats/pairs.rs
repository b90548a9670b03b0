//! Mirrored pairs (issue 50): for each request a route copied to another backend, the answer the
//! client got and the copy's answer, side by side — the same request answered by both
//! versions, which a paired analysis judges.
//!
//! A pair is put together by a `PairSlot` that the request and its copy share: whichever
//! answers second writes the pair into the route's `PairLog`. A pair that cannot be kept as it
//! was — no copy made because the mirrors were full, the copy's body cut short (the tee could
//! not keep up, or the body passed the cap), the client's request sent to the mirror's own
//! backend, the client gone before an answer — is counted by its reason and never guessed.
//!
//! Once both answers' bodies have been read (or one could not be), the slot's last holder
//! compares them (`super::differences`): reported beside the pairs, never a verdict.
//!
//! The log is a ring of the last `CAPACITY` pairs with a running count, read by cursor: each
//! reader (an analysis) takes what came since its last look, and one that fell a whole ring
//! behind is told how many it lost. Like the live windows, a route's log outlives table swaps
//! (`LiveStats::pairs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::differences::{example_path, BodyDigest, Difference, Differences, Hashing};
use super::UpstreamError;

/// Pairs a route's log keeps for its readers: at 1,000 mirrored requests a second, 16 s.
pub const CAPACITY: usize = 16_384;

/// One side's answer: its status (none when the upstream failed), its failure, and how long
/// it took to its response head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: Option<u16>,
    pub failure: Option<UpstreamError>,
    /// A gRPC server-fault status: in the head (a trailers-only answer), or in the trailers.
    pub grpc_fault: bool,
    pub micros: u64,
}

impl Answer {
    /// A response head, `since` the side's start.
    pub fn status(status: u16, grpc_fault: bool, since: Instant) -> Self {
        Answer {
            status: Some(status),
            failure: None,
            grpc_fault,
            micros: since.elapsed().as_micros() as u64,
        }
    }

    /// No response: the upstream failed.
    pub fn failed(failure: UpstreamError, since: Instant) -> Self {
        Answer {
            status: None,
            failure: Some(failure),
            grpc_fault: false,
            micros: since.elapsed().as_micros() as u64,
        }
    }

    /// An error as the comparisons count one: a 5xx, a gRPC server fault, or no answer.
    pub fn is_error(&self) -> bool {
        self.failure.is_some() || self.grpc_fault || self.status.is_some_and(|s| s >= 500)
    }
}

/// The answers to one mirrored request: the primary's (what the client got) and the copy's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub primary: Answer,
    pub copy: Answer,
}

/// Why a mirrored request left no pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excluded {
    /// No copy was made: as many mirrors as allowed were in flight.
    MirrorsFull,
    /// The copy's body was cut short: the tee could not keep up, or the body passed the cap.
    BodyCut,
    /// The client's own request went to the backend the copy goes to.
    SameBackend,
    /// The client's request ended without an answer of its own (the client went away first).
    Unanswered,
}

impl Excluded {
    pub const ALL: [Excluded; 4] = [
        Excluded::MirrorsFull,
        Excluded::BodyCut,
        Excluded::SameBackend,
        Excluded::Unanswered,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Excluded::MirrorsFull => "mirrors_full",
            Excluded::BodyCut => "body_cut",
            Excluded::SameBackend => "same_backend",
            Excluded::Unanswered => "unanswered",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A route's mirrored pairs: the last `CAPACITY`, the exclusions by reason, and whether the
/// two answers were the same.
#[derive(Default)]
pub struct PairLog {
    ring: Mutex<Ring>,
    excluded: [AtomicU64; Excluded::ALL.len()],
    pub differences: Differences,
}

#[derive(Default)]
struct Ring {
    /// Pairs written ever: the next one's number.
    next: u64,
    pairs: Vec<Pair>,
}

impl std::fmt::Debug for PairLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairLog")
            .field("written", &self.position())
            .finish_non_exhaustive()
    }
}

impl PairLog {
    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        // Plain data: consistent whatever a holder did.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn push(&self, pair: Pair) {
        let mut ring = self.ring();
        let at = (ring.next % CAPACITY as u64) as usize;
        if at == ring.pairs.len() {
            ring.pairs.push(pair);
        } else {
            ring.pairs[at] = pair;
        }
        ring.next += 1;
    }

    pub fn exclude(&self, why: Excluded) {
        self.excluded[why.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Exclusions so far, in `Excluded::ALL`'s order.
    pub fn excluded(&self) -> [u64; Excluded::ALL.len()] {
        self.excluded
            .each_ref()
            .map(|count| count.load(Ordering::Relaxed))
    }

    /// Pairs written so far: a new reader's cursor, to read only what comes after.
    pub fn position(&self) -> u64 {
        self.ring().next
    }

    /// Appends the pairs written since `cursor` to `out` and moves the cursor on; returns how
    /// many were overwritten before they could be read.
    pub fn read(&self, cursor: &mut u64, out: &mut Vec<Pair>) -> u64 {
        let ring = self.ring();
        let oldest = ring.next.saturating_sub(CAPACITY as u64);
        let lost = oldest.saturating_sub(*cursor);
        for n in (*cursor).max(oldest)..ring.next {
            out.push(ring.pairs[(n % CAPACITY as u64) as usize]);
        }
        *cursor = ring.next;
        lost
    }
}

/// Where the two halves of one pair meet. Shared by the client's request and its copy; the
/// half that comes second writes the pair. Dropped with a half missing, it counts the pair
/// as unanswered; dropped after a pair was written with a status on each side, it compares
/// the two answers' bodies (`body`).
pub struct PairSlot {
    log: Arc<PairLog>,
    /// The route's backend the copy goes to (its index).
    pub copied_to: usize,
    /// When the client's request set out: its answer's latency is counted from here.
    pub started: Instant,
    /// The request's path, as the differences' examples name it.
    path: Box<str>,
    state: Mutex<State>,
}

struct State {
    halves: Halves,
    /// Each side's body, once read whole: the client's, the copy's.
    bodies: [Option<BodyDigest>; 2],
}

enum Halves {
    Waiting {
        primary: Option<Answer>,
        copy: Option<Answer>,
    },
    /// Written, with each side's status if it had one: the bodies are compared at the end.
    Written(Option<u16>, Option<u16>),
    /// Excluded: nothing more to do.
    Closed,
}

/// Which answer of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client's.
    Primary = 0,
    Copy = 1,
}

/// One answer's body on its way, hashed as it goes (`super::differences::Hashing`); `finish`
/// when it was read whole. Dropped unfinished, that body is not compared.
pub struct BodyHalf {
    slot: Arc<PairSlot>,
    side: Side,
    hashing: Hashing,
}

impl BodyHalf {
    #[inline]
    pub fn add(&mut self, bytes: &[u8]) {
        self.hashing.add(bytes);
    }

    pub fn finish(self) {
        let digest = self.hashing.digest();
        self.slot.lock().bodies[self.side as usize] = Some(digest);
    }
}

impl PairSlot {
    /// `path`: the request's (a query is left out).
    pub fn new(log: Arc<PairLog>, copied_to: usize, path: &[u8]) -> Arc<Self> {
        Arc::new(PairSlot {
            log,
            copied_to,
            started: Instant::now(),
            path: example_path(path),
            state: Mutex::new(State {
                halves: Halves::Waiting {
                    primary: None,
                    copy: None,
                },
                bodies: [None, None],
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain data: consistent whatever a holder did.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client's answer.
    pub fn primary(&self, answer: Answer) {
        self.half(|primary, _| *primary = Some(answer));
    }

    /// The copy's answer.
    pub fn copy(&self, answer: Answer) {
        self.half(|_, copy| *copy = Some(answer));
    }

    /// Where `side`'s body is hashed as it is read: called once its head is in.
    pub fn body(self: &Arc<Self>, side: Side) -> BodyHalf {
        BodyHalf {
            slot: self.clone(),
            side,
            hashing: Hashing::default(),
        }
    }

    /// This pair cannot be kept: counted by `why`, whatever either half says after.
    pub fn exclude(&self, why: Excluded) {
        let mut state = self.lock();
        if matches!(state.halves, Halves::Waiting { .. }) {
            state.halves = Halves::Closed;
            self.log.exclude(why);
        }
    }

    fn half(&self, set: impl FnOnce(&mut Option<Answer>, &mut Option<Answer>)) {
        let mut state = self.lock();
        let Halves::Waiting { primary, copy } = &mut state.halves else {
            return;
        };
        set(primary, copy);
        if let (Some(primary), Some(copy)) = (*primary, *copy) {
            state.halves = Halves::Written(primary.status, copy.status);
            self.log.push(Pair { primary, copy });
        }
    }
}

impl Drop for PairSlot {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        match state.halves {
            Halves::Waiting { .. } => {
                // A copy always ends with an answer (a failure is one) or an exclusion: the
                // half missing is the client's request, which ended without an answer.
                self.log.exclude(Excluded::Unanswered);
            }
            // Both answered: compare them (a side with no answer is the error signal's).
            Halves::Written(Some(primary), Some(copy)) => {
                let [a, b] = state.bodies;
                let what = Difference::of((primary, copy), (a, b));
                self.log
                    .differences
                    .record(what, &self.path, (primary, copy));
            }
            Halves::Written(..) | Halves::Closed => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16) -> Answer {
        Answer {
            status: Some(status),
            failure: None,
            grpc_fault: false,
            micros: 1000,
        }
    }

    #[test]
    fn the_second_half_writes_the_pair_in_either_order() {
        let log = Arc::new(PairLog::default());
        let a = PairSlot::new(log.clone(), 1, b"/");
        a.primary(answer(200));
        assert_eq!(log.position(), 0);
        a.copy(answer(503));
        let b = PairSlot::new(log.clone(), 1, b"/");
        b.copy(answer(200));
        b.primary(answer(500));
        drop((a, b));
        let (mut cursor, mut out) = (0, Vec::new());
        assert_eq!(log.read(&mut cursor, &mut out), 0);
        assert_eq!(out.len(), 2);
        assert!(!out[0].primary.is_error() && out[0].copy.is_error());
        assert!(out[1].primary.is_error() && !out[1].copy.is_error());
        assert_eq!(log.excluded(), [0, 0, 0, 0]);
    }

    #[test]
    fn an_excluded_or_unfinished_pair_is_counted_not_written() {
        let log = Arc::new(PairLog::default());
        let slot = PairSlot::new(log.clone(), 1, b"/");
        slot.exclude(Excluded::SameBackend);
        slot.primary(answer(200));
        slot.copy(answer(200));
        drop(slot);
        let slot = PairSlot::new(log.clone(), 1, b"/");
        slot.copy(answer(200));
        drop(slot); // the client's request never answered
        assert_eq!(log.position(), 0);
        assert_eq!(log.excluded(), [0, 0, 1, 1]);
    }

    #[test]
    fn both_bodies_are_compared_once_the_pair_is_done_with() {
        let log = Arc::new(PairLog::default());
        let slot = PairSlot::new(log.clone(), 1, b"/price?id=7");
        let (mut mine, mut theirs) = (slot.body(Side::Primary), slot.body(Side::Copy));
        slot.primary(answer(200));
        slot.copy(answer(200));
        mine.add(b"12.50");
        theirs.add(b"12.");
        theirs.add(b"75");
        mine.finish();
        // Compared only when the last holder lets go.
        assert_eq!(log.differences.compared(), 0);
        theirs.finish();
        drop(slot);
        assert_eq!(log.differences.counts(), [0, 0, 1, 0]);
        assert_eq!(log.differences.examples()[0].path, "/price");

        // A body not read whole is not compared; a side with no answer is not either.
        let slot = PairSlot::new(log.clone(), 1, b"/");
        let unread = slot.body(Side::Copy);
        slot.primary(answer(200));
        slot.copy(answer(200));
        slot.body(Side::Primary).finish();
        drop((slot, unread));
        let slot = PairSlot::new(log.clone(), 1, b"/");
        slot.primary(answer(200));
        slot.copy(Answer::failed(UpstreamError::Timeout, Instant::now()));
        drop(slot);
        assert_eq!(log.differences.counts(), [0, 0, 1, 1]);
    }

    #[test]
    fn a_reader_a_whole_ring_behind_is_told_what_it_lost() {
        let log = PairLog::default();
        let mut cursor = 0;
        for _ in 0..CAPACITY + 10 {
            log.push(Pair {
                primary: answer(200),
                copy: answer(200),
            });
        }
        let mut out = Vec::new();
        assert_eq!(log.read(&mut cursor, &mut out), 10);
        assert_eq!(out.len(), CAPACITY);
        assert_eq!(cursor, CAPACITY as u64 + 10);
        out.clear();
        assert_eq!(log.read(&mut cursor, &mut out), 0);
        assert!(out.is_empty());
    }
}
