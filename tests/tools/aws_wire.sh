#!/usr/bin/env bash
# llmprobe's AWS wire primitives (src/client/auth/sigv4.rs, event_stream.rs) agree with
# botocore, AWS's own Python implementation: the same SigV4 Authorization header for a
# table of requests (regions, session tokens, query strings that need encoding, bodies,
# Bedrock model ids with `:` and `/`), and event-stream frames that each side decodes as
# the other wrote them, a bad CRC refused by both. tests/tools/lib/sigv4_botocore.py
# holds the checks; llmprobe's side is the aws_wire example (tests/tools/lib/aws_wire.rs).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_BOTOCORE_PYTHON python
"$LLMPROBE_BOTOCORE_PYTHON" -c 'import botocore.auth, botocore.eventstream' 2>/dev/null \
  || skip_or_fail "botocore not importable by $LLMPROBE_BOTOCORE_PYTHON (run scripts/install-tools)"

# Built every time (`cargo test --all-targets` builds examples as tests, not this
# binary), so it never runs stale: a link of the library `cargo test` has built already.
cargo build --quiet --example aws_wire || fail "cannot build the aws_wire example"
wire=${CARGO_TARGET_DIR:-target}/debug/examples/aws_wire

"$LLMPROBE_BOTOCORE_PYTHON" tests/tools/lib/sigv4_botocore.py "$wire" || fail "llmprobe and botocore disagree"
say "ok"
