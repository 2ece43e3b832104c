#!/usr/bin/env bash
# Rerank against a real engine: llama.cpp's `llama-server --reranking` serving a tiny
# BERT cross-encoder made here with random weights (tests/tools/lib/tiny_reranker_gguf.py,
# standard library only, ~120 KB). Its scores mean nothing but are deterministic, so the
# check asks the server once which document it ranks first, then:
# - `llmprobe bench --endpoint rerank --expect-top-document TOP` completes every request,
#   with the prompt tokens from the server's usage and no check failure (gate passes);
# - the same with another document expected fails the check on every request (exit 3),
#   the requests still completed (a failed check is no failed request);
# - `--endpoint score` gets llama-server's 404 (it serves no /v1/score: vLLM does), which
#   llmprobe reports as http_4xx saying the server may not speak that API.
# Environment: LLMPROBE_BIN (the release binary), LLMPROBE_LLAMA_SERVER (tools.env).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_LLAMA_SERVER llama-server
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"

make_scratch
python3 tests/tools/lib/tiny_reranker_gguf.py "$scratch/reranker.gguf"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
say "starting llama-server --reranking on $base (a tiny random BERT cross-encoder)"
"$LLMPROBE_LLAMA_SERVER" --model "$scratch/reranker.gguf" --host 127.0.0.1 --port "$port" \
  --ctx-size 512 --parallel 2 --threads 1 --reranking --alias tiny-reranker \
  >"$scratch/llama.log" 2>&1 &
server_pid=$!
stop_on_exit "$server_pid"
for _ in $(seq 1 240); do
  kill -0 "$server_pid" 2>/dev/null || { tail -30 "$scratch/llama.log" >&2; fail "llama-server died while loading"; }
  curl -sf "$base/health" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "$base/health" >/dev/null || { tail -30 "$scratch/llama.log" >&2; fail "llama-server not ready after 120 s"; }

query='Which planet has rings?'
docs=('The Moon orbits the Earth.' 'Saturn is a planet with rings.' 'Cats sleep a lot.')
body=$(python3 -c 'import json,sys; print(json.dumps({"model": "tiny-reranker", "query": sys.argv[1], "documents": sys.argv[2:]}))' "$query" "${docs[@]}")
top=$(curl -sf "$base/v1/rerank" -d "$body" | python3 -c '
import json, sys
r = json.load(sys.stdin)["results"]
print(min(r, key=lambda x: (-x["relevance_score"], x["index"]))["index"])')
wrong=$(((top + 1) % 3))
say "llama-server ranks document $top first"

doc_flags=()
for d in "${docs[@]}"; do doc_flags+=(--document "$d"); done
run() { # ENDPOINT EXPECT OUT: bench's exit status, its JSON in OUT
  local status=0
  "$bin" bench --base-url "$base" --model tiny-reranker --endpoint "$1" --prompt "$query" \
    --no-nonce "${doc_flags[@]}" --expect-top-document "$2" --rate 20 --num-requests 30 \
    --gate 'check-failure-ratio<=0' --json-out "$3" >"$3.txt" 2>&1 || status=$?
  echo "$status"
}
read_json() { python3 -c 'import json, sys; d = json.loads(open(sys.argv[1]).readline()); print(eval(sys.argv[2]))' "$@"; }

status=$(run rerank "$top" "$scratch/right.json")
[ "$status" = 0 ] || { cat "$scratch/right.json.txt" >&2; fail "expecting document $top: exit $status"; }
[ "$(read_json "$scratch/right.json" 'd["completed"], d["failed"], d["check_failure_ratio"]')" = "(30, 0, 0.0)" ] ||
  { cat "$scratch/right.json.txt" >&2; fail "expecting document $top: not 30 completed requests without check failures"; }
prompt=$(read_json "$scratch/right.json" 'd["total_input_tokens"]')
[ "$prompt" -gt 0 ] || fail "no prompt tokens from the server's usage ($prompt)"
say "PASS: 30 rerank probes, document $top first in each, $prompt prompt tokens from usage, E2E p50 $(read_json "$scratch/right.json" 'round(d["e2el_ms"]["p50"], 1)') ms"

status=$(run rerank "$wrong" "$scratch/wrong.json")
[ "$status" = 3 ] || { cat "$scratch/wrong.json.txt" >&2; fail "expecting document $wrong: exit $status, not 3"; }
[ "$(read_json "$scratch/wrong.json" 'd["completed"], d["failed"], d["check_failures"]')" = "(30, 0, {'expect_top_document': 30})" ] ||
  { cat "$scratch/wrong.json.txt" >&2; fail "expecting document $wrong: not 30 completed requests each failing the check"; }
say "PASS: expecting document $wrong fails the check on all 30 (completed, not good; gate exit 3)"

status=0
"$bin" bench --base-url "$base" --model tiny-reranker --endpoint score --prompt "$query" \
  "${doc_flags[@]}" --rate 20 --num-requests 3 --records "$scratch/score.jsonl" \
  >"$scratch/score.txt" 2>&1 || status=$?
python3 - "$scratch/score.jsonl" <<'PY' || { cat "$scratch/score.txt" >&2; fail "score against llama-server: not an http_4xx naming the API"; }
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert len(records) == 3, records
for r in records:
    assert r["outcome"] == "http_4xx" and r["http_status"] == 404, r
    assert "speak" in r["error"], r["error"]
print(records[0]["error"], file=sys.stderr)
PY
say "PASS: llama-server serves no /v1/score (404, reported as such; exit $status)"
