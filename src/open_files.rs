//! The process's open-file limit, raised to what `limits.max_connections` needs.
//!
//! Why: every client connection holds a descriptor, and so does the upstream connection it
//! uses; the soft limit many systems start a process with (1,024) would cut weir off with
//! EMFILE at a tenth of its default 10,000 clients. The hard limit is the operator's
//! decision (systemd's `LimitNOFILE`, a container runtime's ulimits); weir only moves the soft
//! one up to it, as HAProxy and Go's runtime do, and says so when even that is short.

/// Descriptors one client connection may hold: itself and an upstream connection.
const PER_CONNECTION: u64 = 2;
/// Listeners, the admin socket, config and state files, the runtime's own.
const SPARE: u64 = 256;

/// What was done, for the log.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The soft limit was enough already.
    Enough {
        soft: u64,
    },
    Raised {
        from: u64,
        to: u64,
    },
    /// Raised as far as it goes (if at all), and even the hard limit is below `need`:
    /// accepts may fail with EMFILE past it.
    Short {
        from: u64,
        hard: u64,
        need: u64,
    },
}

/// Raises the soft open-file limit to the hard one if `max_connections` needs more.
pub fn raise_for(max_connections: usize) -> std::io::Result<Outcome> {
    let need = (max_connections as u64)
        .saturating_mul(PER_CONNECTION)
        .saturating_add(SPARE);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (soft, hard) = (limit.rlim_cur, limit.rlim_max);
    if soft >= need {
        return Ok(Outcome::Enough { soft });
    }
    if hard > soft {
        limit.rlim_cur = hard;
        // SAFETY: setrlimit only reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    if hard < need {
        return Ok(Outcome::Short {
            from: soft,
            hard,
            need,
        });
    }
    Ok(Outcome::Raised {
        from: soft,
        to: hard,
    })
}

/// `raise_for`, logged.
pub fn raise_and_log(max_connections: usize) {
    match raise_for(max_connections) {
        Ok(Outcome::Enough { .. }) => {}
        Ok(Outcome::Raised { from, to }) => {
            tracing::info!("open-file limit raised from {from} to {to} (the hard limit)")
        }
        Ok(Outcome::Short { from, hard, need }) => {
            let raised = if from < hard {
                format!("raised from {from} to {hard}, the hard limit")
            } else {
                format!("{hard}, the hard limit")
            };
            tracing::warn!(
                "open-file limit {raised}; limits.max_connections = {max_connections} needs \
                 about {need}: past it, new connections fail (EMFILE). Raise the hard limit \
                 (systemd LimitNOFILE, `ulimit -Hn`, the container's ulimits) or lower \
                 limits.max_connections"
            )
        }
        Err(err) => tracing::warn!(error = %err, "cannot read or raise the open-file limit"),
    }
}
