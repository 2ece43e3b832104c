"""Every PromQL expression llmprobe ships: dashboard panel queries and rule expressions.

Owns extraction only (no network): `dashboard_queries()` reads dashboards/*.json and
substitutes Grafana's template variables so Prometheus can run the query as-is;
`rule_queries()` reads alerts/*.yaml. Python 3 standard library only, so the rule files
are read with a small parser for the subset of YAML Prometheus rule files use
(`- record:`/`- alert:` items with an `expr:` that is a plain scalar or a `|`/`>` block);
the end-to-end driver cross-checks its rule count against what Prometheus loaded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

# Grafana's built-in interval variables, replaced by windows that hold enough samples when
# Prometheus scrapes every second for a minute or more.
BUILTINS = {"__rate_interval": "1m", "__interval": "1m", "__range": "5m"}

_VAR = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
METRIC = re.compile(r"\b(llmprobe_[a-z0-9_]+)")
RECORDED = re.compile(r"\b(llmprobe:[a-z0-9_:]+)")


@dataclass(frozen=True)
class Query:
    """One expression to run: where it comes from, what kind it is, the PromQL."""

    source: str  # "dashboards/x.json: Panel title [A]" or "alerts/x.yaml: rule name"
    kind: str  # "panel", "record" or "alert"
    expr: str
    name: str = ""  # recorded series name for kind == "record"


def substitute(expr: str, variables: dict[str, str]) -> str:
    """Replaces $var / ${var} / ${var:fmt}; a query variable becomes the regex `.*`.

    An equality matcher on a multi-value variable (`label="$var"`) becomes `label=~".*"`.
    Unknown variables raise KeyError so a typo in a panel is caught here.
    """
    def value(name: str) -> str:
        if name in BUILTINS:
            return BUILTINS[name]
        return variables[name]

    expr = re.sub(
        r'(\w+)\s*=\s*"\$\{?(\w+)\}?"',
        lambda m: (f'{m.group(1)}=~"{value(m.group(2))}"'
                   if variables.get(m.group(2)) == ".*" else m.group(0)),
        expr,
    )
    return _VAR.sub(lambda m: value(m.group(1) or m.group(2)), expr)


def dashboard_variables(dash: dict) -> dict[str, str]:
    """Template variable name -> substitution: `.*` for query variables, else the current value."""
    out = {}
    for var in dash.get("templating", {}).get("list", []):
        kind = var.get("type")
        if kind == "query":
            out[var["name"]] = ".*"
        elif kind in ("custom", "constant", "textbox", "interval"):
            current = var.get("current", {}).get("value")
            if isinstance(current, list):
                current = current[0] if current else ""
            out[var["name"]] = str(current if current is not None else var.get("query", ""))
        elif kind == "datasource":
            out[var["name"]] = var.get("query", "")
    return out


def _panels(panels: list[dict]):
    for p in panels:
        yield p
        yield from _panels(p.get("panels", []))


def dashboard_queries(directory: Path) -> list[Query]:
    out = []
    for path in sorted(directory.glob("*.json")):
        dash = json.loads(path.read_text(encoding="utf-8"))
        variables = dashboard_variables(dash)
        # A label_values(selector, label) variable must list values: count by (label).
        for var in dash.get("templating", {}).get("list", []):
            query = var.get("query")
            query = query.get("query", "") if isinstance(query, dict) else str(query or "")
            m = _LABEL_VALUES.fullmatch(query.strip()) if var.get("type") == "query" else None
            if var.get("type") == "query" and not m:
                raise ValueError(f"{path.name}: variable {var.get('name')}: not label_values(): {query}")
            if m:
                out.append(Query(f"{directory.name}/{path.name}: variable ${var['name']}", "panel",
                                 substitute(f"count by ({m.group(2)}) ({m.group(1)})", variables)))
        for p in _panels(dash.get("panels", [])):
            for t in p.get("targets", []):
                expr = t.get("expr", "")
                if not expr.strip():
                    continue
                title = substitute(p.get("title", "?"), variables)
                out.append(Query(f"{directory.name}/{path.name}: {title} [{t.get('refId', '?')}]",
                                 "panel", substitute(expr, variables)))
    return out


_LABEL_VALUES = re.compile(r"label_values\((.+),\s*(\w+)\s*\)", re.S)
_ITEM = re.compile(r"^(\s*)- (record|alert):\s*(\S+)\s*$")
_EXPR = re.compile(r"^(\s*)expr:\s*(.*)$")


def parse_rule_file(text: str, source: str) -> list[Query]:
    """Extracts (kind, name, expr) from a Prometheus rule file (the subset described above)."""
    out: list[Query] = []
    lines = text.splitlines()
    current: tuple[str, str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        item = _ITEM.match(line)
        if item:
            current = (item.group(2), item.group(3).strip("'\""))
            i += 1
            continue
        expr = _EXPR.match(line)
        if expr and current is not None:
            indent, value = len(expr.group(1)), expr.group(2).strip()
            if value[:1] in ("|", ">"):
                block = []
                i += 1
                while i < len(lines) and (not lines[i].strip()
                                          or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i])
                    i += 1
                body = "\n".join(block)
                pad = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
                value = "\n".join(b[pad:] for b in body.splitlines()).strip()
                if value.startswith("#"):
                    value = ""
            else:
                i += 1
                if value[:1] in ("'", '"') and value[-1:] == value[:1]:
                    value = value[1:-1]
            if not value:
                raise ValueError(f"{source}: empty expr for {current[1]}")
            kind, name = current
            out.append(Query(f"{source}: {name}", kind, value, name if kind == "record" else ""))
            current = None
            continue
        i += 1
    return out


def rule_queries(directory: Path) -> list[Query]:
    out = []
    for path in sorted(directory.glob("*.yaml")):
        out.extend(parse_rule_file(path.read_text(encoding="utf-8"),
                                   f"{directory.name}/{path.name}"))
    return out


def documented_metrics(metrics_md: Path) -> set[str]:
    """Metric names in docs/metrics.md, with _bucket/_sum/_count for the histograms."""
    names: set[str] = set()
    for line in metrics_md.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        found = re.findall(r"`(llmprobe_[a-z0-9_]+)(?:\{[^}]*\})?`", cells[0])
        # The type cell starts with the type; a counter's note may mention a histogram.
        histogram = len(cells) > 1 and cells[1].startswith("histogram")
        for n in found:
            names.add(n)
            if histogram:
                names.update({f"{n}_bucket", f"{n}_sum", f"{n}_count"})
    return names
