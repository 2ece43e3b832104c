#!/usr/bin/env python3
"""Client-overhead benchmark of `llmprobe bench` against the floor (not a timed test).

Starts `llmprobe mock` as its own process with a known TTFT and ITL, runs
`llmprobe bench` against it as another process at several open-loop rates and output
lengths, and measures the client process alone:

- the floor: the same points run by `benches/floor_client.rs`, the least a client can
  do to read the same streams (std threads, blocking reads, a timestamp per read), so
  every figure is also a ratio to the floor measured in the same run (`--targets` runs
  the points of the floor-relative targets);
- peers: `--clients ...,guidellm,aiperf` runs GuideLLM and AIPerf on the same points
  through benches/peers.py, which turns their per-request results into llmprobe's
  `--records` shape; their cost is the CPU of their whole process tree from the first
  request start to the last request end (their start-up is left out); when a peer
  asked for is not installed, nothing is run and the message says how to install it;
- accuracy: measured TTFT and per-token ITL minus the mock's configured truth, from
  `--records` (p50, p99), and the dispatch lag (t_send - t_sched);
- cost: the client's CPU time (user + sys) from the kernel (`os.wait4` rusage of the
  bench child), per request and per streamed token; the mock's CPU from
  /proc/PID/stat, reported separately;
- scale: the highest open-loop rate (64 output tokens) with dispatch lag p99 < 1 ms and
  no accuracy loss (every request ok, TTFT and ITL error p99 < 1 ms);
- the daemon's footprint, by running benches/daemon_footprint.sh (owned by the daemon
  work) and reading its summary.

Writes a JSON of every figure and an SVG plot (error and CPU against rate).

    benches/client_overhead.py --bin target/release/llmprobe \\
        --out bench-overhead.json --svg docs/bench-overhead.svg

Python 3 standard library only. Linux only (/proc, wait4).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import peers
from peers import percentile

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid):
    """utime + stime of a live process, from /proc/PID/stat (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    # The command name (field 2) may contain spaces: split after its closing paren.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_hwm_mib(pid):
    """Peak resident set (VmHWM) of a live process, MiB; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class Mock:
    """`llmprobe mock` on 127.0.0.1:0 with a fixed TTFT/ITL."""

    def __init__(self, binary, ttft_ms, itl_ms, workdir, chrt=0):
        self.ttft_ms = ttft_ms
        self.itl_ms = itl_ms
        self.err_path = os.path.join(workdir, "mock.err")
        prefix = ["chrt", "-f", str(chrt)] if chrt else []
        self.proc = subprocess.Popen(
            prefix + [binary, "--log-level", "warn", "mock", "--listen", "127.0.0.1:0",
                      "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)],
            stdout=subprocess.PIPE, stderr=open(self.err_path, "w"), text=True,
        )
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            self.proc.kill()
            sys.exit(f"the mock did not start: {line!r}; see {self.err_path}")
        self.url = m.group(1)

    def cpu(self):
        return proc_cpu_seconds(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def floor_threads(args, rate, output_len):
    """Threads for the floor client: each holds one request at a time, so twice the
    mean number in flight (Little's law) plus a margin keeps an idle one ready for
    each Poisson arrival."""
    seconds = (args.ttft_ms + args.itl_ms * output_len) / 1e3
    return min(int(math.ceil(rate * seconds * 2)) + 8, 4000)


def client_cmd(args, client, mock, rate, output_len, n, warmup, records, summary):
    if client == "floor":
        return [
            args.floor_bin, "--url", mock.url, "--rate", f"{rate:g}",
            "--num-requests", str(n), "--warmup", str(warmup),
            "--input-len", str(args.input_len), "--output-len", str(output_len),
            "--seed", "1", "--records", records,
            "--threads", str(floor_threads(args, rate, output_len)),
        ]
    return [
        args.bin, "--log-level", "warn", "bench", "--base-url", mock.url,
        "--model", "mock-llm", "--endpoint", args.endpoint,
        "--rate", f"{rate:g}", "--num-requests", str(n), "--warmup", str(warmup),
        "--input-len", str(args.input_len), "--output-len", str(output_len),
        "--seed", "1", "--records", records, "--json-out", summary, "--no-progress",
    ]


def run_point(args, mock, rate, output_len, workdir, client="llmprobe"):
    """One run of one client at one rate; returns its figures."""
    n = max(int(rate * args.seconds), args.min_requests)
    warmup = max(int(rate * args.warmup_seconds), 1)
    tag = f"{client}-r{rate:g}-o{output_len}"
    records = os.path.join(workdir, f"{tag}.records.jsonl")
    summary = os.path.join(workdir, f"{tag}.json")
    if client in PEERS:
        cost = run_peer(args, mock, client, rate, output_len, n, warmup, workdir, records)
        return analyse(args, mock, rate, output_len, n, client, records, cost)
    cmd = client_cmd(args, client, mock, rate, output_len, n, warmup, records, summary)
    if args.chrt:
        cmd = ["chrt", "-f", str(args.chrt)] + cmd
    mock_cpu0 = mock.cpu()
    t0 = time.monotonic()
    err_path = os.path.join(workdir, f"{tag}.err")
    with open(err_path, "w") as err:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        # The child's peak RSS is read from /proc while it runs: rusage's ru_maxrss
        # also counts the forked copy of this Python process before the exec.
        hwm_mib = None
        while True:
            pid, status, ru = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            hwm_mib = proc_hwm_mib(child.pid) or hwm_mib
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    mock_cpu = mock.cpu() - mock_cpu0
    code = os.waitstatus_to_exitcode(status)
    # 3 is "a gate failed", which cannot happen without gates; anything else non-zero
    # means the run itself failed.
    if code not in (0, 3):
        with open(err_path) as f:
            sys.exit(f"{' '.join(cmd)} exited {code}:\n{f.read()}")
    cost = {"cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
            "wall_s": wall, "hwm_mib": hwm_mib, "mock_cpu_s": mock_cpu}
    return analyse(args, mock, rate, output_len, n, client, records, cost)


def run_peer(args, mock, client, rate, output_len, n, warmup, workdir, records):
    """A peer (GuideLLM or AIPerf) through benches/peers.py: its records in llmprobe's
    shape, and the CPU of its whole process tree while requests were in flight (its
    start-up, many seconds of CPU across its processes, is left out so the per-request
    figure is comparable)."""
    run, path = {"guidellm": (peers.run_guidellm, args.guidellm),
                 "aiperf": (peers.run_aiperf, args.aiperf)}[client]
    mock_cpu0 = mock.cpu()
    res = run(path, mock.url, rate, n, warmup, args.input_len, output_len, workdir)
    with open(records, "w") as f:
        for r in res["records"]:
            f.write(json.dumps(r) + "\n")
    share = res["cpu_s_requests"] / res["cpu_s"] if res["cpu_s"] else 1.0
    return {"cpu_s": res["cpu_s_requests"], "user_s": res["user_s"] * share,
             "sys_s": res["sys_s"] * share, "wall_s": res["requests_window_s"],
             "hwm_mib": res["peak_rss_mib"], "mock_cpu_s": mock.cpu() - mock_cpu0,
             "cpu_s_all": res["cpu_s"]}


def analyse(args, mock, rate, output_len, n, client, records, cost):
    """The figures of one run, from its records (every client writes llmprobe's shape)
    and what it cost."""
    wall, hwm_mib, mock_cpu = cost["wall_s"], cost["hwm_mib"], cost["mock_cpu_s"]
    ttft_err, itl_err, lag, head, after_head = [], [], [], [], []
    requests = ok = tokens = 0
    with open(records) as f:
        for line in f:
            r = json.loads(line)
            tokens += sum(c["tokens"] for c in r.get("chunks") or [])
            requests += 1
            if r.get("warmup"):
                continue
            if r.get("t_send") is not None and r.get("t_sched") is not None:
                lag.append((r["t_send"] - r["t_sched"]) * 1e3)
            if r.get("outcome") != "ok":
                continue
            ok += 1
            ttft_err.append(r["derived"]["ttft_ms"] - mock.ttft_ms)
            if r.get("t_headers") is not None and args.endpoint == "chat":
                # The mock sends the headers with the role chunk at its time zero
                # (docs/mock.md), so TTFT splits into the request path (client
                # write, loopback, the mock reading the body, the response head
                # back) and the first token's path (the mock's timer, its write,
                # the client's read and timestamp).
                head.append((r["t_headers"] - r["t_send"]) * 1e3)
                after_head.append((r["t_first"] - r["t_headers"]) * 1e3 - mock.ttft_ms)
            chunks = r["chunks"]
            for prev, c in zip(chunks, chunks[1:]):
                per_token = (c["at"] - prev["at"]) * 1e3 / c["tokens"]
                # Weighted by tokens, as the report's per-token ITL.
                itl_err.extend([per_token - mock.itl_ms] * c["tokens"])
    counted = n
    cpu = cost["cpu_s"]
    point = {
        "client": client,
        "rate": rate,
        "output_len": output_len,
        "requests": requests,
        "counted": counted,
        "ok": ok,
        "streamed_tokens": tokens,
        "wall_s": round(wall, 3),
        "client_cpu_s": round(cpu, 4),
        "client_user_s": round(cost["user_s"], 4),
        "client_sys_s": round(cost["sys_s"], 4),
        "client_peak_rss_mib": round(hwm_mib, 1) if hwm_mib else None,
        "client_cpu_share": round(cpu / wall, 4),
        "client_cpu_us_per_request": round(cpu / requests * 1e6, 2) if requests else None,
        "client_cpu_us_per_token": round(cpu / tokens * 1e6, 3) if tokens else None,
        "mock_cpu_s": round(mock_cpu, 3),
        "mock_cpu_share": round(mock_cpu / wall, 4),
        "loadavg": loadavg(),
    }
    for name, values in (("ttft_err_ms", ttft_err), ("itl_err_ms", itl_err),
                         ("dispatch_lag_ms", lag), ("send_to_headers_ms", head),
                         ("first_token_after_headers_err_ms", after_head)):
        point[name] = {
            "p50": percentile(values, 50),
            "p99": percentile(values, 99),
            "max": max(values) if values else None,
            "abs_p99": percentile([abs(v) for v in values], 99),
        }
    point["accurate"] = (
        ok == counted
        and point["ttft_err_ms"]["abs_p99"] is not None
        and point["ttft_err_ms"]["abs_p99"] < 1.0
        and point["itl_err_ms"]["abs_p99"] is not None
        and point["itl_err_ms"]["abs_p99"] < 1.0
    )
    point["sustained"] = point["accurate"] and point["dispatch_lag_ms"]["p99"] < 1.0
    return point


def marginal_costs(points):
    """Per rate, a least-squares line through (streamed tokens, client CPU) of the
    output lengths: the slope is the marginal CPU per token, free of the per-request
    and per-process costs that the plain ratio spreads over the tokens."""
    out = []
    for client, rate in sorted({(p["client"], p["rate"]) for p in points}):
        pts = [(p["streamed_tokens"] / p["requests"], p["client_cpu_s"] / p["requests"])
               for p in points
               if p["client"] == client and p["rate"] == rate and p["requests"]]
        if len(pts) < 2:
            continue
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        sxx = sum((x - mx) ** 2 for x, _ in pts)
        if sxx == 0:
            continue
        b = sum((x - mx) * (y - my) for x, y in pts) / sxx
        out.append({"client": client, "rate": rate, "us_per_token": round(b * 1e6, 3),
                    "us_per_request": round((my - b * mx) * 1e6, 1)})
    return out


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def print_point(p):
    print(
        f"{p['client']:>8} rate {p['rate']:>6g}/s out {p['output_len']:>3}: "
        f"ttft err p50 {fmt(p['ttft_err_ms']['p50'])} p99 {fmt(p['ttft_err_ms']['p99'])} ms, "
        f"itl err p50 {fmt(p['itl_err_ms']['p50'])} p99 {fmt(p['itl_err_ms']['p99'])} ms, "
        f"lag p99 {fmt(p['dispatch_lag_ms']['p99'])} ms, "
        f"client {fmt(p['client_cpu_us_per_request'], 1)} us/req "
        f"{fmt(p['client_cpu_us_per_token'], 2)} us/token "
        f"({100 * p['client_cpu_share']:.1f} % core), "
        f"peak RSS {fmt(p['client_peak_rss_mib'], 1)} MiB, "
        f"mock {100 * p['mock_cpu_share']:.1f} % core, ok {p['ok']}/{p['counted']}, "
        f"load {p['loadavg'][0]:.2f}",
        flush=True,
    )


def daemon_footprint(args):
    """Runs benches/daemon_footprint.sh and parses its summary."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "daemon_footprint.sh")
    if not os.path.exists(script):
        return {"skipped": "benches/daemon_footprint.sh not found"}
    env = dict(os.environ, LLMPROBE_BIN=os.path.abspath(args.bin),
               SAMPLE=str(args.daemon_sample))
    out = subprocess.run(["bash", script, str(args.daemon_minutes)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": f"exit {out.returncode}", "stderr": out.stderr[-2000:]}
    res = {"minutes": args.daemon_minutes, "sample_s": args.daemon_sample,
           "output": out.stdout}
    m = re.search(r"RSS: max ([\d.]+) MiB, mean ([\d.]+) MiB", out.stdout)
    if m:
        res["rss_max_mib"], res["rss_mean_mib"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"CPU: ([\d.]+) % of one core", out.stdout)
    if m:
        res["cpu_percent"] = float(m.group(1))
    m = re.search(r"probes completed: (\d+), failed: (\d+)", out.stdout)
    if m:
        res["probes"], res["failures"] = int(m.group(1)), int(m.group(2))
    return res


# ---- SVG ------------------------------------------------------------------------

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def panel(x0, y0, w, h, title, ylabel, series, xs_all, ylog=False):
    """One log-x line chart. series: [(label, [(x, y)], dashed)]."""
    out = []
    ys = [y for _, pts, _ in series for _, y in pts if y is not None and (y > 0 or not ylog)]
    if not ys:
        return ""
    xmin, xmax = min(xs_all), max(xs_all)
    lx0, lx1 = math.log10(xmin), math.log10(xmax)
    if lx1 == lx0:
        lx0, lx1 = lx0 - 0.5, lx1 + 0.5
    if ylog:
        ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        if ly1 == ly0:
            ly1 += 1
        ty = lambda y: y0 + h - (math.log10(y) - ly0) / (ly1 - ly0) * h  # noqa: E731
        ticks = [10 ** e for e in range(ly0, ly1 + 1)]
    else:
        ymax = max(max(ys), 1e-9) * 1.1
        ymin = min(0.0, min(ys) * 1.1)
        ty = lambda y: y0 + h - (y - ymin) / (ymax - ymin) * h  # noqa: E731
        step = 10 ** math.floor(math.log10((ymax - ymin) / 4))
        while (ymax - ymin) / step > 8:
            step *= 2
        ticks = []
        t = math.ceil(ymin / step) * step
        while t <= ymax:
            ticks.append(round(t, 10))
            t += step
    tx = lambda x: x0 + (math.log10(x) - lx0) / (lx1 - lx0) * w  # noqa: E731
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{x0 + w / 2}" y="{y0 - 10}" text-anchor="middle" '
               f'font-weight="bold">{esc(title)}</text>')
    out.append(f'<text x="{x0 - 48}" y="{y0 + h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 {x0 - 48} {y0 + h / 2})">{esc(ylabel)}</text>')
    for t in ticks:
        y = ty(t)
        if y0 - 0.5 <= y <= y0 + h + 0.5:
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for x in sorted(set(xs_all)):
        out.append(f'<line x1="{tx(x):.1f}" y1="{y0}" x2="{tx(x):.1f}" y2="{y0 + h}" stroke="#eee"/>')
        out.append(f'<text x="{tx(x):.1f}" y="{y0 + h + 16}" text-anchor="middle">{x:g}</text>')
    out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 34}" text-anchor="middle">'
               f'offered rate (requests/s, log scale)</text>')
    for i, (label, pts, dashed) in enumerate(series):
        pts = [(x, y) for x, y in pts if y is not None and (y > 0 or not ylog)]
        if not pts:
            continue
        c = COLORS[i % len(COLORS)]
        d = " ".join(f"{tx(x):.1f},{ty(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="5,4"' if dashed else ""
        out.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for x, y in pts:
            out.append(f'<circle cx="{tx(x):.1f}" cy="{ty(y):.1f}" r="3" fill="{c}"/>')
        ly = y0 + 16 + 16 * i
        out.append(f'<line x1="{x0 + 10}" y1="{ly - 4}" x2="{x0 + 30}" y2="{ly - 4}" '
                   f'stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{x0 + 34}" y="{ly}">{esc(label)}</text>')
    return "\n".join(out)


def write_svg(path, results):
    # The plot is llmprobe's; the floor's figures are in the JSON and the targets.
    points = [p for p in results["points"] + results["max_rate"]["points"]
              if p["client"] == "llmprobe"]
    xs = sorted({p["rate"] for p in points})
    lens = sorted({p["output_len"] for p in points})
    acc, cpu_tok, share = [], [], []
    main_len = 64 if 64 in lens else lens[len(lens) // 2]
    # The accuracy panel: the sweep at one output length plus the max-rate search.
    sel = sorted({p["rate"]: p for p in points if p["output_len"] == main_len}.values(),
                 key=lambda p: p["rate"])
    for key, label, dashed in (("ttft_err_ms", "TTFT error", False),
                               ("itl_err_ms", "per-token ITL error", False),
                               ("dispatch_lag_ms", "dispatch lag", True)):
        for pct in ("p50", "p99"):
            acc.append((f"{label} {pct}", [(p["rate"], p[key][pct]) for p in sel],
                        dashed or pct == "p50"))
    for ln in lens:
        pts = sorted([p for p in points if p["output_len"] == ln], key=lambda p: p["rate"])
        cpu_tok.append((f"client, {ln} tokens/request",
                        [(p["rate"], p["client_cpu_us_per_token"]) for p in pts], False))
    cpu_tok.append(("target: 2 µs per token (issue 8)",
                    [(min(xs), 2.0), (max(xs), 2.0)], True))
    share.append(("client (llmprobe bench)",
                  [(p["rate"], 100 * p["client_cpu_share"]) for p in sel], False))
    share.append(("mock (llmprobe mock)",
                  [(p["rate"], 100 * p["mock_cpu_share"]) for p in sel], True))
    W, H = 1000, 1000
    body = [
        panel(90, 50, 840, 230,
              f"Accuracy vs the mock's truth ({main_len} output tokens), ms",
              "ms (measured - truth)", acc, xs),
        panel(90, 360, 840, 230, "Client CPU per streamed token (user + sys)",
              "µs per token (log)", cpu_tok, xs, ylog=True),
        panel(90, 670, 840, 230,
              f"CPU share of one core ({main_len} output tokens)",
              "% of one core", share, xs),
    ]
    cond = results["conditions"]
    foot = (f"{cond['cpu_model']}, {cond['vcpus']} vCPU; mock TTFT {cond['ttft_ms']} ms, "
            f"ITL {cond['itl_ms']} ms; {cond['seconds']} s per point; "
            f"load average at start {cond['loadavg_start'][0]:.2f}"
            + (f"; client under chrt -f {cond['chrt']}" if cond.get("chrt") else "")
            + (f"; mock under chrt -f {cond['chrt_mock']}" if cond.get("chrt_mock") else ""))
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">\n'
           f'<rect width="{W}" height="{H}" fill="white"/>\n' + "\n".join(body) +
           f'\n<text x="{W / 2}" y="{H - 20}" text-anchor="middle" fill="#555">'
           f'{esc(foot)}</text>\n</svg>\n')
    with open(path, "w") as f:
        f.write(svg)


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"Model name:\s*(.+)", out)
        if m:
            return m.group(1).strip()
    except OSError:
        pass
    return "unknown"


def rates_arg(s):
    try:
        v = [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r}: expected numbers separated by commas")
    if not v or any(not (x > 0 and math.isfinite(x)) for x in v):
        raise argparse.ArgumentTypeError(f"{s!r}: rates must be positive numbers")
    return v


def lens_arg(s):
    try:
        v = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r}: expected integers separated by commas")
    if not v or any(x < 1 for x in v):
        raise argparse.ArgumentTypeError(f"{s!r}: lengths must be at least 1")
    return v


PEERS = ("guidellm", "aiperf")
CLIENTS = ("llmprobe", "floor") + PEERS

# The floor-relative targets: (rate, output tokens) points and what is compared there.
TARGET_POINTS = [(200, 1), (20, 64), (1000, 8), (1000, 32)]


def clients_arg(s):
    v = [x for x in s.split(",") if x]
    bad = [x for x in v if x not in CLIENTS]
    if not v or bad:
        raise argparse.ArgumentTypeError(f"{s!r}: clients are {', '.join(CLIENTS)}")
    return v


def points_arg(s):
    try:
        v = [(float(r), int(n)) for r, n in (x.split(":") for x in s.split(",") if x)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r}: expected RATE:TOKENS pairs separated by commas")
    if not v or any(r <= 0 or n < 1 for r, n in v):
        raise argparse.ArgumentTypeError(f"{s!r}: rates must be positive, tokens at least 1")
    return v


def find_point(points, client, rate, output_len):
    for p in points:
        if (p["client"], p["rate"], p["output_len"]) == (client, rate, output_len):
            return p
    return None


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def floor_relative(points, marginal):
    """Each target's llmprobe figure, the floor's from the same run, and their ratio."""
    out = {}
    lp, fl = find_point(points, "llmprobe", 200, 1), find_point(points, "floor", 200, 1)
    if lp and fl:
        a, b = lp["client_cpu_us_per_request"], fl["client_cpu_us_per_request"]
        out["cpu_per_request_200rps_1tok"] = {"llmprobe_us": a, "floor_us": b,
                                              "ratio": ratio(a, b), "target": 1.5}
    lp, fl = find_point(points, "llmprobe", 20, 64), find_point(points, "floor", 20, 64)
    if lp and fl:
        a, b = lp["client_cpu_us_per_token"], fl["client_cpu_us_per_token"]
        out["cpu_per_token_20rps_64tok"] = {"llmprobe_us": a, "floor_us": b,
                                            "ratio": ratio(a, b), "target": 1.3}
        out["ttft_err_20rps"] = {
            "llmprobe_p50_ms": lp["ttft_err_ms"]["p50"], "llmprobe_p99_ms": lp["ttft_err_ms"]["p99"],
            "floor_p50_ms": fl["ttft_err_ms"]["p50"], "floor_p99_ms": fl["ttft_err_ms"]["p99"],
            "target_p50_ms": 0.25, "target_p99_ms": 0.6}
    m = {x["client"]: x for x in marginal if x["rate"] == 1000}
    if "llmprobe" in m and "floor" in m:
        a, b = m["llmprobe"]["us_per_token"], m["floor"]["us_per_token"]
        out["marginal_cpu_per_token_1000rps"] = {"llmprobe_us": a, "floor_us": b,
                                                 "ratio": ratio(a, b), "target": 1.0}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", "target"), "release", "llmprobe"),
        help="llmprobe binary (release build); both the mock and the client")
    ap.add_argument("--rates", type=rates_arg, default=[10, 100, 1000])
    ap.add_argument("--output-lens", type=lens_arg, default=[16, 64, 256])
    ap.add_argument("--max-rates", type=rates_arg,
                    default=[250, 500, 750, 1000, 1250, 1500, 2000],
                    help="rates tried (64 output tokens) for the highest sustained rate; "
                         "empty with --no-max-rate")
    ap.add_argument("--no-max-rate", action="store_true")
    ap.add_argument("--clients", type=clients_arg, default=["llmprobe", "floor"],
                    help="clients run at each point, one after the other on the same mock "
                         "(llmprobe, floor, guidellm, aiperf; default llmprobe,floor)")
    ap.add_argument("--floor-bin", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", "target"), "release", "examples", "floor_client"),
        help="the floor reference client (cargo build --release --example floor_client)")
    ap.add_argument("--guidellm", default=peers.GUIDELLM,
                    help="GuideLLM executable for --clients ...,guidellm (benches/peers.py)")
    ap.add_argument("--aiperf", default=peers.AIPERF,
                    help="AIPerf executable for --clients ...,aiperf (benches/peers.py)")
    ap.add_argument("--points", type=points_arg, default=None,
                    help="RATE:TOKENS pairs run instead of every rate with every length")
    ap.add_argument("--targets", action="store_true",
                    help="run the floor-relative target points "
                         + ",".join(f"{r}:{n}" for r, n in TARGET_POINTS))
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per point")
    ap.add_argument("--warmup-seconds", type=float, default=1.0)
    ap.add_argument("--min-requests", type=int, default=100)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--endpoint", default="chat", choices=["chat", "completions"])
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--chrt", type=int, default=0,
                    help="run the client under chrt -f N (SCHED_FIFO priority N)")
    ap.add_argument("--chrt-mock", type=int, default=0,
                    help="run the mock under chrt -f N too (keeps other processes from "
                         "preempting either side)")
    ap.add_argument("--daemon-minutes", type=float, default=2.0,
                    help="minutes of daemon footprint; 0 skips it")
    ap.add_argument("--daemon-sample", type=int, default=10)
    ap.add_argument("--out", default="bench-overhead.json")
    ap.add_argument("--svg", default=None, help="plot file (e.g. docs/bench-overhead.svg)")
    args = ap.parse_args()

    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin}: not an executable; build with `cargo build --release` "
                 "or pass --bin")
    if (args.chrt or args.chrt_mock) and not shutil.which("chrt"):
        sys.exit("--chrt needs the chrt program (util-linux)")
    if "floor" in args.clients and not os.access(args.floor_bin, os.X_OK):
        sys.exit(f"{args.floor_bin}: not an executable; build with "
                 "`cargo build --release --example floor_client` or pass --floor-bin")
    if "guidellm" in args.clients and not peers.guidellm_available(args.guidellm):
        sys.exit(f"{args.guidellm}: GuideLLM is not installed there (pip install "
                 "guidellm==0.8.1, in a venv of its own: benches/peers.py)")
    if "aiperf" in args.clients and not peers.aiperf_available(args.aiperf):
        sys.exit(f"{args.aiperf}: AIPerf is not installed there (pip install aiperf==0.13.0, in a "
                 "venv of its own: benches/peers.py)")
    if any(c != "llmprobe" for c in args.clients) and args.endpoint != "chat":
        sys.exit("the floor client and the peers are run on chat only: --endpoint chat")
    if args.targets:
        args.points = TARGET_POINTS
    if args.points is None:
        args.points = [(r, n) for n in args.output_lens for r in args.rates]
    if args.seconds <= 0 or args.warmup_seconds < 0:
        sys.exit("--seconds must be > 0 and --warmup-seconds >= 0")

    results = {
        "conditions": {
            "cpu_model": cpu_model(),
            "vcpus": os.cpu_count(),
            "kernel": os.uname().release,
            "binary": os.path.abspath(args.bin),
            "loadavg_start": loadavg(),
            "ttft_ms": args.ttft_ms,
            "itl_ms": args.itl_ms,
            "seconds": args.seconds,
            "warmup_seconds": args.warmup_seconds,
            "endpoint": args.endpoint,
            "input_len": args.input_len,
            "chrt": args.chrt or None,
            "chrt_mock": args.chrt_mock or None,
            "peer_versions": {c: peers.tool_version(getattr(args, c))
                              for c in args.clients if c in PEERS},
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "points": [],
        "max_rate": {"points": [], "sustained_rate": None},
    }
    with tempfile.TemporaryDirectory(prefix="llmprobe-overhead-") as work:
        mock = Mock(args.bin, args.ttft_ms, args.itl_ms, work, args.chrt_mock)
        try:
            for rate, ln in args.points:
                for client in args.clients:
                    p = run_point(args, mock, rate, ln, work, client)
                    print_point(p)
                    results["points"].append(p)
            results["marginal"] = marginal_costs(results["points"])
            for m in results["marginal"]:
                print(f"{m['client']:>8} rate {m['rate']:g}/s: marginal client CPU "
                      f"{m['us_per_token']} us/token + {m['us_per_request']} us/request",
                      flush=True)
            results["floor_relative"] = floor_relative(results["points"], results["marginal"])
            for name, v in results["floor_relative"].items():
                print(f"{name}: {v}", flush=True)
            if not args.no_max_rate:
                best = None
                for rate in args.max_rates:
                    p = run_point(args, mock, rate, 64, work)
                    print_point(p)
                    results["max_rate"]["points"].append(p)
                    if p["sustained"]:
                        best = rate
                    else:
                        break
                results["max_rate"]["sustained_rate"] = best
                print(f"highest sustained open-loop rate (64 tokens): {best}/s", flush=True)
        finally:
            mock.stop()
    if args.daemon_minutes > 0:
        d = daemon_footprint(args)
        results["daemon"] = d
        print("daemon:", {k: v for k, v in d.items() if k != "output"}, flush=True)
    results["conditions"]["loadavg_end"] = loadavg()
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    if args.svg:
        write_svg(args.svg, results)
    print(f"wrote {args.out}" + (f" and {args.svg}" if args.svg else ""))


if __name__ == "__main__":
    main()
