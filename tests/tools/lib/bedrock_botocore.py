"""The mock's Bedrock routes driven by botocore (tests/tools/bedrock_mock_botocore.sh).

argv[1]: the mock's base URL. Exits non-zero with the reason on the first disagreement.
"""

import json
import sys
import urllib.error
import urllib.request

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.eventstream import EventStreamBuffer

BASE = sys.argv[1].rstrip("/")
MODEL = "anthropic.claude-3-haiku-20240307-v1%3A0"
BODY = json.dumps(
    {
        "messages": [{"role": "user", "content": [{"text": "nonce-1 say hi"}]}],
        "inferenceConfig": {"maxTokens": 8, "temperature": 0},
    }
).encode()


def send(path, secret):
    """POST the body to `path`, signed by botocore with `secret`: (status, bytes)."""
    req = AWSRequest(
        method="POST",
        url=BASE + path,
        data=BODY,
        headers={"content-type": "application/json"},
    )
    creds = Credentials("AKIDMOCK", secret, "session-token-1")
    SigV4Auth(creds, "bedrock", "us-west-2").add_auth(req)
    prepared = req.prepare()
    http = urllib.request.Request(
        prepared.url, data=BODY, headers=dict(prepared.headers), method="POST"
    )
    try:
        with urllib.request.urlopen(http, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)


status, body = send(f"/model/{MODEL}/converse-stream", "mock-secret-key")
check(status == 200, f"converse-stream answered {status}: {body[:300]!r}")
buf = EventStreamBuffer()
buf.add_data(body)
events = []
for msg in buf:  # raises on a bad prelude or message CRC
    h = msg.headers
    check(h.get(":message-type") == "event", f"a {h.get(':message-type')} frame: {h}")
    events.append((h[":event-type"], json.loads(msg.payload)))
names = [e[0] for e in events]
check(names[0] == "messageStart" and names[-1] == "metadata", f"events {names}")
check(names[-2] == "messageStop", f"events {names}")
reasoning = [p for n, p in events if n == "contentBlockDelta" and "reasoningContent" in p["delta"]]
text = [p for n, p in events if n == "contentBlockDelta" and "text" in p["delta"]]
check(len(reasoning) == 3 and len(text) == 5, f"3 reasoning and 5 text deltas, got {names}")
meta = events[-1][1]
check(meta["usage"]["outputTokens"] == 8, f"usage {meta}")
check(meta["metrics"]["latencyMs"] >= 20 + 7 * 2, f"latency {meta}")
check(events[-2][1]["stopReason"] == "max_tokens", f"stop {events[-2]}")

status, body = send(f"/model/{MODEL}/converse", "mock-secret-key")
whole = json.loads(body)
check(status == 200 and whole["usage"]["outputTokens"] == 8, f"converse: {status} {whole}")
check(whole["stopReason"] == "max_tokens", f"converse: {whole}")

status, body = send(f"/model/{MODEL}/converse-stream", "another-secret")
check(status == 403 and b"signature" in body, f"a wrong secret: {status} {body[:300]!r}")
print("ok: botocore's signatures pass, its EventStreamBuffer decodes the mock's frames")
