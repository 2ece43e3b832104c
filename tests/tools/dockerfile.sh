#!/usr/bin/env bash
# Dockerfile: Docker cannot run in CI here, so check statically what the chart relies on:
# multi-stage, the final stage non-root as the chart's runAsUser, ENTRYPOINT llmprobe with
# the chart's daemon arguments as CMD, the chart's default port exposed, and a build context
# that keeps what cargo needs (.dockerignore must not drop src, Cargo.toml or Cargo.lock).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"
python3 - <<'PY' || fail "Dockerfile does not match the chart"
import json, re, sys
from pathlib import Path

text = Path("Dockerfile").read_text(encoding="utf-8")
lines = [l.strip() for l in re.sub(r"\\\n", " ", text).splitlines() if l.strip() and not l.strip().startswith("#")]
problems = []
froms = [i for i, l in enumerate(lines) if l.upper().startswith("FROM ")]
if len(froms) < 2:
    problems.append("not multi-stage (fewer than two FROM)")
final = lines[froms[-1]:] if froms else []
if froms and not re.search(r"distroless|debian:.*-slim|scratch", final[0]):
    problems.append(f"final base is not distroless/static/slim: {final[0]}")
def instr(name):
    return [l.split(None, 1)[1] for l in final if l.upper().startswith(name + " ")]
values = Path("helm/llmprobe/values.yaml").read_text(encoding="utf-8")
uid = re.search(r"runAsUser:\s*(\d+)", values).group(1)
users = instr("USER")
if not users or users[-1].split(":")[0] != uid or uid == "0":
    problems.append(f"final USER {users} is not the chart's runAsUser {uid}")
if [json.loads(e) for e in instr("ENTRYPOINT")] != [["llmprobe"]]:
    problems.append(f"ENTRYPOINT {instr('ENTRYPOINT')} is not [\"llmprobe\"]")
want_cmd = ["daemon", "--config", "/etc/llmprobe/config.yaml"]
if [json.loads(c) for c in instr("CMD")] != [want_cmd]:
    problems.append(f"CMD {instr('CMD')} is not {want_cmd}")
# The pod template the chart's Deployment and StatefulSets share.
pod = Path("helm/llmprobe/templates/_daemon-pod.tpl").read_text(encoding="utf-8")
if "- daemon\n            - --config\n            - /etc/llmprobe/config.yaml" not in pod:
    problems.append("the chart's daemon pod args differ from the image's CMD")
port = re.search(r"listen:\s*\"?[^\"\n]*:(\d+)", values).group(1)
if port not in " ".join(instr("EXPOSE")).split():
    problems.append(f"EXPOSE {instr('EXPOSE')} lacks the chart's port {port}")
if not re.search(r"^\s*repository:\s*llmprobe\s*$", values, re.M):
    problems.append("values.yaml image.repository is not the Dockerfile's image (llmprobe)")
ignored = {l.strip() for l in Path(".dockerignore").read_text(encoding="utf-8").splitlines()
           if l.strip() and not l.startswith("#")}
for needed in ("src", "build.rs", "Cargo.toml", "Cargo.lock", "rust-toolchain.toml", "benches", "tests"):
    if needed in ignored or f"{needed}/" in ignored or "*" in ignored:
        problems.append(f".dockerignore drops {needed}, which cargo build needs")
# Files the crate embeds at compile time must be in the build context.
for rs in Path("src").rglob("*.rs"):
    for rel in re.findall(r'include_(?:str|bytes)!\(\s*"([^"]+)"', rs.read_text(encoding="utf-8")):
        top = (rs.parent / rel).resolve().relative_to(Path.cwd().resolve()).parts[0]
        if top in ignored or f"{top}/" in ignored:
            problems.append(f".dockerignore drops {top}/, which {rs} embeds ({rel})")
if "--locked" not in text:
    problems.append("cargo build without --locked")
for p in problems:
    print(f"FAIL  Dockerfile: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
say "ok"
