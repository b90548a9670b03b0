//! One direction of a stream: the frames one side sends on it, as §8.1 orders them.

/// How far one side has got in sending its message on a stream (§8.1): zero or more
/// informational (1xx) heads, one head, DATA, and optionally trailers; END_STREAM on the last
/// frame. A stream is two of these, one a direction, plus whether it was reset (see
/// [`Stream`](super::Stream)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// Nothing sent yet.
    Idle,
    /// Informational heads only: the final head is still to come.
    Interim,
    /// The head sent, without END_STREAM: DATA, then trailers, may follow.
    Open,
    /// END_STREAM sent: nothing more comes this way.
    Ended,
}

impl Half {
    /// Whether the head (request headers, or a final response) has been sent.
    pub fn has_head(self) -> bool {
        matches!(self, Half::Open | Half::Ended)
    }

    /// A HEADERS frame that is not informational: the head, or trailers after it. Trailers
    /// must end the stream: a HEADERS without END_STREAM after the head makes the message
    /// malformed (§8.1).
    pub(super) fn headers(self, end_stream: bool) -> Result<Half, &'static str> {
        match self {
            Half::Idle | Half::Interim => Ok(if end_stream { Half::Ended } else { Half::Open }),
            Half::Open if end_stream => Ok(Half::Ended),
            Half::Open => {
                Err("HEADERS after the head without END_STREAM (trailers end the stream, §8.1)")
            }
            Half::Ended => Err("HEADERS after END_STREAM"),
        }
    }

    /// An informational (1xx) head: only before the final head (§8.1). END_STREAM on one is
    /// the caller's to refuse, since that frame still ends the direction.
    pub(super) fn informational(self) -> Result<Half, &'static str> {
        match self {
            Half::Idle | Half::Interim => Ok(Half::Interim),
            Half::Open => Err("an informational (1xx) head after the final head (§8.1)"),
            Half::Ended => Err("HEADERS after END_STREAM"),
        }
    }

    /// A DATA frame: only between the head and END_STREAM (§8.1).
    pub(super) fn data(self, end_stream: bool) -> Result<Half, &'static str> {
        match self {
            Half::Idle | Half::Interim => Err("DATA before the head (§8.1)"),
            Half::Open => Ok(if end_stream { Half::Ended } else { Half::Open }),
            Half::Ended => Err("DATA after END_STREAM"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Half::*;
    use super::*;

    #[test]
    fn a_message_is_interim_heads_then_a_head_then_data_then_trailers() {
        assert_eq!(Idle.informational(), Ok(Interim));
        assert_eq!(Interim.informational(), Ok(Interim));
        assert_eq!(Interim.headers(false), Ok(Open));
        assert_eq!(Open.data(false), Ok(Open));
        assert_eq!(Open.headers(true), Ok(Ended));
    }

    #[test]
    fn end_stream_ends_the_direction_on_any_frame_that_carries_it() {
        assert_eq!(Idle.headers(true), Ok(Ended));
        assert_eq!(Interim.headers(true), Ok(Ended));
        assert_eq!(Open.data(true), Ok(Ended));
        assert_eq!(Open.headers(true), Ok(Ended));
    }

    #[test]
    fn out_of_order_frames_are_refused() {
        assert!(Idle.data(false).is_err());
        assert!(Interim.data(true).is_err());
        assert!(Open.headers(false).is_err());
        assert!(Open.informational().is_err());
        assert!(Ended.headers(true).is_err());
        assert!(Ended.data(false).is_err());
        assert!(Ended.informational().is_err());
    }

    #[test]
    fn has_head_once_the_final_head_is_sent() {
        assert_eq!(
            [Idle, Interim, Open, Ended].map(Half::has_head),
            [false, false, true, true]
        );
    }
}
