"""The daemon's workload shape against `shards`, `highAvailability` and `location`
(chart_checks.py check calls it; tests/tools/helm.sh).

One Deployment when shards is 1 without highAvailability; otherwise StatefulSets of
`shards` pods (two, -a and -b, with highAvailability) whose pods run `--shard
$(POD_INDEX)/shards` with POD_INDEX from the pod-index label, the pods of a shard kept
on different nodes, one PodDisruptionBudget over all of them evicting one pod at a time,
and a ServiceMonitor that keeps each pod's `pod` label.
"""

from __future__ import annotations

import re

POD_INDEX_FIELD = "metadata.labels['apps.kubernetes.io/pod-index']"
POD_RELABEL = {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod",
               "action": "replace"}


def dig(d, *keys, default=None):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def pod_labels(workload: dict) -> dict:
    return dig(workload, "spec", "template", "metadata", "labels", default={})


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and selector.items() <= labels.items()


def chart_anti_affinity(workload: dict) -> list[dict]:
    """The required pod anti-affinity terms naming a twin set (the chart's own)."""
    terms = dig(workload, "spec", "template", "spec", "affinity", "podAntiAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution", default=[]) or []
    return [t for t in terms if "llmprobe/twin" in dig(t, "labelSelector", "matchLabels", default={})]


def check_args(what: str, workload: dict, sharded: bool, shards: int, location: str) -> list[str]:
    out = []
    c = workload["spec"]["template"]["spec"]["containers"][0]
    args = c.get("args", [])
    shard_args = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--shard"]
    want = [f"$(POD_INDEX)/{shards}"] if sharded else []
    if shard_args != want or args.count("--shard") != len(want):
        out.append(f"{what}: --shard {shard_args}, expected {want}")
    env = {e["name"]: e for e in c.get("env", [])}
    field = dig(env, "POD_INDEX", "valueFrom", "fieldRef", "fieldPath")
    if sharded and field != POD_INDEX_FIELD:
        out.append(f"{what}: POD_INDEX comes from {field!r}, not the pod-index label")
    if not sharded and "POD_INDEX" in env:
        out.append(f"{what}: POD_INDEX set on the Deployment")
    loc_args = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--location"]
    if loc_args != ([location] if location else []) or args.count("--location") != len(loc_args):
        out.append(f"{what}: --location {loc_args}, expected {location!r}")
    return out


def check_twins(sets: list[dict]) -> list[str]:
    """Each set's pods refuse the nodes of the other set's pods (and not their own)."""
    out = []
    for s, other in ((sets[0], sets[1]), (sets[1], sets[0])):
        name = s["metadata"]["name"]
        terms = chart_anti_affinity(s)
        good = [t for t in terms if t.get("topologyKey") == "kubernetes.io/hostname"
                and selects(dig(t, "labelSelector", "matchLabels"), pod_labels(other))
                and not selects(dig(t, "labelSelector", "matchLabels"), pod_labels(s))]
        if len(good) != 1:
            out.append(f"StatefulSet/{name}: no required hostname anti-affinity against the other set")
        if not selects(dig(s, "spec", "selector", "matchLabels"), pod_labels(s)) or \
                selects(dig(s, "spec", "selector", "matchLabels"), pod_labels(other)):
            out.append(f"StatefulSet/{name}: its selector does not pick its own pods only")
    return out


def check_pdb(pdbs: list[dict], workloads: list[dict], sharded: bool) -> list[str]:
    if not sharded:
        return [f"{len(pdbs)} PodDisruptionBudgets for the single Deployment"] if pdbs else []
    if len(pdbs) != 1:
        return [f"expected 1 PodDisruptionBudget, found {len(pdbs)}"]
    spec, out = pdbs[0]["spec"], []
    # One pod of the whole release at a time: each shard keeps its twin during a drain.
    if spec.get("maxUnavailable") != 1 or "minAvailable" in spec:
        out.append(f"PodDisruptionBudget: {spec}, expected maxUnavailable 1 over every daemon pod")
    for w in workloads:
        if not selects(dig(spec, "selector", "matchLabels"), pod_labels(w)):
            out.append(f"PodDisruptionBudget does not cover the pods of {w['metadata']['name']}")
    return out


def drops_pod(rule: dict) -> bool:
    action = rule.get("action", "replace").lower()
    regex = rule.get("regex", "(.*)")
    if action == "labeldrop":
        return re.fullmatch(regex, "pod") is not None
    if action == "labelkeep":
        return re.fullmatch(regex, "pod") is None
    return rule.get("targetLabel") == "pod" or (action == "labelmap" and
                                                 rule.get("replacement") == "pod")


def check_pod_label(service_monitors: list[dict]) -> list[str]:
    out = []
    for sm in service_monitors:
        for ep in dig(sm, "spec", "endpoints", default=[]):
            relabel = ep.get("relabelings") or []
            if not relabel or relabel[0] != POD_RELABEL:
                out.append(f"ServiceMonitor endpoint {ep.get('port')}: first relabeling is not pod from the pod name")
            if ep.get("honorLabels"):
                out.append("ServiceMonitor honorLabels: a scraped pod label would replace the pod's own")
            for rule in relabel[1:] + (ep.get("metricRelabelings") or []):
                if drops_pod(rule):
                    out.append(f"ServiceMonitor relabeling {rule} drops or rewrites the pod label")
    return out


def check(values: dict, defaults: dict, by_kind: dict[str, list[dict]], fullname: str) -> list[str]:
    shards = int(values.get("shards", defaults["shards"]))
    ha = bool(values.get("highAvailability", defaults["highAvailability"]))
    location = values.get("location", defaults["location"]) or ""
    sharded = ha or shards > 1
    deployments = by_kind.get("Deployment", [])
    sets = by_kind.get("StatefulSet", [])
    workloads = deployments + sets
    out = []
    want_sets = (2 if ha else 1) if sharded else 0
    if len(deployments) != (0 if sharded else 1) or len(sets) != want_sets:
        out.append(f"{len(deployments)} Deployments and {len(sets)} StatefulSets for shards={shards}, "
                   f"highAvailability={ha}")
    want_names = [f"{fullname}-a", f"{fullname}-b"] if ha else [fullname]
    if sharded and sorted(s["metadata"]["name"] for s in sets) != want_names:
        out.append(f"StatefulSets {[s['metadata']['name'] for s in sets]}, expected {want_names}")
    pods = sum(w["spec"].get("replicas", 1) for w in workloads)
    want_pods = shards * (2 if ha else 1) if sharded else values.get("replicaCount", 1)
    if pods != want_pods:
        out.append(f"{pods} daemon pods, expected {want_pods}")
    services = [s["metadata"]["name"] for s in by_kind.get("Service", [])]
    for s in sets:
        name = s["metadata"]["name"]
        if s["spec"].get("replicas") != shards:
            out.append(f"StatefulSet/{name}: {s['spec'].get('replicas')} pods, expected one per shard ({shards})")
        if s["spec"].get("serviceName") not in services:
            out.append(f"StatefulSet/{name}: serviceName {s['spec'].get('serviceName')} is no rendered Service")
        if s["spec"].get("podManagementPolicy") != "Parallel":
            out.append(f"StatefulSet/{name}: pods not started in parallel")
    for w in workloads:
        out += check_args(f"{w['kind']}/{w['metadata']['name']}", w, sharded, shards, location)
        if not ha and chart_anti_affinity(w):
            out.append(f"{w['kind']}/{w['metadata']['name']}: twin anti-affinity without highAvailability")
    if ha and len(sets) == 2:
        out += check_twins(sets)
    out += check_pdb(by_kind.get("PodDisruptionBudget", []), workloads, sharded)
    out += check_pod_label(by_kind.get("ServiceMonitor", []))
    return out
