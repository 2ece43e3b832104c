#!/usr/bin/env python3
"""A minimal OTLP/HTTP receiver on 127.0.0.1 for tests: decodes every
ExportTraceServiceRequest POSTed to /v1/traces and ExportMetricsServiceRequest POSTed to
/v1/metrics (protobuf, plain or gzip) with the official opentelemetry-proto package.
Appends one JSON line per span to --out:
{"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "...", "name": "...",
 "kind": N, "service": "...", "start_ns": N, "end_ns": N, "attributes": {...}},
and with --metrics-out one JSON line per histogram or sum data point:
{"name": "...", "unit": "...", "service": "...", "attributes": {...}, "count": N,
 "sum": X} (a sum's point has "value" instead of count and sum).
Prints "otlp receiver listening on http://127.0.0.1:PORT" when ready.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def plain(value):
    """An AnyValue as a JSON value (arrays of scalars included)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [plain(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def attributes(kvs):
    return {kv.key: plain(kv.value) for kv in kvs}


def service_of(resource):
    return attributes(resource.attributes).get("service.name", "")


def span_lines(body):
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    for rs in req.resource_spans:
        service = service_of(rs.resource)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield json.dumps({
                    "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(), "name": span.name,
                    "kind": span.kind, "service": service,
                    "start_ns": span.start_time_unix_nano, "end_ns": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes)})


def metric_lines(body):
    req = ExportMetricsServiceRequest()
    req.ParseFromString(body)
    for rm in req.resource_metrics:
        service = service_of(rm.resource)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                head = {"name": m.name, "unit": m.unit, "service": service}
                data = m.WhichOneof("data")
                if data == "histogram":
                    for p in m.histogram.data_points:
                        yield json.dumps({**head, "attributes": attributes(p.attributes),
                                          "count": p.count, "sum": p.sum})
                elif data == "sum":
                    for p in m.sum.data_points:
                        value = p.as_int if p.WhichOneof("value") == "as_int" else p.as_double
                        yield json.dumps({**head, "attributes": attributes(p.attributes),
                                          "value": value})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--metrics-out")
    args = ap.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                out_file, lines = args.out, list(span_lines(body))
                out = ExportTraceServiceResponse().SerializeToString()
            elif self.path == "/v1/metrics" and args.metrics_out:
                out_file, lines = args.metrics_out, list(metric_lines(body))
                out = ExportMetricsServiceResponse().SerializeToString()
            else:
                self.send_response(404)
                self.end_headers()
                return
            with lock, open(out_file, "a", encoding="utf-8") as f:
                for line in lines:
                    f.write(line + "\n")
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"otlp receiver listening on http://127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
