//! Per-thread stocks of values a connection or a request needs only while it is busy (boxes,
//! header maps): taken when a request's first bytes come, given back when the connection falls
//! idle or the request is done. An idle keep-alive connection then holds none of them, and the
//! busy path still allocates nothing per request.
//!
//! Why a stock and not the allocator: with many clients on a worker, a block freed and
//! allocated again per busy stretch went past glibc's per-thread cache (7 blocks of a size) to
//! its main bins, about 300 instructions a request for a kilobyte-sized block.
//!
//! One stock per thread, one shelf in it per type. Mutexes, so that `release` can empty the
//! stocks from another thread and a task that moved threads can still use the shelf it found;
//! nearly always only the owning thread locks them, so they are not contended.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// One thread's stocked values of one type: boxes (pinned ones too, so that a box a future was
/// pinned in can be used again: a `Pin<Box<Option<F>>>` emptied with `Pin::set`), or values
/// that own their allocations, such as a cleared `HeaderMap`.
///
/// A handle: whoever takes and gives back often keeps one (found once, then a mutex and a
/// `Vec`, no search per use). A task may move to another thread and keep using the shelf of
/// the thread it started on; the mutex keeps that sound, and it is rare enough not to contend.
pub struct Shelf<T>(Arc<Mutex<Vec<T>>>);

impl<T> Clone for Shelf<T> {
    fn clone(&self) -> Self {
        Shelf(self.0.clone())
    }
}

/// A shelf of any type, as a thread's stock lists it.
trait AnyShelf: Send {
    fn as_any(&self) -> &dyn Any;
    fn empty(&self);
}

impl<T: Send + 'static> AnyShelf for Shelf<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn empty(&self) {
        // Freed outside the lock: the owning thread may be waiting for it.
        let emptied = std::mem::take(&mut *lock(&self.0));
        drop(emptied);
    }
}

type Stock = Mutex<Vec<Box<dyn AnyShelf>>>;

/// Every thread's stock, for `release`.
static STOCKS: Mutex<Vec<Weak<Stock>>> = Mutex::new(Vec::new());

thread_local! {
    static STOCKED: Arc<Stock> = {
        let stock = Arc::new(Mutex::new(Vec::new()));
        lock(&STOCKS).push(Arc::downgrade(&stock));
        stock
    };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<T: Send + 'static> Shelf<T> {
    /// This thread's shelf for `T`. At thread exit, a shelf of its own that `release` does not
    /// reach (it is freed with the last handle).
    pub fn here() -> Self {
        STOCKED
            .try_with(|stock| {
                let mut shelves = lock(stock);
                // A handful of types at most: a linear search, once per handle.
                let found = shelves
                    .iter()
                    .find_map(|shelf| shelf.as_any().downcast_ref::<Shelf<T>>().cloned());
                found.unwrap_or_else(|| {
                    let shelf = Shelf(Arc::new(Mutex::new(Vec::new())));
                    shelves.push(Box::new(shelf.clone()));
                    shelf
                })
            })
            .unwrap_or_else(|_| Shelf(Arc::new(Mutex::new(Vec::new()))))
    }

    /// A stocked value, if there is one.
    pub fn take(&self) -> Option<T> {
        lock(&self.0).pop()
    }

    /// Stocks `value`, unless the shelf holds `keep` already: then it is freed.
    pub fn give_back(&self, value: T, keep: usize) {
        let refused = {
            let mut stocked = lock(&self.0);
            if stocked.len() < keep {
                stocked.push(value);
                None
            } else {
                Some(value)
            }
        };
        // Freed outside the lock.
        drop(refused);
    }

    /// How many values it holds (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        lock(&self.0).len()
    }
}

/// Empties every thread's stock, for a trim of the heap after many clients left: boxes stocked
/// while they were connected lie all over the heap, and each pins the pages it sits on (with
/// 128 request buffers a thread, a third of what 4,000 clients had grown the heap by stayed
/// after they left). Traffic fills the stocks again as it needs.
pub fn release() {
    let mut stocks = lock(&STOCKS);
    stocks.retain(|stock| match stock.upgrade() {
        Some(stock) => {
            for shelf in lock(&stock).iter() {
                shelf.empty();
            }
            true
        }
        None => false,
    });
}

/// The tests that look at stocks, one at a time: `release` empties every thread's.
#[cfg(test)]
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    lock(&SERIAL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;

    #[test]
    fn each_type_has_its_own_shelf() {
        let _serial = serial();
        release();
        let (numbers, words) = (Shelf::<u32>::here(), Shelf::<String>::here());
        numbers.give_back(7, 4);
        words.give_back(String::from("seven"), 4);
        assert_eq!(Shelf::<u32>::here().len(), 1, "the same shelf, found again");
        assert_eq!(numbers.take(), Some(7));
        assert_eq!(numbers.take(), None, "one was stocked, one taken");
        assert_eq!(words.take().as_deref(), Some("seven"));
    }

    #[test]
    fn a_full_shelf_frees_what_comes_back() {
        let _serial = serial();
        release();
        let shelf = Shelf::<u64>::here();
        for n in 0..5 {
            shelf.give_back(n, 3);
        }
        assert_eq!(shelf.len(), 3);
    }

    #[test]
    fn a_box_comes_back_as_itself() {
        let _serial = serial();
        release();
        let shelf = Shelf::<Pin<Box<[u8; 64]>>>::here();
        let boxed = Box::pin([0u8; 64]);
        let at: *const [u8; 64] = &*boxed;
        shelf.give_back(boxed, 1);
        let again = shelf.take().expect("stocked");
        assert!(
            std::ptr::eq(&*again, at),
            "the same allocation, not a new one"
        );
    }

    #[test]
    fn release_empties_every_shelf() {
        let _serial = serial();
        let (a, b) = (Shelf::<u16>::here(), Shelf::<i16>::here());
        a.give_back(1, 4);
        b.give_back(1, 4);
        release();
        assert_eq!(a.len(), 0);
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn another_thread_has_its_own_stock() {
        let _serial = serial();
        release();
        Shelf::<u8>::here().give_back(1, 4);
        let there = std::thread::spawn(|| Shelf::<u8>::here().len())
            .join()
            .expect("thread");
        assert_eq!(there, 0);
        assert_eq!(Shelf::<u8>::here().len(), 1);
    }
}
