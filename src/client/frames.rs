//! A streamed answer's framing, whatever the wire: SSE (`client::sse`) or AWS's binary
//! event stream (Bedrock; each frame's CRCs checked by `client::auth::event_stream`),
//! both read as [`Event`]s: an event-stream frame becomes an event named by its
//! `:event-type` (an exception frame by its `:exception-type`) with its payload as the
//! data; an `error` frame, or a frame that fails its checks, ends the stream with the
//! reason.

use super::auth::event_stream::{Decoder, Message};
use super::provider::Framing;
use super::sse::{Event, SseParser};

/// The reader of one stream's frames.
pub enum Frames {
    Sse(SseParser),
    EventStream {
        decoder: Decoder,
        /// The frame the last event borrows from.
        current: Option<Message>,
        max: usize,
        ended: bool,
    },
}

impl Frames {
    /// A reader of `framing` that fails on a line, event or frame larger than `max`.
    pub fn new(framing: Framing, max: usize) -> Frames {
        match framing {
            Framing::Sse => Frames::Sse(SseParser::new(max, max)),
            Framing::EventStream => Frames::EventStream {
                decoder: Decoder::new(),
                current: None,
                max,
                ended: false,
            },
        }
    }

    /// Adds a piece of the body.
    pub fn feed(&mut self, bytes: &[u8]) {
        match self {
            Frames::Sse(p) => p.feed(bytes),
            Frames::EventStream { decoder, .. } => decoder.push(bytes),
        }
    }

    /// The body has ended.
    pub fn end(&mut self) {
        match self {
            Frames::Sse(p) => p.end(),
            Frames::EventStream { ended, .. } => *ended = true,
        }
    }

    /// The next complete event, valid until the next call; the error says what broke.
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, String> {
        match self {
            Frames::Sse(p) => p
                .next_event()
                .map_err(|e| format!("{e} (limits.max_line_bytes)")),
            Frames::EventStream {
                decoder,
                current,
                max,
                ended,
            } => {
                let Some(m) = decoder.next().map_err(|e| e.to_string())? else {
                    if decoder.buffered() > *max {
                        return Err(format!(
                            "event-stream frame larger than limits.max_line_bytes ({max} bytes)"
                        ));
                    }
                    if *ended && decoder.buffered() > 0 {
                        return Err(format!(
                            "the stream ended inside an event-stream frame ({} bytes of it)",
                            decoder.buffered()
                        ));
                    }
                    return Ok(None);
                };
                let m = current.insert(m);
                let name = match m.message_type() {
                    Some("exception") => m.exception_type(),
                    Some("error") => {
                        return Err(format!(
                            "event-stream error {}: {}",
                            m.header_str(":error-code").unwrap_or("without a code"),
                            m.header_str(":error-message").unwrap_or("")
                        ));
                    }
                    _ => m.event_type(),
                };
                Ok(Some(Event {
                    event: name.unwrap_or("").as_bytes(),
                    data: &m.payload,
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::auth::event_stream::encode;

    #[test]
    fn frames_split_anywhere_become_named_events() {
        let a = encode(
            &[(":message-type", "event"), (":event-type", "messageStart")],
            br#"{"role":"assistant"}"#,
        );
        let b = encode(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            br#"{"message":"slow down"}"#,
        );
        let all = [a, b].concat();
        for cut in 0..all.len() {
            let mut f = Frames::new(Framing::EventStream, 1 << 20);
            let mut got = Vec::new();
            for piece in [&all[..cut], &all[cut..]] {
                f.feed(piece);
                while let Some(ev) = f.next_event().unwrap() {
                    got.push((ev.event.to_vec(), ev.data.to_vec()));
                }
            }
            assert_eq!(got.len(), 2, "cut {cut}");
            assert_eq!(got[0].0, b"messageStart");
            assert_eq!(got[1].0, b"throttlingException");
        }
    }

    #[test]
    fn a_bad_crc_and_a_cut_frame_are_errors() {
        let mut frame = encode(&[(":event-type", "metadata")], b"{}");
        let last = frame.len() - 1;
        frame[last] ^= 0xff;
        let mut f = Frames::new(Framing::EventStream, 1 << 20);
        f.feed(&frame);
        assert!(f.next_event().unwrap_err().contains("message CRC"));
        let frame = encode(&[(":event-type", "metadata")], b"{}");
        let mut f = Frames::new(Framing::EventStream, 1 << 20);
        f.feed(&frame[..frame.len() - 3]);
        assert!(f.next_event().unwrap().is_none());
        f.end();
        assert!(f.next_event().unwrap_err().contains("ended inside"));
    }
}
