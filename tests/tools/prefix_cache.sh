#!/usr/bin/env bash
# The prefix-cache scenario against real engines and a real router: llama.cpp's own
# `llama-server` (Gemma 3 270M, one slot, one thread each) on 127.0.0.1, nginx in front of
# two of them, and a real Prometheus scraping the daemon.
#
# 1. One llama-server with its prompt cache (the default): cold probes read (almost)
#    nothing from the cache, warm probes read their prefix from it; the warm hit ratio and
#    the warm/cold TTFT ratio meet the scenario's objectives and the status row says
#    "cache effective". With `engine_metrics_url` (steps 1 and 3) the engine scrape works
#    and gives no engine prefix-cache ratio: llama.cpp's metrics count no cache hits.
# 2. Two llama-servers behind nginx, which names the replica that served each request in
#    `x-gateway-destination-endpoint-served` ($upstream_addr):
#    a. `hash $http_x_session_token consistent` and the scenario's
#       `affinity: {header: x-session-token}`: every warm probe reaches its cold probe's
#       replica (same-endpoint ratio 1) and the hit ratio holds;
#    b. plain round robin: about every other warm probe lands on the other replica, whose
#       slot never saw the prefix: the same-endpoint ratio is at most 0.6, the hit ratio at
#       most 0.6 of 2a's, and the row blames the router.
# 3. The llama-server of step 1 restarted with `--no-cache-prompt`: warm probes read
#    nothing from the cache, their TTFT is the cold one's (ratio at least 0.7), and the row
#    says the cache is off.
# Every step: no failed probe, and each expression of the alert LlmprobePrefixCacheIneffective
# in alerts/llmprobe-alerts.yaml, evaluated by Prometheus' query API on what it scraped
# (the expression, without its `for`), returns nothing for steps 1 and 2a and the
# scenario's series for 2b and 3. Without that alert in the file that part is skipped,
# saying so.
# Timing is only ever compared within one step, cold against warm, and the bounds are wide:
# a warm probe prefills a few dozen tokens, a cold one a few hundred.
#
# Environment: LLMPROBE_BIN, LLMPROBE_LLAMA_SERVER, LLMPROBE_GGUF, LLMPROBE_NGINX,
# LLMPROBE_PROMETHEUS (written to tools.env by scripts/install-tools).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_LLAMA_SERVER llama-server
model=${LLMPROBE_GGUF:-}
[ -n "$model" ] && [ -f "$model" ] ||
  skip_or_fail "LLMPROBE_GGUF (the Gemma 3 270M GGUF) is not set or missing"
need_tool LLMPROBE_NGINX nginx
need_tool LLMPROBE_PROMETHEUS prometheus
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"
t_begin=$SECONDS

make_scratch

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# Sessions per step, and the scenario's objectives (the status row's verdict). The prefix
# is longer than Gemma 3's 512-token sliding window: with a shorter one this llama-server
# (its SWA cache at the default size, no --swa-full) re-reads the whole prompt every time
# (docs/daemon.md, "Tested for real").
sessions=6
warm_probes=2
min_hit=0.7
max_ttft=0.5

# start_llama NAME PORT [FLAGS...]: a llama-server on 127.0.0.1:PORT, one slot, one thread;
# sets $llama_pid once it answers /health.
start_llama() {
  local name=$1 port=$2
  shift 2
  "$LLMPROBE_LLAMA_SERVER" --model "$model" --host 127.0.0.1 --port "$port" --ctx-size 2048 \
    --parallel 1 --threads 1 --metrics --alias gemma-3-270m "$@" >"$scratch/llama-$name.log" 2>&1 &
  llama_pid=$!
  stop_on_exit "$llama_pid"
  for _ in $(seq 1 480); do
    kill -0 "$llama_pid" 2>/dev/null || { tail -20 "$scratch/llama-$name.log" >&2; fail "llama-server $name exited while loading"; }
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -20 "$scratch/llama-$name.log" >&2
  fail "llama-server $name not ready after 240 s"
}

# The alert's expressions, by name (one per SLI), from the rule file.
alert=LlmprobePrefixCacheIneffective
python3 - alerts/llmprobe-alerts.yaml "$alert" >"$scratch/alert-exprs.json" <<'PY'
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
print(json.dumps([r["expr"] for g in doc["groups"] for r in g["rules"] if r.get("alert") == sys.argv[2]]))
PY
if [ "$(cat "$scratch/alert-exprs.json")" = "[]" ]; then
  say "SKIP (alert part): no alert $alert in alerts/llmprobe-alerts.yaml; the steps below run without it"
fi

# Prometheus scrapes the daemon of every step at one address.
daemon_port=$(free_port)
prom_port=$(free_port)
prom=http://127.0.0.1:$prom_port
cat >"$scratch/prometheus.yml" <<EOF
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: llmprobe
    static_configs: [{targets: ["127.0.0.1:$daemon_port"]}]
EOF
"$LLMPROBE_PROMETHEUS" --config.file "$scratch/prometheus.yml" --storage.tsdb.path "$scratch/tsdb" \
  --web.listen-address "127.0.0.1:$prom_port" >"$scratch/prometheus.log" 2>&1 &
stop_on_exit "$!"
for _ in $(seq 1 120); do
  curl -sf "$prom/-/ready" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "$prom/-/ready" >/dev/null || { tail -20 "$scratch/prometheus.log" >&2; fail "Prometheus not ready on $prom"; }

# probe_step NAME BASE_URL EXPECT [AFFINITY]: a daemon whose one target NAME sends
# $sessions prefix-cache sessions through BASE_URL; then its /metrics and status page, and
# what Prometheus makes of the alert's expressions, are judged by EXPECT (on, affinity,
# spread, off).
probe_step() {
  local name=$1 base=$2 expect=$3 affinity=${4:-} t0=$SECONDS engine=
  # llama-server announces keep-alive and closes the connection after every streamed
  # answer: the back-to-back probes of a session reuse pooled connections it has closed,
  # and the client's one retry on a new connection (src/client/stale.rs) must hide that.
  # The engine's own view, where the probes reach one llama-server: its `llamacpp:`
  # metrics count no prefix-cache hits, so llmprobe_engine_prefix_cache_hit_ratio stays
  # absent beside a working scrape.
  case $expect in on | off) engine="engine_metrics_url: $base/metrics" ;; esac
  cat >"$scratch/daemon-$name.yaml" <<EOF
listen: 127.0.0.1:$daemon_port
engine_scrape_interval: 2s
targets:
  - name: $name
    base_url: $base
    model: gemma-3-270m
    endpoint: chat
    timeouts: {first_token: 300s, idle: 120s, total: 600s}
    $engine
    scenarios:
      - name: cache
        prefix_cache:
          prefix_tokens: 700
          question_tokens: 16
          output_tokens: 4
          every: 1s
          warm_probes: $warm_probes
          window: 100
          min_hit_ratio: $min_hit
          max_ttft_ratio: $max_ttft
          ${affinity:+affinity: $affinity}
EOF
  "$bin" daemon --config "$scratch/daemon-$name.yaml" >"$scratch/daemon-$name.out" 2>"$scratch/daemon-$name.err" &
  local pid=$!
  stop_on_exit "$pid"
  wait_for_daemon "$pid" "$scratch/daemon-$name.out" "$scratch/daemon-$name.err"
  # Sessions take seconds to a minute each on a busy CPU: counted, not timed.
  python3 - "$url" "$name" "$sessions" "$warm_probes" <<'PY' || { tail -20 "$scratch/daemon-$name.err" >&2; fail "$name: the sessions did not complete"; }
import re, sys, time, urllib.request
url, target, n, w = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
deadline = time.monotonic() + 1800
while True:
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    def val(name, phase):
        return sum(float(v) for labels, v in re.findall(r'^' + name + r'\{([^}]*)\} (\S+)$', text, re.M)
                   if f'target="{target}"' in labels and f'phase="{phase}"' in labels)
    done = {p: val("llmprobe_prefix_cache_probes_total", p) - val("llmprobe_prefix_cache_failures_total", p)
            for p in ("cold", "warm")}
    if done["cold"] >= n and done["warm"] >= n * w:
        break
    if time.monotonic() > deadline:
        sys.exit(f"after 30 minutes: {done}")
    time.sleep(1)
PY
  curl -sf --max-time 10 "$url/metrics" >"$scratch/metrics-$name.txt" || fail "GET $url/metrics"
  curl -sf --max-time 10 "$url/" >"$scratch/status-$name.html" || fail "GET $url/"
  # What Prometheus scraped last, once it holds this step's newest session, through the
  # alert's expressions.
  python3 - "$prom" "$name" "$scratch/metrics-$name.txt" "$scratch/alert-exprs.json" \
    >"$scratch/alert-$name.json" <<'PY' || fail "$name: Prometheus never scraped the step's last session"
import json, re, sys, time, urllib.parse, urllib.request
prom, target, metrics, exprs = sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
last = max(float(v) for v in re.findall(
    r'^llmprobe_prefix_cache_last_session_timestamp_seconds\{[^}]*target="' + target + r'"[^}]*\} (\S+)$',
    open(metrics).read(), re.M))
def query(q):
    u = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    return json.load(urllib.request.urlopen(u, timeout=10))["data"]["result"]
for _ in range(120):
    got = query(f'llmprobe_prefix_cache_last_session_timestamp_seconds{{target="{target}"}}')
    if got and float(got[0]["value"][1]) >= last:
        break
    time.sleep(0.5)
else:
    sys.exit(1)
out = []
for e in exprs:
    series = [r for r in query(e) if r["metric"].get("target") == target]
    out.append({"expr": " ".join(e.split()), "values": [float(r["value"][1]) for r in series]})
print(json.dumps(out))
PY
  kill "$pid"
  wait "$pid" || fail "$name: the daemon exited non-zero on SIGTERM"
  python3 - "$name" "$expect" "$scratch" "$sessions" "$min_hit" "$max_ttft" <<'PY' 2>&1 | sed "s/^/[$check_name] /" >&2 || { tail -20 "$scratch/daemon-$name.err" >&2; fail "$name: prefix-cache figures"; }
import json, re, sys
target, expect, scratch, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
min_hit, max_ttft = float(sys.argv[5]), float(sys.argv[6])
series = {}
for line in open(f"{scratch}/metrics-{target}.txt"):
    m = re.match(r'^(\w+)\{([^}]*)\} (\S+)$', line.strip())
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if labels.get("target") == target:
            series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
def val(name, **want):
    hits = [v for l, v in series.get(name, []) if all(l.get(k) == x for k, x in want.items())]
    return sum(hits) if hits else None
def ratio(name):
    return val(f"llmprobe_prefix_cache_{name}_ratio")
page = open(f"{scratch}/status-{target}.html").read()
verdicts = ("cache effective", "ineffective: the router spreads sessions",
            "ineffective: the cache is off or the prefix changes")
row = [v for v in verdicts if v in page]
cold_n, warm_n = val("llmprobe_prefix_cache_probes_total", phase="cold"), val("llmprobe_prefix_cache_probes_total", phase="warm")
failed = val("llmprobe_prefix_cache_failures_total") or 0
tokens = {p: (val("llmprobe_prefix_cache_cached_tokens_total", phase=p) or 0,
              val("llmprobe_prefix_cache_prompt_tokens_total", phase=p) or 0) for p in ("cold", "warm")}
ttft = {p: val("llmprobe_prefix_cache_ttft_seconds_sum", phase=p) / val("llmprobe_prefix_cache_ttft_seconds_count", phase=p)
        for p in ("cold", "warm")}
hit, ttft_ratio, same = ratio("hit"), ratio("ttft"), ratio("same_endpoint")
fmt = lambda v: "-" if v is None else f"{v:.3f}"
print(f"{target}: {cold_n:.0f} cold and {warm_n:.0f} warm probes, {failed:.0f} failed; cached/prompt tokens "
      f"cold {tokens['cold'][0]:.0f}/{tokens['cold'][1]:.0f}, warm {tokens['warm'][0]:.0f}/{tokens['warm'][1]:.0f}; "
      f"mean TTFT cold {ttft['cold']:.2f} s, warm {ttft['warm']:.2f} s; hit ratio {fmt(hit)}, "
      f"TTFT ratio {fmt(ttft_ratio)}, same endpoint {fmt(same)}; status row: {row}")
alerts = json.load(open(f"{scratch}/alert-{target}.json"))
for a in alerts:
    print(f"{target}: alert expression {a['expr']!r} -> {a['values'] or 'nothing'}")
errors = []
if failed:
    errors.append(f"{failed:.0f} failed probes")
cold_share = tokens["cold"][0] / tokens["cold"][1] if tokens["cold"][1] else None
if cold_share is None or cold_share > 0.1:
    errors.append(f"cold probes' cached share {cold_share}, want at most 0.1 (a fresh nonce starts each prefix)")
if expect in ("on", "affinity"):
    if tokens["warm"][0] < warm_n * 100:
        errors.append(f"warm probes read {tokens['warm'][0]:.0f} cached tokens in {warm_n:.0f} probes")
    if hit is None or hit < min_hit:
        errors.append(f"hit ratio {hit}, want at least {min_hit}")
    if ttft_ratio is None or ttft_ratio > max_ttft:
        errors.append(f"TTFT ratio {ttft_ratio}, want at most {max_ttft}")
    want_row, fires = "cache effective", False
if expect == "affinity" and same != 1:
    errors.append(f"same-endpoint ratio {same}, want 1 (the hash keeps a session on its replica)")
if expect == "spread":
    kept = json.load(open(f"{scratch}/hit-affinity.json"))
    if same is None or same > 0.6:
        errors.append(f"same-endpoint ratio {same}, want at most 0.6 under round robin")
    if hit is None or hit > 0.6 * kept:
        errors.append(f"hit ratio {hit}, want at most 0.6 of the {kept:.3f} with affinity")
    want_row, fires = "ineffective: the router spreads sessions", True
if expect in ("on", "off"):
    scraped, engine_hit = val("llmprobe_engine_scrape_success"), val("llmprobe_engine_prefix_cache_hit_ratio")
    print(f"{target}: engine scrape success {scraped}, engine prefix-cache hit ratio {fmt(engine_hit)}")
    if scraped != 1 or engine_hit is not None:
        errors.append(f"engine scrape success {scraped}, engine hit ratio {engine_hit}: want 1 and none from llama.cpp")
if expect == "off":
    if hit is not None and hit > 0.1:
        errors.append(f"hit ratio {hit}, want at most 0.1 (or none) with the prompt cache off")
    if ttft_ratio is None or ttft_ratio < 0.7:
        errors.append(f"TTFT ratio {ttft_ratio}, want at least 0.7 with the prompt cache off")
    if same is not None:
        errors.append(f"same-endpoint ratio {same} without a gateway")
    want_row, fires = "ineffective: the cache is off or the prefix changes", True
if row != [want_row]:
    errors.append(f"status row {row}, want {want_row!r}")
# Firing: at least the hit ratio's expression (round robin may keep the TTFT ratio near
# its objective); not firing: none.
if alerts and any(a["values"] for a in alerts) != fires:
    errors.append(f"alert expressions {alerts}, want {'some' if fires else 'none'} to return the scenario")
if expect == "affinity":
    json.dump(hit, open(f"{scratch}/hit-affinity.json", "w"))
if errors:
    print("\n".join(f"FAIL: {target}: {e}" for e in errors))
    sys.exit(1)
print(f"PASS: {target}")
PY
  say "$name: $((SECONDS - t0)) s"
}

# 1. One llama-server, its prompt cache on.
port_a=$(free_port)
start_llama a "$port_a"
pid_a=$llama_pid
say "llama-server a on 127.0.0.1:$port_a ($("$LLMPROBE_LLAMA_SERVER" --version 2>&1 | grep -m1 version))"
probe_step llama-cache-on "http://127.0.0.1:$port_a" on

# 2. A second llama-server, both behind nginx.
port_b=$(free_port)
start_llama b "$port_b"
pid_b=$llama_pid
front_port=$(free_port)
mkdir -p "$scratch/nginx"
# start_nginx BALANCING: nginx on 127.0.0.1:$front_port in front of both, in the
# foreground; every answer names the replica that served it. Sets $nginx_pid.
start_nginx() {
  cat >"$scratch/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $scratch/nginx/nginx.pid;
error_log $scratch/nginx/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $scratch/nginx/body;
  proxy_temp_path $scratch/nginx/proxy;
  fastcgi_temp_path $scratch/nginx/fastcgi;
  uwsgi_temp_path $scratch/nginx/uwsgi;
  scgi_temp_path $scratch/nginx/scgi;
  upstream llama {
    $1
    server 127.0.0.1:$port_a;
    server 127.0.0.1:$port_b;
  }
  server {
    listen 127.0.0.1:$front_port;
    location / {
      proxy_pass http://llama;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
      add_header x-gateway-destination-endpoint-served \$upstream_addr always;
    }
  }
}
EOF
  "$LLMPROBE_NGINX" -p "$scratch/nginx" -c "$scratch/nginx/nginx.conf" -e "$scratch/nginx/error.log" \
    >"$scratch/nginx/stdout.log" 2>&1 &
  nginx_pid=$!
  stop_on_exit "$nginx_pid"
  for _ in $(seq 1 100); do
    kill -0 "$nginx_pid" 2>/dev/null || { cat "$scratch/nginx/stdout.log" "$scratch/nginx/error.log" >&2; fail "nginx exited at start"; }
    curl -sf "http://127.0.0.1:$front_port/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$scratch/nginx/error.log" >&2
  fail "nginx does not answer on 127.0.0.1:$front_port"
}
start_nginx "hash \$http_x_session_token consistent;"
say "nginx $("$LLMPROBE_NGINX" -v 2>&1 | sed 's/.*nginx\///') on 127.0.0.1:$front_port: hash of x-session-token over a and b (127.0.0.1:$port_b)"
probe_step llama-nginx-hash "http://127.0.0.1:$front_port" affinity "{header: x-session-token}"
stop_pid "$nginx_pid"
start_nginx ""
say "nginx: round robin over a and b"
probe_step llama-nginx-round-robin "http://127.0.0.1:$front_port" spread "{header: x-session-token}"
stop_pid "$nginx_pid"
stop_pid "$pid_b"

# 3. llama-server a again, its prompt cache off.
stop_pid "$pid_a"
port_a=$(free_port)
start_llama a-no-cache "$port_a" --no-cache-prompt
probe_step llama-cache-off "http://127.0.0.1:$port_a" off
say "PASS ($((SECONDS - t_begin)) s)"
