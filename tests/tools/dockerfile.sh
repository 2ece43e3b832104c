#!/usr/bin/env bash
# Dockerfile, read as text (Docker cannot run here; tests/tools/image.sh builds and runs
# its final stage with podman): what the chart relies on and what keeps the two builds
# one. Multi-stage; the final stage's base is the RUNTIME_BASE argument, distroless cc
# nonroot by default, and its binary comes from the stage BINARY names (`build`, cargo
# auditable in Docker, by default; `prebuilt`, what scripts/image passes), both laid out
# as the final stage copies; the final stage non-root as the chart's runAsUser,
# ENTRYPOINT llmprobe with the chart's daemon arguments as CMD, the chart's default port
# exposed, OCI labels with the crate's version and license; scripts/image builds that
# final stage (no Containerfile of its own); and a build context that keeps what cargo
# needs (.dockerignore must not drop src, Cargo.toml or Cargo.lock).
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
def instr(name, stage=None):
    stage = final if stage is None else stage
    return [l.split(None, 1)[1] for l in stage if l.upper().startswith(name + " ")]
# Global arguments (before the first FROM) and each named stage's lines.
args = dict(re.match(r"ARG\s+(\w+)=?(.*)", l).groups() for l in lines[:froms[0]] if l.upper().startswith("ARG ")) if froms else {}
stages = {}
for i, start in enumerate(froms):
    m = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?$", lines[start], re.I)
    if m and m.group(2):
        stages[m.group(2)] = (m.group(1), lines[start:(froms + [len(lines)])[i + 1]])
if final and final[0] != "FROM ${RUNTIME_BASE}":
    problems.append(f"the final stage is not FROM ${{RUNTIME_BASE}}: {final[0]}")
if not re.fullmatch(r"gcr\.io/distroless/cc-debian12:nonroot", args.get("RUNTIME_BASE", "")):
    problems.append(f"RUNTIME_BASE defaults to {args.get('RUNTIME_BASE')!r}, not distroless cc-debian12:nonroot")
if args.get("BINARY") != "build" or stages.get("binary", (None,))[0] != "${BINARY}":
    problems.append("no `FROM ${BINARY} AS binary` with BINARY defaulting to the build stage")
for name in ("build", "prebuilt"):
    if name not in stages:
        problems.append(f"no stage {name}")
copies = [c.split()[-2:] for c in instr("COPY") if c.startswith("--from=binary ")]
wanted = {"/out/bin/llmprobe": "/usr/local/bin/llmprobe",
          "/out/sbom/llmprobe.cdx.json": "/usr/share/doc/llmprobe/sbom.cdx.json"}
if dict(copies) != wanted:
    problems.append(f"the final stage copies {copies} from the binary stage, not {wanted}")
build = " ".join(stages.get("build", ("", []))[1])
for path in wanted:
    if path not in build:
        problems.append(f"the build stage does not write {path}")
if "cargo auditable build --release --locked" not in build:
    problems.append("the build stage does not run cargo auditable build --release --locked")
if "COPY out/ /out/" not in stages.get("prebuilt", ("", []))[1]:
    problems.append("the prebuilt stage does not take out/ of the build context as /out/")
for tool in ("CARGO_AUDITABLE_VERSION", "CARGO_CYCLONEDX_VERSION"):
    if not re.search(rf"^ARG {tool}=\d+\.\d+\.\d+$", text, re.M):
        problems.append(f"no pinned ARG {tool}= (scripts/install-tools reads it)")
image_script = Path("scripts/image").read_text(encoding="utf-8")
for needed in ('-f "$root/Dockerfile"', "--build-arg BINARY=prebuilt", "--build-arg RUNTIME_BASE="):
    if needed not in image_script:
        problems.append(f"scripts/image does not build the Dockerfile's final stage ({needed})")
cargo_version = re.search(r'^version\s*=\s*"([^"]+)"', Path("Cargo.toml").read_text(encoding="utf-8"), re.M).group(1)
app_version = re.search(r'^appVersion:\s*"?([^"\n]+)', Path("helm/llmprobe/Chart.yaml").read_text(encoding="utf-8"), re.M).group(1)
image_version = dict(re.match(r"ARG\s+(\w+)=?(.*)", a).groups() for a in ["ARG " + x for x in instr("ARG")]).get("LLMPROBE_VERSION")
if not image_version == cargo_version == app_version:
    problems.append(f"LLMPROBE_VERSION {image_version}, Cargo.toml {cargo_version} and appVersion {app_version} differ")
labels = " ".join(instr("LABEL"))
for key in ("title", "version", "revision", "source", "licenses"):
    if f"org.opencontainers.image.{key}=" not in labels:
        problems.append(f"no label org.opencontainers.image.{key}")
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
