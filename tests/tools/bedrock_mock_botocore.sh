#!/usr/bin/env bash
# The mock's Bedrock routes with botocore, AWS's own Python implementation, as the
# client: a request signed by botocore's SigV4Auth (session token, a model id with `:`)
# passes the mock's signature check (src/mock/serve/aws_auth.rs) and one signed with
# another secret is refused with 403; the ConverseStream answer decodes with botocore's
# EventStreamBuffer (every prelude and message CRC checked) into messageStart, reasoning
# then text deltas, messageStop and metadata with the usage and latencyMs; Converse
# answers whole. tests/tools/lib/bedrock_botocore.py holds the checks. About 2 s.
source "$(dirname "$0")/lib/common.bash"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || skip_or_fail "no llmprobe binary at $bin (set LLMPROBE_BIN)"
need_tool LLMPROBE_BOTOCORE_PYTHON python
"$LLMPROBE_BOTOCORE_PYTHON" -c 'import botocore.auth, botocore.eventstream' 2>/dev/null \
  || skip_or_fail "botocore not importable by $LLMPROBE_BOTOCORE_PYTHON (run scripts/install-tools)"
make_scratch

LLMPROBE_MOCK_AWS_SECRET_ACCESS_KEY=mock-secret-key "$bin" mock --listen 127.0.0.1:0 \
  --ttft-ms 20 --itl-ms 2 --reasoning-tokens 3 \
  --aws-access-key-id AKIDMOCK --aws-region us-west-2 \
  >"$scratch/mock.out" 2>"$scratch/mock.err" &
pid=$!
stop_on_exit "$pid"
url=
for _ in $(seq 100); do
  url=$(sed -n 's#^llmprobe mock listening on ##p' "$scratch/mock.out" 2>/dev/null || true)
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$scratch/mock.err" >&2; fail "mock exited"; }
  sleep 0.1
done
[ -n "$url" ] || fail "the mock did not print its address"

"$LLMPROBE_BOTOCORE_PYTHON" tests/tools/lib/bedrock_botocore.py "$url" \
  || fail "botocore and the mock's Bedrock routes disagree"
say "ok"
