#!/usr/bin/env python3
"""One incident, one page: the real pieces end to end, on 127.0.0.1 only.

`llmprobe mock` processes (one per target) are probed by `llmprobe daemon` at 1 probe/s
per target; a real Prometheus scrapes it every second with the repository's rules
rendered by the Helm chart with prometheusRule.timeCompression=C (every window, `for` and
`keep_firing_for` divided by C); a real Alertmanager runs alertmanager/llmprobe.yml with
only its receivers replaced (by a webhook on 127.0.0.1 that records every notification)
and its group_wait/group_interval/repeat_interval divided by C. With C = 60 one test
second is one production minute: 1 probe/s here is the default 1 probe/min, and the
rules' 1h window holds 60 s.

Timeline: every target is healthy for one long window (60 s, "1h"), so the fast-burn
windows hold a healthy history, then at ONSET:
    healthy   stays healthy                      -> no page
    errors    30% HTTP 500                       -> one page, LlmprobeAvailabilityBudgetBurn
    outage    100% HTTP 500                      -> one page, LlmprobeAvailabilityBudgetBurn
    slow      TTFT 2x its SLO, no errors         -> one page, LlmprobeTTFTBudgetBurn
    flap      100% HTTP 500 for 10 s, healthy 35 s, repeated -> at most one page
    light     2% HTTP 500                        -> no page (below 6x the 1% budget; at 5%
                                                    the short history gives the 6h window
                                                    a few % chance to page in 90 s)
A fault is switched by restarting that target's mock on the same port.

Controls, fed the same probes: an Alertmanager without the inhibit rules must page the
errors, outage and slow targets more than once, and a Prometheus whose rules lack
keep_firing_for must page the flapping target more than once (else the scenarios would
not exercise what they claim to).

Checks: the page notifications per target (count, alert names), and that the alerts the
hierarchy inhibits still fire in Prometheus and are suppressed in Alertmanager. The time
from ONSET to the page is printed next to the model of docs/deploy.md's detection-time
table (detection.py, run for this test's setup), not held to it: every stage runs on a
one-second clock here, which a busy machine delays, and the table itself is checked
against the rules offline (detection.py --check). A page the model expects within the
window that has not come by its end is waited for, up to ten times the model's median
time to page, and counted as if it had come in it. Prints a summary table.
Exit 0 when every check passes, 1 otherwise. Needs PyYAML.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import detection  # noqa: E402

# Every mock's timing when healthy: a tenth or less of the SLOs below (TTFT 100 ms for
# the slow target, 500 ms else; TPOT 50 ms), so that a busy machine delaying a probe by
# tens of milliseconds does not make a healthy target miss them.
HEALTHY = {"--ttft-ms": "10", "--itl-ms": "2"}
# Fault per target after ONSET (mock flags, on top of HEALTHY's); None: stays as it was.
TARGETS = {
    "healthy": None,
    "errors": ["--fault", "http_500:0.3"],
    "outage": ["--fault", "http_500:1"],
    "slow": ["--ttft-ms", "200"],
    "flap": ["--fault", "http_500:1"],
    "light": ["--fault", "http_500:0.02"],
}
# The slow target's TTFT SLO: the mock answers in 10 ms before ONSET, 200 ms after (a
# floor: the mock is never early).
SLOW_TTFT_SLO = "100ms"
EXPECTED_PAGE = {
    "healthy": None,
    "errors": "LlmprobeAvailabilityBudgetBurn",
    "outage": "LlmprobeAvailabilityBudgetBurn",
    "slow": "LlmprobeTTFTBudgetBurn",
    "flap": "LlmprobeAvailabilityBudgetBurn",
    "light": None,
}
# The model's case per paging target: (alert, error ratio after ONSET).
MODEL = {
    "errors": ("LlmprobeAvailabilityBudgetBurn", 0.3),
    "outage": ("LlmprobeAvailabilityBudgetBurn", 1.0),
    "slow": ("LlmprobeTTFTBudgetBurn", 1.0),
}
# Alerts that must fire in Prometheus while the page above inhibits them in Alertmanager.
CONTEXT = {
    "errors": ["LlmprobeGoodputBudgetBurn"],
    "outage": ["LlmprobeGoodputBudgetBurn"],
    "slow": ["LlmprobeGoodputBudgetBurn"],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(msg: str) -> None:
    print(f"[alertmanager_e2e] {msg}", file=sys.stderr, flush=True)


class Recorder(BaseHTTPRequestHandler):
    """Webhook receiver: keeps every notification with its arrival time."""

    notifications: list[dict] = []
    lock = threading.Lock()

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.lock:
            self.notifications.append({"t": time.monotonic(), "path": self.path,
                                       "body": json.loads(body)})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


class Proc:
    def __init__(self, name: str, argv: list[str], logdir: Path, ready_line: str | None = None):
        self.name = name
        self.log = open(logdir / f"{name}.log", "ab")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE if ready_line else self.log,
                                  stderr=self.log, stdin=subprocess.DEVNULL)
        self.addr = None
        if ready_line:
            line = self.p.stdout.readline().decode()
            m = re.search(ready_line + r" on http://(\S+)", line)
            if not m:
                raise RuntimeError(f"{name}: no '{ready_line}' line, got {line!r}")
            self.addr = m.group(1)
            threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for chunk in iter(lambda: self.p.stdout.read(4096), b""):
            self.log.write(chunk)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class Mock:
    """An `llmprobe mock` on a fixed port, restarted to switch its fault."""

    def __init__(self, binary: str, name: str, logdir: Path):
        self.binary, self.name, self.logdir = binary, name, logdir
        self.port = free_port()
        self.proc = None
        self.start([])

    def start(self, flags: list[str]):
        if self.proc:
            self.proc.stop()
        flags = [w for k, v in HEALTHY.items() if k not in flags for w in (k, v)] + flags
        for attempt in range(50):
            try:
                self.proc = Proc(f"mock-{self.name}", [self.binary, "mock", "--listen",
                                 f"127.0.0.1:{self.port}", "--seed", str(attempt), *flags],
                                 self.logdir, "llmprobe mock listening")
                return
            except RuntimeError:
                time.sleep(0.1)  # the port is not free again yet
        raise RuntimeError(f"mock {self.name}: cannot listen on {self.port} again")


def query(base: str, expr: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]


def wait_ready(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def scale_duration(d: str, c: int) -> str:
    secs = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    n = int(d[:-1]) * secs[d[-1]]
    return f"{max(1, n // c)}s"


def stop_all(mocks: dict, procs: list) -> None:
    """Stops the mocks, then the other processes in reverse order of start."""
    for m in mocks.values():
        if m.proc:
            m.proc.stop()
    for p in reversed(procs):
        p.stop()


def verdict(problems: list[str]) -> int:
    """Prints each problem; the exit status."""
    for p in problems:
        print(f"FAIL  {p}", file=sys.stderr)
    return 1 if problems else 0


def alertmanager_config(repo_file: Path, c: int, hook: str, inhibit: bool = True) -> dict:
    """The repository's config with the receivers pointed at the recorder, times / c;
    without its inhibit rules for the control instance."""
    cfg = yaml.safe_load(repo_file.read_text(encoding="utf-8"))
    if not inhibit:
        cfg.pop("inhibit_rules")

    def scale(route: dict):
        for k in ("group_wait", "group_interval", "repeat_interval"):
            if k in route:
                route[k] = scale_duration(route[k], c)
        for sub in route.get("routes", []):
            scale(sub)

    scale(cfg["route"])
    cfg["receivers"] = [{"name": r["name"], "webhook_configs": [
        {"url": f"{hook}/{r['name']}", "send_resolved": True}]} for r in cfg["receivers"]]
    return cfg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--alertmanager", required=True)
    ap.add_argument("--amtool", required=True)
    ap.add_argument("--rules", required=True, type=Path, help="the compressed rule file")
    ap.add_argument("--am-config", required=True, type=Path)
    ap.add_argument("--scratch", required=True, type=Path)
    ap.add_argument("--compression", type=int, default=60)
    ap.add_argument("--history", type=float, default=60, help="healthy seconds before ONSET")
    ap.add_argument("--after", type=float, default=90, help="seconds observed after ONSET")
    ap.add_argument("--flap-on", type=float, default=10, help="seconds of each flap outage")
    ap.add_argument("--flap-off", type=float, default=35, help="seconds between flap outages")
    args = ap.parse_args()
    c = args.compression
    scratch: Path = args.scratch
    procs: list[Proc] = []
    mocks: dict[str, Mock] = {}
    problems: list[str] = []
    try:
        hook_srv = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=hook_srv.serve_forever, daemon=True).start()
        hook = f"http://127.0.0.1:{hook_srv.server_address[1]}"

        # The Alertmanager under test; "control", without the inhibit rules, gets the same
        # alerts; "control-keep", the repository's config, gets the alerts of a Prometheus
        # whose rules lack keep_firing_for. Both must page more than once, or the checks
        # below prove nothing.
        am_ports = {}
        for name, inhibit, path in (("alertmanager", True, ""), ("control", False, "/control"),
                                    ("control-keep", True, "/control-keep")):
            am_cfg = scratch / f"{name}.yml"
            am_cfg.write_text(yaml.safe_dump(alertmanager_config(args.am_config, c, hook + path, inhibit)))
            out = subprocess.run([args.amtool, "check-config", str(am_cfg)], capture_output=True, text=True)
            if out.returncode != 0:
                log(out.stdout + out.stderr)
                return 1
            am_ports[name] = free_port()
            procs.append(Proc(name, [
                args.alertmanager, f"--config.file={am_cfg}", f"--storage.path={scratch}/{name}-data",
                f"--web.listen-address=127.0.0.1:{am_ports[name]}", "--cluster.listen-address=",
                "--log.level=debug"], scratch))
            # Ready before the next free_port(), which could hand out this port again.
            wait_ready(f"http://127.0.0.1:{am_ports[name]}/-/ready", 30)
        am_port = am_ports["alertmanager"]
        am = f"http://127.0.0.1:{am_port}"

        for name in TARGETS:
            mocks[name] = Mock(args.bin, name, scratch)
        targets = []
        for name, m in mocks.items():
            scenario = {"name": "default", "input_tokens": 16, "output_tokens": 8}
            if name == "slow":
                scenario["slo"] = {"ttft": SLOW_TTFT_SLO}
            targets.append({"name": name, "base_url": f"http://127.0.0.1:{m.port}",
                            "model": "mock-model", "scenarios": [scenario]})
        daemon_cfg = scratch / "daemon.yaml"
        daemon_cfg.write_text(yaml.safe_dump({
            "listen": "127.0.0.1:0", "seed": 1,
            # The self-check's default 6/min, compressed like the probes: the rules' 10m
            # window without a self-probe means a wedged prober (LlmprobeAbsent).
            "self_check": {"rate": "6/s"},
            "defaults": {"rate": "1/s", "slo": {"ttft": "500ms", "tpot": "50ms", "e2e": "10s"}},
            "targets": targets}))
        daemon = Proc("daemon", [args.bin, "daemon", "--config", str(daemon_cfg)], scratch,
                      "llmprobe daemon listening")
        procs.append(daemon)
        t_start = time.monotonic()

        prom_port = free_port()
        (scratch / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(args.rules)],
            "alerting": {"alertmanagers": [{"static_configs": [
                {"targets": [f"127.0.0.1:{am_ports[n]}" for n in ("alertmanager", "control")]}]}]},
            "scrape_configs": [{"job_name": "llmprobe",
                                "static_configs": [{"targets": [daemon.addr]}]}]}))
        procs.append(Proc("prometheus", [
            args.prometheus, f"--config.file={scratch}/prometheus.yml",
            f"--storage.tsdb.path={scratch}/tsdb", f"--web.listen-address=127.0.0.1:{prom_port}",
            "--rules.alert.resend-delay=1s"], scratch))
        prom = f"http://127.0.0.1:{prom_port}"
        wait_ready(f"{prom}/-/ready", 30)
        # Control: the same rules without keep_firing_for, to the same Alertmanager config
        # (its own instance): the flapping target must page it more than once.
        rules = yaml.safe_load(args.rules.read_text())
        for g in rules["groups"]:
            for r in g["rules"]:
                r.pop("keep_firing_for", None)
        (scratch / "rules-no-keep.yaml").write_text(yaml.safe_dump(rules))
        ctl_port = free_port()
        (scratch / "prometheus-control.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(scratch / "rules-no-keep.yaml")],
            "alerting": {"alertmanagers": [{"static_configs": [
                {"targets": [f"127.0.0.1:{am_ports['control-keep']}"]}]}]},
            "scrape_configs": [{"job_name": "llmprobe",
                                "static_configs": [{"targets": [daemon.addr]}]}]}))
        procs.append(Proc("prometheus-control", [
            args.prometheus, f"--config.file={scratch}/prometheus-control.yml",
            f"--storage.tsdb.path={scratch}/tsdb-control", f"--web.listen-address=127.0.0.1:{ctl_port}",
            "--rules.alert.resend-delay=1s"], scratch))
        wait_ready(f"http://127.0.0.1:{ctl_port}/-/ready", 30)
        log(f"prometheus {prom}, alertmanager {am}, daemon {daemon.addr}, webhook {hook}")

        # Healthy history, then the faults.
        time.sleep(max(0.0, args.history - (time.monotonic() - t_start)))
        # (LlmprobeAbsent, compressed to `for: 5s`, may fire while Prometheus waits for its
        # first scrape of the daemon: no target label, not one of the incidents here.)
        early = [n for n in Recorder.notifications if n["body"]["status"] == "firing"]
        if [n for n in early if n["body"]["groupLabels"].get("target")]:
            problems.append(f"{len(early)} notifications before any fault: "
                            f"{[n['body']['commonLabels'] for n in early]}")
        elif early:
            log(f"before any fault, notifications without a target: "
                f"{[n['body']['commonLabels'].get('alertname') for n in early]}")
        onset = time.monotonic()
        for name, flags in TARGETS.items():
            if flags is not None:
                mocks[name].start(flags)
        log(f"ONSET at {onset - t_start:.0f}s: faults switched on")
        flap_on, next_flip = True, onset + args.flap_on
        context_seen: dict[str, set] = {}
        while time.monotonic() < onset + args.after:
            now = time.monotonic()
            if now >= next_flip:
                flap_on = not flap_on
                mocks["flap"].start(TARGETS["flap"] if flap_on else [])
                next_flip += args.flap_on if flap_on else args.flap_off
            # Inhibited alerts: firing in Prometheus, suppressed in Alertmanager.
            for r in query(prom, 'ALERTS{alertstate="firing"}'):
                lab = r["metric"]
                context_seen.setdefault(lab.get("target", ""), set()).add(
                    f'{lab["alertname"]}/{lab.get("severity")}')
            with urllib.request.urlopen(f"{am}/api/v2/alerts?inhibited=true&active=true", timeout=10) as r:
                for a in json.load(r):
                    if a["status"]["state"] == "suppressed" and a["status"]["inhibitedBy"]:
                        lab = a["labels"]
                        context_seen.setdefault(lab.get("target", ""), set()).add(
                            f'{lab["alertname"]}/{lab.get("severity")}/inhibited')
            time.sleep(1)
        window_end = time.monotonic()

        group_wait = detection.seconds(
            alertmanager_config(args.am_config, c, hook)["route"]["group_wait"])
        model = {}
        for name, (alert, p) in MODEL.items():
            rule = detection.compressed(detection.load_rule(alert), c)
            xs = detection.simulate(rule, 1.0, p, args.history, 1, 1, group_wait,
                                    horizon=args.after, runs=200)
            model[name] = (detection.pct(xs, 0.1), detection.pct(xs, 0.5), detection.pct(xs, 0.9))
        # A page that has not come yet may be late on a busy machine: waited for, up to ten
        # times the model's median time to page.
        def unpaged() -> list[str]:
            with Recorder.lock:
                paged = {n["body"]["groupLabels"].get("target") for n in Recorder.notifications
                         if n["path"] == "/llmprobe-page" and n["body"]["status"] == "firing"}
            return [name for name in MODEL if name not in paged]
        late_until = onset + max(args.after, min(600.0, 10 * max(med for _, med, _ in model.values())))
        if unpaged():
            log(f"no page yet at the window's end for {unpaged()}: waiting up to "
                f"{late_until - onset:.0f} s after ONSET")
        while unpaged() and time.monotonic() < late_until:
            time.sleep(1)

        # Notifications: a page is a firing notification to the llmprobe-page receiver.
        with Recorder.lock:
            notes = list(Recorder.notifications)
        (scratch / "notifications.json").write_text(json.dumps(notes, indent=1))
        rows = []
        def pages_of(prefix: str, target: str) -> list[dict]:
            return [n for n in notes if n["path"] == f"{prefix}/llmprobe-page"
                    and n["body"]["status"] == "firing"
                    and n["body"]["groupLabels"].get("target") == target]

        control = {name: len(pages_of("/control", name)) for name in CONTEXT}
        log(f"control Alertmanager without inhibit rules: pages per target {control}")
        for name, n in control.items():
            if n < 2:
                problems.append(f"control without inhibit rules paged {name} {n} time(s): "
                                "the scenario does not exercise the hierarchy")
        n = len(pages_of("/control-keep", "flap"))
        log(f"control Prometheus without keep_firing_for: flap paged {n} times")
        if n < 2:
            problems.append(f"control without keep_firing_for paged flap {n} time(s): "
                            "the scenario does not exercise keep_firing_for")
        for name in TARGETS:
            pages = [n for n in notes if n["path"] == "/llmprobe-page"
                     and n["body"]["status"] == "firing"
                     and n["body"]["groupLabels"].get("target") == name]
            # Counted in the window; a first page after it (waited for above) counts as
            # if it had come in it.
            in_window = [n for n in pages if n["t"] <= window_end]
            if not in_window and pages and name in MODEL:
                log(f"{name}: paged {pages[0]['t'] - onset:.1f} s after ONSET, after the window")
                in_window = pages[:1]
            pages = in_window
            tickets = [n for n in notes if n["path"] == "/llmprobe-ticket"
                       and n["body"]["status"] == "firing"
                       and n["body"]["groupLabels"].get("target") == name]
            names = sorted({a["labels"]["alertname"] for n in pages for a in n["body"]["alerts"]
                            if a["status"] == "firing"})
            t_page = f"{pages[0]['t'] - onset:.1f}" if pages else "-"
            if name in model:
                lo, med, hi = model[name]
                t_page += f" ({lo:.0f}/{med:.0f}/{hi:.0f})"
                if pages and pages[0]["t"] - onset > hi + 5:
                    log(f"{name}: paged {pages[0]['t'] - onset:.1f} s after onset, slower than "
                        f"the model's 90th percentile {hi:.0f} s + 5 s (a busy machine?)")
            rows.append((name, len(pages), ",".join(names) or "-", t_page, len(tickets),
                         " ".join(sorted(context_seen.get(name, set()))) or "-"))
            want = EXPECTED_PAGE[name]
            if want is None and pages:
                problems.append(f"{name}: {len(pages)} page(s) ({names}), expected none")
            if want is not None:
                if name == "flap":
                    if len(pages) > 1:
                        problems.append(f"flap: {len(pages)} pages in one incident, expected at most 1")
                elif len(pages) != 1:
                    problems.append(f"{name}: {len(pages)} page notifications, expected exactly 1")
                if pages and names != [want]:
                    problems.append(f"{name}: paged for {names}, expected [{want}]")
            for ctx in CONTEXT.get(name, []):
                seen = context_seen.get(name, set())
                if f"{ctx}/page" not in seen:
                    problems.append(f"{name}: {ctx} (page) never fired in Prometheus")
                if f"{ctx}/page/inhibited" not in seen:
                    problems.append(f"{name}: {ctx} (page) never shown as inhibited by Alertmanager")
            if name in ("healthy",) and context_seen.get(name):
                problems.append(f"healthy: alerts fired: {context_seen[name]}")
        print(f"{'target':8} {'pages':>5} {'paged for':31} {'s to page (model 10/50/90 %)':>28} "
              f"{'tickets':>7}  alerts seen (Prometheus firing, Alertmanager inhibited)")
        for r in rows:
            print(f"{r[0]:8} {r[1]:>5} {r[2]:31} {r[3]:>28} {r[4]:>7}  {r[5]}")
        (scratch / "summary.json").write_text(json.dumps(rows))
    finally:
        stop_all(mocks, procs)
    return verdict(problems)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
