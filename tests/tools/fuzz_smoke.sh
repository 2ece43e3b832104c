#!/usr/bin/env bash
# Short libFuzzer runs of the SSE parser + chunk decoder target and of every protocol's
# decoders (fuzz/, see
# fuzz/README.md for the long recorded run). Needs the nightly toolchain, which cannot be
# installed from a package registry: without it this check says SKIP, whatever
# LLMPROBE_REQUIRE_TOOLS says. cargo-fuzz comes from crates.io and is installed when
# missing. Any crash, leak or timeout fails the check.
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root/fuzz"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  printf '[%s] SKIP: no nightly toolchain on this machine (cargo fuzz needs it)\n' "$check_name" >&2
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  say "cargo install cargo-fuzz@0.13.2"
  cargo install --quiet --locked cargo-fuzz --version 0.13.2 || fail "cargo install cargo-fuzz"
fi
runs=${LLMPROBE_FUZZ_RUNS:-300000}
corpus=$(mktemp -d)
on_exit rm -rf "$corpus"
# The fuzz crate's own build cache lives outside the work tree, like the main one.
export CARGO_TARGET_DIR="${LLMPROBE_CACHE:-$HOME/.cache/llmprobe}/fuzz-target"
# protocol_events links the whole crate, which takes long to build with the sanitizers:
# it runs when LLMPROBE_FUZZ_PROTOCOLS=1 (fuzz/README.md).
targets=(sse_chunks)
[ -n "${LLMPROBE_FUZZ_PROTOCOLS:-}" ] && targets+=(protocol_events)
for target in "${targets[@]}"; do
  say "cargo +nightly fuzz run $target (-runs=$runs)"
  mkdir -p "$corpus/$target"
  seeds=seeds/$target
  [ -d "$seeds" ] || seeds=
  features=()
  [ "$target" = protocol_events ] && features=(--features protocols)
  # shellcheck disable=SC2086 # no seeds directory: no argument
  cargo +nightly fuzz run "${features[@]}" "$target" "$corpus/$target" $seeds -- \
    -runs="$runs" -max_len=4096 -timeout=10 2>"$corpus/log" \
    || { tail -40 "$corpus/log" >&2; fail "the fuzzer found a problem in $target (see above)"; }
  grep -E '^Done [0-9]+ runs' "$corpus/log" >&2 || { tail -20 "$corpus/log" >&2; fail "$target: no 'Done N runs' line"; }
done
say "ok"
