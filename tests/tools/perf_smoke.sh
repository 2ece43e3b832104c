#!/usr/bin/env bash
# benches/client_overhead.py runs end to end (3 s at 50 requests/s against a real
# `llmprobe mock` process, by llmprobe and by the floor reference client) and writes
# its JSON and SVG. Not a performance test: it asserts the shape of the output, that
# every request succeeded and that both clients saw every token, never a timing.
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

bin=${LLMPROBE_BIN:-}
[ -n "$bin" ] && [ -x "$bin" ] || skip_or_fail "LLMPROBE_BIN unset (scripts/test builds the release binary)"
if ! "$bin" bench --help >/dev/null 2>&1; then
  say "SKIP: this llmprobe has no bench command yet"
  exit 0
fi

# `cargo test --all-targets` (scripts/test) builds the examples, the floor among them;
# a debug build is enough for a run that asserts no timing.
floor=${CARGO_TARGET_DIR:-target}/debug/examples/floor_client
[ -x "$floor" ] || cargo build --quiet --example floor_client \
  || fail "cannot build the floor client"

make_scratch
python3 benches/client_overhead.py --bin "$bin" --floor-bin "$floor" --rates 50 --output-lens 16 \
  --seconds 3 --warmup-seconds 0.5 --min-requests 1 --no-max-rate --daemon-minutes 0 \
  --out "$scratch/overhead.json" --svg "$scratch/overhead.svg" >"$scratch/log" 2>&1 \
  || { cat "$scratch/log" >&2; fail "client_overhead.py failed"; }

python3 - "$scratch/overhead.json" <<'PY' || fail "unexpected JSON"
import json, sys
d = json.load(open(sys.argv[1]))
p, floor = d["points"]
assert (p["client"], floor["client"]) == ("llmprobe", "floor"), d["points"]
assert floor["ok"] == floor["counted"] == 150, (floor["ok"], floor["counted"])
assert floor["streamed_tokens"] == 16 * floor["requests"], floor["streamed_tokens"]
assert floor["ttft_err_ms"]["p50"] > 0 and floor["client_cpu_s"] > 0, floor
assert p["rate"] == 50 and p["output_len"] == 16, p
assert p["counted"] == 150 and p["ok"] == p["counted"], (p["ok"], p["counted"])
assert p["streamed_tokens"] == 16 * p["requests"], p["streamed_tokens"]
assert p["client_cpu_s"] > 0 and p["mock_cpu_s"] >= 0
for k in ("ttft_err_ms", "itl_err_ms", "dispatch_lag_ms", "send_to_headers_ms"):
    assert p[k]["p50"] is not None and p[k]["p99"] >= p[k]["p50"], k
# The mock is never early, so the client never measures a TTFT below the truth.
assert p["ttft_err_ms"]["p50"] > 0, p["ttft_err_ms"]
assert d["conditions"]["vcpus"] >= 1
PY
grep -q "<svg" "$scratch/overhead.svg" || fail "no SVG written"
grep -q "Client CPU per streamed token" "$scratch/overhead.svg" || fail "SVG lacks the CPU panel"
# benches/trace_replay_lag.py runs end to end (one replay of the 200-request trace);
# its timing is not asserted, its exactness is.
python3 benches/trace_replay_lag.py --bin "$bin" --runs 1 >"$scratch/replay.log" 2>&1 \
  || { cat "$scratch/replay.log" >&2; fail "trace_replay_lag.py failed"; }
grep -q "trace times 200/200  input lengths 200/200" "$scratch/replay.log" \
  || { cat "$scratch/replay.log" >&2; fail "the replay missed trace times or lengths"; }
say "ok"
