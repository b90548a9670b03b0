//! Who writes HTTPRoute status: one replica, elected through a `coordination.k8s.io/v1` Lease.
//! The pure part — given the Lease as last seen, what this replica does. The I/O is in
//! `status_writer.rs`.
//!
//! A thousand sidecars must not fight over one status: the holder renews the Lease every
//! `duration / 3`; every other replica only watches it and tries to take it once it has gone
//! `duration` without renewal. Steady state: one write per renewal, from one replica.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// The Lease as last seen (from a watch or a write's answer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseView {
    pub holder: Option<String>,
    pub renewed: Option<Timestamp>,
    pub duration: Duration,
    pub resource_version: Option<String>,
    pub transitions: i32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// There is no Lease: create it, holding it.
    Create,
    /// Ours: renew it (when due).
    Renew,
    /// Nobody holds it, or its holder stopped renewing: take it.
    Take,
    /// Another replica holds it; look again after this long at most.
    Follow { holder: String, recheck: Duration },
}

/// What `me` does about `lease` at `now`.
pub fn decide(lease: Option<&LeaseView>, me: &str, now: Timestamp) -> Step {
    let Some(lease) = lease else {
        return Step::Create;
    };
    match lease.holder.as_deref() {
        Some(holder) if holder == me => Step::Renew,
        None | Some("") => Step::Take,
        Some(holder) => {
            let expires = lease
                .renewed
                .and_then(|r| r.checked_add(lease.duration).ok());
            match expires {
                Some(at) if at > now => Step::Follow {
                    holder: holder.to_string(),
                    recheck: Duration::try_from(at.duration_since(now)).unwrap_or(lease.duration),
                },
                // Expired, or never renewed: the holder is gone.
                _ => Step::Take,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn held_by(holder: &str, renewed: i64) -> LeaseView {
        LeaseView {
            holder: Some(holder.into()),
            renewed: Some(at(renewed)),
            duration: Duration::from_secs(15),
            resource_version: Some("7".into()),
            transitions: 0,
        }
    }

    #[test]
    fn one_holder_at_a_time() {
        assert_eq!(decide(None, "a", at(0)), Step::Create);
        assert_eq!(decide(Some(&held_by("a", 0)), "a", at(100)), Step::Renew);
        assert_eq!(
            decide(Some(&held_by("b", 0)), "a", at(5)),
            Step::Follow {
                holder: "b".into(),
                recheck: Duration::from_secs(10)
            }
        );
        // Not renewed for its whole duration: taken over.
        assert_eq!(decide(Some(&held_by("b", 0)), "a", at(15)), Step::Take);
        let mut released = held_by("b", 0);
        released.holder = None;
        assert_eq!(decide(Some(&released), "a", at(1)), Step::Take);
        let mut never = held_by("b", 0);
        never.renewed = None;
        assert_eq!(decide(Some(&never), "a", at(1)), Step::Take);
    }
}
