//! llmprobe's AWS wire primitives behind a JSON pipe, for tests/tools/aws_wire.sh to hold
//! them to botocore's (tests/tools/lib/sigv4_botocore.py). A test helper built as a Cargo
//! example, so llmprobe grows no command for it:
//!
//!     aws_wire sign    < [{method, url, headers, body, access_key_id, secret_access_key,
//!                          session_token, region, service, time}]  > [[[name, value]...]]
//!     aws_wire encode  < [{headers, payload_b64}]                  > [frame_b64]
//!     aws_wire decode  < [stream_b64]                              > [{messages, error}]

use std::io::Read;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use llmprobe::client::auth::event_stream::{Decoder, HeaderValue, encode};
use llmprobe::client::auth::sigv4::{AwsCredentials, sign};
use llmprobe::secret::Secret;
use serde_json::{Value, json};

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    (
                        p[0].as_str().unwrap().to_string(),
                        p[1].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn sign_case(case: &Value) -> Value {
    let creds = AwsCredentials {
        access_key_id: text(case, "access_key_id"),
        secret_access_key: Secret::new(text(case, "secret_access_key")),
        session_token: case["session_token"].as_str().map(Secret::new),
    };
    let url = reqwest::Url::parse(&text(case, "url")).expect("a URL");
    let at = UNIX_EPOCH + Duration::from_secs(case["time"].as_u64().expect("time"));
    let added = sign(
        &text(case, "method"),
        &url,
        &pairs(&case["headers"]),
        text(case, "body").as_bytes(),
        &creds,
        &text(case, "region"),
        &text(case, "service"),
        at,
    );
    json!(added)
}

fn header_json(value: &HeaderValue) -> Value {
    match value {
        HeaderValue::Bool(b) => json!(["bool", b]),
        HeaderValue::Byte(v) => json!(["byte", v]),
        HeaderValue::Short(v) => json!(["short", v]),
        HeaderValue::Int(v) => json!(["integer", v]),
        HeaderValue::Long(v) => json!(["long", v]),
        HeaderValue::Bytes(v) => json!(["bytes", STANDARD.encode(v)]),
        HeaderValue::String(v) => json!(["string", v]),
        HeaderValue::Timestamp(v) => json!(["timestamp", v]),
        HeaderValue::Uuid(v) => json!(["uuid", STANDARD.encode(v)]),
    }
}

fn decode_stream(stream: &Value) -> Value {
    let mut decoder = Decoder::new();
    decoder.push(&STANDARD.decode(stream.as_str().unwrap()).expect("base64"));
    let mut messages = Vec::new();
    loop {
        match decoder.next() {
            Ok(Some(m)) => {
                let headers: Vec<Value> = m
                    .headers
                    .iter()
                    .map(|(n, v)| json!([n, header_json(v)]))
                    .collect();
                messages
                    .push(json!({"headers": headers, "payload_b64": STANDARD.encode(&m.payload)}));
            }
            Ok(None) => {
                let left = decoder.buffered();
                let error = (left > 0).then(|| format!("{left} bytes of an unfinished frame"));
                return json!({"messages": messages, "error": error});
            }
            Err(e) => return json!({"messages": messages, "error": e.to_string()}),
        }
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("stdin");
    let cases: Vec<Value> = serde_json::from_str(&input).expect("a JSON array on stdin");
    let out: Vec<Value> = match mode.as_str() {
        "sign" => cases.iter().map(sign_case).collect(),
        "encode" => cases
            .iter()
            .map(|c| {
                let headers = pairs(&c["headers"]);
                let headers: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                let payload = STANDARD.decode(text(c, "payload_b64")).expect("base64");
                json!(STANDARD.encode(encode(&headers, &payload)))
            })
            .collect(),
        "decode" => cases.iter().map(decode_stream).collect(),
        other => {
            eprintln!("aws_wire: mode {other:?}: one of sign, encode, decode");
            std::process::exit(2);
        }
    };
    println!("{}", Value::Array(out));
}
