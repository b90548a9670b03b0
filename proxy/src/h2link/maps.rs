//! The header maps of HTTP/2 messages, from a per-thread stock (`stock::Shelf`): a map is
//! taken when a section becomes one (`header_map`) and given back, cleared, once its fields
//! are on the wire — a response's head and trailers after the client's connection encoded
//! them, a request's head once the upstream answered it.
//!
//! Why: a gRPC call makes three maps (request head, response head, trailers), two allocations
//! each. Hundreds of calls in flight on a worker free them in bursts, past glibc's per-thread
//! cache (7 blocks of a size), so most of those allocations went to its main bins: with the
//! maps' own building and dropping, about 15 % of a call's instructions.

use http::HeaderMap;

use crate::stock::Shelf;

/// Maps kept in stock per thread at most: enough for the bursts of answers a worker's
/// connections deliver at once. About 2 KiB each (a usual head's room), so at most about
/// 512 KiB a worker, and only after that many messages were in flight at once; the trim after
/// many clients leave empties the stocks (`stock::release`). With 640 gRPC calls in flight,
/// 128 missed 0.37 maps a call, 256 0.16, 512 0.06 (callgrind, benches/README "session 23").
pub const STOCK: usize = 256;

/// A map that has room for more fields than this is freed rather than kept: one very large
/// head does not make a stocked map that large for good.
const KEEP_CAPACITY: usize = 32;

thread_local! {
    /// This thread's stock of cleared maps.
    static SHELF: Shelf<HeaderMap> = Shelf::here();
}

/// An empty map with room for `fields` fields: from this thread's stock, or new.
pub fn take(fields: usize) -> HeaderMap {
    match SHELF.try_with(Shelf::take).ok().flatten() {
        Some(mut map) => {
            if map.capacity() < fields {
                map.reserve(fields);
            }
            map
        }
        None => HeaderMap::with_capacity(fields),
    }
}

/// Returns `map` to this thread's stock, cleared: its values (and the buffers they are sliced
/// from) go now; its room stays for the next message.
pub fn give_back(mut map: HeaderMap) {
    if map.capacity() > KEEP_CAPACITY {
        return;
    }
    map.clear();
    // At thread exit the stock is gone: the map is simply freed.
    let _ = SHELF.try_with(|shelf| shelf.give_back(map, STOCK));
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{HeaderValue, CONTENT_TYPE};

    #[test]
    fn a_map_given_back_comes_back_empty_with_its_room() {
        let _serial = crate::stock::serial();
        crate::stock::release();
        let mut map = take(12);
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        let room = map.capacity();
        assert!(room >= 12);
        give_back(map);
        let again = take(4);
        assert!(again.is_empty(), "cleared before it was stocked");
        assert_eq!(again.capacity(), room, "the same map's room, not a new one");
    }

    #[test]
    fn a_map_takes_more_room_when_asked_and_a_huge_one_is_not_kept() {
        let _serial = crate::stock::serial();
        crate::stock::release();
        give_back(take(2));
        assert!(take(20).capacity() >= 20, "grown to what is asked");
        give_back(take(200));
        let fresh = take(1);
        assert!(fresh.capacity() < 200, "a map past KEEP_CAPACITY was freed");
    }
}
