#!/usr/bin/env python3
"""Dispatch lag of `llmprobe bench --trace` against the in-process mock, from --records.

Replays a trace RUNS times and prints, per run, the 1-minute load average before it and
the lag (t_send - t_sched) p50, p99 and max in ms (numpy's linear percentiles), and how
many requests went within 1 ms of their trace time; it also checks that every record's
t_sched is its trace offset and prompt_tokens_sent its input_length (Mooncake format).

    python3 benches/trace_replay_lag.py --bin target/release/llmprobe --runs 5 [--chrt 10]
"""

import argparse
import json
import os
import subprocess
import tempfile


def percentile(sorted_values, p):
    h = (len(sorted_values) - 1) * p / 100
    lo = int(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (h - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/llmprobe")
    ap.add_argument("--trace", default="tests/fixtures/traces/mooncake-200.jsonl")
    ap.add_argument("--tokenizer", default="tests/fixtures/tokenizer/tiny-bpe.json")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chrt", type=int, help="run under SCHED_FIFO with this priority")
    a = ap.parse_args()
    trace = [json.loads(l) for l in open(a.trace) if l.strip()]
    t0 = trace[0]["timestamp"]
    for run in range(a.runs):
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as d:
            records = os.path.join(d, "r.jsonl")
            cmd = [a.bin, "bench", "--mock", "--trace", a.trace, "--tokenizer",
                   a.tokenizer, "--records", records, "--no-progress"]
            if a.chrt:
                cmd = ["chrt", "-f", str(a.chrt)] + cmd
            subprocess.run(cmd, check=True, capture_output=True)
            recs = sorted((json.loads(l) for l in open(records)), key=lambda r: r["id"])
        lag = sorted((r["t_send"] - r["t_sched"]) * 1000 for r in recs)
        times = sum(abs(r["t_sched"] - (t["timestamp"] - t0) / 1000) < 1e-9
                    for r, t in zip(recs, trace))
        lengths = sum(r["prompt_tokens_sent"] == t["input_length"] for r, t in zip(recs, trace))
        within = sum(x <= 1.0 for x in lag)
        print(f"run {run + 1}: load {load:.2f}  lag p50 {percentile(lag, 50):.3f}  "
              f"p99 {percentile(lag, 99):.3f}  max {lag[-1]:.3f} ms  within 1 ms "
              f"{within}/{len(lag)}  trace times {times}/{len(trace)}  "
              f"input lengths {lengths}/{len(trace)}")


if __name__ == "__main__":
    main()
