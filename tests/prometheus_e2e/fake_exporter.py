#!/usr/bin/env python3
"""A stand-in /metrics endpoint exposing every metric docs/metrics.md lists.

Until `llmprobe daemon --mock` exists, tests/tools/prometheus_e2e.sh scrapes this with a
real Prometheus so every dashboard and rule query is at least parsed and evaluated by the
real PromQL engine against the documented names and labels. It is no proof that the daemon
exports those names (the live run against the daemon is); the names come from
docs/metrics.md itself, never from a second list.

    fake_exporter.py --listen 127.0.0.1:PORT
"""

from __future__ import annotations

import argparse
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import queries as q  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Boundaries covering the dashboards' SLO threshold variables (all real bucket boundaries).
BUCKETS = ["0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"]
PROBE = 'target="t1",model="m1",scenario="default"'
TM = 'target="t1",model="m1"'
START = time.time()


def exposition(names: set[str]) -> str:
    t = time.time() - START
    n = 1 + int(t * 2)  # two probes per second
    lines = []
    bases = sorted(n[: -len("_bucket")] for n in names if n.endswith("_bucket"))
    for base in bases:
        lines.append(f"# TYPE {base} histogram")
        for i, le in enumerate(BUCKETS):
            # Cumulative: half the observations land at or under 0.1 s, all under 10 s.
            frac = min(1.0, 0.5 + 0.1 * i) if le != "+Inf" else 1.0
            lines.append(f'{base}_bucket{{{PROBE},le="{le}"}} {int(n * frac)}')
        lines.append(f"{base}_sum{{{PROBE}}} {n * 0.2}")
        lines.append(f"{base}_count{{{PROBE}}} {n}")
    hist = {f"{b}{s}" for b in bases for s in ("_bucket", "_sum", "_count")}
    for name in sorted(names - hist - set(bases)):
        if name.endswith("_total"):
            kind, value = "counter", n
        elif name.endswith("_timestamp_seconds"):
            kind, value = "gauge", time.time()
        else:
            kind, value = "gauge", 0.5
        if "request_failures" in name:
            labels = PROBE + ',reason="http_5xx"'
            value = n // 10
        elif "probes_skipped" in name:
            labels = PROBE + ',reason="max_inflight"'
        elif "_capacity_" in name or "_engine_" in name or "client_server_gap" in name:
            labels = TM
        elif name.startswith("llmprobe_build_info"):
            labels = 'version="0.0.0-fake"'
            value = 1
        elif name.startswith(("llmprobe_config_", "llmprobe_targets")):
            labels = ""
            value = 1
        else:
            labels = PROBE
        lines.append(f"# TYPE {name} {kind}")
        if name == "llmprobe_slo_met_requests_total":
            # One series per SLI, as the daemon exports it; 90% of probes meet each.
            lines += [f'{name}{{{labels},sli="{sli}"}} {n * 9 // 10}'
                      for sli in ("ttft", "tpot", "e2e")]
            continue
        lines.append(f"{name}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


class Handler(BaseHTTPRequestHandler):
    names: set[str] = set()

    def do_GET(self):  # noqa: N802
        if self.path != "/metrics":
            self.send_error(404)
            return
        body = exposition(self.names).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="host:port")
    parser.add_argument("--metrics-doc", type=Path, default=ROOT / "docs" / "metrics.md")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    Handler.names = q.documented_metrics(args.metrics_doc)
    ThreadingHTTPServer((host, int(port)), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
