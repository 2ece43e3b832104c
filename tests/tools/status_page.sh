#!/usr/bin/env bash
# The daemon's status page in a real browser: `llmprobe daemon --mock` on a free
# 127.0.0.1 port, headless Chromium loads `/` (desktop 1280x900 and phone 390x844) and
# `/target/mock`, with --screenshot and --dump-dom. The DOM must hold a row for every
# scenario /metrics reports (and every adapter's share of one), each followed by its last-hour row of three SVG sparklines
# with drawn data, the engine line, the fleet target's engine line with its replicas
# scraped, the demo's fingerprint row (same model), and no Content-Security-Policy
# violation may be logged; the PNGs must have the window's size. At both widths no
# table may be wider than its box and no page wider than the window
# (tests/tools/lib/page_width.py).
# LLMPROBE_STATUS_PNG=FILE keeps the desktop screenshot (docs/);
# LLMPROBE_STATUS_WAIT=SECONDS probes longer first (more minutes in the sparklines).
source "$(dirname "$0")/lib/common.bash"
need_tool LLMPROBE_CHROMIUM chromium
chromium=$LLMPROBE_CHROMIUM
bin=${LLMPROBE_BIN:-$repo_root/target/debug/llmprobe}
[ -x "$bin" ] || skip_or_fail "no llmprobe binary at $bin (set LLMPROBE_BIN)"
make_scratch

# Created before the daemon starts: the loop below may read before the child opens it.
: >"$scratch/daemon.out"
"$bin" daemon --mock --mock-fault http_500:0.05 --listen 127.0.0.1:0 \
  >"$scratch/daemon.out" 2>"$scratch/daemon.err" &
pid=$!
stop_on_exit "$pid"
wait_for_daemon "$pid" "$scratch/daemon.out" "$scratch/daemon.err"
say "daemon --mock at $url; probing for ${LLMPROBE_STATUS_WAIT:-8} s"
sleep "${LLMPROBE_STATUS_WAIT:-8}"

# The scenarios the page must show: every one /metrics has probed. What the checks
# below need (a probe of every scenario, five of the mock target's, a good engine
# scrape) takes a couple of seconds at the demo's rate; on a busy machine it is polled
# for, up to two minutes, rather than assumed after the sleep.
python3 - "$url" >"$scratch/scenarios" <<'PY' || fail "reading /metrics"
import re, sys, time, urllib.request
deadline = time.monotonic() + 120
while True:
    text = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=10).read().decode()
    done = {}
    for labels, value in re.findall(r'^llmprobe_requests_total\{([^}]*)\} (\S+)$', text, re.M):
        l = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        done[(l["target"], l["scenario"], l["model"])] = float(value)
    scraped = re.search(r'^llmprobe_engine_scrape_success\{[^}]*target="mock"[^}]*\} 1$', text, re.M)
    mock = sum(v for (t, _, _), v in done.items() if t == "mock")
    fingerprinted = re.search(r'^llmprobe_fingerprint_last_run_timestamp_seconds\{', text, re.M)
    fleet = re.search(r'^llmprobe_fleet_scraped_replicas\{[^}]*target="mock-fleet"[^}]*\} 2$', text, re.M)
    if done and all(v >= 1 for v in done.values()) and mock >= 5 and scraped and fingerprinted and fleet:
        break
    assert time.monotonic() < deadline, f"not every scenario probed within 2 minutes: {done}"
    time.sleep(0.5)
# Each target's own model, from the configuration the daemon serves (`- name:` then its
# `model:`): a row of an adapter's share is named SCENARIO@ADAPTER, the base model's
# SCENARIO.
base, target = {}, None
config = urllib.request.urlopen(sys.argv[1] + "/config", timeout=10).read().decode()
for line in config.splitlines():
    if m := re.match(r"^- name: (.+)$", line):
        target = m.group(1).strip()
    elif (m := re.match(r"^  model: (.+)$", line)) and target is not None:
        base[target] = m.group(1).strip()
# One row per target × scenario × model: the row names, repeated as often as targets have them.
print("\n".join(sorted(s if m == base[t] else f"{s}@{m}" for t, s, m in done)))
PY
say "scenarios: $(tr '\n' ' ' <"$scratch/scenarios")"

browse() { # name, width, height, path
  local name=$1 w=$2 h=$3 path=$4 common
  common=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --hide-scrollbars --window-size="$w,$h" --virtual-time-budget=3000
    --enable-logging=stderr --v=0)
  timeout 60 "$chromium" "${common[@]}" --user-data-dir="$(mktemp -d "$scratch/profile.XXXX")" \
    --screenshot="$scratch/$name.png" "$url$path" >/dev/null 2>"$scratch/$name.shot.log" \
    || { tail -n 20 "$scratch/$name.shot.log" >&2; fail "chromium --screenshot $path"; }
  timeout 60 "$chromium" "${common[@]}" --user-data-dir="$(mktemp -d "$scratch/profile.XXXX")" \
    --dump-dom "$url$path" >"$scratch/$name.html" 2>"$scratch/$name.dom.log" \
    || { tail -n 20 "$scratch/$name.dom.log" >&2; fail "chromium --dump-dom $path"; }
  if grep -i "content security policy" "$scratch/$name.shot.log" "$scratch/$name.dom.log" >&2; then
    fail "$path: the browser reports a Content-Security-Policy violation"
  fi
}
browse desktop 1280 900 "/?refresh=off"
browse phone 390 844 "/?refresh=off"
browse target 1280 900 "/target/mock?refresh=off"

# Sideways overflow at both widths, on the pages as served: no table wider than its box,
# no page wider than the window (lib/page_width.py measures them over DevTools).
for width in 1280 390; do
  for path in "/?refresh=off" "/target/mock?refresh=off"; do
    verdict=$(timeout 90 python3 "$repo_root/tests/tools/lib/page_width.py" "$chromium" \
      "$url$path" "$width" 900) || fail "$path scrolls sideways at $width px: $verdict"
    say "sideways overflow of $path at $verdict"
  done
done

python3 - "$scratch" <<'PY' || fail "the status page in Chromium"
import re, struct, sys
from pathlib import Path
d = Path(sys.argv[1])
problems = []
want = d.joinpath("scenarios").read_text().split()
for view in ("desktop", "phone"):
    dom = d.joinpath(f"{view}.html").read_text()
    rows = re.findall(r'<tr class="scenario">(.*?)</tr>\s*(?:<tr class="trend">(.*?)</tr>)?', dom, re.S)
    shown = sorted(re.match(r'<td data-label="scenario">([^<]*)</td>', r).group(1) for r, _ in rows)
    if shown != want:
        problems.append(f"{view}: scenario rows {shown}, /metrics has {want}")
    for _, trend in rows:
        sparks = re.findall(r'<svg class="spark (\w+)"', trend)
        if sorted(sparks) != ["goodput", "rate", "ttft"]:
            problems.append(f"{view}: a row's last hour has sparklines {sparks}")
        if trend.count("<polyline") < 3:
            problems.append(f"{view}: a row's sparklines draw no data")
    # The demo's fingerprint target, compared with a baseline of its own engine.
    fps = re.findall(r'<tr class="fingerprint">(.*?)</tr>', dom, re.S)
    if len(fps) != 1 or '<span class="ok">same model</span>' not in fps[0]:
        problems.append(f"{view}: fingerprint rows {fps}, want one saying same model")
    if "Engine:" not in dom or "scrape ok" not in dom:
        problems.append(f"{view}: no engine line with a working scrape")
    # The fleet target says what its replicas' engines hold, not that nothing was scraped.
    fleet = re.search(r'<section class="target"><h2><a href="[^"]*">mock-fleet</a>(.*?)</section>', dom, re.S)
    engines = re.findall(r'<p class="engine">(.*?)</p>', fleet.group(1) if fleet else "")
    if len(engines) != 1 or not re.match(
        r'Fleet engines: <span class="ok">2 of 2 scraped</span> · running \d+ · waiting \d+ · '
        r'KV cache \d+\.\d % · headroom \d+\.\d %$', engines[0]
    ):
        problems.append(f"{view}: the fleet target's engine lines are {engines}")
    if 'http-equiv="refresh"' in dom:
        problems.append(f"{view}: ?refresh=off still auto-refreshes")
target = d.joinpath("target.html").read_text()
probes = re.findall(r'<tr class="probe">', target)
if len(probes) < 5:
    problems.append(f"/target/mock lists {len(probes)} probes")
sizes = {"desktop": (1280, 900), "phone": (390, 844), "target": (1280, 900)}
for name, size in sizes.items():
    png = d.joinpath(f"{name}.png").read_bytes()
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        problems.append(f"{name}.png is not a PNG")
        continue
    got = struct.unpack(">II", png[16:24])
    if got != size or len(png) < 10_000:
        problems.append(f"{name}.png is {got}, {len(png)} bytes; expected {size} with content")
for p in problems:
    print(f"FAIL  {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
if [ -n "${LLMPROBE_STATUS_PNG:-}" ]; then
  cp "$scratch/desktop.png" "$LLMPROBE_STATUS_PNG"
  say "screenshot kept as $LLMPROBE_STATUS_PNG"
fi
say "ok ($(wc -c <"$scratch/desktop.html") bytes of DOM, $(wc -l <"$scratch/scenarios") scenarios, $(grep -o '<svg class="spark' "$scratch/desktop.html" | wc -l) sparklines)"
