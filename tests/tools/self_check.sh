#!/usr/bin/env bash
# The daemon's self-check on the release binary: undisturbed, its self-probes all
# succeed and their TTFT error is reported (how small it is on a quiet machine is a
# benchmark, BENCHMARKS.md "The prober's own error bar": other work on a shared CI
# machine delays wake-ups by milliseconds whatever the client does, so it is printed,
# and only bounded at a quarter second, a sanity check); then the daemon is CPU-throttled
# (a cgroup with a 2 % CPU quota, where this machine lets a test create one; else
# pinned to one CPU next to busy loops) and the error must rise to at least 5 ms, with
# the cgroup's throttling counters moving. The daemon's only target is down (a closed
# port): the self-check must not depend on one.
source "$(dirname "$0")/lib/common.bash"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || skip_or_fail "no llmprobe binary at $bin (set LLMPROBE_BIN)"
make_scratch
cg=
# A cgroup goes only once empty: the daemon in it is stopped first.
remove_cgroup() {
  stop_pid "$pid"
  rmdir "$cg" 2>/dev/null
}

cat >"$scratch/daemon.yaml" <<'YAML'
self_check: {rate: 20/s, ttft: 20ms, itl: 2ms, output_tokens: 16}
targets:
  - name: down
    base_url: http://127.0.0.1:9
    model: m
    rate: 1/h
YAML
: >"$scratch/daemon.out"
"$bin" daemon --config "$scratch/daemon.yaml" --listen 127.0.0.1:0 \
  >"$scratch/daemon.out" 2>"$scratch/daemon.err" &
pid=$!
stop_on_exit "$pid"
wait_for_daemon "$pid" "$scratch/daemon.out" "$scratch/daemon.err"

# window FROM TO: the TTFT-error p99 upper bound (a bucket bound) between two scrapes,
# their probe count, failures and throttled periods.
window() {
  python3 - "$1" "$2" <<'PY'
import sys
def read(path):
    s = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        s[name] = float(value)
    return s
a, b = read(sys.argv[1]), read(sys.argv[2])
d = lambda k: b.get(k, 0.0) - a.get(k, 0.0)
pre = "llmprobe_self_check_ttft_error_seconds"
count = d(pre + "_count")
bounds = sorted(float(k.split('le="')[1].split('"')[0]) for k in b if k.startswith(pre + "_bucket") and "+Inf" not in k)
p99 = float("inf")
for le in bounds:
    if count and d(f'{pre}_bucket{{le="{le:g}"}}') >= 0.99 * count:
        p99 = le
        break
print(f"{p99} {count:.0f} {d('llmprobe_self_check_failures_total'):.0f} {d('llmprobe_cgroup_cpu_throttled_periods_total'):.0f}")
PY
}

# The window starts after the first connection and the first page faults.
sleep 5
curl -sf "$url/metrics" >"$scratch/m0" || fail "GET /metrics"
sleep 12
curl -sf "$url/metrics" >"$scratch/m1" || fail "GET /metrics"
read -r p99 n failed _ < <(window "$scratch/m0" "$scratch/m1")
say "undisturbed: $n self-probes, $failed failed, TTFT error p99 <= ${p99}s"
# 240 due in 12 s at 20/s; the self-check skips arrivals beyond two in flight, a share
# that grows with how long a busy machine makes each one (186 were counted at load
# average 7): a tenth of the rate shows that it runs.
[ "$n" -ge 24 ] || fail "only $n self-probes in 12 s at 20/s"
[ "$failed" -eq 0 ] || fail "$failed self-probes failed"
# On a quiet machine the p99 stays within the 2.5 ms bucket (at 20/s usually within
# 1 ms: BENCHMARKS.md, "The prober's own error bar", measured over minutes). That is a
# benchmark, not a test: other work on the cores (a parallel build) delays wake-ups by
# milliseconds, tens of them at times, whatever the client does, and the load average
# says so only a minute late. A quarter second rules out nonsense only.
say "undisturbed TTFT error p99 bucket ${p99}s (load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores)"
python3 -c "import sys; sys.exit(0 if $p99 <= 0.25 else 1)" ||
  { grep self_check "$scratch/m1" >&2; fail "undisturbed TTFT error p99 ${p99}s is above a quarter second"; }

# Throttle the daemon: cgroup v1 cpu controller, else v2, else busy loops on its CPU.
how=
for root in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
  if [ -w "$root" ] && [ -e "$root/cgroup.procs" ]; then
    d="$root/llmprobe-self-check-$$"
    if mkdir "$d" 2>/dev/null; then
      if [ -e "$d/cpu.cfs_quota_us" ] && echo 100000 >"$d/cpu.cfs_period_us" &&
        echo 2000 >"$d/cpu.cfs_quota_us" && echo "$pid" >"$d/cgroup.procs"; then
        cg=$d how="cgroup v1 cpu.cfs_quota_us 2 %"
        on_exit remove_cgroup
      elif [ -e "$d/cpu.max" ] && echo "2000 100000" >"$d/cpu.max" && echo "$pid" >"$d/cgroup.procs"; then
        cg=$d how="cgroup v2 cpu.max 2 %"
        on_exit remove_cgroup
      else
        rmdir "$d"
      fi
    fi
  fi
  [ -n "$how" ] && break
done
if [ -z "$how" ]; then
  command -v taskset >/dev/null || skip_or_fail "cannot throttle the daemon: no writable cgroup and no taskset"
  taskset -a -p -c 0 "$pid" >/dev/null
  for _ in 1 2 3 4; do
    taskset -c 0 sh -c 'while :; do :; done' &
    stop_on_exit $!
  done
  how="pinned to CPU 0 with 4 busy loops"
fi
say "throttling the daemon: $how"
sleep 2
curl -sf "$url/metrics" >"$scratch/m2" || fail "GET /metrics while throttled"
sleep 15
curl -sf --max-time 20 "$url/metrics" >"$scratch/m3" || fail "GET /metrics while throttled"
read -r p99 n failed throttled < <(window "$scratch/m2" "$scratch/m3")
say "throttled: $n self-probes, $failed failed, TTFT error p99 <= ${p99}s, $throttled throttled periods"
[ "$n" -ge 5 ] || fail "only $n self-probes completed while throttled"
python3 -c "import sys; sys.exit(0 if $p99 >= 0.005 else 1)" ||
  fail "throttled TTFT error p99 ${p99}s did not rise to 5 ms"
if [ -n "$cg" ]; then
  [ "$throttled" -gt 0 ] || fail "llmprobe_cgroup_cpu_throttled_periods_total did not move in a throttled cgroup"
fi
say "ok"
