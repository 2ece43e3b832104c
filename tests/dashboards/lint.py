#!/usr/bin/env python3
"""Rules for dashboards/*.json that the TypeScript schema cannot express.

- schemaVersion >= 39; a stable, unique uid ([a-z0-9-], <= 40 chars) and title per file;
- a `datasource` variable of type datasource querying prometheus, and query variables
  target, model and scenario that use it;
- every panel (rows aside) and every query targets {"type":"prometheus","uid":"${datasource}"};
- every panel has a unit; panel ids are unique and panels fit the 24-column grid;
- a table panel's queries are instant, in table format, and merged into one row per
  label set (a `merge` transformation), so that each query is a column;
- no ${DS_...} import placeholders anywhere (they break file and sidecar provisioning);
- a time series over a latency histogram whose buckets carry exemplars (TTFT, TTFA, TPOT,
  E2E, the replicas' too) shows them (`exemplar: true`), so a spike's probes are a click away.

    lint.py [dashboards/*.json]     exit 1 and one line per problem when a rule is broken
    lint.py --selftest              proves each rule reports a broken copy of a dashboard
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

DS = {"type": "prometheus", "uid": "${datasource}"}
ROOT = Path(__file__).resolve().parents[2]
EXEMPLARS = re.compile(r"llmprobe_(replica_)?(ttft|ttfa|tpot|request_duration)_seconds_bucket")


def panels(items):
    for p in items:
        yield p
        yield from panels(p.get("panels", []))


def lint(name: str, dash: dict) -> list[str]:
    problems = []
    say = problems.append
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 39:
        say(f"{name}: schemaVersion {dash.get('schemaVersion')!r} < 39")
    uid = dash.get("uid")
    if not isinstance(uid, str) or not re.fullmatch(r"[a-z0-9-]{1,40}", uid):
        say(f"{name}: uid {uid!r} is not a stable [a-z0-9-]{{1,40}} string")
    if "${DS_" in json.dumps(dash) or "__inputs" in dash:
        say(f"{name}: contains a ${{DS_...}} import placeholder or __inputs")
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        say(f"{name}: no `datasource` variable of type datasource querying prometheus")
    for v in ("target", "model", "scenario"):
        var = variables.get(v)
        if not var or var.get("type") != "query" or var.get("datasource") != DS:
            say(f"{name}: no `{v}` query variable on the datasource variable")
    ids = set()
    for p in panels(dash.get("panels", [])):
        title = f"{name}: panel {p.get('id')} {p.get('title', '')!r}"
        if p.get("id") in ids:
            say(f"{title}: duplicate id")
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "xywh") or g["x"] + g["w"] > 24:
            say(f"{title}: gridPos {g} is outside the 24-column grid")
        if p.get("type") == "row":
            continue
        if p.get("datasource") != DS:
            say(f"{title}: datasource {p.get('datasource')} is not {DS}")
        if not p.get("fieldConfig", {}).get("defaults", {}).get("unit"):
            say(f"{title}: no unit (fieldConfig.defaults.unit)")
        targets = p.get("targets", [])
        if not targets:
            say(f"{title}: no queries")
        for t in targets:
            if t.get("datasource") != DS:
                say(f"{title} [{t.get('refId')}]: query datasource is not {DS}")
            if not str(t.get("expr", "")).strip():
                say(f"{title} [{t.get('refId')}]: empty expr")
            if p.get("type") == "timeseries" and EXEMPLARS.search(str(t.get("expr", ""))) \
                    and t.get("exemplar") is not True:
                say(f"{title} [{t.get('refId')}]: latency buckets without exemplars shown")
            if p.get("type") == "table" and (t.get("instant") is not True
                                             or t.get("format") != "table"):
                say(f"{title} [{t.get('refId')}]: a table's query is not instant in table format")
        if p.get("type") == "table" and len(targets) > 1 and \
                "merge" not in [x.get("id") for x in p.get("transformations", [])]:
            say(f"{title}: a table with several queries has no merge transformation")
    return problems


def lint_files(paths: list[Path]) -> list[str]:
    problems = []
    seen: dict[str, str] = {}
    for path in paths:
        dash = json.loads(path.read_text(encoding="utf-8"))
        problems += lint(path.name, dash)
        for key in ("uid", "title"):
            value = dash.get(key)
            if value in seen:
                problems.append(f"{path.name}: {key} {value!r} also used by {seen[value]}")
            seen[value] = path.name
    return problems


def selftest(path: Path, with_table: Path) -> int:
    base = json.loads(path.read_text(encoding="utf-8"))
    tabled = json.loads(with_table.read_text(encoding="utf-8"))
    for name, d in ((path.name, base), (with_table.name, tabled)):
        if lint(name, d):
            print(f"selftest: {name} is not clean to begin with", file=sys.stderr)
            return 1

    def first_panel(d):
        return next(p for p in panels(d["panels"]) if p["type"] != "row")

    def first_table(d):
        return next(p for p in panels(d["panels"]) if p["type"] == "table")

    mutants = {
        "old schemaVersion": lambda d: d.update(schemaVersion=38),
        "DS_ placeholder": lambda d: first_panel(d).update(
            datasource={"type": "prometheus", "uid": "${DS_PROMETHEUS}"}),
        "missing unit": lambda d: first_panel(d)["fieldConfig"]["defaults"].pop("unit"),
        "no datasource variable": lambda d: d["templating"]["list"].pop(0),
        "query on another datasource": lambda d: first_panel(d)["targets"][0].update(
            datasource={"type": "prometheus", "uid": "prom"}),
        "unstable uid": lambda d: d.update(uid=None),
        "exemplars hidden": lambda d: next(
            t for p in panels(d["panels"]) if p["type"] == "timeseries"
            for t in p["targets"] if EXEMPLARS.search(t["expr"])).pop("exemplar"),
    }
    table_mutants = {
        "table without merge": lambda d: first_table(d).update(transformations=[]),
        "table query over a range": lambda d: first_table(d)["targets"][0].update(
            instant=False, range=True),
        "table query as a time series": lambda d: first_table(d)["targets"][-1].pop("format"),
    }
    cases = [(what, m, path.name, base) for what, m in mutants.items()]
    cases += [(what, m, with_table.name, tabled) for what, m in table_mutants.items()]
    failed = 0
    for what, mutate, name, dash in cases:
        d = copy.deepcopy(dash)
        mutate(d)
        if lint(name, d):
            print(f"selftest: {what}: reported")
        else:
            print(f"selftest FAILED: {what} was not reported", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--selftest"]:
        return selftest(ROOT / "dashboards" / "llmprobe-slo.json",
                        ROOT / "dashboards" / "llmprobe-capacity.json")
    paths = [Path(a) for a in argv] or sorted((ROOT / "dashboards").glob("*.json"))
    if not paths:
        print("no dashboards", file=sys.stderr)
        return 1
    problems = lint_files(paths)
    for p in problems:
        print(f"FAIL  {p}", file=sys.stderr)
    print(f"lint: {len(paths)} dashboards, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
