# shellcheck shell=bash
# Shared by tests/tools/*.sh (sourced, never run): locating the real tools and the
# SKIP-or-fail policy. A tool comes from $LLMPROBE_<NAME> (written by scripts/install-tools
# to $LLMPROBE_CACHE/tools.env), else from PATH. When it is missing the check fails if
# LLMPROBE_REQUIRE_TOOLS=1 (scripts/test sets it after installing), else it prints SKIP
# and exits 0 so a laptop without the tools can still run the rest.

set -euo pipefail

# The Python checks leave no __pycache__ in the work tree.
export PYTHONDONTWRITEBYTECODE=1
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
check_name=$(basename "$0" .sh)
_tools_env="${LLMPROBE_CACHE:-$HOME/.cache/llmprobe}/tools.env"
# shellcheck disable=SC1090
[ -f "$_tools_env" ] && source "$_tools_env"

say() { printf '[%s] %s\n' "$check_name" "$*" >&2; }
fail() { printf '[%s] FAIL: %s\n' "$check_name" "$*" >&2; exit 1; }

skip_or_fail() {
  if [ "${LLMPROBE_REQUIRE_TOOLS:-}" = 1 ]; then
    fail "$1 (LLMPROBE_REQUIRE_TOOLS=1)"
  fi
  printf '[%s] SKIP: %s\n' "$check_name" "$1" >&2
  exit 0
}

# need_tool VAR name: sets $VAR to the tool's path ($VAR if executable, else from PATH),
# or skips/fails. Not for use in $(...): a skip must exit this shell, not a subshell.
need_tool() {
  local var=$1 name=$2 path
  path=${!var:-}
  if [ -z "$path" ] || [ ! -x "$path" ]; then
    path=$(command -v "$name" || true)
  fi
  [ -n "$path" ] || skip_or_fail "$name not found (\$$var unset and not on PATH; run scripts/install-tools)"
  printf -v "$var" '%s' "$path"
}

# The one cleanup of every check: steps registered with `on_exit CMD [ARGS...]` run in
# reverse order when the shell exits, however it exits (success, `fail`, `set -e`), so a
# later step (a process in the scratch directory) is undone before an earlier one (the
# directory). A signal exits 1 through the same steps. Scripts register steps and never
# set a trap of their own: a second trap would replace this one.
_exit_steps=()
on_exit() {
  _exit_steps+=("$(printf '%q ' "$@")")
}
_run_exit_steps() {
  # Every step runs, whatever an earlier one returned.
  set +e
  local i
  for ((i = ${#_exit_steps[@]} - 1; i >= 0; i--)); do
    eval "${_exit_steps[i]}"
  done
}
trap _run_exit_steps EXIT
trap 'exit 1' INT TERM HUP PIPE

# stop_on_exit PID: a background process of this shell ended (SIGTERM, then waited for)
# on exit, unless it has ended and been waited for already.
stop_on_exit() {
  on_exit stop_pid "$1"
}

# stop_pid PID: SIGTERM to a background process of this shell and a wait for it. One
# already waited for is left alone: its pid may be another process' by now.
stop_pid() {
  local p
  for p in $(jobs -p); do
    if [ "$p" = "$1" ]; then
      kill "$1" 2>/dev/null || true
      wait "$1" 2>/dev/null || true
      return 0
    fi
  done
}

# A scratch directory removed on exit.
make_scratch() {
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/llmprobe-$check_name.XXXXXX")
  on_exit rm -rf "$scratch"
}

# wait_for_daemon PID OUT ERR [TRIES]: waits, polling every 0.1 s for TRIES tries (600,
# a minute, by default), for the daemon of PID to print its address to OUT, and sets
# $url to it; fails, showing ERR, if the daemon exits first or never prints it.
wait_for_daemon() {
  local pid=$1 out=$2 err=$3 tries=${4:-600}
  url=
  for _ in $(seq "$tries"); do
    # The daemon may not have opened OUT yet: no file is no address yet (not a failure
    # that `set -e` would end the check on).
    url=$(sed -n 's/^llmprobe daemon listening on //p' "$out" 2>/dev/null || true)
    [ -n "$url" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$err" >&2; fail "daemon exited"; }
    sleep 0.1
  done
  cat "$err" >&2
  fail "daemon did not print its address"
}

# fingerprint_drift PID ERR: polls the daemon at $url (of PID, its stderr in ERR) every
# 0.5 s, up to 5 minutes, until its first fingerprint run is published, and prints that
# run's llmprobe_fingerprint_drift (0 or 1; nothing if none came). Fails, showing ERR,
# if the daemon exits.
fingerprint_drift() {
  local pid=$1 err=$2 drift=
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || { cat "$err" >&2; fail "the daemon exited"; }
    drift=$(curl -sf --max-time 10 "$url/metrics" | sed -n 's/^llmprobe_fingerprint_drift{.*} \([0-9]*\)$/\1/p') || drift=
    [ -n "$drift" ] && break
    sleep 0.5
  done
  printf '%s' "$drift"
}
