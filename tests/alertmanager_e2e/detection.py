#!/usr/bin/env python3
"""Time to page, derived from the rules: docs/deploy.md's detection-time table.

Reads the fast-burn conditions of LlmprobeAvailabilityBudgetBurn (severity page): its
`for` from alerts/llmprobe-alerts.yaml, the burn condition it counts locations in (long
and short window, burn factor, guard window), the objective and the minimum-probe guards
from alerts/llmprobe-recording.yaml; one location (a single prober), then simulates
a target that was healthy for `history` and starts failing a fraction p of its probes:
Poisson probe arrivals at the probe rate, each failing with probability p; Prometheus
evaluates the condition every eval interval on data one scrape interval old (rate() of
two counters over the same window is the ratio of their increases); the alert fires once
the condition held for `for`; Alertmanager notifies group_wait later. The same model
holds for the latency SLIs with p = the share of successful probes that are slow.

    detection.py --table                 # the markdown table of docs/deploy.md
    detection.py --check docs/deploy.md  # fails unless the file holds that table
    detection.py --rate 1 --p 0.3 --history 60 --compression 60 --scrape 1 --eval 1 \\
        --group-wait 1                   # one case, in seconds (the e2e test's setup)

Library: `simulate()` (run.py compares its measurements with it). Needs PyYAML.
"""

from __future__ import annotations

import argparse
import bisect
import random
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SECS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def seconds(d: str) -> float:
    return float(d[:-1]) * SECS[d[-1]]


@dataclass(frozen=True)
class Condition:
    long: float  # seconds
    short: float
    factor: float
    guard: float  # probes the long window must hold


@dataclass(frozen=True)
class Rule:
    conditions: tuple[Condition, ...]
    for_s: float
    budget: float


def load_rule(alert: str = "LlmprobeAvailabilityBudgetBurn", severity: str = "page",
              alerts_dir: Path = ROOT / "alerts") -> Rule:
    """The burn-rate conditions of one alert, as the rule files define them."""
    recording = yaml.safe_load((alerts_dir / "llmprobe-recording.yaml").read_text())
    alerting = yaml.safe_load((alerts_dir / "llmprobe-alerts.yaml").read_text())
    objective, guards = {}, {}
    for g in recording["groups"]:
        for r in g["rules"]:
            m = re.fullmatch(r"vector\(([0-9.]+)\)", str(r.get("expr", "")).strip())
            if r.get("record") == "llmprobe:slo_objective:ratio" and m:
                objective[r["labels"]["sli"]] = float(m.group(1))
            if r.get("record") == "llmprobe:slo_min_requests:count" and m:
                guards[r["labels"]["window"]] = float(m.group(1))
    # An alert counts the locations in a recorded burn condition
    # (llmprobe:slo_fast_burn:ratio{sli="..."}); the condition's windows are in that rule.
    burns = {(r["record"], r["labels"]["sli"]): r["expr"] for g in recording["groups"]
             for r in g["rules"] if str(r.get("record", "")).startswith("llmprobe:slo_")
             and "sli" in r.get("labels", {}) and "burn" in r["record"]}
    for g in alerting["groups"]:
        for r in g["rules"]:
            if r.get("alert") != alert or r["labels"]["severity"] != severity:
                continue
            burn, sli = re.search(r'(llmprobe:slo_\w+_burn:ratio)\{sli="(\w+)"\}', r["expr"]).groups()
            conds = []
            for block in re.split(r"\n\s*or\n", burns[(burn, sli)]):
                windows = re.findall(r"ratio_rate(\w+) > \(([0-9.]+) \*", block)
                guard = re.search(r'window="(\w+)"', block).group(1)
                (lw, f1), (sw, f2) = windows
                assert f1 == f2 and guard == lw, block
                conds.append(Condition(seconds(lw), seconds(sw), float(f1), guards[guard]))
            return Rule(tuple(conds), seconds(r["for"]), 1 - objective[sli])
    raise KeyError(f"{alert} {severity} not found")


def compressed(rule: Rule, c: float) -> Rule:
    """The rule as prometheusRule.timeCompression=c renders it (guards unchanged)."""
    return Rule(tuple(Condition(x.long / c, x.short / c, x.factor, x.guard)
                      for x in rule.conditions), rule.for_s / c, rule.budget)


def simulate(rule: Rule, rate: float, p: float, history: float, scrape: float, eval_s: float,
             group_wait: float, horizon: float, runs: int = 200, seed: int = 1) -> list[float]:
    """Seconds from onset to the page notification, one per run (inf: no page by horizon)."""
    rnd = random.Random(seed)
    out = []
    longest = max(x.long for x in rule.conditions)
    start = -min(history, longest + 1)
    for _ in range(runs):
        t, times, fails = start, [], []
        while t < horizon:
            t += rnd.expovariate(rate)
            times.append(t)
            fails.append(1 if t > 0 and rnd.random() < p else 0)
        cum = [0]
        for f in fails:
            cum.append(cum[-1] + f)

        def window(now: float, w: float) -> tuple[int, int]:
            lo = bisect.bisect_right(times, max(now - w, start))
            hi = bisect.bisect_right(times, now)
            return hi - lo, cum[hi] - cum[lo]

        def holds(now: float) -> bool:
            data = now - scrape  # what the last scrape saw
            for x in rule.conditions:
                n_long, f_long = window(data, x.long)
                n_short, f_short = window(data, x.short)
                thr = x.factor * rule.budget
                if n_long >= x.guard and n_long and n_short and \
                        f_long / n_long > thr and f_short / n_short > thr:
                    return True
            return False

        ev = rnd.uniform(0, eval_s)
        since = None
        result = float("inf")
        while ev < horizon:
            if holds(ev):
                since = ev if since is None else since
                if ev - since >= rule.for_s:
                    result = ev + group_wait
                    break
            else:
                since = None
            ev += eval_s
        out.append(result)
    return sorted(out)


def pct(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def fmt(s: float) -> str:
    if s == float("inf"):
        return "no page"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def table(runs: int) -> str:
    page = load_rule()
    ticket = load_rule(severity="ticket")
    # Production: history longer than every window, the chart's ServiceMonitor scrapes
    # every 30 s, rules evaluated every 30 s, Alertmanager group_wait 30 s.
    rows = [("1/min", 1 / 60), ("6/min", 0.1), ("1/s", 1.0)]
    cols = [0.05, 0.3, 1.0]
    lines = ["| probe rate per scenario | " + " | ".join(f"{int(p * 100)} % of probes fail" for p in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for name, rate in rows:
        cells = []
        for p in cols:
            xs = simulate(page, rate, p, 1e9, 30, 30, 30, horizon=6 * 3600, runs=runs)
            if pct(xs, 0.5) == float("inf"):
                tx = simulate(ticket, rate, p, 1e9, 30, 30, 30, horizon=2 * 86400,
                              runs=max(20, runs // 10))
                cells.append(f"no page; ticket {fmt(pct(tx, 0.5))}")
            else:
                cells.append(f"{fmt(pct(xs, 0.5))} (90 %: {fmt(pct(xs, 0.9))})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--check", type=Path, metavar="DOC", help="DOC must contain the table")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rate", type=float, default=1 / 60, help="probes per second")
    ap.add_argument("--p", type=float, default=0.3)
    ap.add_argument("--history", type=float, default=1e9, help="healthy seconds before onset")
    ap.add_argument("--compression", type=float, default=1)
    ap.add_argument("--scrape", type=float, default=30)
    ap.add_argument("--eval", type=float, default=30)
    ap.add_argument("--group-wait", type=float, default=30)
    ap.add_argument("--horizon", type=float, default=6 * 3600)
    ap.add_argument("--objective", type=float, help="instead of the rules' objective")
    args = ap.parse_args()
    if args.table:
        print(table(args.runs))
        return 0
    if args.check:
        want = table(args.runs)
        if want not in args.check.read_text(encoding="utf-8"):
            print(f"{args.check} lacks the detection-time table the rules give now; "
                  f"replace it with the output of detection.py --table:\n{want}")
            return 1
        print(f"{args.check}: detection-time table matches the rules")
        return 0
    rule = compressed(load_rule(), args.compression)
    if args.objective:
        rule = Rule(rule.conditions, rule.for_s, 1 - args.objective)
    xs = simulate(rule, args.rate, args.p, args.history, args.scrape, args.eval,
                  args.group_wait, args.horizon, args.runs)
    print(f"median {fmt(pct(xs, 0.5))}, 10 % {fmt(pct(xs, 0.1))}, 90 % {fmt(pct(xs, 0.9))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
