"""llmprobe's AWS wire primitives against botocore's, an independent implementation
(run by tests/tools/aws_wire.sh with the botocore venv's python).

SigV4: for a table of requests, botocore's SigV4Auth signs an AWSRequest at a fixed
time and llmprobe (through the aws_wire helper, tests/tools/lib/aws_wire.rs) must add
the same x-amz-date, x-amz-security-token and Authorization headers.

Event stream: frames written by llmprobe's encoder decode with botocore's
EventStreamBuffer to the same headers and payload, fed in chunks of every size; frames
built here with every header type decode with both to the same values; a frame with a
corrupted prelude or message CRC is rejected by both.

Usage: sigv4_botocore.py AWS_WIRE_BINARY
"""

import base64
import binascii
import datetime
import json
import random
import struct
import subprocess
import sys
from urllib.parse import quote

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

WIRE = sys.argv[1]
TIME = 1_767_225_600 + 12 * 3600 + 34 * 60 + 56  # 2026-01-01T12:34:56Z
AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJH+token/=="


def wire(mode, cases):
    out = subprocess.run([WIRE, mode], input=json.dumps(cases), capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"aws_wire {mode} failed: {out.stderr}")
    return json.loads(out.stdout)


def aws_query(pairs):
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in pairs)


def bedrock_url(region, model, op, port=""):
    return f"https://bedrock-runtime.{region}.amazonaws.com{port}/model/{quote(model, safe='')}/{op}"


def sign_cases():
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": "Héllo ✓"}]}]})
    json_type = [("Content-Type", "application/json")]
    rows = [
        # (method, url, query pairs, signed headers, body, region, service, token)
        ("POST", bedrock_url("us-east-1", "anthropic.claude-3-5-sonnet-20240620-v1:0", "converse-stream"),
         [], json_type, body, "us-east-1", "bedrock", None),
        ("POST", bedrock_url("eu-west-3", "mistral.mistral-large-2402-v1:0", "converse"),
         [], json_type, body, "eu-west-3", "bedrock", TOKEN),
        ("POST", bedrock_url("us-west-2",
                             "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.meta.llama3-3-70b-instruct-v1:0",
                             "converse-stream"),
         [], json_type, body, "us-west-2", "bedrock", TOKEN),
        ("POST", bedrock_url("ap-southeast-2", "amazon.nova-lite-v1:0", "converse", ":8443"),
         [], [("content-type", "application/json"), ("X-Amz-Target", "  a   b  ")], "", "ap-southeast-2",
         "bedrock", None),
        ("GET", "https://bedrock.us-gov-west-1.amazonaws.com/foundation-models",
         [("byProvider", "Anthropic"), ("byOutputModality", "TEXT"), ("a", "2"), ("a", "1")],
         [], "", "us-gov-west-1", "bedrock", None),
        ("GET", "https://example.eu-central-1.amazonaws.com/a%20b/c~d/",
         [("q", "hello world"), ("path", "x/y+z"), ("é", "ü=?&"), ("empty", ""), ("t", "-_.~")],
         [("X-Amz-Meta-Note", "über")], "", "eu-central-1", "execute-api", TOKEN),
        ("PUT", "http://127.0.0.1:9000/model/x%3Ay/invoke", [], json_type, "{}", "local", "bedrock", None),
        ("DELETE", "https://sts.amazonaws.com/", [("Action", "GetCallerIdentity"), ("Version", "2011-06-15")],
         [], "", "us-east-1", "sts", TOKEN),
    ]
    cases = []
    for method, url, query, headers, body, region, service, token in rows:
        full = f"{url}?{aws_query(query)}" if query else url
        case = {
            "method": method, "url": full, "body": body, "region": region, "service": service,
            "access_key_id": AKID, "secret_access_key": SECRET, "session_token": token, "time": TIME,
            # An unsigned header too: llmprobe must leave it out as botocore never sees it.
            "headers": [[k, v] for k, v in headers] + [["Accept", "application/vnd.amazon.eventstream"]],
        }
        cases.append((case, url, query, headers))
    return cases


def botocore_sign(case, url, query, headers):
    request = AWSRequest(method=case["method"], url=url, data=case["body"].encode(),
                         headers=dict(headers), params=query or None)
    token = case["session_token"]
    auth = botocore.auth.SigV4Auth(Credentials(AKID, SECRET, token), case["service"], case["region"])
    auth.add_auth(request)
    return {k.lower(): v for k, v in request.headers.items() if k.lower() in
            ("x-amz-date", "x-amz-security-token", "authorization")}


def check_sigv4():
    fixed = datetime.datetime.fromtimestamp(TIME, datetime.timezone.utc).replace(tzinfo=None)
    botocore.auth.get_current_datetime = lambda *a, **k: fixed
    cases = sign_cases()
    ours = wire("sign", [c[0] for c in cases])
    for (case, url, query, headers), added in zip(cases, ours):
        theirs = botocore_sign(case, url, query, headers)
        mine = dict(added)
        assert list(mine) == [n for n in ("x-amz-date", "x-amz-security-token", "authorization") if n in mine]
        assert mine == theirs, f"{case['method']} {case['url']}:\n llmprobe {mine}\n botocore {theirs}"
    print(f"sigv4: {len(cases)} requests signed as botocore signs them")


def chunks(data, rng):
    at = 0
    while at < len(data):
        n = rng.choice([1, 2, 3, 7, 12, 13, 64, 4096, len(data)])
        yield data[at:at + n]
        at += n


def botocore_decode(data, rng):
    buf = EventStreamBuffer()
    out = []
    for piece in chunks(data, rng):
        buf.add_data(piece)
        out.extend(buf)
    return out


def check_encoder(rng):
    messages = [
        ([(":message-type", "event"), (":event-type", "messageStart"), (":content-type", "application/json")],
         b'{"role":"assistant"}'),
        ([(":message-type", "event"), (":event-type", "contentBlockDelta"), (":content-type", "application/json")],
         json.dumps({"contentBlockIndex": 0, "delta": {"text": "Grüße ✓ 🙂"}}).encode()),
        ([(":message-type", "exception"), (":exception-type", "throttlingException")],
         b'{"message":"Too many requests, please wait before trying again."}'),
        ([], b""),
        ([("x-unicode-värde", "ß" * 300)], bytes(rng.randrange(256) for _ in range(100_000))),
    ]
    cases = [{"headers": [list(h) for h in hs], "payload_b64": base64.b64encode(p).decode()} for hs, p in messages]
    frames = [base64.b64decode(f) for f in wire("encode", cases)]
    for _ in range(5):
        decoded = botocore_decode(b"".join(frames), rng)
        assert len(decoded) == len(messages), len(decoded)
        for m, (headers, payload) in zip(decoded, messages):
            assert m.headers == dict(headers), (m.headers, headers)
            assert m.payload == payload
    print(f"event stream: {len(frames)} llmprobe frames decode with botocore, in chunks of any size")
    return frames


def raw_frame(headers, payload):
    block = b""
    for name, kind, value in headers:
        block += struct.pack("B", len(name)) + name.encode() + struct.pack("B", kind) + value
    total = 16 + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + block + payload
    return body + struct.pack(">I", binascii.crc32(body) & 0xFFFFFFFF)


def check_header_types():
    uuid = bytes(range(16))
    headers = [
        ("t", 0, b""), ("f", 1, b""), ("b", 2, struct.pack(">b", -5)), ("s", 3, struct.pack(">h", -300)),
        ("i", 4, struct.pack(">i", 70000)), ("l", 5, struct.pack(">q", -(2**40))),
        ("a", 6, struct.pack(">H", 3) + b"\x00\xff\x10"), (":event-type", 7, struct.pack(">H", 8) + b"metadata"),
        ("ts", 8, struct.pack(">q", 1_767_225_600_000)), ("u", 9, uuid),
    ]
    frame = raw_frame(headers, b'{"usage":{}}')
    theirs = botocore_decode(frame, random.Random(0))[0]
    ours = wire("decode", [base64.b64encode(frame).decode()])[0]
    assert ours["error"] is None, ours
    (msg,) = ours["messages"]
    decoded = {}
    for name, (kind, value) in msg["headers"]:
        decoded[name] = base64.b64decode(value) if kind in ("bytes", "uuid") else value
    assert decoded == theirs.headers, (decoded, theirs.headers)
    assert base64.b64decode(msg["payload_b64"]) == theirs.payload
    print("event stream: every header type decodes to botocore's values")


def check_corruption(frames):
    good = frames[1]
    cases = {"prelude": (9, "event-stream prelude CRC mismatch"),
             "message": (len(good) - 5, "event-stream message CRC mismatch")}
    for what, (index, reason) in cases.items():
        bad = bytearray(good)
        bad[index] ^= 0x01
        try:
            botocore_decode(bytes(bad), random.Random(0))
        except ChecksumMismatch:
            pass
        else:
            raise AssertionError(f"botocore accepted a bad {what} CRC")
        (ours,) = wire("decode", [base64.b64encode(bytes(bad)).decode()])
        assert ours["messages"] == [] and ours["error"].startswith(reason), ours
    print("event stream: a bad prelude or message CRC is refused by both")


def main():
    check_sigv4()
    rng = random.Random(43)
    frames = check_encoder(rng)
    check_header_types()
    check_corruption(frames)


if __name__ == "__main__":
    main()
