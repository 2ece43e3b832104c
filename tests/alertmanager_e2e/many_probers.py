#!/usr/bin/env python3
"""Many probers, one answer: three daemons in two locations, end to end on 127.0.0.1.

Daemons: "eu" (location eu-west, alone) and "us-a", "us-b" (location us-east, an HA pair:
the same config and shard). A real Prometheus scrapes all three every second with the
repository's rules rendered by the Helm chart at prometheusRule.timeCompression=C (one
test second is C/60 production minutes); a real Alertmanager runs alertmanager/llmprobe.yml
with its receivers replaced by a webhook on 127.0.0.1 and its timings divided by C. Every
daemon probes every target at 1/s (the default 1/min, compressed) and self-checks at 6/s
(its default 6/min, so the rules' 10m stall window holds the same count).

Targets, `llmprobe mock` processes, healthy for HISTORY seconds, then at ONSET:
    global-outage   100% HTTP 500 for everyone             -> exactly one page, no location
    eu-path         HTTP 500 only on the mock eu probes     -> a ticket naming eu-west, no page
                    (eu's config points the target at its own mock, as a region whose path
                    to the endpoint breaks)
    fleet           front door healthy; 3 replicas found through file_sd, one answers its
                    first token in 600 ms instead of 10   -> LlmprobeReplicaOutlier names it
    healthy         stays healthy                           -> nothing
and at KILL (ONSET + --kill-after): us-b is killed      -> LlmprobeAbsent once, a ticket
                    naming us-east and us-b (its twin us-a covers), no SLO alert.
All along: no alert fires twice for HA twins (ALERTS has no two firing series that differ
only by instance or pod), no notification for `healthy`, no SLO alert for `healthy` or
`fleet`'s front door.

Prints each scenario's notifications and its time to notify (from ONSET, or KILL), the
figures of docs/deploy.md's many-probers table. Exit 0 when every check passes, else 1.
Needs PyYAML.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import (  # noqa: E402
    Mock, Proc, Recorder, alertmanager_config, free_port, log, query, stop_all, verdict, wait_ready)

EU, US = "eu-west", "us-east"
SLO = {"ttft": "500ms", "tpot": "50ms", "e2e": "10s"}
SLOW_REPLICA_TTFT_MS = "600"
SLO_ALERTS = ("LlmprobeAvailabilityBudgetBurn", "LlmprobeTTFTBudgetBurn", "LlmprobeTPOTBudgetBurn",
              "LlmprobeE2EBudgetBurn", "LlmprobeGoodputBudgetBurn", "LlmprobeProbeDown")


def target(name: str, port: int, **extra) -> dict:
    return {"name": name, "base_url": f"http://127.0.0.1:{port}", "model": "mock-model",
            "scenarios": [{"name": "default", "input_tokens": 16, "output_tokens": 8}], **extra}


def daemon_config(mocks: dict[str, Mock], eu: bool, sd_file: Path) -> dict:
    path = mocks["eu-path-eu" if eu else "eu-path"].port
    return {
        "listen": "127.0.0.1:0", "seed": 1,
        "self_check": {"rate": "6/s"},
        "defaults": {"rate": "1/s", "slo": SLO},
        "targets": [
            target("healthy", mocks["healthy"].port),
            target("global-outage", mocks["global-outage"].port),
            target("eu-path", path),
            target("fleet", mocks["fleet"].port, replica_rate="1/s",
                   replicas_from={"file_sd": {"files": str(sd_file), "interval": "1s"}}),
        ],
    }


def firing(notes: list[dict], receiver: str | None = None) -> list[dict]:
    return [n for n in notes if n["body"]["status"] == "firing"
            and (receiver is None or n["path"] == f"/{receiver}")]


def alerts_of(n: dict) -> list[dict]:
    return [a["labels"] for a in n["body"]["alerts"] if a["status"] == "firing"]


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
    ap.add_argument("--kill-after", type=float, default=45, help="seconds from ONSET to KILL")
    ap.add_argument("--after", type=float, default=50, help="seconds observed after KILL")
    args = ap.parse_args()
    c, scratch = args.compression, args.scratch
    procs: list[Proc] = []
    mocks: dict[str, Mock] = {}
    problems: list[str] = []
    try:
        hook_srv = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=hook_srv.serve_forever, daemon=True).start()
        hook = f"http://127.0.0.1:{hook_srv.server_address[1]}"

        am_cfg = scratch / "mp-alertmanager.yml"
        am_cfg.write_text(yaml.safe_dump(alertmanager_config(args.am_config, c, hook)))
        am_port = free_port()
        procs.append(Proc("mp-alertmanager", [
            args.alertmanager, f"--config.file={am_cfg}", f"--storage.path={scratch}/mp-am-data",
            f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="], scratch))
        wait_ready(f"http://127.0.0.1:{am_port}/-/ready", 30)

        for name in ("healthy", "global-outage", "eu-path", "eu-path-eu", "fleet",
                     "replica-1", "replica-2", "replica-3"):
            mocks[name] = Mock(args.bin, f"mp-{name}", scratch)
        sd_file = scratch / "replicas.json"
        replicas = [f"127.0.0.1:{mocks[f'replica-{i}'].port}" for i in (1, 2, 3)]
        slow_replica = replicas[2]
        tmp = sd_file.with_suffix(".tmp")
        tmp.write_text(json.dumps([{"targets": replicas, "labels": {}}]))
        tmp.rename(sd_file)

        daemons: dict[str, Proc] = {}
        for name, loc in (("eu", EU), ("us-a", US), ("us-b", US)):
            cfg = scratch / f"mp-{name}.yaml"
            cfg.write_text(yaml.safe_dump(daemon_config(mocks, loc == EU, sd_file)))
            daemons[name] = Proc(f"mp-daemon-{name}", [args.bin, "daemon", "--config", str(cfg),
                                 "--location", loc], scratch, "llmprobe daemon listening")
            procs.append(daemons[name])
        t_start = time.monotonic()

        prom_port = free_port()
        (scratch / "mp-prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(args.rules)],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
            "scrape_configs": [{"job_name": "llmprobe", "static_configs": [
                {"targets": [daemons[n].addr], "labels": {"pod": f"llmprobe-{n}"}} for n in daemons]}]}))
        procs.append(Proc("mp-prometheus", [
            args.prometheus, f"--config.file={scratch}/mp-prometheus.yml",
            f"--storage.tsdb.path={scratch}/mp-tsdb", f"--web.listen-address=127.0.0.1:{prom_port}",
            "--rules.alert.resend-delay=1s"], scratch))
        prom = f"http://127.0.0.1:{prom_port}"
        wait_ready(f"{prom}/-/ready", 30)
        log(f"many probers: prometheus {prom}, alertmanager 127.0.0.1:{am_port}, daemons "
            + ", ".join(f"{n} {d.addr}" for n, d in daemons.items()))

        duplicates: set[str] = set()
        seen_firing: set[tuple] = set()

        def watch(until: float) -> None:
            while time.monotonic() < until:
                for r in query(prom, 'count by (alertname, severity, target, model, scenario, location, '
                                     'replica, sli) (ALERTS{alertstate="firing"}) > 1'):
                    duplicates.add(json.dumps(r["metric"], sort_keys=True))
                for r in query(prom, 'ALERTS{alertstate="firing"}'):
                    m = r["metric"]
                    seen_firing.add((m["alertname"], m.get("severity", ""), m.get("target", ""),
                                     m.get("location", ""), m.get("replica", "")))
                time.sleep(1)

        watch(t_start + args.history)
        # Prometheus evaluates its rules from its start, so `absent(llmprobe_build_info)`
        # (LlmprobeAbsent with no instance) may fire before its first scrape on a busy
        # machine: the harness starting, not a prober. Anything else before ONSET fails.
        early = [n for n in firing(Recorder.notifications)
                 if any(a["alertname"] != "LlmprobeAbsent" or "instance" in a for a in alerts_of(n))]
        if early:
            problems.append(f"{len(early)} notification(s) before any fault: "
                            f"{[alerts_of(n) for n in early]}")
        onset = time.monotonic()
        mocks["global-outage"].start(["--fault", "http_500:1"])
        mocks["eu-path-eu"].start(["--fault", "http_500:1"])
        mocks["replica-3"].start(["--ttft-ms", SLOW_REPLICA_TTFT_MS])
        log(f"ONSET at {onset - t_start:.0f}s: global-outage and eu-path (eu) fail, {slow_replica} slow")
        watch(onset + args.kill_after)
        kill = time.monotonic()
        daemons["us-b"].p.kill()
        daemons["us-b"].p.wait()
        log(f"KILL at {kill - t_start:.0f}s: us-b ({daemons['us-b'].addr}) killed")
        watch(kill + args.after)

        with Recorder.lock:
            notes = list(Recorder.notifications)
        (scratch / "mp-notifications.json").write_text(json.dumps(notes, indent=1))
        rows = []

        def first(ns: list[dict], since: float) -> str:
            return f"{ns[0]['t'] - since:.1f}" if ns else "-"

        def of_target(name: str) -> list[dict]:
            return [n for n in firing(notes) if n["body"]["groupLabels"].get("target") == name]

        # 1. Broken for every location: exactly one page, the availability burn, no location.
        pages = [n for n in of_target("global-outage") if n["path"] == "/llmprobe-page"]
        names = sorted({a["alertname"] for n in pages for a in alerts_of(n)})
        rows.append(("1 global-outage, every location", len(pages), ",".join(names) or "-",
                     first(pages, onset)))
        if len(pages) != 1 or names != ["LlmprobeAvailabilityBudgetBurn"]:
            problems.append(f"global-outage: {len(pages)} page(s) {names}, expected exactly one "
                            "LlmprobeAvailabilityBudgetBurn")
        for n in pages:
            for a in alerts_of(n):
                if "location" in a or "instance" in a:
                    problems.append(f"global-outage: the page carries a location or instance: {a}")

        # 2. Broken from one location: a ticket naming it, no page.
        eu = of_target("eu-path")
        eu_pages = [n for n in eu if n["path"] == "/llmprobe-page"]
        eu_tickets = [n for n in eu if n["path"] == "/llmprobe-ticket"
                      and any(a["alertname"] == "LlmprobeLocationFailing" for a in alerts_of(n))]
        locs = sorted({a.get("location", "") for n in eu_tickets for a in alerts_of(n)})
        rows.append(("2 eu-path, from eu-west only", len(eu_pages),
                     f"tickets {len(eu_tickets)} LlmprobeLocationFailing location={','.join(locs) or '-'}",
                     first(eu_tickets, onset)))
        if eu_pages:
            problems.append(f"eu-path: {len(eu_pages)} page(s), expected none: "
                            f"{[alerts_of(n) for n in eu_pages]}")
        if not eu_tickets or locs != [EU]:
            problems.append(f"eu-path: LlmprobeLocationFailing tickets name {locs}, expected [{EU}]")

        # 3. One replica of three slow: the outlier alert names it.
        out = [n for n in of_target("fleet")
               if any(a["alertname"] == "LlmprobeReplicaOutlier" for a in alerts_of(n))]
        named = sorted({a.get("replica", "") for n in out for a in alerts_of(n)
                        if a["alertname"] == "LlmprobeReplicaOutlier"})
        slis = sorted({a.get("sli", "") for n in out for a in alerts_of(n)})
        fleet_pages = [n for n in of_target("fleet") if n["path"] == "/llmprobe-page"]
        rows.append(("3 fleet, one replica slow", len(fleet_pages),
                     f"LlmprobeReplicaOutlier replica={','.join(named) or '-'} sli={','.join(slis) or '-'}",
                     first(out, onset)))
        if named != [slow_replica]:
            problems.append(f"fleet: the outlier alert names {named}, expected [{slow_replica}]")
        if fleet_pages:
            problems.append(f"fleet: {len(fleet_pages)} page(s), expected none (the front door is healthy)")

        # 4. One daemon killed: LlmprobeAbsent once, naming its location; its twin covers.
        absent = [n for n in firing(notes) if n["t"] >= onset
                  and any(a["alertname"] == "LlmprobeAbsent" for a in alerts_of(n))]
        labels = [a for n in absent for a in alerts_of(n) if a["alertname"] == "LlmprobeAbsent"]
        rows.append(("4 us-b killed (HA twin us-a lives)", len([n for n in absent if n["path"] == "/llmprobe-page"]),
                     f"notifications {len(absent)}: "
                     + ";".join(f"{a.get('severity')} {a.get('location')} {a.get('instance')}" for a in labels),
                     first(absent, kill)))
        if len(absent) != 1 or [(a.get("location"), a.get("instance"), a.get("severity")) for a in labels] \
                != [(US, daemons["us-b"].addr, "ticket")]:
            problems.append(f"LlmprobeAbsent: {len(absent)} notification(s) with {labels}, expected one "
                            f"ticket for {US} {daemons['us-b'].addr}")
        slo_after_kill = sorted({f"{a}/{t}" for a, _, t, _, _ in seen_firing
                                 if a in SLO_ALERTS and t in ("healthy", "fleet")})
        if slo_after_kill:
            problems.append(f"SLO alerts fired for healthy targets: {slo_after_kill}")

        # 5. HA twins: no alert twice, nothing for the healthy target.
        healthy = of_target("healthy")
        rows.append(("5 healthy, HA twins", len([n for n in healthy if n["path"] == "/llmprobe-page"]),
                     f"notifications {len(healthy)}, duplicate firing alerts {len(duplicates)}", "-"))
        if healthy:
            problems.append(f"healthy: {len(healthy)} notification(s): {[alerts_of(n) for n in healthy]}")
        if duplicates:
            problems.append(f"alerts firing twice (HA twins not merged): {sorted(duplicates)}")
        # Every notification in the run, for the record.
        for n in firing(notes):
            log(f"notified {n['path'][1:]} at +{n['t'] - onset:.1f}s from ONSET: "
                f"{[{k: v for k, v in a.items() if k not in ('job', 'model', 'scenario')} for a in alerts_of(n)]}")
        print(f"{'scenario':36} {'pages':>5}  {'what was notified':70} {'s to notify':>11}")
        for r in rows:
            print(f"{r[0]:36} {r[1]:>5}  {r[2]:70} {r[3]:>11}")
        (scratch / "mp-summary.json").write_text(json.dumps(rows))
    finally:
        stop_all(mocks, procs)
    return verdict(problems)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
