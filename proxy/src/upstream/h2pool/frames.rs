//! What the pool needs to know from an HTTP/2 upstream's frames, read as the bytes go by:
//! the server's SETTINGS_MAX_CONCURRENT_STREAMS and its GOAWAY. hyper keeps both to itself
//! (the limit only on the connection future, GOAWAY not at all), and the pool must stop
//! giving a connection new streams the moment either says so, not when hyper next polls.
//!
//! Pure: fed the server-to-weir byte stream in whatever pieces it arrives, it only reads frame
//! headers and the payloads of these two frame types, and skips the rest (RFC 9113 §4.1).

/// SETTINGS (RFC 9113 §6.5) and GOAWAY (§6.8) frame types.
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;
/// SETTINGS_MAX_CONCURRENT_STREAMS (§6.5.2).
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
const HEADER_LEN: usize = 9;
const SETTING_LEN: usize = 6;
const GOAWAY_FIXED_LEN: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The server's concurrent-stream limit, from a SETTINGS frame.
    MaxStreams(u32),
    /// A SETTINGS frame (not an ACK) was read whole.
    Settings,
    /// The server is going away; streams above `last_stream_id` were not processed.
    GoAway {
        last_stream_id: u32,
        error_code: u32,
    },
}

/// Where in the frame stream the next byte falls.
#[derive(Debug)]
enum At {
    Header,
    /// A SETTINGS payload: whole 6-byte entries are read, `remaining` bytes left.
    Settings {
        remaining: u32,
    },
    /// A GOAWAY payload's first 8 bytes, then the rest (debug data) skipped.
    GoAway {
        remaining: u32,
    },
    Skip {
        remaining: u32,
    },
}

#[derive(Debug)]
pub struct FrameWatch {
    at: At,
    /// A frame header, setting or GOAWAY prefix split across reads.
    partial: [u8; HEADER_LEN],
    partial_len: usize,
}

impl Default for FrameWatch {
    fn default() -> Self {
        FrameWatch {
            at: At::Header,
            partial: [0; HEADER_LEN],
            partial_len: 0,
        }
    }
}

impl FrameWatch {
    /// Reads `bytes`, the next piece of what the server sent, and reports each signal found.
    pub fn feed(&mut self, mut bytes: &[u8], mut signal: impl FnMut(Signal)) {
        while !bytes.is_empty() {
            match self.at {
                At::Header => {
                    let Some(head) = self.gather(&mut bytes, HEADER_LEN) else {
                        return;
                    };
                    let length = u32::from_be_bytes([0, head[0], head[1], head[2]]);
                    let (kind, flags) = (head[3], head[4]);
                    self.at = match kind {
                        SETTINGS if flags & ACK == 0 => At::Settings { remaining: length },
                        GOAWAY if length as usize >= GOAWAY_FIXED_LEN => {
                            At::GoAway { remaining: length }
                        }
                        _ => At::Skip { remaining: length },
                    };
                }
                At::Settings { remaining } if remaining as usize >= SETTING_LEN => {
                    let Some(entry) = self.gather(&mut bytes, SETTING_LEN) else {
                        return;
                    };
                    let id = u16::from_be_bytes([entry[0], entry[1]]);
                    let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
                    if id == MAX_CONCURRENT_STREAMS {
                        signal(Signal::MaxStreams(value));
                    }
                    self.at = At::Settings {
                        remaining: remaining - SETTING_LEN as u32,
                    };
                }
                // A length that is not a multiple of 6 is the server's protocol error; hyper
                // will close the connection over it. Skip what is left.
                At::Settings { remaining } => self.at = At::Skip { remaining },
                At::GoAway { remaining } => {
                    let Some(fixed) = self.gather(&mut bytes, GOAWAY_FIXED_LEN) else {
                        return;
                    };
                    // The reserved bit is ignored (§6.8).
                    let last_stream_id =
                        u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]) & 0x7fff_ffff;
                    let error_code = u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
                    signal(Signal::GoAway {
                        last_stream_id,
                        error_code,
                    });
                    self.at = At::Skip {
                        remaining: remaining - GOAWAY_FIXED_LEN as u32,
                    };
                }
                At::Skip { remaining } => {
                    let skipped = bytes.len().min(remaining as usize);
                    bytes = &bytes[skipped..];
                    self.at = At::Skip {
                        remaining: remaining - skipped as u32,
                    };
                }
            }
            match self.at {
                At::Settings { remaining: 0 } => {
                    signal(Signal::Settings);
                    self.at = At::Header;
                }
                At::Skip { remaining: 0 } => self.at = At::Header,
                _ => {}
            }
        }
    }

    /// `want` bytes, from what was kept of an earlier read and then from `bytes`; None (and
    /// kept) while they are not all here yet.
    fn gather(&mut self, bytes: &mut &[u8], want: usize) -> Option<[u8; HEADER_LEN]> {
        let take = (want - self.partial_len).min(bytes.len());
        self.partial[self.partial_len..self.partial_len + take].copy_from_slice(&bytes[..take]);
        self.partial_len += take;
        *bytes = &bytes[take..];
        if self.partial_len < want {
            return None;
        }
        self.partial_len = 0;
        Some(self.partial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = len.to_be_bytes()[1..].to_vec();
        out.extend([kind, flags]);
        out.extend(stream.to_be_bytes());
        out.extend(payload);
        out
    }

    fn settings(entries: &[(u16, u32)]) -> Vec<u8> {
        let payload: Vec<u8> = entries
            .iter()
            .flat_map(|(id, v)| id.to_be_bytes().into_iter().chain(v.to_be_bytes()))
            .collect();
        frame(SETTINGS, 0, 0, &payload)
    }

    fn goaway(last: u32, code: u32, debug: &[u8]) -> Vec<u8> {
        let mut payload = last.to_be_bytes().to_vec();
        payload.extend(code.to_be_bytes());
        payload.extend(debug);
        frame(GOAWAY, 0, 0, &payload)
    }

    /// A server's stream: its SETTINGS, an ACK, some HEADERS and DATA, a new limit, a GOAWAY.
    fn stream() -> Vec<u8> {
        let mut s = settings(&[(0x1, 4096), (0x3, 10), (0x4, 65535)]);
        s.extend(frame(SETTINGS, ACK, 0, &[]));
        s.extend(frame(0x1, 0x4, 1, &[0x88]));
        // A DATA frame whose payload looks like a SETTINGS header: it must be skipped whole.
        s.extend(frame(0x0, 0x1, 1, &settings(&[(0x3, 999)])));
        s.extend(settings(&[(0x3, 250)]));
        s.extend(goaway(0x8000_0007, 0, b"shutting down"));
        s
    }

    const EXPECTED: [Signal; 5] = [
        Signal::MaxStreams(10),
        Signal::Settings,
        Signal::MaxStreams(250),
        Signal::Settings,
        Signal::GoAway {
            last_stream_id: 7,
            error_code: 0,
        },
    ];

    #[test]
    fn finds_the_stream_limit_and_goaway_and_skips_every_other_payload() {
        let mut seen = Vec::new();
        FrameWatch::default().feed(&stream(), |s| seen.push(s));
        assert_eq!(seen, EXPECTED);
    }

    #[test]
    fn the_same_signals_whatever_the_bytes_are_split_into() {
        let bytes = stream();
        for size in [1, 2, 5, 6, 7, 9, 13, 64] {
            let mut watch = FrameWatch::default();
            let mut seen = Vec::new();
            for piece in bytes.chunks(size) {
                watch.feed(piece, |s| seen.push(s));
            }
            assert_eq!(seen, EXPECTED, "pieces of {size}");
        }
    }

    #[test]
    fn a_settings_ack_says_nothing_and_an_empty_settings_frame_only_that_it_came() {
        let mut bytes = frame(SETTINGS, ACK, 0, &[]);
        bytes.extend(frame(0x8, 0, 0, &[0, 0, 1, 0]));
        bytes.extend(settings(&[]));
        let mut seen = Vec::new();
        FrameWatch::default().feed(&bytes, |s| seen.push(s));
        assert_eq!(seen, [Signal::Settings]);
    }

    #[test]
    fn a_malformed_settings_length_is_skipped_and_the_next_frame_still_read() {
        // 8 bytes: one whole setting and 2 stray bytes.
        let mut bytes = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 5, 0xff, 0xff]);
        bytes.extend(goaway(3, 2, &[]));
        let mut seen = Vec::new();
        FrameWatch::default().feed(&bytes, |s| seen.push(s));
        assert_eq!(
            seen,
            [
                Signal::MaxStreams(5),
                Signal::GoAway {
                    last_stream_id: 3,
                    error_code: 2
                }
            ]
        );
    }
}
