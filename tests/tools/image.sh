#!/usr/bin/env bash
# The image the chart runs, built and run. scripts/image builds it from $LLMPROBE_BIN
# (this commit's `cargo auditable` release binary, scripts/test's) over the Debian-made
# distroless base, offline; then, with podman and runc:
#   - the image: the Dockerfile's contract (user 65532, ENTRYPOINT llmprobe, the chart's
#     args as CMD, its port exposed, OCI labels with version and commit), no shell and
#     no package manager among its files, the binary's embedded dependency list (.dep-v0)
#     naming the packages the SBOM in the image names;
#   - the pod: `helm template` rendered, and run as its pod spec says (args, env, user,
#     fsGroup, read-only root with the emptyDir as tmpfs, all capabilities dropped, no
#     privilege escalation, the ConfigMap's config and the Secret's files mounted), against
#     two `llmprobe mock`s on the host reached by DNS names (--add-host): one plain, one
#     behind TLS with its CA in the chart's Secret mount (tls.ca_file); the liveness and
#     readiness probes polled as the kubelet would, /metrics with goodput from both
#     targets and no failure; `podman stop` (SIGTERM) with probes in flight ends it with
#     exit 0 well inside the grace period, and its log has no failure;
#   - `daemon --mock` (goodput on /metrics) and `bench --mock` run in it, and
#     `--entrypoint /bin/sh` does not.
# Everything talks over 127.0.0.1 (--network host); servers bind port 0.
source "$(dirname "$0")/lib/common.bash"
need_tool LLMPROBE_PODMAN podman
need_tool LLMPROBE_RUNC runc
need_tool LLMPROBE_HELM helm
need_tool LLMPROBE_OPENSSL openssl
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || skip_or_fail "no llmprobe binary at $bin (set LLMPROBE_BIN)"
objdump -h "$bin" 2>/dev/null | grep ' \.dep-v0 ' >/dev/null \
  || skip_or_fail "$bin was not built by cargo auditable (scripts/test does so once install-tools installed it)"
python=python3
for candidate in "${LLMPROBE_CACHE:-$HOME/.cache/llmprobe}/venv/bin/python" python3; do
  if "$candidate" -c 'import yaml' 2>/dev/null; then python=$candidate; break; fi
done
"$python" -c 'import yaml' 2>/dev/null || skip_or_fail "no Python with PyYAML (run scripts/install-tools)"
make_scratch
cd "$repo_root" || exit 1
podman=("$LLMPROBE_PODMAN" --runtime "$LLMPROBE_RUNC")
# The machine's hard limits are below podman's default ones.
run=("${podman[@]}" run --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
tag=llmprobe-image-test-$$
remove_containers() {
  "${podman[@]}" ps -a --filter "name=^$tag" --format '{{.Names}}' | xargs -r "${podman[@]}" rm -f -t 0 >/dev/null 2>&1
}
on_exit remove_containers

# --- Build ------------------------------------------------------------------------------
# The SBOM and image id stay where scripts/image puts them by default, beside the image
# that stays too: CI's build of this commit.
out=${CARGO_TARGET_DIR:-${LLMPROBE_CACHE:-$HOME/.cache/llmprobe}/target}/image
"$repo_root/scripts/image" --binary "$bin" --out "$out" 2>"$scratch/build.log" \
  || { cat "$scratch/build.log" >&2; fail "scripts/image"; }
sed -n 's/^==> image: //p' "$scratch/build.log" | while read -r line; do say "$line"; done
version=$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["version"])')
image=localhost/llmprobe:$version
commit=$(git rev-parse --short=12 HEAD)

# --- The image's contract and files -----------------------------------------------------
"${podman[@]}" image inspect "$image" >"$scratch/inspect.json"
"${podman[@]}" create --name "$tag-files" "$image" >/dev/null
"${podman[@]}" export -o "$scratch/files.tar" "$tag-files"
"${podman[@]}" rm "$tag-files" >/dev/null
"$LLMPROBE_HELM" template llmprobe helm/llmprobe >"$scratch/default.yaml" 2>"$scratch/helm.err" \
  || { cat "$scratch/helm.err" >&2; fail "helm template"; }
python3 - "$scratch" "$version" "$commit" "$out" <<'PY' || fail "the image does not keep the Dockerfile's contract"
import json, re, subprocess, sys, tarfile, tomllib, zlib
scratch, version, commit, out = sys.argv[1:5]
problems = []
[image] = json.load(open(f"{scratch}/inspect.json"))
cfg = image["Config"]
cargo = tomllib.load(open("Cargo.toml", "rb"))["package"]
chart = open("helm/llmprobe/Chart.yaml").read()
want = {
    "User": "65532:65532",
    "Entrypoint": ["llmprobe"],
    "Cmd": ["daemon", "--config", "/etc/llmprobe/config.yaml"],
}
for key, value in want.items():
    if cfg.get(key) != value:
        problems.append(f"{key} is {cfg.get(key)!r}, not {value!r}")
rendered = open(f"{scratch}/default.yaml").read()
if "- daemon\n            - --config\n            - /etc/llmprobe/config.yaml" not in rendered:
    problems.append("the chart's default pod args are not the image's CMD")
if "9464/tcp" not in cfg.get("ExposedPorts", {}):
    problems.append(f"9464/tcp not exposed: {cfg.get('ExposedPorts')}")
labels = cfg.get("Labels") or {}
oci = "org.opencontainers.image."
for key, value in {"title": "llmprobe", "version": cargo["version"], "revision": commit,
                   "licenses": cargo["license"]}.items():
    if labels.get(oci + key) != value:
        problems.append(f"label {oci}{key} is {labels.get(oci + key)!r}, not {value!r}")
if oci + "source" not in labels:
    problems.append("no label org.opencontainers.image.source")
app_version = re.search(r'^appVersion:\s*"?([^"\n]+)', chart, re.M).group(1)
if app_version != version:
    problems.append(f"the chart's appVersion {app_version} is not the crate's {version}")

# The files: no shell, no package manager, nothing executable but the binary and glibc.
tar = tarfile.open(f"{scratch}/files.tar")
members = {m.name.lstrip("./"): m for m in tar.getmembers()}
for name, m in members.items():
    base = name.rsplit("/", 1)[-1]
    if not m.isdir() and base in {"sh", "bash", "dash", "ash", "busybox", "apt", "apt-get", "dpkg", "perl", "python3"}:
        problems.append(f"the image carries {name}")
    if m.isfile() and m.mode & 0o111 and name != "usr/local/bin/llmprobe" \
            and not re.fullmatch(r"lib/x86_64-linux-gnu/(ld-linux-x86-64|libc)\.so\.\d+", name):
        problems.append(f"executable file in the image: {name}")
home = members.get("home/nonroot")
if not home or (home.uid, home.gid) != (65532, 65532):
    problems.append("no /home/nonroot owned by 65532")
passwd = tar.extractfile(members["etc/passwd"]).read().decode()
if "nonroot:x:65532:65532:" not in passwd:
    problems.append("/etc/passwd lacks nonroot 65532")
bundle = tar.extractfile(members["etc/ssl/certs/ca-certificates.crt"]).read().decode()
if bundle.count("BEGIN CERTIFICATE") < 100:
    problems.append("the CA bundle has fewer than 100 certificates")

# The binary's dependency list (cargo-auditable's .dep-v0: zlib-compressed JSON) against
# the SBOM in the image: every crate linked in is a component of the SBOM.
binary = tar.extractfile(members["usr/local/bin/llmprobe"]).read()
open(f"{scratch}/llmprobe", "wb").write(binary)
# The section dumped; the binary written back (objcopy's output) is a scratch copy.
subprocess.run(["objcopy", "--dump-section", f".dep-v0={scratch}/dep-v0", f"{scratch}/llmprobe",
                f"{scratch}/llmprobe.out"], check=True, stdout=subprocess.DEVNULL)
deps = json.loads(zlib.decompress(open(f"{scratch}/dep-v0", "rb").read()))
linked = {(p["name"], p["version"]) for p in deps["packages"] if p.get("kind", "runtime") == "runtime"}
names = {n for n, _ in linked}
for needed in ("llmprobe", "tokio", "rustls", "ring", "reqwest", "hyper"):
    if needed not in names:
        problems.append(f".dep-v0 does not list {needed}")
sbom = json.loads(tar.extractfile(members["usr/share/doc/llmprobe/sbom.cdx.json"]).read())
beside = json.load(open(f"{out}/llmprobe-{version}.cdx.json"))
if sbom != beside:
    problems.append("the SBOM in the image differs from the one written beside it")
if open(f"{out}/image-id").read().strip() != image["Id"]:
    problems.append(f"{out}/image-id does not name the image built")
listed = {(c["name"], c["version"]) for c in sbom.get("components", [])}
listed.add((sbom["metadata"]["component"]["name"], sbom["metadata"]["component"]["version"]))
missing = sorted(linked - listed)
if missing:
    problems.append(f"crates linked into the binary but not in the SBOM: {missing[:10]}")
print(f"{len(linked)} crates in .dep-v0, {len(sbom['components'])} SBOM components, "
      f"{len(members)} files in the image", file=sys.stderr)
for p in problems:
    print(f"FAIL  image: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
version_line=$("${run[@]}" --rm "$image" --version)
[[ $version_line == *"(commit $commit)"* ]] || fail "--version in the image says '$version_line', not commit $commit"
say "contract, files, .dep-v0 and SBOM ok; $version_line"

# --- Engines on the host: a plain mock and one behind TLS, an API key on both -----------
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
api_key=image-test-key-$$
# Slow enough answers (~1 s) that probes are in flight whenever the daemon is stopped.
"$bin" mock --listen 127.0.0.1:0 --api-key "$api_key" --ttft-ms 200 --itl-ms 50 --output-tokens 16 \
  >"$scratch/mock.out" 2>"$scratch/mock.err" &
mock_pid=$!
stop_on_exit "$mock_pid"
for _ in $(seq 100); do
  mock_port=$(sed -n 's#^llmprobe mock listening on http://127.0.0.1:##p' "$scratch/mock.out" 2>/dev/null || true)
  [ -n "$mock_port" ] && break
  sleep 0.1
done
[ -n "$mock_port" ] || { cat "$scratch/mock.err" >&2; fail "the mock did not print its address"; }
(
  cd "$scratch"
  "$LLMPROBE_OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=llmprobe image test CA" -keyout ca.key -out ca.pem
  "$LLMPROBE_OPENSSL" req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=tls.llmprobe.test" -keyout tls.key -out tls.csr
  printf 'subjectAltName=DNS:tls.llmprobe.test\nextendedKeyUsage=serverAuth\n' >tls.ext
  "$LLMPROBE_OPENSSL" x509 -req -in tls.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile tls.ext -out tls.pem
) >"$scratch/openssl.log" 2>&1 || { cat "$scratch/openssl.log" >&2; fail "openssl: test certificates"; }
python3 tests/tools/lib/tls_proxy.py "$scratch/tls.pem" "$scratch/tls.key" "$mock_port" \
  >"$scratch/proxy.out" 2>"$scratch/proxy.err" &
proxy_pid=$!
stop_on_exit "$proxy_pid"
for _ in $(seq 100); do
  tls_port=$(head -1 "$scratch/proxy.out" 2>/dev/null || true)
  [ -n "$tls_port" ] && break
  sleep 0.1
done
[ -n "$tls_port" ] || { cat "$scratch/proxy.err" >&2; fail "the TLS proxy did not print its port"; }

# --- The chart's pod, run as its spec says ----------------------------------------------
listen_port=$(free_port)
python3 - "$scratch/values.yaml" "$listen_port" "$mock_port" "$tls_port" "$api_key" "$scratch/ca.pem" <<'PY'
import json, sys
out, listen, mock, tls, key, ca = sys.argv[1:7]
target = lambda name, url: {
    "name": name, "base_url": url, "model": "m", "endpoint": "chat", "rate": "2/s",
    "api_key_file": "/etc/llmprobe/secrets/mock-key",
    "scenarios": [{"name": "short", "input_tokens": 16, "output_tokens": 8}],
}
tls_target = target("tls", f"https://tls.llmprobe.test:{tls}")
# The CA travels as the chart carries files: a key of its Secret, mounted under
# /etc/llmprobe/secrets/ (the chart has no mount of its own for a CA).
tls_target["tls"] = {"ca_file": "/etc/llmprobe/secrets/ca.pem"}
values = {
    # Loopback only: the container shares the host's network.
    "config": {"listen": f"127.0.0.1:{listen}",
               "targets": [target("plain", f"http://engine.llmprobe.test:{mock}"), tls_target]},
    "secrets": {"mock-key": key, "ca.pem": open(ca).read()},
    # Debug: every probe's outcome is an event of its own.
    "env": [{"name": "LLMPROBE_LOG_LEVEL", "value": "info,llmprobe=debug"}],
    "extraArgs": ["--log-format", "json"],
}
json.dump(values, open(out, "w"))  # JSON is YAML
PY
"$LLMPROBE_HELM" template llmprobe helm/llmprobe -f "$scratch/values.yaml" >"$scratch/rendered.yaml" \
  2>"$scratch/helm.err" || { cat "$scratch/helm.err" >&2; fail "helm template"; }
mkdir -p "$scratch/pod"
"$python" tests/tools/lib/pod_run.py "$scratch/pod" <"$scratch/rendered.yaml" || fail "the rendered pod cannot be run"
mapfile -t pod_options <"$scratch/pod/podman-args"
mapfile -t pod_args <"$scratch/pod/args"
say "pod: ${pod_options[*]} $image ${pod_args[*]}"
"${run[@]}" -d --name "$tag-pod" \
  --add-host engine.llmprobe.test:127.0.0.1 --add-host tls.llmprobe.test:127.0.0.1 \
  "${pod_options[@]}" "$image" "${pod_args[@]}" >/dev/null || fail "podman run (the pod)"

# probe KIND: polls the rendered liveness or readiness probe every 0.2 s, each try bounded
# by its timeoutSeconds, until it succeeds; fails once the kubelet would have acted
# (initialDelaySeconds + failureThreshold × periodSeconds; for readiness a minute, the
# first result of every target).
probe() {
  local kind=$1 path port scheme timeout limit deadline
  read -r path port scheme timeout limit < <(python3 - "$scratch/pod/pod.json" "$kind" <<'PY'
import json, sys
facts = json.load(open(sys.argv[1]))
p = facts[sys.argv[2]]
get = p["httpGet"]
port = facts["port"].get(get["port"], get["port"])
limit = p.get("initialDelaySeconds", 0) + p.get("failureThreshold", 3) * p.get("periodSeconds", 10)
print(get["path"], port, get.get("scheme", "HTTP").lower(), p.get("timeoutSeconds", 1),
      limit if sys.argv[2] == "liveness" else max(limit, 60))
PY
  )
  deadline=$(( $(date +%s) + limit ))
  until curl -sf --max-time "$timeout" -o /dev/null "$scheme://127.0.0.1:$port$path"; do
    [ "$("${podman[@]}" inspect --format '{{.State.Running}}' "$tag-pod")" = true ] \
      || { "${podman[@]}" logs "$tag-pod" >&2; fail "the pod's container exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || { "${podman[@]}" logs "$tag-pod" 2>&1 | tail -20 >&2; fail "$kind probe $path failed for ${limit}s"; }
    sleep 0.2
  done
  say "$kind probe $scheme://…:$port$path ok"
}
probe liveness
probe readiness
url=http://127.0.0.1:$listen_port
# Several probes of each target: at 2/s with ~1 s answers, a few seconds.
sleep 3
curl -sf "$url/metrics" >"$scratch/pod.prom" || fail "GET /metrics of the pod"
python3 - "$scratch/pod.prom" plain tls <<'PY' || fail "the pod's /metrics"
import re, sys
series = {}
for line in open(sys.argv[1]):
    m = re.match(r'(llmprobe_(?:goodput_requests|requests|request_failures)_total)\{([^}]*)\} (\S+)', line)
    if m:
        target = re.search(r'target="([^"]*)"', m.group(2)).group(1)
        series[(m.group(1), target)] = series.get((m.group(1), target), 0) + float(m.group(3))
problems = []
for target in sys.argv[2:]:
    done = series.get(("llmprobe_requests_total", target), 0)
    good = series.get(("llmprobe_goodput_requests_total", target), 0)
    failed = series.get(("llmprobe_request_failures_total", target), 0)
    print(f"target {target}: {done:.0f} probes, {good:.0f} goodput, {failed:.0f} failed", file=sys.stderr)
    if good < 2 or failed:
        problems.append(f"target {target}: {good:.0f} goodput, {failed:.0f} failures")
for p in problems:
    print(f"FAIL  {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY

# SIGTERM, as the kubelet stops a pod: podman stop waits the grace period, then kills.
grace=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["grace"])' "$scratch/pod/pod.json")
started=$(date +%s%N)
"${podman[@]}" stop -t "$grace" "$tag-pod" >/dev/null || fail "podman stop"
took_ms=$(( ($(date +%s%N) - started) / 1000000 ))
code=$("${podman[@]}" inspect --format '{{.State.ExitCode}}' "$tag-pod")
"${podman[@]}" logs "$tag-pod" >"$scratch/pod.log" 2>&1
[ "$code" = 0 ] || { tail -20 "$scratch/pod.log" >&2; fail "the daemon exited $code on SIGTERM"; }
python3 - "$scratch/pod.log" "$took_ms" "$grace" <<'PY' || fail "the daemon's stop"
import json, sys
took, grace = float(sys.argv[2]) / 1000, float(sys.argv[3])
problems, shutdown, finished_after = [], False, 0
for line in open(sys.argv[1]):
    try:
        event = json.loads(line)
    except ValueError:
        if line.startswith("llmprobe daemon listening on "):  # stdout, for scripts
            continue
        problems.append(f"a log line that is not JSON: {line.strip()[:120]}")
        continue
    message = event.get("message", "")
    if message.startswith("shutting down"):
        shutdown = True
    # Each probe's outcome is a debug event: those after the shutdown line were in
    # flight when SIGTERM came.
    if shutdown and message == "probe ok":
        finished_after += 1
    # The failure log's events carry a reason, at debug level even when they make no
    # line of their own: an in-flight probe cut short by the stop would be one. A probe
    # skipped at admission (its reason max_inflight) was never sent.
    if event.get("level") in ("WARN", "ERROR") or ("reason" in event and message != "probe skipped"):
        problems.append(f"{event.get('level')}: {line.strip()[:200]}")
if not shutdown:
    problems.append("no 'shutting down' line in the log")
if not finished_after:
    problems.append("no probe was in flight at SIGTERM: the stop proved nothing")
# Well inside: the daemon's own grace period for in-flight probes is 10 s by default.
if took > grace / 2:
    problems.append(f"stopping took {took:.1f} s of the {grace:.0f} s grace period")
print(f"SIGTERM: exit 0 after {took:.1f} s (grace period {grace:.0f} s), "
      f"{finished_after} in-flight probes finished ok", file=sys.stderr)
for p in problems:
    print(f"FAIL  {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY

# --- daemon --mock and bench --mock in the image, the pod's confinement kept ------------
mock_listen=$(free_port)
"${run[@]}" -d --name "$tag-demo" "${pod_options[@]}" "$image" \
  daemon --mock --listen "127.0.0.1:$mock_listen" >/dev/null || fail "podman run daemon --mock"
goodput=
for _ in $(seq 150); do
  goodput=$(curl -sf --max-time 3 "http://127.0.0.1:$mock_listen/metrics" 2>/dev/null \
    | awk '/^llmprobe_goodput_requests_total\{/ {s += $NF} END {if (s > 0) print s}') || goodput=
  [ -n "$goodput" ] && break
  sleep 0.2
done
[ -n "$goodput" ] || { "${podman[@]}" logs "$tag-demo" 2>&1 | tail -20 >&2; fail "daemon --mock: no goodput on /metrics"; }
"${podman[@]}" stop -t 30 "$tag-demo" >/dev/null
say "daemon --mock: goodput $goodput on /metrics"
"${run[@]}" --rm --name "$tag-bench" "${pod_options[@]}" "$image" \
  bench --mock --rate 20 --num-requests 20 >"$scratch/bench.out" 2>"$scratch/bench.err" \
  || { cat "$scratch/bench.out" "$scratch/bench.err" >&2; fail "bench --mock in the image"; }
# The table's row for rate 20: 20 ok, 0 failed.
awk '$1 == 20 && $4 == 20 && $5 == 0 {found = 1} END {exit !found}' "$scratch/bench.out" \
  || { cat "$scratch/bench.out" >&2; fail "bench --mock: not 20 ok and 0 failed"; }
say "bench --mock: 20 requests, 20 ok"

if "${run[@]}" --rm --name "$tag-sh" --entrypoint /bin/sh "$image" -c true >"$scratch/sh.out" 2>&1; then
  fail "the image runs /bin/sh"
fi
grep -qi "no such file\|not found" "$scratch/sh.out" || { cat "$scratch/sh.out" >&2; fail "/bin/sh failed otherwise than missing"; }
say "no shell: /bin/sh is not in the image"
say "ok"
