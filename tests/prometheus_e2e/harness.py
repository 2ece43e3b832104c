#!/usr/bin/env python3
"""Runs every PromQL expression llmprobe ships through a real Prometheus.

Panel queries (dashboards/*.json) and recording rules (alerts/*.yaml) must evaluate and
return data; alert expressions must evaluate (they return nothing while healthy). Each
recorded series must also exist under its rule name, which proves Prometheus loaded and
evaluated the rule files. A deliberately misspelt copy of a real query is run too and must
come back empty, so a broken metric name cannot slip through as "no data is fine".

    harness.py --prometheus http://127.0.0.1:9090 [--wait 120]   # live, after scraping
    harness.py --static     # offline: every name used is in docs/metrics.md or recorded
    harness.py --selftest   # offline: a fake Prometheus proves failures are reported

Exit 0 when everything passes, 1 when a query fails, 2 on bad usage. Python 3 stdlib only.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import queries as q  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    query: q.Query
    ok: bool
    detail: str


def run_query(base: str, expr: str, timeout: float = 30) -> tuple[bool, int, str]:
    """(evaluated, number of series, error text) for an instant query."""
    url = f"{base.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            body = json.load(resp)
    except urllib.error.HTTPError as e:
        try:
            body = json.load(e)
        except (ValueError, OSError):
            return False, 0, f"HTTP {e.code}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        return False, 0, f"request failed: {e}"
    if body.get("status") != "success":
        return False, 0, f"{body.get('errorType', 'error')}: {body.get('error', body)}"
    data = body.get("data", {})
    result = data.get("result", [])
    if data.get("resultType") in ("scalar", "string"):
        return True, 1, ""
    return True, len(result), ""


def loaded_rule_count(base: str) -> int:
    """Number of rules (recording and alerting) Prometheus has loaded, from /api/v1/rules."""
    with urllib.request.urlopen(f"{base.rstrip('/')}/api/v1/rules", timeout=30) as resp:
        body = json.load(resp)
    return sum(len(g.get("rules", [])) for g in body.get("data", {}).get("groups", []))


def misspelt(query: q.Query) -> q.Query:
    """The same query with its first llmprobe_ metric name misspelt."""
    m = q.METRIC.search(query.expr)
    if not m:
        raise ValueError(f"no metric name in {query.source}")
    name = m.group(1)
    wrong = name.replace("llmprobe_", "llmprobe_x", 1)
    return replace(query, source=f"{query.source} (misspelt {name} -> {wrong})",
                   expr=query.expr.replace(name, wrong))


# A rule's input can have data a moment before the rule's next evaluation writes its
# output (a series that appeared since the last one): how long to give it, in
# evaluation intervals of the test's Prometheus (1 s) and then some.
RULE_SETTLE_SECONDS = 10


def recorded_output(base: str, name: str, settle: float = RULE_SETTLE_SECONDS):
    """Queries a recording rule's output, giving the rule a few evaluations to write it
    when its expression already has data."""
    deadline = time.monotonic() + settle
    while True:
        evaluated, n, err = run_query(base, name)
        if (evaluated and n > 0) or time.monotonic() > deadline:
            return evaluated, n, err
        time.sleep(0.5)


# A live Prometheus may not yet have scraped what a panel shows (a series that needs two
# scrapes, or the daemon's second engine scrape) when the checks start, later on a busy
# machine: a query without data is asked again until this many seconds after the first
# check began (tens of scrape and evaluation intervals), then reported.
LIVE_SETTLE_SECONDS = 30


def check(base: str, queries: list[q.Query], allow_empty: list[str],
          settle: float = 0) -> list[Result]:
    results = []
    settle_until = time.monotonic() + settle
    for query in queries:
        allowed = any(a in query.source for a in allow_empty)
        evaluated, n, err = run_query(base, query.expr)
        while (evaluated and n == 0 and query.kind != "alert" and not allowed
               and time.monotonic() < settle_until):
            time.sleep(0.5)
            evaluated, n, err = run_query(base, query.expr)
        if not evaluated:
            results.append(Result(query, False, err))
        elif query.kind == "alert":
            results.append(Result(query, True, f"evaluated ({n} firing series)"))
        elif n == 0 and allowed:
            results.append(Result(query, True, "no data (allowed by --allow-empty)"))
        elif n == 0:
            results.append(Result(query, False, "no data"))
        else:
            results.append(Result(query, True, f"{n} series"))
        if query.kind == "record" and results[-1].ok and not (allowed and n == 0):
            evaluated, n, err = recorded_output(base, query.name)
            if not evaluated or n == 0:
                results.append(Result(replace(query, source=f"{query.source} (recorded series)"),
                                      False, err or "rule not evaluated by Prometheus: no data"))
    return results


def report(results: list[Result], out=sys.stdout) -> int:
    failed = [r for r in results if not r.ok]
    for r in results:
        print(f"{'PASS' if r.ok else 'FAIL'}  {r.query.kind:6} {r.query.source}: {r.detail}",
              file=out)
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed", file=out)
    for r in failed:
        print(f"  FAILED {r.query.source}: {r.detail}\n    {r.query.expr}", file=out)
    return 1 if failed else 0


def wait_for_data(base: str, seconds: float, recorded: str) -> None:
    """Waits until the daemon's probes and a recording rule's output are queryable."""
    deadline = time.monotonic() + seconds
    needed = ["sum(llmprobe_requests_total) > 0",
              "sum(rate(llmprobe_requests_total[1m])) > 0", recorded]
    while True:
        missing = [e for e in needed if run_query(base, e, timeout=5)[1] == 0]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"no data after {seconds:.0f}s for: {', '.join(missing)}")
        time.sleep(1)


def all_queries(args) -> list[q.Query]:
    return q.dashboard_queries(args.dashboards) + q.rule_queries(args.alerts)


def static_check(queries: list[q.Query], metrics_doc: Path) -> list[str]:
    """Names used in queries that docs/metrics.md does not define or no rule records."""
    documented = q.documented_metrics(metrics_doc)
    recorded = {x.name for x in queries if x.kind == "record"}
    problems = []
    for query in queries:
        for name in sorted(set(q.METRIC.findall(query.expr)) - documented):
            problems.append(f"{query.source}: {name} is not in {metrics_doc.name}")
        for name in sorted(set(q.RECORDED.findall(query.expr)) - recorded):
            problems.append(f"{query.source}: {name} is not recorded by any rule")
    return problems


class FakePrometheus(BaseHTTPRequestHandler):
    """Answers /api/v1/query with one series when every name in the query is known."""

    known: set[str] = set()

    def do_GET(self):  # noqa: N802 (http.server's naming)
        params = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        expr = params.get("query", [""])[0]
        if expr.count("(") != expr.count(")"):
            self._send(400, {"status": "error", "errorType": "bad_data", "error": "parse error"})
            return
        names = set(q.METRIC.findall(expr)) | set(q.RECORDED.findall(expr))
        result = [{"metric": {}, "value": [0, "1"]}] if names <= self.known else []
        self._send(200, {"status": "success", "data": {"resultType": "vector", "result": result}})

    def _send(self, code: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def selftest(args) -> int:
    """Proves, against a fake Prometheus, that the harness reports bad queries as failing."""
    queries = all_queries(args)
    FakePrometheus.known = (q.documented_metrics(args.metrics_doc)
                            | {x.name for x in queries if x.kind == "record"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    problems = []
    try:
        good = check(base, queries, [])
        if any(not r.ok for r in good):
            report(good, sys.stderr)
            problems.append("real queries failed against the fake Prometheus")
        panel = next(x for x in queries if x.kind == "panel")
        record = next(x for x in queries if x.kind == "record" and q.METRIC.search(x.expr))
        alert = next(x for x in queries if x.kind == "alert")
        cases = [
            ("misspelt metric in a panel query", misspelt(panel)),
            ("misspelt metric in a recording rule", misspelt(record)),
            ("syntax error in an alert", replace(alert, expr=alert.expr + ")")),
        ]
        for what, bad in cases:
            r = check(base, [bad], [])
            if all(x.ok for x in r):
                problems.append(f"{what} was not reported: {bad.expr}")
            else:
                print(f"selftest: {what}: reported ({r[0].detail})")
    finally:
        server.shutdown()
    for p in problems:
        print(f"selftest FAILED: {p}", file=sys.stderr)
    if not problems:
        print(f"selftest: ok ({len(queries)} queries)")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", help="Prometheus base URL, e.g. http://127.0.0.1:9090")
    parser.add_argument("--dashboards", type=Path, default=ROOT / "dashboards")
    parser.add_argument("--alerts", type=Path, default=ROOT / "alerts")
    parser.add_argument("--metrics-doc", type=Path, default=ROOT / "docs" / "metrics.md")
    parser.add_argument("--wait", type=float, default=0,
                        help="seconds to wait for probe data and rule output before checking")
    parser.add_argument("--allow-empty", action="append", default=[], metavar="TEXT",
                        help="a panel/rule whose source contains TEXT may return no data")
    parser.add_argument("--static", action="store_true",
                        help="offline: check names against docs/metrics.md and the rules")
    parser.add_argument("--selftest", action="store_true",
                        help="offline: prove failures are reported, with a fake Prometheus")
    args = parser.parse_args()
    try:
        queries = all_queries(args)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: reading queries: {e!r}", file=sys.stderr)
        return 1
    if not queries:
        print("error: no queries found", file=sys.stderr)
        return 1
    if args.selftest:
        return selftest(args)
    if args.static:
        problems = static_check(queries, args.metrics_doc)
        for p in problems:
            print(f"FAIL  {p}", file=sys.stderr)
        print(f"static: {len(queries)} queries, {len(problems)} problems")
        return 1 if problems else 0
    if not args.prometheus:
        parser.error("--prometheus, --static or --selftest is required")
    if args.wait:
        recorded = next(x.name for x in queries if x.kind == "record" and "rate5m" in x.name)
        try:
            wait_for_data(args.prometheus, args.wait, recorded)
        except TimeoutError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    panel = next(x for x in queries if x.kind == "panel")
    results = check(args.prometheus, queries, args.allow_empty,
                    settle=LIVE_SETTLE_SECONDS if args.wait else 0)
    # Prometheus must have loaded exactly the rules this harness read from alerts/.
    expected = sum(1 for x in queries if x.kind in ("record", "alert"))
    try:
        loaded = loaded_rule_count(args.prometheus)
        detail = f"Prometheus loaded {loaded} rules, alerts/ defines {expected}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        loaded, detail = -1, f"/api/v1/rules failed: {e}"
    results.append(Result(q.Query("api/v1/rules", "rules", "(rule count)"), loaded == expected,
                          detail))
    # The misspelt copy must fail: evaluated but empty.
    bad = misspelt(panel)
    evaluated, n, err = run_query(args.prometheus, bad.expr)
    results.append(Result(replace(bad, kind="guard"), evaluated and n == 0,
                          "no data, as it must" if evaluated and n == 0
                          else (err or f"returned {n} series: the check cannot fail")))
    return report(results)


if __name__ == "__main__":
    sys.exit(main())
