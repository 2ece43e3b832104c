#!/usr/bin/env python3
"""Exemplars through a real Prometheus: with --enable-feature=exemplar-storage it scrapes
the daemon's OpenMetrics exposition; /api/v1/query_exemplars for llmprobe_ttft_seconds_bucket
must return exemplars whose probe_id resolves at the daemon's /probe/ID to a probe with the
same trace ID and a TTFT inside the exemplar's bucket (the series' `le` and the bucket below
it). Prints one exemplar and its page, the drill-down docs/daemon.md shows.

Usage: exemplars.py --prometheus URL --daemon URL [--wait SECONDS]
"""

import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def query_exemplars(prom, query):
    now = time.time()
    q = urllib.parse.urlencode({"query": query, "start": now - 3600, "end": now + 60})
    body = get_json(f"{prom}/api/v1/query_exemplars?{q}")
    if body.get("status") != "success":
        raise RuntimeError(f"query_exemplars failed: {body}")
    return body["data"]


def bucket_bounds(prom, labels):
    """The bucket's `le` and the next lower bound of the same series (None for the first)."""
    le = labels["le"]
    matchers = ",".join(
        f'{k}="{v}"' for k, v in sorted(labels.items()) if k not in ("le", "__name__")
    )
    q = urllib.parse.urlencode({"match[]": f"llmprobe_ttft_seconds_bucket{{{matchers}}}"})
    bounds = sorted(
        {float(s["le"]) for s in get_json(f"{prom}/api/v1/series?{q}")["data"]}
    )
    upper = float(le)
    lower = max((b for b in bounds if b < upper), default=None)
    return lower, upper


def check(prom, daemon):
    """(checked exemplar, page) pairs, or a reason there are none yet."""
    resolved = []
    for series in query_exemplars(prom, "llmprobe_ttft_seconds_bucket"):
        labels = series["seriesLabels"]
        lower, upper = bucket_bounds(prom, labels)
        for e in series["exemplars"]:
            el = e["labels"]
            value = float(e["value"])
            if not (value <= upper and (lower is None or value > lower)):
                raise AssertionError(f"exemplar {value} outside its bucket ({lower}, {upper}]")
            try:
                page = get_json(f"{daemon}/probe/{el['probe_id']}?format=json")
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    continue  # let go since: the daemon keeps the newest pages
                raise
            if page.get("trace_id") != el.get("trace_id"):
                raise AssertionError(f"page {page.get('id')} trace {page.get('trace_id')} != {el}")
            ttft = page["ttft_ms"] / 1e3
            if not (ttft <= upper and (lower is None or ttft > lower)):
                raise AssertionError(f"page TTFT {ttft} outside ({lower}, {upper}]")
            if abs(ttft - value) > 1e-9:
                raise AssertionError(f"page TTFT {ttft} != exemplar {value}")
            resolved.append((labels, e, page))
    return resolved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--wait", type=float, default=60)
    a = ap.parse_args()
    deadline = time.time() + a.wait
    while True:
        resolved = check(a.prometheus, a.daemon)
        if len(resolved) >= 3:
            break
        if time.time() > deadline:
            print(f"only {len(resolved)} exemplars resolved to probe pages", file=sys.stderr)
            return 1
        time.sleep(1)
    labels, e, page = resolved[-1]
    print(f"{len(resolved)} exemplars of llmprobe_ttft_seconds_bucket resolved to probe pages")
    print("exemplar:", json.dumps({"seriesLabels": labels, "exemplar": e}, sort_keys=True))
    keep = ("id", "target", "scenario", "outcome", "ttft_ms", "trace_id")
    print("page:", json.dumps({k: page.get(k) for k in keep}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
