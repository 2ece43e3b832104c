#!/usr/bin/env python3
"""A minimal OTLP/HTTP trace receiver on 127.0.0.1 for tests: decodes every
ExportTraceServiceRequest POSTed to /v1/traces (protobuf, plain or gzip) with the official
opentelemetry-proto package and appends one JSON line per span to --out:
{"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "...", "name": "...",
 "service": "..."}. Prints "otlp receiver listening on http://127.0.0.1:PORT" when ready.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            lines = []
            for rs in req.resource_spans:
                service = next((a.value.string_value for a in rs.resource.attributes
                                if a.key == "service.name"), "")
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        lines.append(json.dumps({
                            "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(), "name": span.name,
                            "service": service}))
            with lock, open(args.out, "a", encoding="utf-8") as f:
                for line in lines:
                    f.write(line + "\n")
            out = ExportTraceServiceResponse().SerializeToString()
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
