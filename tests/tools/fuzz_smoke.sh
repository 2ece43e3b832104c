#!/usr/bin/env bash
# A short libFuzzer run of the SSE parser + chunk decoder target (fuzz/, see
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
trap 'rm -rf "$corpus"' EXIT
# The fuzz crate's own build cache lives outside the work tree, like the main one.
export CARGO_TARGET_DIR="${LLMPROBE_CACHE:-$HOME/.cache/llmprobe}/fuzz-target"
say "cargo +nightly fuzz run sse_chunks (-runs=$runs)"
cargo +nightly fuzz run sse_chunks "$corpus" seeds/sse_chunks -- \
  -runs="$runs" -max_len=4096 -timeout=10 2>"$corpus/log" \
  || { tail -40 "$corpus/log" >&2; fail "the fuzzer found a problem (see above)"; }
grep -E '^Done [0-9]+ runs' "$corpus/log" >&2 || { tail -20 "$corpus/log" >&2; fail "no 'Done N runs' line"; }
say "ok"
