//! One status condition as weir reports it — of a route under a parent, of the Gateway, of a
//! listener — before it is written as JSON with its generation and transition time.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `Accepted`, `ResolvedRefs`, `Programmed`, `Conflicted`.
    pub kind: &'static str,
    pub status: bool,
    /// The spec's reason for this status (`Accepted`, `NotAllowedByListeners`, ...).
    pub reason: &'static str,
    pub message: String,
}
