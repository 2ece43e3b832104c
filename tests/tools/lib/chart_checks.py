"""Checks on `helm template` output that schema validation cannot make (tests/tools/helm.sh).

    chart_checks.py split RENDERED CORE_OUT CRD_OUT
        Writes the core objects and the CRD objects (ServiceMonitor, PrometheusRule,
        AlertmanagerConfig) of a
        rendered chart to two files: kubernetes-validate knows only the core schemas.
    chart_checks.py config RENDERED SECRETS_DIR CONFIG_OUT
        Writes the daemon config from the ConfigMap with /etc/llmprobe/secrets/ replaced by
        SECRETS_DIR (each referenced file created there), for `llmprobe daemon --config.check`.
        Exit 3 when the config has no target (nothing the daemon would accept).
    chart_checks.py check RENDERED VALUES_FILE REPO_ROOT RULES_OUT
        Checks the objects against the values they were rendered from (the daemon's
        Deployment or sharded StatefulSets through shard_checks.py) and writes the
        PrometheusRule's groups (if any) as a rule file for promtool.

Needs PyYAML (present in the kubernetes-validate virtualenv this runs in). Exit 1 with one
line per problem.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

import shard_checks

CRD_GROUP = "monitoring.coreos.com/"
PROBLEMS: list[str] = []


def problem(msg: str) -> None:
    PROBLEMS.append(msg)


def load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def split(rendered: str, core_out: str, crd_out: str) -> int:
    docs = load(rendered)
    with open(core_out, "w", encoding="utf-8") as f:
        yaml.safe_dump_all([d for d in docs if not d["apiVersion"].startswith(CRD_GROUP)], f)
    with open(crd_out, "w", encoding="utf-8") as f:
        yaml.safe_dump_all([d for d in docs if d["apiVersion"].startswith(CRD_GROUP)], f)
    return 0


def daemon_config(rendered: str, secrets_dir: str, out: str) -> int:
    cms = [d for d in load(rendered) if d["kind"] == "ConfigMap" and "config.yaml" in d.get("data", {})]
    text = cms[0]["data"]["config.yaml"]
    config = yaml.safe_load(text) or {}
    if not config.get("targets"):
        return 3
    prefix = "/etc/llmprobe/secrets/"
    for name in set(re.findall(re.escape(prefix) + r"([-._a-zA-Z0-9]+)", text)):
        Path(secrets_dir, name).write_text("not-a-real-key\n", encoding="utf-8")
    Path(out).write_text(text.replace(prefix, secrets_dir.rstrip("/") + "/"), encoding="utf-8")
    return 0


def deep_get(d, *keys, default=None):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def merged(base: dict, over: dict) -> dict:
    """Helm's value merge: maps merge recursively, anything else replaces (null deletes)."""
    out = dict(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merged(out[k], v)
        else:
            out[k] = v
    return out


def check_pod(name: str, pod: dict) -> None:
    """Pod Security Standard "restricted", and no service account token."""
    psc = pod.get("securityContext", {})
    if psc.get("runAsNonRoot") is not True:
        problem(f"{name}: pod securityContext.runAsNonRoot is not true")
    if deep_get(psc, "seccompProfile", "type") != "RuntimeDefault":
        problem(f"{name}: seccompProfile is not RuntimeDefault")
    if pod.get("automountServiceAccountToken") is not False:
        problem(f"{name}: automountServiceAccountToken is not false")
    for c in pod.get("containers", []):
        sc = c.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False:
            problem(f"{name}/{c['name']}: allowPrivilegeEscalation is not false")
        if sc.get("readOnlyRootFilesystem") is not True:
            problem(f"{name}/{c['name']}: readOnlyRootFilesystem is not true")
        if deep_get(sc, "capabilities", "drop") != ["ALL"]:
            problem(f"{name}/{c['name']}: capabilities.drop is not [ALL]")
        if not c.get("resources"):
            problem(f"{name}/{c['name']}: no resources")


def check_engine_headless(engine: list[dict], values: dict, defaults: dict,
                          by_kind: dict[str, list[dict]]) -> None:
    """engineHeadlessService: rendered exactly when enabled, headless, over the selected
    engine pods at the port named http, and invisible to the chart's ServiceMonitor."""
    ehs = merged(defaults["engineHeadlessService"], values.get("engineHeadlessService") or {})
    if bool(engine) != bool(ehs["enabled"]) or len(engine) > 1:
        problem(f"engine headless Services rendered: {len(engine)}, enabled: {ehs['enabled']}")
    for svc in engine:
        spec = svc["spec"]
        if spec.get("clusterIP") != "None":
            problem(f"engine headless Service clusterIP {spec.get('clusterIP')!r}, not None")
        if spec.get("selector") != ehs["selector"]:
            problem(f"engine headless Service selector {spec.get('selector')} != {ehs['selector']}")
        if spec.get("ports") != [{"name": "http", "port": ehs["port"], "targetPort": ehs["port"],
                                  "protocol": "TCP"}]:
            problem(f"engine headless Service ports {spec.get('ports')}: want http {ehs['port']}")
        if bool(spec.get("publishNotReadyAddresses")) != bool(ehs["publishNotReadyAddresses"]):
            problem("engine headless Service publishNotReadyAddresses differs from the values")
        if ehs["name"] and svc["metadata"]["name"] != ehs["name"]:
            problem(f"engine headless Service name {svc['metadata']['name']} != {ehs['name']}")
        if ehs["namespace"] and svc["metadata"].get("namespace") != ehs["namespace"]:
            problem(f"engine headless Service namespace {svc['metadata'].get('namespace')}")
        labels = svc["metadata"].get("labels", {})
        for sm in by_kind.get("ServiceMonitor", []):
            sel = deep_get(sm, "spec", "selector", "matchLabels", default={})
            if sel.items() <= labels.items():
                problem("the ServiceMonitor selects the engine headless Service")


def check(rendered: str, values_file: str, repo: str, rules_out: str) -> int:
    docs = load(rendered)
    values = yaml.safe_load(Path(values_file).read_text(encoding="utf-8")) or {}
    defaults = yaml.safe_load((Path(repo) / "helm/llmprobe/values.yaml").read_text(encoding="utf-8"))
    by_kind: dict[str, list[dict]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    secrets = values.get("secrets") or {}

    # API keys never appear outside a Secret.
    for d in docs:
        if d["kind"] == "Secret":
            continue
        text = yaml.safe_dump(d)
        for key, value in secrets.items():
            if str(value) in text:
                problem(f"{d['kind']}/{d['metadata']['name']}: contains the value of secret {key}")

    workloads = by_kind.get("Deployment", []) + by_kind.get("StatefulSet", [])
    fullname = next((d["metadata"]["name"] for d in by_kind.get("ConfigMap", [])
                     if "config.yaml" in d.get("data", {})), "")
    for p in shard_checks.check(values, defaults, by_kind, fullname):
        problem(p)
    for dep in workloads:
        what = f"{dep['kind']}/{dep['metadata']['name']}"
        pod = dep["spec"]["template"]["spec"]
        check_pod(what, pod)
        c = pod["containers"][0]
        if c.get("args", [])[:3] != ["daemon", "--config", "/etc/llmprobe/config.yaml"]:
            problem(f"{what}: args {c.get('args')} do not start with daemon --config ...")
        web = merged(defaults["web"], values.get("web") or {})
        has_web = bool(web["config"] or web["existingSecret"])
        if has_web and not web["healthUnauthenticated"]:
            for probe in ("livenessProbe", "readinessProbe"):
                if not deep_get(c, probe, "tcpSocket"):
                    problem(f"{what}: {probe} must be a TCP check when the health endpoints need auth")
        else:
            scheme = "HTTPS" if web["tls"] else "HTTP"
            for probe, path in (("livenessProbe", "/-/healthy"), ("readinessProbe", "/-/ready")):
                if deep_get(c, probe, "httpGet", "path") != path:
                    problem(f"{what}: {probe} is not GET {path}")
                if deep_get(c, probe, "httpGet", "scheme") != scheme:
                    problem(f"{what}: {probe} scheme is not {scheme}")
        args = c.get("args", [])
        if has_web != ("--web.config.file" in args):
            problem(f"{what}: --web.config.file passed={not has_web}, expected {has_web}")
        if has_web:
            if args[args.index("--web.config.file") + 1] != "/etc/llmprobe/web/web-config.yml":
                problem(f"{what}: --web.config.file is not the mounted web config")
            if web["healthUnauthenticated"] != ("--web.health-unauthenticated" in args):
                problem(f"{what}: --web.health-unauthenticated does not follow the values")
        if web["enableLifecycle"] != ("--web.enable-lifecycle" in args):
            problem(f"{what}: --web.enable-lifecycle does not follow the values")
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
        if has_web != ("/etc/llmprobe/web" in mounts) or "subPath" in mounts.get("/etc/llmprobe/web", {}):
            problem(f"{what}: the web config Secret must be mounted whole (no subPath) at /etc/llmprobe/web")
        if bool(web["tlsSecret"]) != ("/etc/llmprobe/web-tls" in mounts):
            problem(f"{what}: web.tlsSecret is not mounted at /etc/llmprobe/web-tls")
        # The bcrypt hashes live in a Secret only.
        for user, hashed in (deep_get(web, "config", "basic_auth_users", default={}) or {}).items():
            for d in docs:
                if d["kind"] != "Secret" and str(hashed) in yaml.safe_dump(d):
                    problem(f"{d['kind']}/{d['metadata']['name']}: holds the hash of web user {user}")
        if "/etc/llmprobe/config.yaml" not in mounts:
            problem(f"{what}: config not mounted at /etc/llmprobe/config.yaml")
        wants_secret = bool(secrets or values.get("existingSecret"))
        if wants_secret != ("/etc/llmprobe/secrets" in mounts):
            problem(f"{what}: secrets mounted={not wants_secret}, expected {wants_secret}")
        if values.get("existingSecret"):
            vols = {v["name"]: v for v in pod.get("volumes", [])}
            if deep_get(vols, "secrets", "secret", "secretName") != values["existingSecret"]:
                problem(f"{what}: the secrets volume does not use existingSecret")
            if [d for d in by_kind.get("Secret", []) if not d["metadata"]["name"].endswith("-web")]:
                problem("a Secret was rendered although existingSecret is set")

    # The config is the values' `config`, rendered as-is (plus the default listen).
    config_maps = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}
    daemon_cm = [d for d in config_maps.values() if "config.yaml" in d.get("data", {})]
    if len(daemon_cm) != 1:
        problem(f"expected 1 ConfigMap with config.yaml, found {len(daemon_cm)}")
    else:
        got = yaml.safe_load(daemon_cm[0]["data"]["config.yaml"])
        want = merged(defaults["config"], values.get("config") or {})
        if got != want:
            problem(f"config.yaml {got} differs from the values' config {want}")

    # Service selects the daemon's pods only, and the ServiceMonitor selects the Service.
    # The opt-in headless Service over the engine's pods is checked on its own below.
    all_services = by_kind.get("Service", [])
    is_engine = lambda svc: deep_get(  # noqa: E731
        svc, "metadata", "labels", "app.kubernetes.io/component") == "engine-headless"
    services = [svc for svc in all_services if not is_engine(svc)]
    check_engine_headless([svc for svc in all_services if is_engine(svc)], values, defaults,
                          by_kind)
    for svc in services:
        sel = svc["spec"]["selector"]
        for dep in workloads:
            pod_labels = deep_get(dep, "spec", "template", "metadata", "labels", default={})
            if not sel.items() <= pod_labels.items():
                problem(f"Service selector {sel} does not match the pods of {dep['metadata']['name']}")
        if "app.kubernetes.io/component" not in sel:
            problem("Service selector would also select the sweep Job's pods")
    for sm in by_kind.get("ServiceMonitor", []):
        if sm["apiVersion"] != "monitoring.coreos.com/v1":
            problem(f"ServiceMonitor apiVersion {sm['apiVersion']}")
        sel = deep_get(sm, "spec", "selector", "matchLabels", default={})
        if not services or not sel.items() <= services[0]["metadata"]["labels"].items():
            problem(f"ServiceMonitor selector {sel} does not match the Service's labels")
        eps = deep_get(sm, "spec", "endpoints", default=[])
        port_names = {p["name"] for s in services for p in s["spec"]["ports"]}
        if not eps or eps[0].get("port") not in port_names or eps[0].get("path") != "/metrics":
            problem(f"ServiceMonitor endpoints {eps} do not scrape a Service port's /metrics")
        extra = deep_get(values, "serviceMonitor", "additionalLabels", default={})
        if not extra.items() <= sm["metadata"]["labels"].items():
            problem("ServiceMonitor lacks serviceMonitor.additionalLabels")
        web = merged(defaults["web"], values.get("web") or {})
        smv = merged(defaults["serviceMonitor"], values.get("serviceMonitor") or {})
        want_scheme = smv["scheme"] or ("https" if web["tls"] else "http")
        if eps and eps[0].get("scheme") != want_scheme:
            problem(f"ServiceMonitor scheme {eps[0].get('scheme')}, expected {want_scheme}")
        for key in ("tlsConfig", "basicAuth"):
            if eps and (eps[0].get(key) or {}) != (smv[key] or {}):
                problem(f"ServiceMonitor {key} differs from serviceMonitor.{key}")

    # PrometheusRule: the alerts/ rules, with the objectives and guard from the values.
    rules = by_kind.get("PrometheusRule", [])
    want_rules = deep_get(values, "prometheusRule", "enabled", default=False)
    if bool(rules) != bool(want_rules):
        problem(f"PrometheusRule rendered={bool(rules)}, expected {bool(want_rules)}")
    file_groups = []
    for path in sorted((Path(repo) / "alerts").glob("*.yaml")):
        file_groups += yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
    for pr in rules:
        if pr["apiVersion"] != "monitoring.coreos.com/v1":
            problem(f"PrometheusRule apiVersion {pr['apiVersion']}")
        extra = deep_get(values, "prometheusRule", "additionalLabels", default={})
        if not extra.items() <= pr["metadata"]["labels"].items():
            problem("PrometheusRule lacks prometheusRule.additionalLabels")
        groups = pr["spec"]["groups"]
        names = lambda gs: sorted((g["name"], r.get("record") or r.get("alert"))  # noqa: E731
                                  for g in gs for r in g["rules"])
        if names(groups) != names(file_groups):
            problem("PrometheusRule rules differ from alerts/*.yaml")
        prv = {**defaults["prometheusRule"], **(values.get("prometheusRule") or {})}
        objectives = {**defaults["prometheusRule"]["objectives"], **prv.get("objectives", {})}
        min_requests = {**defaults["prometheusRule"]["minRequests"], **prv.get("minRequests", {})}
        for g in groups:
            for r in g["rules"]:
                if r.get("record") == "llmprobe:slo_objective:ratio":
                    want = f"vector({objectives[r['labels']['sli']]})"
                    if r["expr"] != want:
                        problem(f"objective {r['labels']['sli']}: {r['expr']} != {want}")
                if r.get("record") == "llmprobe:slo_min_requests:count":
                    window = r["labels"]["window"]
                    want = f"vector({min_requests[window]})"
                    if r["expr"] != want:
                        problem(f"min requests {window}: {r['expr']} != {want}")
                if r.get("record") == "llmprobe:slo_min_failing_locations:count":
                    want = f"vector({prv['minFailingLocations']})"
                    if r["expr"] != want:
                        problem(f"min failing locations: {r['expr']} != {want}")
                if r.get("alert") and prv.get("runbookBaseURL"):
                    if not r["annotations"]["runbook_url"].startswith(prv["runbookBaseURL"]):
                        problem(f"{r['alert']}: runbook_url not prefixed")
        # Unchanged values render the rule files exactly.
        if not values.get("prometheusRule", {}).get("objectives") and \
                "minRequests" not in values.get("prometheusRule", {}) and \
                "minFailingLocations" not in values.get("prometheusRule", {}) and \
                not prv.get("runbookBaseURL") and prv.get("timeCompression", 1) == 1 and \
                not deep_get(values, "alertmanagerConfig", "enabled", default=False) and \
                groups != file_groups:
            problem("PrometheusRule groups differ from alerts/*.yaml with default values")
        Path(rules_out).write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")

    # AlertmanagerConfig: the route and inhibit rules of alertmanager/llmprobe.yml, the
    # values' receivers, and every alert of the PrometheusRule labelled with its namespace
    # (the operator routes only alerts of the AlertmanagerConfig's namespace).
    amcs = by_kind.get("AlertmanagerConfig", [])
    want_amc = deep_get(values, "alertmanagerConfig", "enabled", default=False)
    if bool(amcs) != bool(want_amc):
        problem(f"AlertmanagerConfig rendered={bool(amcs)}, expected {bool(want_amc)}")
    am = yaml.safe_load((Path(repo) / "alertmanager/llmprobe.yml").read_text(encoding="utf-8"))

    def crm(ms: list[dict]) -> list[str]:
        return sorted(f'{m["name"]}{m["matchType"]}"{m["value"]}"' for m in ms)

    for amc in amcs:
        if amc["apiVersion"] != "monitoring.coreos.com/v1alpha1":
            problem(f"AlertmanagerConfig apiVersion {amc['apiVersion']}")
        extra = deep_get(values, "alertmanagerConfig", "additionalLabels", default={})
        if not extra.items() <= amc["metadata"]["labels"].items():
            problem("AlertmanagerConfig lacks alertmanagerConfig.additionalLabels")
        spec, want = amc["spec"], am["route"]
        route = spec["route"]
        got_top = [route.get(k) for k in ("receiver", "groupBy", "groupWait", "groupInterval", "repeatInterval")]
        want_top = [want.get(k) for k in ("receiver", "group_by", "group_wait", "group_interval", "repeat_interval")]
        if got_top != want_top:
            problem(f"AlertmanagerConfig route {got_top} != alertmanager/llmprobe.yml {want_top}")
        got_routes = [(r["receiver"], crm(r.get("matchers", [])), r.get("repeatInterval"))
                      for r in route.get("routes", [])]
        want_routes = [(r["receiver"], sorted(r.get("matchers", [])), r.get("repeat_interval"))
                       for r in want.get("routes", [])]
        if got_routes != want_routes:
            problem(f"AlertmanagerConfig routes {got_routes} != alertmanager/llmprobe.yml {want_routes}")
        got_inhibit = [(crm(r["sourceMatch"]), crm(r["targetMatch"]), r["equal"])
                       for r in spec.get("inhibitRules", [])]
        want_inhibit = [(sorted(r["source_matchers"]), sorted(r["target_matchers"]), r["equal"])
                        for r in am["inhibit_rules"]]
        if got_inhibit != want_inhibit:
            problem("AlertmanagerConfig inhibitRules differ from alertmanager/llmprobe.yml")
        if spec.get("receivers") != deep_get(values, "alertmanagerConfig", "receivers"):
            problem("AlertmanagerConfig receivers are not the values' receivers")
        ns = amc["metadata"]["namespace"]
        for pr in rules:
            for g in pr["spec"]["groups"]:
                for r in g["rules"]:
                    if r.get("alert") and r.get("labels", {}).get("namespace") != ns:
                        problem(f"{r['alert']}: no namespace={ns} label for the AlertmanagerConfig")

    # Dashboards: one ConfigMap per dashboards/*.json, labelled for the sidecar, same JSON.
    want_dash = deep_get(values, "dashboards", "enabled", default=False)
    dash_cms = [d for d in config_maps.values()
                if deep_get(d, "metadata", "labels", "grafana_dashboard") == "1"]
    files = sorted((Path(repo) / "dashboards").glob("*.json"))
    if want_dash and len(dash_cms) != len(files):
        problem(f"{len(dash_cms)} dashboard ConfigMaps for {len(files)} dashboards")
    if not want_dash and dash_cms:
        problem("dashboard ConfigMaps rendered although dashboards.enabled is false")
    for cm in dash_cms:
        for fname, text in cm["data"].items():
            src = Path(repo) / "dashboards" / fname
            if not src.exists() or json.loads(text) != json.loads(src.read_text(encoding="utf-8")):
                problem(f"ConfigMap {cm['metadata']['name']}: {fname} differs from dashboards/")

    # Sweep: an Indexed Job, one bench shard per completion index.
    jobs = by_kind.get("Job", [])
    sweep = {**defaults["sweep"], **(values.get("sweep") or {})}
    if bool(jobs) != bool(sweep["enabled"]):
        problem(f"sweep Job rendered={bool(jobs)}, expected {sweep['enabled']}")
    for job in jobs:
        spec = job["spec"]
        n = sweep["shards"]
        if spec.get("completionMode") != "Indexed" or spec.get("completions") != n \
                or spec.get("parallelism") != n:
            problem(f"Job: not Indexed with completions = parallelism = {n}")
        pod = spec["template"]["spec"]
        check_pod(f"Job/{job['metadata']['name']}", pod)
        c = pod["containers"][0]
        args = c["args"]
        if args[0] != "bench" or "--shard" not in args or \
                args[args.index("--shard") + 1] != f"$(SHARD_INDEX)/{n}":
            problem(f"Job: args {args} lack --shard $(SHARD_INDEX)/{n}")
        env = {e["name"]: e for e in c.get("env", [])}
        if deep_get(env, "SHARD_INDEX", "valueFrom", "fieldRef", "fieldPath") != \
                "metadata.annotations['batch.kubernetes.io/job-completion-index']":
            problem("Job: SHARD_INDEX is not the completion index")

    if deep_get(values, "networkPolicy", "enabled", default=False) != bool(by_kind.get("NetworkPolicy")):
        problem("NetworkPolicy rendered does not follow networkPolicy.enabled")

    for p in PROBLEMS:
        print(f"FAIL  {values_file}: {p}", file=sys.stderr)
    return 1 if PROBLEMS else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["split"] and len(argv) == 4:
        return split(*argv[1:])
    if argv[:1] == ["config"] and len(argv) == 4:
        return daemon_config(*argv[1:])
    if argv[:1] == ["check"] and len(argv) == 5:
        return check(*argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
