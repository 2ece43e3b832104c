//! A small, pure, incremental Server-Sent Events parser (the WHATWG "event stream
//! interpretation" algorithm), fed with whatever byte pieces the socket yields.
//!
//! It owns nothing but bytes: no IO, no JSON, no clock. Lines are split in place over
//! one reusable buffer with `memchr` and event data is assembled in a second reusable
//! buffer, so after warm-up the hot path does not allocate. Events borrow from the
//! parser and are valid until the next call.
//!
//! Correct for any split of the byte stream: a piece may end inside a UTF-8 character
//! (the parser only splits on ASCII `\r`/`\n`, so characters are never cut) or between
//! the `\r` and `\n` of a CRLF (remembered in `skip_lf`). Line endings `\r\n`, `\n` and
//! `\r`; comments (`:`); `event:`; multi-line `data:` joined with `\n`; a leading BOM.
//! `id:` and `retry:` are parsed and ignored (a prober never reconnects).
//!
//! One deliberate departure from the WHATWG text: at end of stream a pending event
//! with no trailing blank line is still dispatched, because servers and proxies that
//! drop the final blank line exist and their last chunk (often `[DONE]` or the usage)
//! must not be lost.

use memchr::memchr2;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A hostile or broken stream exceeded a hard limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("SSE line longer than the limit of {limit} bytes")]
    LineTooLong { limit: usize },
    #[error("SSE event larger than the limit of {limit} bytes")]
    EventTooLarge { limit: usize },
}

/// One dispatched event. `event` is empty for the default type (`message`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    pub event: &'a [u8],
    pub data: &'a [u8],
}

impl Event<'_> {
    /// The OpenAI end-of-stream sentinel `data: [DONE]`.
    pub fn is_done(&self) -> bool {
        self.data.trim_ascii() == b"[DONE]"
    }
}

/// Incremental parser. Call [`feed`](Self::feed) with each piece of the body, then
/// [`next_event`](Self::next_event) until it returns `None`; at end of body call
/// [`end`](Self::end) and drain `next_event` once more.
#[derive(Debug)]
pub struct SseParser {
    /// Unconsumed input is `buf[pos..]`.
    buf: Vec<u8>,
    pos: usize,
    /// The previous line ended with `\r` as the last byte seen: a `\n` that starts the
    /// next piece belongs to that line ending, not to a new (blank) line.
    skip_lf: bool,
    bom_checked: bool,
    eof: bool,
    /// The data of the event being assembled (lines joined with `\n`).
    data: Vec<u8>,
    /// At least one `data` line was seen (an event may carry empty data).
    has_data: bool,
    event: Vec<u8>,
    /// The last call returned an event that borrows `data`/`event`: clear them first.
    dispatched: bool,
    max_line: usize,
    max_event: usize,
}

impl SseParser {
    /// A parser that fails on any line longer than `max_line` bytes or any event whose
    /// data is larger than `max_event` bytes.
    pub fn new(max_line: usize, max_event: usize) -> Self {
        SseParser {
            buf: Vec::with_capacity(8 * 1024),
            pos: 0,
            skip_lf: false,
            bom_checked: false,
            eof: false,
            data: Vec::with_capacity(1024),
            has_data: false,
            event: Vec::new(),
            dispatched: false,
            max_line,
            max_event,
        }
    }

    /// Appends a piece of the body. Consumed bytes are dropped first, so the buffer
    /// only ever holds one partial line plus the new piece.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos == self.buf.len() {
            self.buf.clear();
        } else if self.pos > 0 {
            self.buf.copy_within(self.pos.., 0);
            self.buf.truncate(self.buf.len() - self.pos);
        }
        self.pos = 0;
        self.buf.extend_from_slice(bytes);
    }

    /// Marks the end of the body: the last unterminated line and a pending event
    /// without a trailing blank line are delivered by the following `next_event` calls.
    pub fn end(&mut self) {
        self.eof = true;
    }

    /// The next complete event, `Ok(None)` when more input is needed (or, after
    /// [`end`](Self::end), when the stream is exhausted).
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, SseError> {
        if self.dispatched {
            self.dispatched = false;
            self.data.clear();
            self.event.clear();
            self.has_data = false;
        }
        loop {
            if !self.skip_bom() || !self.skip_pending_lf() {
                return Ok(None);
            }
            let rest = &self.buf[self.pos..];
            let (line_len, consumed) = match memchr2(b'\n', b'\r', rest) {
                Some(i) if rest[i] == b'\n' => (i, i + 1),
                Some(i) => match rest.get(i + 1) {
                    Some(b'\n') => (i, i + 2),
                    Some(_) => (i, i + 1),
                    None => {
                        self.skip_lf = true;
                        (i, i + 1)
                    }
                },
                None if self.eof && !rest.is_empty() => (rest.len(), rest.len()),
                None => {
                    if rest.len() > self.max_line {
                        return Err(SseError::LineTooLong {
                            limit: self.max_line,
                        });
                    }
                    if self.eof && self.has_data {
                        // The final event had no trailing blank line: deliver it.
                        self.dispatched = true;
                        return Ok(Some(Event {
                            event: &self.event,
                            data: &self.data,
                        }));
                    }
                    return Ok(None);
                }
            };
            if line_len > self.max_line {
                return Err(SseError::LineTooLong {
                    limit: self.max_line,
                });
            }
            let start = self.pos;
            self.pos += consumed;
            let line = &self.buf[start..start + line_len];
            if line.is_empty() {
                if self.has_data {
                    self.dispatched = true;
                    return Ok(Some(Event {
                        event: &self.event,
                        data: &self.data,
                    }));
                }
                // A blank line with no data resets the event type (WHATWG).
                self.event.clear();
                continue;
            }
            if line[0] == b':' {
                continue; // comment (keep-alive pings, mostly)
            }
            self.field(start, line_len)?;
        }
    }

    /// Skips a UTF-8 BOM at the start of the stream; false when more input is needed
    /// to tell.
    fn skip_bom(&mut self) -> bool {
        if !self.bom_checked {
            let rest = &self.buf[self.pos..];
            if rest.len() >= BOM.len() || self.eof {
                if rest.starts_with(BOM) {
                    self.pos += BOM.len();
                }
                self.bom_checked = true;
            } else if BOM.starts_with(rest) {
                return false;
            } else {
                self.bom_checked = true;
            }
        }
        true
    }

    /// Skips the LF of a CRLF split across reads; false when more input is needed to
    /// tell.
    fn skip_pending_lf(&mut self) -> bool {
        if self.skip_lf {
            match self.buf.get(self.pos) {
                Some(b'\n') => {
                    self.pos += 1;
                    self.skip_lf = false;
                }
                Some(_) => self.skip_lf = false,
                None if self.eof => self.skip_lf = false,
                None => return false,
            }
        }
        true
    }

    /// Applies the field line `buf[start..start + len]` (not blank, not a comment) to
    /// the pending event.
    fn field(&mut self, start: usize, len: usize) -> Result<(), SseError> {
        let line = &self.buf[start..start + len];
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &line[..0]),
        };
        match field {
            b"data" => {
                let extra = value.len() + usize::from(self.has_data);
                if self.data.len() + extra > self.max_event {
                    return Err(SseError::EventTooLarge {
                        limit: self.max_event,
                    });
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            // `id`, `retry` and unknown fields: ignored.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An owned copy of an event, for comparisons.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Owned {
        event: Vec<u8>,
        data: Vec<u8>,
    }

    /// Feeds `pieces` one by one, then ends the stream; returns the events and the
    /// error that stopped parsing, if any.
    fn parse_pieces<'a>(
        pieces: impl IntoIterator<Item = &'a [u8]>,
        limit: usize,
    ) -> (Vec<Owned>, Option<SseError>) {
        let mut p = SseParser::new(limit, limit);
        let mut out = Vec::new();
        let drain = |p: &mut SseParser, out: &mut Vec<Owned>| -> Result<(), SseError> {
            while let Some(ev) = p.next_event()? {
                out.push(Owned {
                    event: ev.event.to_vec(),
                    data: ev.data.to_vec(),
                });
            }
            Ok(())
        };
        for piece in pieces {
            p.feed(piece);
            if let Err(e) = drain(&mut p, &mut out) {
                return (out, Some(e));
            }
        }
        p.end();
        let err = drain(&mut p, &mut out).err();
        (out, err)
    }

    fn parse(bytes: &[u8]) -> Vec<Owned> {
        let (events, err) = parse_pieces([bytes], 1 << 20);
        assert_eq!(err, None);
        events
    }

    fn ev(event: &str, data: &str) -> Owned {
        Owned {
            event: event.as_bytes().to_vec(),
            data: data.as_bytes().to_vec(),
        }
    }

    #[test]
    fn openai_stream() {
        let s = b"data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n";
        let events = parse(s);
        assert_eq!(
            events,
            vec![ev("", "{\"a\":1}"), ev("", "{\"a\":2}"), ev("", "[DONE]")]
        );
    }

    #[test]
    fn every_line_ending() {
        let want = vec![ev("", "a"), ev("", "b"), ev("", "c")];
        assert_eq!(parse(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"), want);
        assert_eq!(parse(b"data: a\r\rdata: b\n\ndata: c\r\n\r\n"), want);
    }

    #[test]
    fn comments_event_types_ids_and_multiline_data() {
        let s =
            b": ping\n\nevent: error\nid: 7\nretry: 10\ndata: line one\ndata:line two\ndata\n\n";
        assert_eq!(parse(s), vec![ev("error", "line one\nline two\n")]);
    }

    #[test]
    fn event_type_resets_after_dispatch_and_blank_lines() {
        let s = b"event: x\ndata: 1\n\ndata: 2\n\nevent: y\n\ndata: 3\n\n";
        assert_eq!(parse(s), vec![ev("x", "1"), ev("", "2"), ev("", "3")]);
    }

    #[test]
    fn only_one_leading_space_is_stripped() {
        assert_eq!(parse(b"data:  two\n\n"), vec![ev("", " two")]);
        assert_eq!(parse(b"data:\n\n"), vec![ev("", "")]);
    }

    #[test]
    fn final_event_without_blank_line_is_delivered() {
        assert_eq!(
            parse(b"data: 1\n\ndata: [DONE]"),
            vec![ev("", "1"), ev("", "[DONE]")]
        );
        assert_eq!(
            parse(b"data: 1\n\ndata: 2\n"),
            vec![ev("", "1"), ev("", "2")]
        );
        assert_eq!(parse(b"data: 1\r"), vec![ev("", "1")]);
    }

    #[test]
    fn leading_bom_is_skipped_even_when_split() {
        let s = b"\xEF\xBB\xBFdata: x\n\n";
        assert_eq!(parse(s), vec![ev("", "x")]);
        let (events, _) = parse_pieces([&s[..1], &s[1..2], &s[2..]], 1024);
        assert_eq!(events, vec![ev("", "x")]);
    }

    #[test]
    fn crlf_split_between_cr_and_lf_is_one_line_ending() {
        let s = b"data: a\r\n\r\ndata: b\r\n\r\n";
        for cut in 0..=s.len() {
            let (events, err) = parse_pieces([&s[..cut], &s[cut..]], 1024);
            assert_eq!(err, None);
            assert_eq!(events, vec![ev("", "a"), ev("", "b")], "cut at {cut}");
        }
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let s = "data: {\"t\":\"é😀\"}\n\n".as_bytes();
        for cut in 0..=s.len() {
            let (events, _) = parse_pieces([&s[..cut], &s[cut..]], 1024);
            assert_eq!(events, vec![ev("", "{\"t\":\"é😀\"}")]);
        }
    }

    #[test]
    fn limits_stop_hostile_streams() {
        let long = [b'x'; 100];
        let mut s = b"data: ".to_vec();
        s.extend_from_slice(&long);
        // Unterminated and growing: caught before the line ends.
        let (_, err) = parse_pieces([&s[..]], 50);
        assert_eq!(err, Some(SseError::LineTooLong { limit: 50 }));
        // Terminated in one piece: caught too.
        s.extend_from_slice(b"\n\n");
        let (_, err) = parse_pieces([&s[..]], 50);
        assert_eq!(err, Some(SseError::LineTooLong { limit: 50 }));
        // Many short data lines in one event.
        let many = b"data: 0123456789\n".repeat(10);
        let mut p = SseParser::new(1024, 50);
        p.feed(&many);
        assert_eq!(p.next_event(), Err(SseError::EventTooLarge { limit: 50 }));
    }

    #[test]
    fn buffer_is_reused_across_feeds() {
        let mut p = SseParser::new(1024, 1024);
        for _ in 0..1000 {
            p.feed(b"data: {\"x\":\"abc\"}\n\n");
            assert!(p.next_event().unwrap().is_some());
            assert!(p.next_event().unwrap().is_none());
        }
        assert!(p.buf.capacity() <= 8 * 1024);
        assert!(p.data.capacity() <= 1024);
    }

    /// One event of a generated valid stream.
    #[derive(Debug, Clone)]
    struct GenEvent {
        event: Option<String>,
        id: Option<String>,
        comment: Option<String>,
        data: Vec<String>,
    }

    fn field_text() -> impl Strategy<Value = String> {
        // Any characters except line breaks, including multi-byte ones and leading
        // spaces (only one space is stripped after the colon).
        proptest::string::string_regex("[^\r\n]{0,12}").unwrap()
    }

    fn gen_event() -> impl Strategy<Value = GenEvent> {
        (
            proptest::option::of("[a-z]{1,8}"),
            proptest::option::of("[0-9]{1,4}"),
            proptest::option::of(field_text()),
            proptest::collection::vec(field_text(), 1..4),
        )
            .prop_map(|(event, id, comment, data)| GenEvent {
                event,
                id,
                comment,
                data,
            })
    }

    /// Serializes events with line endings chosen by `endings` (0 = LF, 1 = CRLF,
    /// 2 = CR), optionally dropping the final blank line.
    fn serialize(events: &[GenEvent], endings: &[u8], drop_last_blank: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut k = 0usize;
        let mut prev = 0u8;
        let mut eol = |out: &mut Vec<u8>| {
            let mut e = endings[k % endings.len()];
            k += 1;
            if prev == 2 && e == 0 {
                // CR then LF would be one CRLF ending: not the stream we mean.
                e = 1;
            }
            prev = e;
            out.extend_from_slice(match e {
                0 => b"\n".as_slice(),
                1 => b"\r\n",
                _ => b"\r",
            });
        };
        for (i, e) in events.iter().enumerate() {
            if let Some(c) = &e.comment {
                out.extend_from_slice(b":");
                out.extend_from_slice(c.as_bytes());
                eol(&mut out);
            }
            if let Some(t) = &e.event {
                out.extend_from_slice(format!("event: {t}").as_bytes());
                eol(&mut out);
            }
            if let Some(id) = &e.id {
                out.extend_from_slice(format!("id:{id}").as_bytes());
                eol(&mut out);
            }
            for d in &e.data {
                out.extend_from_slice(format!("data: {d}").as_bytes());
                eol(&mut out);
            }
            if !(drop_last_blank && i + 1 == events.len()) {
                eol(&mut out);
            }
        }
        out
    }

    fn split_at_points(bytes: &[u8], mut points: Vec<usize>) -> Vec<&[u8]> {
        points.iter_mut().for_each(|p| *p %= bytes.len() + 1);
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for p in points {
            pieces.push(&bytes[start..p]);
            start = p;
        }
        pieces.push(&bytes[start..]);
        pieces
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_split_of_a_valid_stream_gives_the_same_events(
            events in proptest::collection::vec(gen_event(), 0..6),
            endings in proptest::collection::vec(0u8..3, 1..5),
            drop_last_blank in any::<bool>(),
            points in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let bytes = serialize(&events, &endings, drop_last_blank);
            let want: Vec<Owned> = events
                .iter()
                .map(|e| Owned {
                    event: e.event.clone().unwrap_or_default().into_bytes(),
                    data: e.data.join("\n").into_bytes(),
                })
                .collect();
            let (whole, err) = parse_pieces([&bytes[..]], 1 << 20);
            prop_assert_eq!(err, None);
            prop_assert_eq!(&whole, &want);
            let (split, err) = parse_pieces(split_at_points(&bytes, points), 1 << 20);
            prop_assert_eq!(err, None);
            prop_assert_eq!(split, want);
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_any_split_agrees(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'\r'), Just(b'\n'), Just(b':'), Just(b' '),
                    Just(b'd'), Just(b'a'), Just(b't'), any::<u8>()
                ],
                0..300,
            ),
            points in proptest::collection::vec(any::<usize>(), 0..16),
            limit in 1usize..64,
        ) {
            let whole = parse_pieces([&bytes[..]], limit);
            let split = parse_pieces(split_at_points(&bytes, points), limit);
            prop_assert_eq!(whole, split);
        }
    }
}
