"""The chart's rendered daemon pod as a `podman run`, for tests/tools/image.sh.

Reads the output of `helm template` (stdin), finds the Deployment's pod spec, its
ConfigMap and Secret, and writes into DIR:
  - the volumes' files (the ConfigMap's config.yaml, the Secret's keys with the volume's
    defaultMode, owned by root and the pod's fsGroup, as the kubelet projects them);
  - podman-args: the `podman run` options that give the container what the pod spec asks
    for, one per line: user and group, fsGroup as a supplementary group, read-only root,
    dropped capabilities, no privilege escalation, env, the mounts (emptyDir as tmpfs);
  - args: the container's args, one per line (the image's ENTRYPOINT runs them);
  - pod.json: what the test checks beyond the run (probes, port, grace period).
Anything in the pod spec that this translation cannot honour is an error, so a chart
change that the test does not run fails it instead of being skipped silently.

Usage: pod_run.py DIR < rendered.yaml
"""

import base64
import json
import os
import re
import sys

import yaml


def die(msg):
    print(f"pod_run.py: {msg}", file=sys.stderr)
    sys.exit(1)


def size(limit):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(limit))
    if not m:
        die(f"emptyDir sizeLimit {limit!r} is not understood")
    return m.group(1) + {"Ki": "k", "Mi": "m", "Gi": "g", None: ""}[m.group(2)]


def main(out):
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], []).append(d)
    if len(kinds.get("Deployment", [])) != 1:
        die("expected one Deployment in the rendered chart")
    pod = kinds["Deployment"][0]["spec"]["template"]["spec"]
    [container] = [c for c in pod["containers"] if c["name"] == "llmprobe"]
    if "command" in container:
        die("the container sets command: the image's ENTRYPOINT would not run")
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in docs}

    pod_sc, sc = pod.get("securityContext", {}), container.get("securityContext", {})
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    group = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    if user is None or group is None or user == 0:
        die(f"the pod runs as {user}:{group}: the test wants the chart's non-root user")
    args = [f"--user={user}:{group}"]
    fs_group = pod_sc.get("fsGroup")
    if fs_group is not None:
        args.append(f"--group-add={fs_group}")
    if sc.get("readOnlyRootFilesystem"):
        # Only the pod's volumes are writable: no tmpfs of podman's own on /tmp, /run.
        args += ["--read-only", "--read-only-tmpfs=false"]
    drop = sc.get("capabilities", {}).get("drop", [])
    if drop != ["ALL"] or sc.get("capabilities", {}).get("add"):
        die(f"capabilities {sc.get('capabilities')}: the test runs drop ALL, nothing added")
    args.append("--cap-drop=all")
    if sc.get("allowPrivilegeEscalation") is False:
        args.append("--security-opt=no-new-privileges")
    seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {})).get("type")
    if seccomp not in (None, "RuntimeDefault"):
        die(f"seccomp profile {seccomp}: podman runs its default profile only")
    for env in container.get("env", []):
        if "value" not in env:
            die(f"env {env['name']} is not a plain value")
        args.append(f"--env={env['name']}={env['value']}")

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        vol = volumes[mount["name"]]
        target = mount["mountPath"]
        ro = ":ro" if mount.get("readOnly") else ""
        host = os.path.join(out, "volumes", mount["name"])
        if "configMap" in vol:
            cm = by_name[("ConfigMap", vol["configMap"]["name"])]
            files = {k: v.encode() for k, v in cm.get("data", {}).items()}
            mode, owner_group = vol["configMap"].get("defaultMode", 0o644), 0
        elif "secret" in vol:
            secret = by_name[("Secret", vol["secret"]["secretName"])]
            files = {k: base64.b64decode(v) for k, v in secret.get("data", {}).items()}
            files.update({k: v.encode() for k, v in secret.get("stringData", {}).items()})
            mode, owner_group = vol["secret"].get("defaultMode", 0o644), fs_group or 0
        elif "emptyDir" in vol:
            limit = vol["emptyDir"].get("sizeLimit")
            opts = "rw,mode=1777" + (f",size={size(limit)}" if limit else "")
            args.append(f"--tmpfs={target}:{opts}")
            continue
        else:
            die(f"volume {mount['name']}: only configMap, secret and emptyDir are run")
        os.makedirs(host, exist_ok=True)
        for key, data in files.items():
            path = os.path.join(host, key)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, mode)
            os.chown(path, 0, owner_group)
        if "subPath" in mount:
            args.append(f"--volume={os.path.join(host, mount['subPath'])}:{target}{ro}")
        else:
            os.chmod(host, 0o755)
            args.append(f"--volume={host}:{target}{ro}")

    port = {p["name"]: p["containerPort"] for p in container["ports"]}
    facts = {
        "port": port,
        "liveness": container["livenessProbe"],
        "readiness": container["readinessProbe"],
        "grace": pod.get("terminationGracePeriodSeconds", 30),
    }
    with open(os.path.join(out, "podman-args"), "w") as f:
        f.write("".join(a + "\n" for a in args))
    with open(os.path.join(out, "args"), "w") as f:
        f.write("".join(a + "\n" for a in container["args"]))
    with open(os.path.join(out, "pod.json"), "w") as f:
        json.dump(facts, f)


if __name__ == "__main__":
    main(sys.argv[1])
