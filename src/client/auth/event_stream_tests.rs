//! The event-stream framing's unit tests: round trips, every header type, partial and
//! split input, and the broken frames refused with their reason.

use super::event_stream::*;
use proptest::prelude::*;

fn decode_all(chunks: &[&[u8]]) -> Result<Vec<Message>, EventStreamError> {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        while let Some(m) = decoder.next()? {
            out.push(m);
        }
    }
    assert_eq!(decoder.buffered(), 0, "bytes left over");
    Ok(out)
}

fn event(kind: &str, payload: &str) -> Vec<u8> {
    let headers = [
        (":message-type", "event"),
        (":event-type", kind),
        (":content-type", "application/json"),
    ];
    encode(&headers, payload.as_bytes())
}

/// A frame around raw header bytes, CRCs right.
fn frame(block: &[u8], payload: &[u8]) -> Vec<u8> {
    let total = (16 + block.len() + payload.len()) as u32;
    let mut out = total.to_be_bytes().to_vec();
    out.extend_from_slice(&(block.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(block);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out
}

#[test]
fn messages_round_trip_and_name_their_types() {
    let bytes = event("contentBlockDelta", r#"{"delta":{"text":"hi"}}"#);
    let m = &decode_all(&[&bytes]).unwrap()[0];
    assert_eq!(m.message_type(), Some("event"));
    assert_eq!(m.event_type(), Some("contentBlockDelta"));
    assert_eq!(m.exception_type(), None);
    assert_eq!(m.payload, br#"{"delta":{"text":"hi"}}"#);
    let exc = encode(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
        ],
        b"{}",
    );
    let m = &decode_all(&[&exc]).unwrap()[0];
    assert_eq!(m.exception_type(), Some("throttlingException"));
    let empty = encode(&[], b"");
    assert_eq!(empty.len(), 16);
    assert_eq!(
        decode_all(&[&empty]).unwrap()[0],
        Message {
            headers: vec![],
            payload: vec![]
        }
    );
}

#[test]
fn every_header_type_is_read_or_skipped_right() {
    let mut block = Vec::new();
    let mut put = |name: &str, kind: u8, value: &[u8]| {
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(kind);
        block.extend_from_slice(value);
    };
    put("t", 0, &[]);
    put("f", 1, &[]);
    put("b", 2, &[0xff]);
    put("s", 3, &(-2i16).to_be_bytes());
    put("i", 4, &70_000i32.to_be_bytes());
    put("l", 5, &(-3i64).to_be_bytes());
    put("a", 6, &[0, 2, 0xde, 0xad]);
    put(
        ":event-type",
        7,
        &[0, 8, b'm', b'e', b't', b'a', b'd', b'a', b't', b'a'],
    );
    put("ts", 8, &1_700_000_000_000i64.to_be_bytes());
    put("u", 9, &[7; 16]);
    let m = &decode_all(&[&frame(&block, b"p")]).unwrap()[0];
    let values: Vec<&HeaderValue> = m.headers.iter().map(|(_, v)| v).collect();
    assert_eq!(
        values,
        [
            &HeaderValue::Bool(true),
            &HeaderValue::Bool(false),
            &HeaderValue::Byte(-1),
            &HeaderValue::Short(-2),
            &HeaderValue::Int(70_000),
            &HeaderValue::Long(-3),
            &HeaderValue::Bytes(vec![0xde, 0xad]),
            &HeaderValue::String("metadata".into()),
            &HeaderValue::Timestamp(1_700_000_000_000),
            &HeaderValue::Uuid([7; 16]),
        ]
    );
    assert_eq!(m.event_type(), Some("metadata"));
    assert_eq!(m.header_str("a"), None, "a byte array is no string");
}

#[test]
fn partial_frames_wait_for_their_bytes() {
    let bytes = event("messageStart", r#"{"role":"assistant"}"#);
    let mut decoder = Decoder::new();
    decoder.push(&bytes[..11]);
    assert_eq!(decoder.next(), Ok(None));
    decoder.push(&bytes[11..bytes.len() - 1]);
    assert_eq!(decoder.next(), Ok(None));
    decoder.push(&bytes[bytes.len() - 1..]);
    assert!(decoder.next().unwrap().is_some());
    assert_eq!(decoder.next(), Ok(None));
}

#[test]
fn broken_frames_are_refused_with_their_reason() {
    let good = event("messageStop", r#"{"stopReason":"end_turn"}"#);
    let mut bad = good.clone();
    bad[9] ^= 1;
    let err = decode_all(&[&bad]).unwrap_err();
    assert!(matches!(err, EventStreamError::PreludeCrc { .. }));
    assert!(
        err.to_string()
            .starts_with("event-stream prelude CRC mismatch"),
        "{err}"
    );
    let mut bad = good.clone();
    let last_payload = bad.len() - 5;
    bad[last_payload] ^= 0x20;
    let err = decode_all(&[&bad]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("event-stream message CRC mismatch"),
        "{err}"
    );
    // A huge length with a right prelude CRC fails at once, before any wait for it.
    let mut huge = u32::MAX.to_be_bytes().to_vec();
    huge.extend_from_slice(&0u32.to_be_bytes());
    huge.extend_from_slice(&crc32fast::hash(&huge).to_be_bytes());
    let err = decode_all(&[&huge]).unwrap_err();
    assert!(err.to_string().contains("lengths are impossible"), "{err}");
    // Headers longer than the frame.
    let mut over = 20u32.to_be_bytes().to_vec();
    over.extend_from_slice(&10u32.to_be_bytes());
    over.extend_from_slice(&crc32fast::hash(&over).to_be_bytes());
    assert!(matches!(
        decode_all(&[&over]),
        Err(EventStreamError::Length {
            total: 20,
            headers: 10
        })
    ));
    // A string header that runs past its section.
    let err = decode_all(&[&frame(&[1, b'x', 7, 0, 9, b'a'], b"")]).unwrap_err();
    assert!(err.to_string().contains("runs past"), "{err}");
    let err = decode_all(&[&frame(&[1, b'x', 42], b"")]).unwrap_err();
    assert!(err.to_string().contains("unknown value type 42"), "{err}");
}

#[test]
fn a_stream_split_anywhere_decodes_the_same() {
    let mut stream = event("messageStart", r#"{"role":"assistant"}"#);
    stream.extend(event("contentBlockDelta", r#"{"delta":{"text":"x"}}"#));
    stream.extend(encode(&[], b""));
    let whole = decode_all(&[&stream]).unwrap();
    assert_eq!(whole.len(), 3);
    for cut in 0..=stream.len() {
        let (a, b) = stream.split_at(cut);
        assert_eq!(decode_all(&[a, b]).unwrap(), whole, "cut at {cut}");
    }
}

proptest! {
    #[test]
    fn encode_then_decode_in_any_chunks(
        headers in proptest::collection::vec(("[a-z:-]{1,20}", "\\PC{0,40}"), 0..5),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let bytes = encode(&pairs, &payload);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for c in cuts.into_iter().chain([bytes.len()]) {
            chunks.push(&bytes[from..c]);
            from = c;
        }
        let got = decode_all(&chunks).unwrap();
        let want: Vec<(String, HeaderValue)> = headers
            .iter()
            .map(|(n, v)| (n.clone(), HeaderValue::String(v.clone())))
            .collect();
        prop_assert_eq!(got, vec![Message { headers: want, payload }]);
    }
}
