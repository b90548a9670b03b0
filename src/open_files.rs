//! The process's open-file limit, raised to what `limits.max_connections` needs.
//!
//! Why: every client connection holds a descriptor, and a busy one an upstream connection's
//! too; the soft limit many systems start a process with (1,024) would cut weir off with
//! EMFILE at a tenth of its default 10,000 clients. The hard limit is the operator's decision
//! (systemd's `LimitNOFILE`, a container runtime's ulimits); weir only moves the soft one up
//! to it, as HAProxy and Go's runtime do, and says so when even that is short.

/// Listeners, the admin socket, config and state files, the runtime's own.
const SPARE: u64 = 256;

/// What was done, for the log.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The soft limit was enough already.
    Enough,
    Raised {
        from: u64,
        to: u64,
    },
    /// Raised as far as it goes (if at all): room for every client, not for an upstream
    /// connection each should all be busy at once.
    Tight {
        from: u64,
        hard: u64,
        busy: u64,
    },
    /// Raised as far as it goes (if at all), and not even every client fits.
    Short {
        from: u64,
        hard: u64,
        clients: u64,
    },
}

/// Raises the soft open-file limit to the hard one if `max_connections` needs more.
pub fn raise_for(max_connections: usize) -> std::io::Result<Outcome> {
    let clients = (max_connections as u64).saturating_add(SPARE);
    let busy = (max_connections as u64)
        .saturating_mul(2)
        .saturating_add(SPARE);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (from, hard) = (limit.rlim_cur, limit.rlim_max);
    if from >= busy {
        return Ok(Outcome::Enough);
    }
    if hard > from {
        limit.rlim_cur = hard;
        // SAFETY: setrlimit only reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(if hard < clients {
        Outcome::Short {
            from,
            hard,
            clients,
        }
    } else if hard < busy {
        Outcome::Tight { from, hard, busy }
    } else {
        Outcome::Raised { from, to: hard }
    })
}

/// `raise_for`, logged.
pub fn raise_and_log(max_connections: usize) {
    let now = |from: u64, hard: u64| {
        if from < hard {
            format!("raised from {from} to {hard}, the hard limit")
        } else {
            format!("{hard}, the hard limit")
        }
    };
    match raise_for(max_connections) {
        Ok(Outcome::Enough) => {}
        Ok(Outcome::Raised { from, to }) => {
            tracing::info!("open-file limit raised from {from} to {to} (the hard limit)")
        }
        Ok(Outcome::Tight { from, hard, busy }) => tracing::info!(
            "open-file limit {}: room for limits.max_connections = {max_connections} \
             clients, not for {busy} descriptors should every one of them wait on an \
             upstream at once",
            now(from, hard)
        ),
        Ok(Outcome::Short {
            from,
            hard,
            clients,
        }) => tracing::warn!(
            "open-file limit {}; limits.max_connections = {max_connections} needs at least \
             {clients}: past it, new connections fail (EMFILE). Raise the hard limit (systemd \
             LimitNOFILE, `ulimit -Hn`, the container's ulimits) or lower \
             limits.max_connections",
            now(from, hard)
        ),
        Err(err) => tracing::warn!(error = %err, "cannot read or raise the open-file limit"),
    }
}
