//! Where a new stream goes: pure, over a snapshot of the pool's connections.

/// One open connection as the choice sees it.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    pub in_flight: u32,
    /// Streams it has carried: how near it is to a server's cap on requests a connection.
    pub served: u64,
    /// The lower of weir's cap and the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub limit: u32,
}

/// The pool as the choice sees it.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: u32,
    /// weir's cap on streams per connection: what a connection being opened is counted for
    /// until its server's SETTINGS say otherwise.
    pub streams_per_connection: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// A stream on this connection (an index into the snapshot).
    Use(usize),
    /// Open a connection for it.
    Open,
    /// Every connection is at its limit and no more may open, or enough are opening already.
    Wait,
}

/// Which connection with a free stream a request prefers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefer {
    /// The oldest: streams packed onto as few connections as the load needs, the way Envoy's
    /// and HAProxy's pools fill one connection before the next, and a lightly loaded pool's
    /// newest connections go idle (and are closed). Why not the least loaded: spread over
    /// every connection, one client connection's streams came back on several, each in reads
    /// of their own, and were written to the client in as many pieces. Packed, the responses
    /// a client waits for come in fewer, larger reads and go out in fewer writes: h2c to nginx
    /// h2c upstreams (h2load -c 64 -m 10, one worker) went from 0.75 to 0.47 send and receive
    /// calls a request, and 7.2 to 6.4 µs of CPU a request (benches/README, session 24).
    Oldest,
    /// The one that has carried the fewest streams: for a request a server refused when it
    /// closed a connection at its cap on requests (nginx's `keepalive_requests`, 1,000 by
    /// default). The other connections near their own cap would likely refuse it again; the
    /// youngest is the furthest from it.
    Youngest,
}

/// A connection with a free stream, by `prefer`. With none, a new connection if the cap allows
/// and the connections already opening will not carry everyone who waits (`waiting` counts
/// this request too).
pub fn pick(
    conns: impl IntoIterator<Item = Load>,
    opening: u32,
    waiting: u32,
    limits: Limits,
    prefer: Prefer,
) -> Pick {
    let key = |c: &Load| match prefer {
        // Equal keys: the first with room, in the pool's order (oldest first).
        Prefer::Oldest => 0,
        Prefer::Youngest => c.served,
    };
    let mut open = 0u64;
    let mut best: Option<(usize, u64)> = None;
    for (i, c) in conns.into_iter().enumerate() {
        open += 1;
        if c.in_flight < c.limit && best.is_none_or(|(_, least)| key(&c) < least) {
            best = Some((i, key(&c)));
        }
    }
    if let Some((i, _)) = best {
        return Pick::Use(i);
    }
    let total = open + u64::from(opening);
    let coming = u64::from(opening) * u64::from(limits.streams_per_connection.max(1));
    if total < u64::from(limits.max_connections) && coming < u64::from(waiting) {
        Pick::Open
    } else {
        Pick::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_connections: 3,
        streams_per_connection: 10,
    };

    fn load(in_flight: u32, limit: u32) -> Load {
        Load {
            in_flight,
            served: 0,
            limit,
        }
    }

    /// `pick` for a request the pool has not refused.
    fn pick(
        conns: impl IntoIterator<Item = Load>,
        opening: u32,
        waiting: u32,
        limits: Limits,
    ) -> Pick {
        super::pick(conns, opening, waiting, limits, Prefer::Oldest)
    }

    #[test]
    fn an_empty_pool_opens_its_first_connection() {
        assert_eq!(pick([], 0, 1, LIMITS), Pick::Open);
    }

    #[test]
    fn new_streams_fill_the_oldest_connection_with_room_first() {
        // The first two are full (one at the server's lower limit); the third has room, and
        // takes the stream though the fourth is less loaded.
        let conns = [load(10, 10), load(4, 4), load(7, 10), load(3, 10)];
        assert_eq!(pick(conns, 0, 1, LIMITS), Pick::Use(2));
        assert_eq!(pick([load(0, 10), load(9, 10)], 0, 1, LIMITS), Pick::Use(0));
    }

    #[test]
    fn the_servers_lower_limit_counts_as_full() {
        // weir's cap is 10, the server said 4.
        let conns = [load(4, 4), load(2, 10)];
        assert_eq!(pick(conns, 0, 1, LIMITS), Pick::Use(1));
        assert_eq!(pick([load(4, 4)], 0, 1, LIMITS), Pick::Open);
        // A server that allows no stream for now: another connection.
        assert_eq!(pick([load(0, 0)], 0, 1, LIMITS), Pick::Open);
    }

    #[test]
    fn when_every_connection_is_full_one_more_opens_up_to_the_cap() {
        assert_eq!(pick([load(10, 10)], 0, 1, LIMITS), Pick::Open);
        assert_eq!(pick([load(10, 10), load(10, 10)], 1, 1, LIMITS), Pick::Wait);
        assert_eq!(
            pick([load(10, 10), load(10, 10), load(10, 10)], 0, 1, LIMITS),
            Pick::Wait
        );
    }

    #[test]
    fn a_connection_being_opened_is_counted_for_the_requests_it_will_carry() {
        // One opening carries 10: the 10th waiter waits for it, the 11th opens another.
        assert_eq!(pick([], 1, 10, LIMITS), Pick::Wait);
        assert_eq!(pick([], 1, 11, LIMITS), Pick::Open);
        assert_eq!(pick([], 3, 100, LIMITS), Pick::Wait, "the cap holds");
    }

    #[test]
    fn a_refused_request_goes_to_the_connection_that_has_carried_fewest_streams_with_room() {
        let served = |in_flight, served, limit| Load {
            in_flight,
            served,
            limit,
        };
        // The oldest is the first (900 carried, near a 1,000 cap); the third has carried
        // fewest but is full; the second is the youngest with room.
        let conns = [served(2, 900, 10), served(9, 120, 10), served(10, 40, 10)];
        assert_eq!(pick(conns, 0, 1, LIMITS), Pick::Use(0));
        assert_eq!(
            super::pick(conns, 0, 1, LIMITS, Prefer::Youngest),
            Pick::Use(1)
        );
        // None with room: it opens one, as any request would.
        let full = [served(10, 900, 10), served(10, 40, 10)];
        assert_eq!(
            super::pick(full, 0, 1, LIMITS, Prefer::Youngest),
            Pick::Open
        );
    }
}
