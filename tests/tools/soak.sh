#!/usr/bin/env bash
# Short soak: benches/soak.sh for SOAK_MINUTES (default 1.5) with the
# release daemon against `llmprobe mock` with a mix of every fault kind at 20 probes/s.
# Fails when, after a 30 s warm-up, the daemon's RSS grows by more than 4 MiB or its open
# fds by more than 16 (median of the last third of the samples vs the first third), or
# when the daemon dies. The full 30-minute run and its numbers: docs/reliability.md.
#
# Environment: LLMPROBE_BIN (the release binary), SOAK_MINUTES.
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"
make_scratch

# The bounds check itself must catch a leak: a synthetic run whose RSS and fds climb.
python3 - "$scratch/leak.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("t_s,rss_kib,fds,threads,tasks,probes,failures,inflight\n")
    for i in range(30):
        f.write(f"{i * 5},{12000 + i * 400},{20 + i * 2},3,,{i * 100},{i * 10},4\n")
PY
if python3 benches/soak_plot.py "$scratch/leak.csv" --warmup 30 --check >/dev/null 2>&1; then
  fail "benches/soak_plot.py --check passed a leaking run"
fi

minutes=${SOAK_MINUTES:-1.5}
say "soak: ${minutes} min at 20 probes/s with faults"
LLMPROBE_BIN=$bin SAMPLE=5 WARMUP=30 CHECK=1 RSS_BOUND_KIB=4096 FD_BOUND=16 \
  OUT="$scratch/soak.csv" bash benches/soak.sh "$minutes" || fail "soak (samples above)"
say "PASS"
