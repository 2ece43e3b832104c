//! AWS's binary event-stream framing (`application/vnd.amazon.eventstream`), as Bedrock's
//! `ConverseStream` answers: each message is a prelude (total length, headers length,
//! the prelude's CRC32), typed headers, a payload and the CRC32 of everything before it.
//! [`Decoder`] takes bytes as they arrive and yields whole, checked messages; [`encode`]
//! writes one (for the mock).

use thiserror::Error;

/// Prelude (two lengths and their CRC) plus the message CRC.
const FRAME_OVERHEAD: usize = 16;
const PRELUDE: usize = 12;
/// The largest headers section and message AWS's own decoders accept.
pub const MAX_HEADERS_BYTES: usize = 128 * 1024;
pub const MAX_MESSAGE_BYTES: usize = 24 * 1024 * 1024 + MAX_HEADERS_BYTES + FRAME_OVERHEAD;

/// Header value types of the framing.
const TYPE_STRING: u8 = 7;

/// A header's value, by its wire type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Bytes(Vec<u8>),
    String(String),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// One decoded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub headers: Vec<(String, HeaderValue)>,
    pub payload: Vec<u8>,
}

impl Message {
    /// A string header's value (`None` when absent or of another type).
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }

    /// `:message-type`: `event`, `exception` or `error`.
    pub fn message_type(&self) -> Option<&str> {
        self.header_str(":message-type")
    }

    /// `:event-type` of an event (`contentBlockDelta`, `metadata`, ...).
    pub fn event_type(&self) -> Option<&str> {
        self.header_str(":event-type")
    }

    /// `:exception-type` of an exception (`throttlingException`, ...).
    pub fn exception_type(&self) -> Option<&str> {
        self.header_str(":exception-type")
    }
}

/// Why a stream cannot be read on: the framing is broken, so nothing after it can be
/// trusted.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EventStreamError {
    #[error(
        "event-stream prelude CRC mismatch (computed {computed:#010x}, frame says {sent:#010x})"
    )]
    PreludeCrc { computed: u32, sent: u32 },
    #[error(
        "event-stream message CRC mismatch (computed {computed:#010x}, frame says {sent:#010x})"
    )]
    MessageCrc { computed: u32, sent: u32 },
    #[error(
        "event-stream frame lengths are impossible: total {total} bytes, headers {headers} bytes \
         (a frame is 16 to {MAX_MESSAGE_BYTES} bytes, headers at most {MAX_HEADERS_BYTES})"
    )]
    Length { total: usize, headers: usize },
    #[error("event-stream header malformed: {0}")]
    Header(String),
}

/// The incremental decoder: [`Decoder::push`] bytes as they arrive, then call
/// [`Decoder::next`] until it returns `Ok(None)` (a partial frame waits for more).
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held that are not yet a whole message.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next whole message, `Ok(None)` when more bytes are needed. An error leaves the
    /// bytes in place: the stream is broken and every later call fails the same way.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Message>, EventStreamError> {
        if self.buf.len() < PRELUDE {
            return Ok(None);
        }
        let total = be_u32(&self.buf[0..4]) as usize;
        let headers_len = be_u32(&self.buf[4..8]) as usize;
        let sent = be_u32(&self.buf[8..12]);
        let computed = crc32fast::hash(&self.buf[..8]);
        if computed != sent {
            return Err(EventStreamError::PreludeCrc { computed, sent });
        }
        if !(FRAME_OVERHEAD..=MAX_MESSAGE_BYTES).contains(&total)
            || headers_len > MAX_HEADERS_BYTES
            || headers_len > total - FRAME_OVERHEAD
        {
            return Err(EventStreamError::Length {
                total,
                headers: headers_len,
            });
        }
        if self.buf.len() < total {
            return Ok(None);
        }
        let sent = be_u32(&self.buf[total - 4..total]);
        let computed = crc32fast::hash(&self.buf[..total - 4]);
        if computed != sent {
            return Err(EventStreamError::MessageCrc { computed, sent });
        }
        let headers = parse_headers(&self.buf[PRELUDE..PRELUDE + headers_len])?;
        let payload = self.buf[PRELUDE + headers_len..total - 4].to_vec();
        self.buf.drain(..total);
        Ok(Some(Message { headers, payload }))
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Reads `n` bytes at `*at`, or says which header ran past the end.
fn take<'a>(
    block: &'a [u8],
    at: &mut usize,
    n: usize,
    name: &str,
) -> Result<&'a [u8], EventStreamError> {
    let end = at
        .checked_add(n)
        .filter(|&end| end <= block.len())
        .ok_or_else(|| {
            EventStreamError::Header(format!("header {name:?} runs past the headers section"))
        })?;
    let out = &block[*at..end];
    *at = end;
    Ok(out)
}

fn parse_headers(block: &[u8]) -> Result<Vec<(String, HeaderValue)>, EventStreamError> {
    let mut headers = Vec::new();
    let mut at = 0;
    while at < block.len() {
        let name_len = take(block, &mut at, 1, "")?[0] as usize;
        let name = take(block, &mut at, name_len, "")?;
        let name = String::from_utf8(name.to_vec())
            .map_err(|_| EventStreamError::Header("a header name is not UTF-8".into()))?;
        let kind = take(block, &mut at, 1, &name)?[0];
        let value = read_value(block, &mut at, kind, &name)?;
        headers.push((name, value));
    }
    Ok(headers)
}

fn read_value(
    block: &[u8],
    at: &mut usize,
    kind: u8,
    name: &str,
) -> Result<HeaderValue, EventStreamError> {
    let mut fixed = |n: usize| -> Result<[u8; 8], EventStreamError> {
        let mut out = [0u8; 8];
        out[8 - n..].copy_from_slice(take(block, at, n, name)?);
        Ok(out)
    };
    Ok(match kind {
        0 => HeaderValue::Bool(true),
        1 => HeaderValue::Bool(false),
        2 => HeaderValue::Byte(i64::from_be_bytes(fixed(1)?) as i8),
        3 => HeaderValue::Short(i64::from_be_bytes(fixed(2)?) as i16),
        4 => HeaderValue::Int(i64::from_be_bytes(fixed(4)?) as i32),
        5 => HeaderValue::Long(i64::from_be_bytes(fixed(8)?)),
        8 => HeaderValue::Timestamp(i64::from_be_bytes(fixed(8)?)),
        6 | TYPE_STRING => {
            let len = take(block, at, 2, name)?;
            let len = u16::from_be_bytes([len[0], len[1]]) as usize;
            let bytes = take(block, at, len, name)?.to_vec();
            if kind == 6 {
                HeaderValue::Bytes(bytes)
            } else {
                HeaderValue::String(String::from_utf8(bytes).map_err(|_| {
                    EventStreamError::Header(format!("header {name:?}'s string is not UTF-8"))
                })?)
            }
        }
        9 => {
            let mut uuid = [0u8; 16];
            uuid.copy_from_slice(take(block, at, 16, name)?);
            HeaderValue::Uuid(uuid)
        }
        other => {
            return Err(EventStreamError::Header(format!(
                "header {name:?} has unknown value type {other}"
            )));
        }
    })
}

/// One message with string headers (names and values up to 255 and 65,535 bytes: longer
/// is a bug of the caller, and panics).
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in headers {
        block.push(u8::try_from(name.len()).expect("event-stream header name over 255 bytes"));
        block.extend_from_slice(name.as_bytes());
        block.push(TYPE_STRING);
        let len = u16::try_from(value.len()).expect("event-stream header value over 64 KiB");
        block.extend_from_slice(&len.to_be_bytes());
        block.extend_from_slice(value.as_bytes());
    }
    let total = (FRAME_OVERHEAD + block.len() + payload.len()) as u32;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&(block.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(&block);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out
}
