"""Unit tests for queries.py (python3 -m unittest, run by tests/tools/prometheus_e2e.sh)."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import queries as q  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class Substitute(unittest.TestCase):
    VARS = {"target": ".*", "ttft_slo": "0.5"}

    def test_builtins_and_braces(self):
        self.assertEqual(
            q.substitute("rate(x{a=~\"$target\"}[$__rate_interval]) ${ttft_slo} [${__range}]",
                         self.VARS),
            "rate(x{a=~\".*\"}[1m]) 0.5 [5m]")

    def test_equality_on_multi_value_becomes_regex(self):
        self.assertEqual(q.substitute('x{target="$target"}', self.VARS), 'x{target=~".*"}')
        self.assertEqual(q.substitute('x{le="${ttft_slo}"}', self.VARS), 'x{le="0.5"}')

    def test_format_suffix(self):
        self.assertEqual(q.substitute("${target:regex}", self.VARS), ".*")

    def test_unknown_variable_raises(self):
        with self.assertRaises(KeyError):
            q.substitute("x{a=~\"$tagret\"}", self.VARS)


class ParseRules(unittest.TestCase):
    def test_scalar_quoted_and_block_exprs(self):
        text = """groups:
  - name: g
    rules:
      - record: a:b:c
        expr: sum(x)
      - alert: Quoted
        expr: 'up == 0'
        for: 5m
      - alert: Block
        expr: |
          (
            a > 1
          )
          or b
        labels:
          severity: page
      - record: "a:folded:c"
        expr: >-
          sum(y)
"""
        got = [(r.kind, r.name, r.expr) for r in q.parse_rule_file(text, "t.yaml")]
        self.assertEqual(got, [
            ("record", "a:b:c", "sum(x)"),
            ("alert", "", "up == 0"),
            ("alert", "", "(\n  a > 1\n)\nor b"),
            ("record", "a:folded:c", "sum(y)"),
        ])

    def test_empty_expr_is_an_error(self):
        with self.assertRaises(ValueError):
            q.parse_rule_file("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: \"\"\n", "t")

    def test_repository_rules(self):
        rules = q.rule_queries(ROOT / "alerts")
        text = "".join(p.read_text() for p in (ROOT / "alerts").glob("*.yaml"))
        self.assertEqual(sum(r.kind == "record" for r in rules), text.count("- record:"))
        self.assertEqual(sum(r.kind == "alert" for r in rules), text.count("- alert:"))


class Dashboards(unittest.TestCase):
    def test_every_target_and_variable_is_extracted(self):
        import json
        queries = q.dashboard_queries(ROOT / "dashboards")
        n_targets = n_vars = 0
        for path in (ROOT / "dashboards").glob("*.json"):
            dash = json.loads(path.read_text())
            n_targets += sum(len(p.get("targets", [])) for p in q._panels(dash["panels"]))
            n_vars += sum(v["type"] == "query" for v in dash["templating"]["list"])
        self.assertEqual(len(queries), n_targets + n_vars)
        for query in queries:
            self.assertNotIn("$", query.expr, query.source)

    def test_documented_metrics_include_histogram_series(self):
        names = q.documented_metrics(ROOT / "docs" / "metrics.md")
        for n in ("llmprobe_ttft_seconds_bucket", "llmprobe_ttft_seconds_count",
                  "llmprobe_request_failures_total", "llmprobe_slo_e2e_seconds"):
            self.assertIn(n, names)
        self.assertNotIn("llmprobe_requests_total_bucket", names)
        # Counters whose description mentions the engine's histogram stay counters.
        self.assertIn("llmprobe_engine_ttft_observations_total", names)
        self.assertNotIn("llmprobe_engine_ttft_observations_total_bucket", names)


if __name__ == "__main__":
    unittest.main()
