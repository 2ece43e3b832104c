#!/usr/bin/env bash
# Logprob fingerprints against a real engine: llama.cpp's `llama-server` with Gemma 3
# 270M Q4_K_M. `llmprobe fingerprint record` writes a baseline (the built-in prompts,
# 5 repeats, every other one sent all at once so the server batches them); then
# `fingerprint compare` must pass (exit 0) against the same model on a restarted server,
# and flag drift (exit 3) against the same model requantized to another type with
# llama.cpp's own `llama-quantize` and against the original model under another chat
# template (`--chat-template gemma`). The daemon's fingerprint scenario gives the same
# verdicts (llmprobe_fingerprint_drift 0 on the restarted server, 1 under the other
# template), and so does its row on the status page. Each comparison's figures are
# printed (docs/measurement.md records them).
#
# Environment: LLMPROBE_BIN, LLMPROBE_LLAMA_SERVER, LLMPROBE_LLAMA_QUANTIZE, LLMPROBE_GGUF
# (tools.env from scripts/install-tools). LLMPROBE_FINGERPRINT_QUANT (default Q3_K_S): the
# type the model is requantized to.
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_LLAMA_SERVER llama-server
need_tool LLMPROBE_LLAMA_QUANTIZE llama-quantize
model=${LLMPROBE_GGUF:-}
[ -n "$model" ] && [ -f "$model" ] ||
  skip_or_fail "LLMPROBE_GGUF (the Gemma 3 270M GGUF) is not set or missing"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"
quant=${LLMPROBE_FINGERPRINT_QUANT:-Q3_K_S}

make_scratch
server_pid=

# start_server MODEL [FLAGS...]: llama-server on a free loopback port; sets $base.
start_server() {
  local gguf=$1
  shift
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  base=http://127.0.0.1:$port
  "$LLMPROBE_LLAMA_SERVER" --model "$gguf" --host 127.0.0.1 --port "$port" --ctx-size 4096 \
    --parallel 4 --threads 2 --alias gemma-3-270m "$@" >"$scratch/llama.log" 2>&1 &
  server_pid=$!
  stop_on_exit "$server_pid"
  for _ in $(seq 1 240); do
    kill -0 "$server_pid" 2>/dev/null || { tail -30 "$scratch/llama.log" >&2; fail "llama-server exited"; }
    curl -sf "$base/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -30 "$scratch/llama.log" >&2
  fail "llama-server not ready after 120 s"
}

# daemon_drift NAME WANT: a daemon with one fingerprint scenario against the running
# server; its first run's llmprobe_fingerprint_drift must be WANT (0 or 1).
daemon_drift() {
  local name=$1 want=$2 pid drift=
  cat >"$scratch/$name.yaml" <<EOF
listen: 127.0.0.1:0
self_check: {enabled: false}
targets:
  - name: llama
    base_url: $base
    model: gemma-3-270m
    endpoint: chat
    timeouts: {first_token: 300s, idle: 60s, total: 300s}
    scenarios:
      - name: fp
        fingerprint: {baseline: $scratch/baseline.json, every: 10m}
EOF
  "$bin" daemon --config "$scratch/$name.yaml" >"$scratch/$name.out" 2>"$scratch/$name.err" &
  pid=$!
  stop_on_exit "$pid"
  wait_for_daemon "$pid" "$scratch/$name.out" "$scratch/$name.err"
  drift=$(fingerprint_drift "$pid" "$scratch/$name.err")
  say "$name: $(curl -sf "$url/metrics" | grep '^llmprobe_fingerprint_' | tr '\n' ' ')"
  # The status page's fingerprint row, as text, must say the same.
  row=$(curl -sf "$url/" | python3 -c '
import html, re, sys
rows = re.findall(r"<tr class=\"fingerprint\">(.*?)</tr>", sys.stdin.read())
print(" · ".join(html.unescape(re.sub(r"<[^>]*>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[0])) if len(rows) == 1 else "")') || row=
  say "$name: status page: $row"
  local state="same model"
  [ "$want" = 1 ] && state=drift
  case "$row" in
    "fp · $state · "*) ;;
    *) kill "$pid"; fail "$name: the status page's fingerprint row is '$row', want state $state" ;;
  esac
  kill "$pid"
  wait "$pid" || fail "$name: the daemon exited non-zero on SIGTERM"
  [ "$drift" = "$want" ] || { cat "$scratch/$name.err" >&2; fail "$name: drift '$drift', want $want"; }
}

stop_server() {
  stop_pid "$server_pid"
  server_pid=
}

# compare NAME WANT_EXIT: compares the running server with the baseline.
compare() {
  local name=$1 want=$2 code=0
  "$bin" fingerprint compare "$scratch/baseline.json" --base-url "$base" --json \
    >"$scratch/$name.json" 2>"$scratch/$name.err" || code=$?
  say "$name: exit $code: $(cat "$scratch/$name.json")"
  [ "$code" -eq "$want" ] || { cat "$scratch/$name.err" >&2; fail "$name: exit $code, want $want"; }
}

say "recording the baseline ($(basename "$model"))"
start_server "$model"
"$bin" fingerprint record --base-url "$base" --model gemma-3-270m --out "$scratch/baseline.json" \
  --repeats 5 || fail "fingerprint record failed"
python3 - "$scratch/baseline.json" <<'PY' || fail "the baseline is not what record should write"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["endpoint"] == "chat" and b["repeats"] == 5, b
assert len(b["prompts"]) == 8, len(b["prompts"])
assert all(len(p["answer"]["positions"]) > 0 for p in b["prompts"]), "an empty answer"
assert all(len(pos["top"]) == 5 for p in b["prompts"] for pos in p["answer"]["positions"])
print("noise", b["noise"], file=sys.stderr)
PY
stop_server

say "same model, restarted server: no drift"
start_server "$model"
compare restart 0
daemon_drift daemon-restart 0
stop_server

say "the model requantized to $quant: drift"
"$LLMPROBE_LLAMA_QUANTIZE" --allow-requantize "$model" "$scratch/requant.gguf" "$quant" \
  >"$scratch/quantize.log" 2>&1 || { tail -20 "$scratch/quantize.log" >&2; fail "llama-quantize failed"; }
start_server "$scratch/requant.gguf"
compare "requantized-$quant" 3
stop_server

# This GGUF carries no chat template, so llama-server falls back to chatml (a restart
# with `--chat-template chatml` compares as the same): Gemma's own template is the
# other one.
say "the original model under another chat template (gemma): drift"
start_server "$model" --chat-template gemma
compare chat-template-gemma 3
daemon_drift daemon-chat-template 1
stop_server
say "OK"
