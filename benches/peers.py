#!/usr/bin/env python3
"""Peer benchmark clients for benches/client_overhead.py: GuideLLM and AIPerf.

Runs GuideLLM (``guidellm run``, 0.8.x CLI) or AIPerf (``aiperf profile``, 0.13.x CLI)
as a subprocess against a running OpenAI-compatible server (``llmprobe mock``) and
turns its per-request results into the per-request records that ``llmprobe bench
--records`` writes, so the harness can put the peer's accuracy and cost beside
llmprobe's.

    benches/peers.py --mock-url http://127.0.0.1:PORT --ttft-ms 50   # smoke check
    benches/peers.py --peer aiperf --mock-url http://127.0.0.1:PORT

Python 3 standard library only (each peer lives in a venv of its own: GuideLLM in
~/.cache/llmprobe/peers, AIPerf in ~/.cache/llmprobe/aiperf, whose pinned dependencies
would downgrade GuideLLM's). Linux only (/proc, wait4, prctl).

What GuideLLM is asked to do
----------------------------
``--backend kind=openai_http,target=URL,model=mock-llm,request_format=/v1/chat/completions``
(streaming is the backend's default, with ``stream_options.include_usage``),
``--profile kind=poisson,rate=R``, ``--data kind=synthetic_text,prompt_tokens=N,
output_tokens=M`` (GuideLLM then sends ``max_completion_tokens=M`` and
``ignore_eos=true``, so a vLLM-like server streams exactly M tokens),
``--constraint kind=max_requests,count=n+warmup``, ``--seed kind=static,value=SEED``
(the Poisson arrivals and the synthetic prompts), ``--output kind=json,path=...``.

Offline: synthetic prompts are cut to N tokens with a tokenizer; ``--tokenizer
kind=huggingface_auto,model=DIR`` points GuideLLM at a directory holding the repo's
test tokenizer (tests/fixtures/tokenizer/tiny-bpe.json copied to tokenizer.json, plus
a one-line tokenizer_config.json) and HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE /
HF_DATASETS_OFFLINE are set, so nothing is downloaded. N is therefore counted in that
400-token BPE vocabulary (short tokens: N=32 gives ~10 words, which the mock's usage
reports as 9-10 prompt tokens; GuideLLM's ``prompt_tokens`` is that usage figure).

Two GuideLLM 0.8.1 defects in its Poisson arrivals (``guidellm/scheduler/strategies.py``)
------------------------------------------------------------------------------------------
1. Start race: ``AsyncPoissonStrategy.init_processes_start`` sets the workers' start
   event (via ``ThroughputStrategy.init_processes_start``) *before* it writes the
   shared arrival offset; the multiprocessing event's ``notify_all`` waits for the
   woken workers, and a worker that gets there first reads the placeholder offset -1.0
   (1970) and pre-draws arrival times in the past (up to its 1024 in-flight slots).
   Those requests are then sent as soon as they are queued: a burst, not R
   requests/s, with every ``targeted_start`` near 0. It is intermittent.
2. Same seed in every worker: each worker process builds ``random.Random(seed)``
   and adds its draws to the shared offset, so with W worker processes (GuideLLM's
   default is 10, ``GUIDELLM__MAX_WORKER_PROCESSES``) the gaps come in runs of W equal
   values (the same draws of Random(seed) in each worker). The mean rate is right but
   the arrivals are not a Poisson process.

With ``fix_poisson=True`` (the default) GuideLLM is started through a launcher
(``GUIDELLM_LAUNCHER`` below, run by GuideLLM's own interpreter, then GuideLLM's own
CLI) that fixes both in the main process: it writes the offset before setting the
event (the order GuideLLM's own comment intends), and hands each worker process its
own generator in the strategy that is pickled to it at spawn (the first worker's is
GuideLLM's own Random(seed), so with one worker the arrivals are stock GuideLLM's; the
k-th's is Random("seed-k")), so the gaps are independent exponential draws and the run is
still reproducible up to the order in which workers take arrivals. Nothing else is
changed. ``fix_poisson=False`` runs the stock ``guidellm`` script; the result's
``schedule`` block (achieved rate, plausible targets, distinct gaps) shows what the
arrivals were either way. ``workers`` sets GUIDELLM__MAX_WORKER_PROCESSES (default:
GuideLLM's own, 10; the worker count is part of the cost being measured).

Mapping of GuideLLM's JSON report to records
--------------------------------------------
The report is ``benchmarks[0].requests.{successful,errored,incomplete}``, each a list
of ``GenerativeRequestStats`` (``sample_size`` is left at None, so every request is
kept). Times in the report are ``time.time()`` floats taken inside GuideLLM's worker
processes; records hold them minus one origin per run, ``scheduler_state.start_time``
(the instant GuideLLM's scheduler starts the clock; Poisson arrival k is at
origin + sum of k exponential gaps).

- ``t_sched``   = ``info.timings.targeted_start`` - origin (the Poisson arrival time
  GuideLLM's worker aimed at); None when it is not a plausible time (stock GuideLLM's
  start race puts it in 1970).
- ``t_send``    = ``info.timings.request_start`` - origin: GuideLLM's request start,
  stamped by an httpx trace hook at ``send_request_headers.started`` (the start of
  writing the request head on an open connection; falls back to just before
  ``client.stream()`` if the hook does not fire).
- ``t_headers`` = None: GuideLLM keeps no response-head time. (Its
  ``first_request_iteration``, the first non-blank SSE line - the mock's role chunk
  sent with the headers - is in ``peer`` for reference.)
- ``t_first``   = ``info.timings.first_token_iteration`` - origin: ``time.time()``
  after the first SSE line carrying content (or reasoning/tool-call) text.
- ``derived.ttft_ms`` = GuideLLM's own ``time_to_first_token_ms``
  (= 1000 x (first_token_iteration - request_start)), taken from the report as is.
- ``chunks``: GuideLLM keeps no per-token or per-chunk arrival times, only
  ``first_token_iteration``, ``last_token_iteration`` and ``token_iterations`` (the
  number of content-bearing SSE lines). So a request with T = ``output_tokens`` tokens
  (the server's usage ``completion_tokens``; ``token_iterations`` if no usage) and at
  least two token iterations gets two entries: ``{"at": t_first, "tokens": 1}`` and
  ``{"at": last_token_iteration - origin, "tokens": T - 1}``. A per-token ITL computed
  from consecutive chunks, (at_2 - at_1) / tokens_2, is then GuideLLM's own
  ``inter_token_latency_ms`` (the mean over the request), not a per-token spread:
  per-token ITL percentiles from these records are percentiles of per-request means.
  One token iteration gives one entry with all T tokens; no token gives [].
- ``outcome``: "ok" for ``successful``, "error" for ``errored`` and ``incomplete``
  (cancelled or cut off at the end of the run).
- ``id``/``warmup``: requests sorted by ``targeted_start`` (by ``request_start``
  when the targets are implausible) and numbered from 0; GuideLLM's own warmup only
  drops requests from its statistics (it does not change what is sent), so it is not
  used: n + warmup requests are sent and the first ``warmup`` are flagged.
- ``peer``: the raw GuideLLM fields above, for auditing.

What AIPerf is asked to do
--------------------------
``aiperf profile --model mock-llm --url URL --endpoint-type chat --streaming``
(POST URL/v1/chat/completions with ``stream: true`` and
``stream_options.include_usage``), ``--request-rate R --arrival-pattern poisson
--request-count n+warmup``, ``--isl N --isl-stddev 0 --osl M --osl-stddev 0``
(synthetic prompts of N tokens from AIPerf's default corpus; AIPerf then sends
``max_completion_tokens=M`` - ``max_tokens`` only with ``--use-legacy-max-tokens`` -
and no ``ignore_eos``, so ``--extra-inputs '{"ignore_eos": true}'`` adds it, as GuideLLM
sends it), ``--use-server-token-count`` (output tokens are the server's usage
``completion_tokens``, not AIPerf's re-tokenization of the text with the test
tokenizer), ``--random-seed SEED`` (the arrivals and the prompts),
``--output-artifact-dir DIR --export-level records`` (per-request rows in
DIR/profile_export.jsonl, the summary in DIR/profile_export_aiperf.json), ``--ui none
--no-server-metrics --no-gpu-telemetry`` (no dashboard, no scraping of URL/metrics or
of DCGM exporters). AIPerf's own warmup phase is not used: n + warmup requests are
sent in one phase and the first ``warmup`` flagged, as for GuideLLM. ``workers`` sets
``--workers-max`` (default: AIPerf's own, max(1, min(int(0.75 x CPUs) - 1, 32))
worker processes, ``aiperf/workers/worker_manager.py``; one on 2 vCPUs).

Offline: with HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE set, AIPerf 0.13.0 resolves every
tokenizer name with ``huggingface_hub.snapshot_download(name, local_files_only=True)``
(``aiperf/common/tokenizer.py``), which rejects a directory path as a repo id, so the
tokenizer directory GuideLLM is given cannot be used offline. The run instead puts the
same two files into its own HF_HOME's hub cache as the snapshot of a repo named
``llmprobe/tiny-bpe`` (``AIPERF_TOKENIZER``; refs/main names the snapshot) and passes
that name, with the same offline variables set: nothing is downloaded and nothing of
AIPerf is patched. Prompt lengths are counted in the same 400-token vocabulary as
GuideLLM's.

AIPerf 0.13.0's Poisson arrivals (``aiperf/timing/``)
----------------------------------------------------
- One generator for the whole run, in the timing-manager process
  (``strategies/request_rate.py``, ``intervals.py``): every gap is an
  ``expovariate(R)`` draw of one ``random.Random``, seeded from ``--random-seed`` by
  ``aiperf/common/random_generator.py`` (the first 8 bytes, big-endian, of SHA-256 of
  "SEED:timing.request.poisson_interval"). Worker processes receive credits over ZMQ
  and send the requests; they draw nothing. So neither of GuideLLM's two defects is
  there: no per-worker copies of one sequence, no start offset written after the
  workers are released.
- Absolute schedule: arrival k is at the profiling phase's start plus the sum of k
  gaps; the next target is computed before the credit is issued. Waits of up to
  0.1 s (AIPERF_TIMING_RATE_RAMP_UPDATE_INTERVAL) end on a timerfd, longer ones on the
  event loop's timer.
- Not a Poisson process under overload: when the loop finds itself more than 10 ms
  (AIPERF_TIMING_MAX_CATCHUP_SECONDS) behind a target it moves that target to the
  present, so that delay is never caught up: the rest of the schedule shifts by it.
- An arrival that finds no session or prefill slot issues no credit; there are slots
  to find only with --concurrency / --prefill-concurrency, not set here.

Nothing of this is changed: AIPerf runs as installed.

Mapping of AIPerf's rows to records
-----------------------------------
Each row of profile_export.jsonl has ``metadata`` (unix ns), ``metrics`` ({tag:
{"value", "unit"}}, times in ms) and ``error``. The worker stamps the request start
and every SSE read with ``perf_counter_ns`` and exports unix times as its
``time_ns()`` at the request start plus ``perf_counter`` differences
(``aiperf/records/record_processor_service.py``). Records hold them minus one origin
per run: the profiling phase's start, ``start_time`` in profile_export_aiperf.json
(local time to the microsecond; the instant the arrival gaps count from; the first
credit's issue if it is missing).

- ``t_sched``   = Poisson arrival k (for the k-th row by ``credit_issued_ns``)
  recomputed from the seed and rate (``aiperf_poisson_targets``): the rows carry only
  ``credit_issued_ns``, the timing manager's clock when it issued the credit, after
  its timer fired and before the ZMQ hop (kept in ``peer``). None unless every request
  has its row and no credit was issued before its recomputed target (less 1 ms);
  ``schedule.targets_plausible`` says which.
- ``t_send``    = ``request_start_ns`` - origin: taken in the worker just before
  aiohttp's ``session.request()`` (``aiperf/transports/aiohttp_client.py``), i.e.
  before a pooled connection is taken or a new one opened, and the request written.
- ``t_headers`` = ``request_ack_ns`` - origin: when aiohttp returned the response head.
- ``t_first``   = ``t_send`` + AIPerf's TTFT.
- ``derived.ttft_ms`` = AIPerf's own ``time_to_first_token`` (the first SSE message
  with content minus the request start, ``aiperf/metrics/types/ttft_metric.py``),
  taken from the row as is. A request that opened a connection has the connect in it.
- ``chunks``: one per SSE message with content, at ``t_first`` plus the running sum of
  AIPerf's ``inter_chunk_latency`` list (the gaps between consecutive such messages,
  ``aiperf/metrics/types/inter_chunk_latency_metric.py``); a message's time is the
  ``perf_counter_ns`` after the read that brought it (``aiperf/transports/sse_utils.py``),
  so messages of one read share it. With T = ``output_sequence_length`` (the usage
  count here) and T such messages (the mock streams one token per chunk), one token
  each, so per-token ITL percentiles from these records are a per-token spread;
  otherwise two entries as for GuideLLM (1 token, then T - 1 at the last message).
- ``outcome``: "error" when the row has an ``error`` or was cancelled, else "ok".
- ``id``/``warmup``: rows sorted by ``credit_issued_ns``, numbered from 0, the first
  ``warmup`` flagged.
- ``peer``: the raw AIPerf fields above, for auditing.

CPU and memory of the peer's process tree
-----------------------------------------
Each peer is a process tree. GuideLLM's: the main process, a multiprocessing manager,
10 spawned worker processes by default, a data-loader worker and the multiprocessing
resource tracker, which outlives the main process. AIPerf's: the ``aiperf`` process
(its system controller and ZMQ proxies) and its services, each a multiprocessing
process (``aiperf/controller/multiprocess_service_manager.py``): dataset manager,
timing manager, worker manager, records manager, the workers and the record
processors. ``os.wait4`` on the peer's process alone would count it and only the
descendants it reaped, and miss any re-parented to init (GuideLLM's tracker). So the
peer runs under a small wrapper (``WRAPPER`` below, run by this Python): the wrapper
makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every orphaned
descendant is re-parented to it; it starts the peer, waits for it, then reaps every
remaining descendant (killing any still alive 30 s later), and reports
``getrusage(RUSAGE_CHILDREN)``: user + sys of every process of the tree (each
reaped process's rusage includes its own reaped children, and every process ends up
reaped by its parent or by the wrapper), and nothing of the wrapper itself. That is
``cpu_s``.

While it runs, this module samples the tree from /proc every 0.1 s (children via
/proc/PID/task/TID/children): ``peak_rss_mib`` is the largest sampled *sum* of VmRSS
over the tree's processes (a page shared by several processes counts in each, so it
overstates the tree's memory; a peak between samples can be missed);
``max_process_rss_mib`` is the largest single process's peak (RUSAGE_CHILDREN
ru_maxrss). The same samples give the tree's CPU over time (utime + stime +
cutime + cstime of the live processes plus the wrapper's cutime + cstime), from which
``cpu_s_startup`` (before the first request start), ``cpu_s_requests`` (from the
first request start to the last request end, interpolated; 10 ms tick resolution) and
``cpu_s_after`` (the rest: statistics, the report, shutdown) are split out.
A peer's startup (Python imports in each of its processes, the synthetic data, the
tokenizer) is most of ``cpu_s`` in short runs, which is why the harness compares
``cpu_s_requests``.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# A venv of its own keeps GuideLLM's dependencies apart:
#   python3 -m venv ~/.cache/llmprobe/peers && ~/.cache/llmprobe/peers/bin/pip install guidellm==0.8.1
GUIDELLM = os.environ.get("GUIDELLM") or shutil.which("guidellm") or os.path.expanduser(
    "~/.cache/llmprobe/peers/bin/guidellm")
# AIPerf needs a venv of its own (its pinned dependencies would downgrade GuideLLM's):
#   python3 -m venv ~/.cache/llmprobe/aiperf && ~/.cache/llmprobe/aiperf/bin/pip install aiperf==0.13.0
AIPERF = os.environ.get("AIPERF") or shutil.which("aiperf") or os.path.expanduser(
    "~/.cache/llmprobe/aiperf/bin/aiperf")
# The hub repo name AIPerf is given for the test tokenizer (it is never downloaded:
# the run puts it in its own HF_HOME's cache; module docstring).
AIPERF_TOKENIZER = "llmprobe/tiny-bpe"
HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "tokenizer", "tiny-bpe.json")
PEER_ENV_PREFIXES = ("GUIDELLM_", "AIPERF_")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

# Run by GuideLLM's interpreter as `python -c GUIDELLM_LAUNCHER run ...`: the stock CLI
# with two fixes to its Poisson arrivals (module docstring), both in the main process:
# (1) init_processes_start writes the shared arrival offset before it sets the workers'
# start event; (2) each worker process receives its own seeded generator (the first
# worker Random(seed) as in stock GuideLLM, the k-th Random("seed-k")) with the strategy
# when it is spawned (the strategy is pickled once per worker start), so
# the workers' draws are independent instead of W copies of one sequence.
GUIDELLM_LAUNCHER = r"""
import random, sys
from guidellm.scheduler import strategies as s
def init_processes_start(self, start_time):
    with self._offset.get_lock():
        self._offset.value = start_time
    s.ThroughputStrategy.init_processes_start(self, start_time)
spawned = [0]
def getstate(self):
    state = s.SchedulingStrategy.__getstate__(self)
    private = state.get("__pydantic_private__")
    if private and private.get("_offset") is not None:
        k = spawned[0]
        seed = self.random_seed if k == 0 else "%d-%d" % (self.random_seed, k)
        private = dict(private, _random=random.Random(seed))
        state = dict(state, __pydantic_private__=private)
        spawned[0] += 1
    return state
s.AsyncPoissonStrategy.init_processes_start = init_processes_start
s.AsyncPoissonStrategy.__getstate__ = getstate
from guidellm.__main__ import cli
sys.argv[0] = "guidellm"
sys.exit(cli())
"""

# Run by this Python as `python3 -c WRAPPER RESULT_JSON CMD...`: a child subreaper that
# runs CMD, reaps its whole process tree and writes RUSAGE_CHILDREN to RESULT_JSON.
WRAPPER = r"""
import ctypes, json, os, resource, signal, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d" % ctypes.get_errno())
child = subprocess.Popen(cmd)
def forward(sig, _frame):
    try:
        os.kill(child.pid, sig)
    except OSError:
        pass
signal.signal(signal.SIGTERM, forward)
signal.signal(signal.SIGINT, forward)
status = None
while status is None:
    try:
        pid, st = os.waitpid(child.pid, 0)
        status = st
    except InterruptedError:
        pass
t_exit = time.time()
def children():
    pids = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids
orphans, killed, deadline = 0, 0, time.monotonic() + 30.0
while True:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid:
        orphans += 1
        continue
    if time.monotonic() > deadline:
        for p in children():
            try:
                os.kill(p, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        deadline = time.monotonic() + 5.0
    time.sleep(0.02)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    json.dump({"utime": ru.ru_utime, "stime": ru.ru_stime, "maxrss_kib": ru.ru_maxrss,
               "returncode": os.waitstatus_to_exitcode(status), "t_exit": t_exit,
               "orphans_reaped": orphans, "orphans_killed": killed}, f)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if 0 <= code < 256 else 1)
"""

_available = {}


def _tool_available(path, probe, marker):
    """True when `path probe` runs and its output names `marker` (the answer is cached)."""
    if (path, probe) in _available:
        return _available[(path, probe)]
    ok = False
    if os.path.isfile(path) and os.access(path, os.X_OK):
        try:
            out = subprocess.run([path, probe], capture_output=True, text=True,
                                 timeout=120, env=_offline_env())
            ok = out.returncode == 0 and marker in (out.stdout + out.stderr).lower()
        except (OSError, subprocess.SubprocessError):
            ok = False
    _available[(path, probe)] = ok
    return ok


def tool_version(path):
    """The last word `path --version` prints (GuideLLM and AIPerf print their version)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=120, env=_offline_env())
        return (out.stdout or out.stderr).strip().split()[-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def guidellm_available(path=GUIDELLM):
    """True when `path --version` runs and names GuideLLM (the answer is cached)."""
    return _tool_available(path, "--version", "guidellm")


def guidellm_version(path=GUIDELLM):
    return tool_version(path)


def aiperf_available(path=AIPERF):
    """True when `path --help` runs and names AIPerf (its --version prints only the
    number; the answer is cached)."""
    return _tool_available(path, "--help", "aiperf")


def aiperf_version(path=AIPERF):
    return tool_version(path)


def _offline_env(extra=None):
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                "DO_NOT_TRACK": "1"})
    # GuideLLM reads GUIDELLM__* settings and AIPerf AIPERF_* ones (each also a .env in
    # its cwd, the run's work directory); only ours apply.
    for k in list(env):
        if k.startswith(PEER_ENV_PREFIXES):
            del env[k]
    env.update(extra or {})
    return env


def _interpreter(script):
    """The interpreter on a console script's shebang line (GuideLLM's venv Python)."""
    with open(script, "rb") as f:
        first = f.readline().decode(errors="replace").strip()
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts and os.path.basename(parts[0]) == "env" and len(parts) > 1:
            return shutil.which(parts[1]) or parts[1]
        if parts:
            return parts[0]
    return os.path.join(os.path.dirname(script), "python3")


def _write_tokenizer(d, tokenizer_json):
    """A Hugging Face tokenizer directory in `d`: the repo's test tokenizer as
    tokenizer.json and a one-line tokenizer_config.json."""
    os.makedirs(d, exist_ok=True)
    shutil.copyfile(tokenizer_json, os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast"}, f)
    return d


def _tokenizer_dir(workdir, tokenizer_json=TOKENIZER_FIXTURE):
    return _write_tokenizer(os.path.join(workdir, "tokenizer"), tokenizer_json)


def _hub_cache_tokenizer(hf_home, tokenizer_json=TOKENIZER_FIXTURE, repo=AIPERF_TOKENIZER):
    """The test tokenizer as the cached snapshot of hub repo `repo` under `hf_home` (the
    layout huggingface_hub reads offline: refs/main names a snapshot directory)."""
    base = os.path.join(hf_home, "hub", "models--" + repo.replace("/", "--"))
    revision = "0" * 40
    _write_tokenizer(os.path.join(base, "snapshots", revision), tokenizer_json)
    os.makedirs(os.path.join(base, "refs"), exist_ok=True)
    with open(os.path.join(base, "refs", "main"), "w") as f:
        f.write(revision)
    return repo


def guidellm_cmd(guidellm, url, rate, total, input_len, output_len, tokenizer_dir,
                 out_json, seed=1, fix_poisson=True):
    """The GuideLLM command line (a list)."""
    prog = ([_interpreter(guidellm), "-c", GUIDELLM_LAUNCHER] if fix_poisson
            else [guidellm])
    return prog + [
        "run",
        "--backend", f"kind=openai_http,target={url.rstrip('/')},model=mock-llm,"
                     "request_format=/v1/chat/completions",
        "--profile", f"kind=poisson,rate={rate:g}",
        "--data", f"kind=synthetic_text,prompt_tokens={input_len},output_tokens={output_len}",
        "--tokenizer", f"kind=huggingface_auto,model={tokenizer_dir}",
        "--constraint", f"kind=max_requests,count={total}",
        "--seed", f"kind=static,value={seed}",
        "--output", f"kind=json,path={out_json}",
        "--disable-console-interactive",
    ]


def aiperf_cmd(aiperf, url, rate, total, input_len, output_len, tokenizer, artifact_dir,
               seed=1, workers=None):
    """The AIPerf command line (a list); module docstring."""
    cmd = [
        aiperf, "profile",
        "--model", "mock-llm", "--url", url.rstrip("/"),
        "--endpoint-type", "chat", "--streaming",
        "--request-rate", f"{rate:g}", "--arrival-pattern", "poisson",
        "--request-count", str(total),
        "--isl", str(input_len), "--isl-stddev", "0",
        "--osl", str(output_len), "--osl-stddev", "0",
        "--extra-inputs", '{"ignore_eos": true}',
        "--use-server-token-count",
        "--tokenizer", tokenizer,
        "--random-seed", str(seed),
        "--output-artifact-dir", artifact_dir, "--export-level", "records",
        "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry",
    ]
    if workers:
        cmd += ["--workers-max", str(int(workers))]
    return cmd


# ---- /proc sampling of the process tree --------------------------------------------

def _children(pid):
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return out


def _descendants(root):
    out, stack = [], _children(root)
    while stack:
        pid = stack.pop()
        if pid not in out:
            out.append(pid)
            stack += _children(pid)
    return out


def _stat(pid):
    """(utime + stime, cutime + cstime) in seconds, and RSS bytes; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    own = (int(fields[11]) + int(fields[12])) / CLK_TCK
    reaped = (int(fields[13]) + int(fields[14])) / CLK_TCK
    rss = int(fields[21]) * PAGE
    return own, reaped, rss


def _sample_tree(root):
    """CPU seconds of everything under `root` (not root's own) and the summed RSS."""
    st = _stat(root)
    if st is None:
        return None
    cpu, rss, n = st[1], 0, 0
    stack, seen = _children(root), set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        s = _stat(pid)
        if s is None:
            continue
        cpu += s[0] + s[1]
        rss += s[2]
        n += 1
        stack += _children(pid)
    return cpu, rss, n


def _interp(samples, t):
    """Tree CPU at wall time t, linear between (time, cpu) samples."""
    if not samples:
        return None
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if t0 <= t <= t1:
            return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)
    return samples[-1][1]


# ---- conversion ----------------------------------------------------------------------

def _ttft_ms(r):
    v = r.get("time_to_first_token_ms")
    if v is not None:
        return v
    t = r["info"]["timings"]
    if t.get("first_token_iteration") is None or t.get("request_start") is None:
        return None
    return 1000.0 * (t["first_token_iteration"] - t["request_start"])


def convert_report(report, warmup):
    """GuideLLM's report dict -> (records, origin, schedule summary)."""
    bench = report["benchmarks"][0]
    groups = bench["requests"]
    rows = []
    for key, outcome in (("successful", "ok"), ("errored", "error"),
                         ("incomplete", "error")):
        for r in groups.get(key) or []:
            rows.append((r, outcome))
    starts = [r["info"]["timings"].get("request_start") for r, _ in rows]
    starts = [s for s in starts if s is not None]
    origin = (bench.get("scheduler_state") or {}).get("start_time")
    if origin is None or (starts and abs(origin - min(starts)) > 3600):
        origin = min(starts) if starts else 0.0

    def plausible(t):
        return t is not None and abs(t - origin) < 1e6

    targets_ok = all(plausible(r["info"]["timings"].get("targeted_start")) for r, _ in rows)

    def key(item):
        t = item[0]["info"]["timings"]
        k = t.get("targeted_start") if targets_ok else None
        if k is None:
            k = t.get("request_start") or t.get("resolve_start") or t.get("queued") or 0.0
        return (k, t.get("request_start") or 0.0)

    rows.sort(key=key)

    def rel(t):
        return None if t is None else t - origin

    records = []
    for i, (r, outcome) in enumerate(rows):
        t = r["info"]["timings"]
        first, last = t.get("first_token_iteration"), t.get("last_token_iteration")
        iters = t.get("token_iterations") or 0
        tokens = r.get("output_tokens")
        if tokens is None:
            tokens = iters
        if first is None or not tokens:
            chunks = []
        elif iters >= 2 and last is not None and tokens >= 2:
            chunks = [{"at": rel(first), "tokens": 1}, {"at": rel(last), "tokens": tokens - 1}]
        else:
            chunks = [{"at": rel(first), "tokens": tokens}]
        ttft = _ttft_ms(r)
        records.append({
            "id": i,
            "warmup": i < warmup,
            "t_sched": rel(t.get("targeted_start")) if targets_ok else None,
            "t_send": rel(t.get("request_start")),
            "t_headers": None,
            "t_first": rel(first),
            "outcome": outcome,
            "chunks": chunks,
            "derived": {"ttft_ms": ttft},
            "peer": {
                "request_id": r.get("request_id"),
                "targeted_start": t.get("targeted_start"),
                "request_start": t.get("request_start"),
                "first_request_iteration": t.get("first_request_iteration"),
                "first_token_iteration": first,
                "last_token_iteration": last,
                "request_end": t.get("request_end"),
                "token_iterations": iters,
                "output_tokens": r.get("output_tokens"),
                "prompt_tokens": r.get("prompt_tokens"),
                "time_to_first_token_ms": r.get("time_to_first_token_ms"),
                "inter_token_latency_ms": r.get("inter_token_latency_ms"),
                "error": r["info"].get("error"),
            },
        })

    return records, origin, _schedule_summary(records, origin, targets_ok)


def _schedule_summary(records, origin, targets_ok):
    """What the arrivals were: the span and rate of the sends, and whether the peer's
    targets are plausible and how many of their gaps are distinct."""
    sends = sorted(x["t_send"] for x in records if x["t_send"] is not None)
    scheds = sorted(x["t_sched"] for x in records if x["t_sched"] is not None)
    gaps = [round(b - a, 6) for a, b in zip(scheds, scheds[1:])]
    return {
        "origin_unix": origin,
        "targets_plausible": targets_ok,
        "send_span_s": (sends[-1] - sends[0]) if len(sends) > 1 else None,
        "sched_span_s": (scheds[-1] - scheds[0]) if len(scheds) > 1 else None,
        "achieved_rate": ((len(sends) - 1) / (sends[-1] - sends[0])
                          if len(sends) > 1 and sends[-1] > sends[0] else None),
        "distinct_gaps": len(set(gaps)) if gaps else None,
        "gaps": len(gaps),
    }


def aiperf_poisson_targets(seed, rate, n):
    """AIPerf's first n Poisson arrival times (s from the start of its profiling phase)
    for --random-seed `seed`: one generator, random.Random seeded with the first 8 bytes
    (big-endian) of SHA-256 of "SEED:timing.request.poisson_interval", one
    expovariate(rate) per gap (module docstring)."""
    digest = hashlib.sha256(f"{seed}:timing.request.poisson_interval".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    out, t = [], 0.0
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append(t)
    return out


def _metric(row, tag):
    """The value of one of AIPerf's per-request metrics, or None."""
    m = (row.get("metrics") or {}).get(tag)
    return m.get("value") if isinstance(m, dict) else None


def _aiperf_origin_ns(summary, issued_ns):
    """The start of AIPerf's profiling phase in unix ns: the summary's start_time (local
    time to the microsecond); the first credit's issue when that is missing or more than
    an hour away."""
    first = min(issued_ns) if issued_ns else None
    try:
        origin = round(datetime.datetime.fromisoformat(summary["start_time"]).timestamp()
                       * 1e6) * 1000
    except (KeyError, TypeError, ValueError):
        origin = None
    if origin is None or (first is not None and abs(first - origin) > 3600 * 10**9):
        origin = first or 0
    return origin


def _aiperf_chunks(t_first, icl_ms, tokens):
    """Chunk arrivals: t_first, then t_first plus the running sum of AIPerf's
    inter-chunk latencies. One token each when there are as many chunks as tokens;
    otherwise the first chunk's 1 and the last chunk's tokens - 1."""
    if t_first is None or not tokens:
        return []
    ats = [t_first]
    for gap in icl_ms or []:
        ats.append(ats[-1] + gap / 1e3)
    if len(ats) == tokens:
        return [{"at": a, "tokens": 1} for a in ats]
    if len(ats) >= 2 and tokens >= 2:
        return [{"at": ats[0], "tokens": 1}, {"at": ats[-1], "tokens": tokens - 1}]
    return [{"at": ats[0], "tokens": tokens}]


def _aiperf_record(i, row, warmup, origin_ns, target):
    """One AIPerf profile_export.jsonl row -> one record (module docstring)."""
    meta = row.get("metadata") or {}

    def rel(ns):
        return None if ns is None else (ns - origin_ns) / 1e9

    ttft = _metric(row, "time_to_first_token")
    t_send = rel(meta.get("request_start_ns"))
    t_first = t_send + ttft / 1e3 if t_send is not None and ttft is not None else None
    icl = _metric(row, "inter_chunk_latency")
    tokens = _metric(row, "output_sequence_length")
    if tokens is None:
        tokens = _metric(row, "usage_completion_tokens")
    if tokens is None and t_first is not None:
        tokens = 1 + len(icl or [])
    error = row.get("error") or (meta.get("was_cancelled") and "cancelled") or None
    return {
        "id": i,
        "warmup": i < warmup,
        "t_sched": target,
        "t_send": t_send,
        "t_headers": rel(meta.get("request_ack_ns")),
        "t_first": t_first,
        "outcome": "error" if error else "ok",
        "chunks": _aiperf_chunks(t_first, icl, tokens),
        "derived": {"ttft_ms": ttft},
        "peer": {
            "x_request_id": meta.get("x_request_id"),
            "worker_id": meta.get("worker_id"),
            "credit_issued_ns": meta.get("credit_issued_ns"),
            "request_start_ns": meta.get("request_start_ns"),
            "request_ack_ns": meta.get("request_ack_ns"),
            "request_end_ns": meta.get("request_end_ns"),
            "time_to_first_token_ms": ttft,
            "inter_token_latency_ms": _metric(row, "inter_token_latency"),
            "request_latency_ms": _metric(row, "request_latency"),
            "content_chunks": (1 + len(icl or [])) if ttft is not None else 0,
            "output_sequence_length": _metric(row, "output_sequence_length"),
            "usage_completion_tokens": _metric(row, "usage_completion_tokens"),
            "input_sequence_length": _metric(row, "input_sequence_length"),
            "error": error,
        },
    }


def convert_aiperf(rows, summary, warmup, seed, rate, sent):
    """AIPerf's profile_export.jsonl rows and its summary JSON -> (records, origin,
    schedule summary). `seed`, `rate` and `sent` (the request count) are the run's,
    for the arrival targets."""
    rows = sorted(rows, key=lambda r: ((r.get("metadata") or {}).get("credit_issued_ns")
                                       or (r.get("metadata") or {}).get("request_start_ns")
                                       or 0))
    issued = [(r.get("metadata") or {}).get("credit_issued_ns") for r in rows]
    origin_ns = _aiperf_origin_ns(summary, [x for x in issued if x is not None])
    targets = aiperf_poisson_targets(seed, rate, len(rows))
    # The k-th credit is the k-th arrival only if every request has its row, and it is
    # issued once its target has passed: anything else means the targets are not this
    # run's (a missing row, another seed derivation).
    targets_ok = len(rows) == sent and all(
        x is not None and (x - origin_ns) / 1e9 >= t - 1e-3 for x, t in zip(issued, targets))
    records = [_aiperf_record(i, r, warmup, origin_ns, targets[i] if targets_ok else None)
               for i, r in enumerate(rows)]
    origin = origin_ns / 1e9
    return records, origin, _schedule_summary(records, origin, targets_ok)


# ---- the run ---------------------------------------------------------------------------

def _default_timeout(total, rate):
    """Seconds a run may take: start-up and the report, plus thrice the arrivals' span."""
    return 300.0 + 3.0 * total / rate


def _kill_tree(root):
    for p in _descendants(root) + [root]:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def _run_tree(cmd, env, workdir, tag, timeout, poll_s=0.1):
    """Run `cmd` in `workdir` under WRAPPER (a child subreaper that reaps the whole tree)
    and sample the tree from /proc every `poll_s` s; SIGTERM (forwarded to the peer)
    after `timeout` s, SIGKILL of the tree 30 s later.

    Returns {"ru": the wrapper's report, "samples": [(unix time, tree CPU s)],
    "peak_rss", "processes", "timed_out", "wall_s", "log"}. Raises RuntimeError when the
    wrapper wrote no report.
    """
    log_path = os.path.join(workdir, f"{tag}.log")
    ru_path = os.path.join(workdir, f"{tag}.rusage.json")
    if os.path.exists(ru_path):
        os.remove(ru_path)
    samples, peak_rss, max_procs, terminated = [], 0, 0, False
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        wrapper = subprocess.Popen([sys.executable, "-c", WRAPPER, ru_path] + cmd,
                                   cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
        while True:
            pid, status, _ru = os.wait4(wrapper.pid, os.WNOHANG)
            if pid:
                break
            s = _sample_tree(wrapper.pid)
            if s is not None:
                samples.append((time.time(), s[0]))
                peak_rss = max(peak_rss, s[1])
                max_procs = max(max_procs, s[2])
            elapsed = time.monotonic() - t0
            if elapsed > timeout and not terminated:
                os.kill(wrapper.pid, signal.SIGTERM)  # forwarded to the peer
                terminated = True
            elif elapsed > timeout + 30 and terminated:
                _kill_tree(wrapper.pid)
            time.sleep(poll_s)
    wall = time.monotonic() - t0
    if not os.path.exists(ru_path):
        raise RuntimeError(f"the process-tree wrapper failed (exit "
                           f"{os.waitstatus_to_exitcode(status)}); see {log_path}")
    with open(ru_path) as f:
        ru = json.load(f)
    samples.append((ru["t_exit"], ru["utime"] + ru["stime"]))
    return {"ru": ru, "samples": samples, "peak_rss": peak_rss, "processes": max_procs,
            "timed_out": terminated, "wall_s": wall, "log": log_path}


def _check_exit(tree, cmd, output):
    """RuntimeError with the log's tail unless the peer exited 0 and wrote `output`."""
    if tree["ru"]["returncode"] == 0 and os.path.exists(output):
        return
    with open(tree["log"], errors="replace") as f:
        tail = f.read()[-3000:]
    raise RuntimeError(f"{' '.join(cmd)} exited {tree['ru']['returncode']}; "
                       f"{tree['log']}:\n{tail}")


def _tree_cost(tree, first_start, last_end):
    """The tree's CPU and memory (module docstring), its CPU split at the first request
    start and the last request end (unix times)."""
    ru, samples, peak_rss = tree["ru"], tree["samples"], tree["peak_rss"]
    cpu_total = ru["utime"] + ru["stime"]
    cpu_startup = cpu_requests = cpu_after = None
    if first_start is not None and last_end is not None:
        c0, c1 = _interp(samples, first_start), _interp(samples, last_end)
        if c0 is not None and c1 is not None:
            cpu_startup, cpu_requests = c0, max(c1 - c0, 0.0)
            cpu_after = max(cpu_total - c1, 0.0)
    return {
        "cpu_s": cpu_total,
        "user_s": ru["utime"],
        "sys_s": ru["stime"],
        "wall_s": tree["wall_s"],
        "peak_rss_mib": peak_rss / 2**20 if peak_rss else None,
        "max_process_rss_mib": ru["maxrss_kib"] / 1024.0,
        "processes": tree["processes"],
        "cpu_s_startup": cpu_startup,
        "cpu_s_requests": cpu_requests,
        "cpu_s_after": cpu_after,
        "requests_window_s": (last_end - first_start) if first_start and last_end else None,
        "orphans_reaped": ru["orphans_reaped"],
        "orphans_killed": ru["orphans_killed"],
        "timed_out": tree["timed_out"],
        # (unix time, tree CPU seconds) from /proc; the last point is the final rusage.
        "cpu_timeline": [(round(t, 3), round(c, 2)) for t, c in samples],
    }


def _env_shown(env):
    """The environment variables a run's result reports (the peers' and the offline ones)."""
    return {k: env[k] for k in sorted(env)
            if k.startswith(("HF_", "TRANSFORMERS_") + PEER_ENV_PREFIXES)}


def run_guidellm(guidellm, url, rate, n, warmup, input_len, output_len, workdir, seed=1,
                 fix_poisson=True, workers=None, timeout=None, tokenizer_json=TOKENIZER_FIXTURE,
                 poll_s=0.1):
    """Run GuideLLM once: n + warmup requests, Poisson at `rate` req/s, synthetic prompts
    of `input_len` tokens, `output_len` output tokens, against `url` (model mock-llm,
    /v1/chat/completions, streamed).

    Returns {"records", "cpu_s", "wall_s", "peak_rss_mib", "cmd", ...}; see the module
    docstring for the record fields' sources, the CPU method and the
    `fix_poisson`/`workers` switches. Raises RuntimeError if GuideLLM fails.
    """
    os.makedirs(workdir, exist_ok=True)
    total = n + warmup
    tag = f"guidellm-r{rate:g}-o{output_len}-n{total}"
    out_json = os.path.join(workdir, f"{tag}.json")
    if os.path.exists(out_json):
        os.remove(out_json)
    tok = _tokenizer_dir(workdir, tokenizer_json)
    cmd = guidellm_cmd(guidellm, url, rate, total, input_len, output_len, tok, out_json,
                       seed=seed, fix_poisson=fix_poisson)
    extra = {"HF_HOME": os.path.join(workdir, "hf-home")}
    if workers:
        extra["GUIDELLM__MAX_WORKER_PROCESSES"] = str(int(workers))
    env = _offline_env(extra)
    tree = _run_tree(cmd, env, workdir, tag, timeout or _default_timeout(total, rate), poll_s)
    _check_exit(tree, cmd, out_json)
    with open(out_json) as f:
        report = json.load(f)
    records, origin, schedule = convert_report(report, warmup)

    peers = [x["peer"] for x in records]
    first_start = min((p["request_start"] for p in peers if p["request_start"]), default=None)
    last_end = max((p["request_end"] for p in peers if p["request_end"]), default=None)
    return {
        "records": records,
        **_tree_cost(tree, first_start, last_end),
        "cmd": cmd,
        "env": _env_shown(env),
        "fix_poisson": fix_poisson,
        "workers": workers,
        "schedule": schedule,
        "report": out_json,
        "log": tree["log"],
    }


def _read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_aiperf(aiperf, url, rate, n, warmup, input_len, output_len, workdir, seed=1,
               workers=None, timeout=None, tokenizer_json=TOKENIZER_FIXTURE, poll_s=0.1):
    """Run AIPerf once: n + warmup requests, Poisson at `rate` req/s, synthetic prompts of
    `input_len` tokens, `output_len` output tokens, against `url` (model mock-llm,
    /v1/chat/completions, streamed).

    Returns what run_guidellm returns ({"records", "cpu_s", "wall_s", "peak_rss_mib",
    "cmd", ...}); see the module docstring for the record fields' sources and the CPU
    method. `workers` is AIPerf's --workers-max (default: its own). Raises RuntimeError
    if AIPerf fails.
    """
    os.makedirs(workdir, exist_ok=True)
    total = n + warmup
    tag = f"aiperf-r{rate:g}-o{output_len}-n{total}"
    artifacts = os.path.join(workdir, f"{tag}-artifacts")
    shutil.rmtree(artifacts, ignore_errors=True)
    hf_home = os.path.join(workdir, "hf-home")
    tokenizer = _hub_cache_tokenizer(hf_home, tokenizer_json)
    cmd = aiperf_cmd(aiperf, url, rate, total, input_len, output_len, tokenizer, artifacts,
                     seed=seed, workers=workers)
    env = _offline_env({"HF_HOME": hf_home})
    tree = _run_tree(cmd, env, workdir, tag, timeout or _default_timeout(total, rate), poll_s)
    rows_path = os.path.join(artifacts, "profile_export.jsonl")
    _check_exit(tree, cmd, rows_path)
    with open(os.path.join(artifacts, "profile_export_aiperf.json")) as f:
        summary = json.load(f)
    records, origin, schedule = convert_aiperf(_read_jsonl(rows_path), summary, warmup,
                                               seed, rate, total)

    peers = [x["peer"] for x in records]
    starts = [p["request_start_ns"] for p in peers if p["request_start_ns"]]
    ends = [p["request_end_ns"] for p in peers if p["request_end_ns"]]
    first_start = min(starts) / 1e9 if starts else None
    last_end = max(ends) / 1e9 if ends else None
    return {
        "records": records,
        **_tree_cost(tree, first_start, last_end),
        "cmd": cmd,
        "env": _env_shown(env),
        "workers": workers,
        "schedule": schedule,
        "report": rows_path,
        "log": tree["log"],
    }


# ---- smoke check -------------------------------------------------------------------------

def percentile(values, p):
    """numpy's default (linear) percentile; None when empty. benches/client_overhead.py
    uses this one too."""
    if not values:
        return None
    v = sorted(values)
    h = (len(v) - 1) * p / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def summarize(res, ttft_ms, itl_ms, output_len):
    recs = [r for r in res["records"] if not r["warmup"]]
    ok = [r for r in recs if r["outcome"] == "ok"]
    err = [r["derived"]["ttft_ms"] - ttft_ms for r in ok if r["derived"]["ttft_ms"] is not None]
    tokens = sorted({sum(c["tokens"] for c in r["chunks"]) for r in ok})
    lag = [(r["t_send"] - r["t_sched"]) * 1e3 for r in recs
           if r["t_send"] is not None and r["t_sched"] is not None]
    itl = []
    for r in ok:
        for a, b in zip(r["chunks"], r["chunks"][1:]):
            itl.append((b["at"] - a["at"]) * 1e3 / b["tokens"] - itl_ms)
    return {
        "requests": len(res["records"]), "counted": len(recs), "ok": len(ok),
        "token_counts": tokens, "tokens_exact": tokens == [output_len],
        "ttft_err_ms": {"p50": percentile(err, 50), "p99": percentile(err, 99),
                        "min": min(err) if err else None, "max": max(err) if err else None},
        "itl_err_ms": {"p50": percentile(itl, 50), "p99": percentile(itl, 99)},
        "lag_ms": {"p50": percentile(lag, 50), "p99": percentile(lag, 99)},
    }


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def run_peer(args, workdir):
    """The smoke check's run of the peer named by --peer."""
    common = (args.mock_url, args.rate, args.num_requests, args.warmup, args.input_len,
              args.output_len, workdir)
    if args.peer == "aiperf":
        return run_aiperf(args.aiperf, *common, seed=args.seed, workers=args.workers)
    return run_guidellm(args.guidellm, *common, seed=args.seed, fix_poisson=not args.stock,
                        workers=args.workers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mock-url", required=True, help="http://127.0.0.1:PORT")
    ap.add_argument("--ttft-ms", type=float, default=50.0, help="the mock's TTFT truth")
    ap.add_argument("--itl-ms", type=float, default=5.0, help="the mock's ITL truth")
    ap.add_argument("--peer", choices=["guidellm", "aiperf"], default="guidellm")
    ap.add_argument("--guidellm", default=GUIDELLM, help="GuideLLM executable")
    ap.add_argument("--aiperf", default=AIPERF, help="AIPerf executable")
    ap.add_argument("--rate", type=float, default=2.0)
    ap.add_argument("--num-requests", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--input-len", type=int, default=32)
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=None,
                    help="GUIDELLM__MAX_WORKER_PROCESSES (GuideLLM's default: 10) or "
                         "AIPerf's --workers-max")
    ap.add_argument("--stock", action="store_true",
                    help="run the stock guidellm script (without the two Poisson fixes)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--json", action="store_true", help="print the records too")
    args = ap.parse_args()

    path = args.aiperf if args.peer == "aiperf" else args.guidellm
    available = aiperf_available if args.peer == "aiperf" else guidellm_available
    if not available(path):
        sys.exit(f"{args.peer} not available at {path}")
    workdir = args.workdir or tempfile.mkdtemp(prefix="peers-")
    try:
        res = run_peer(args, workdir)
        s = summarize(res, args.ttft_ms, args.itl_ms, args.output_len)
        te, ie, sch = s["ttft_err_ms"], s["itl_err_ms"], res["schedule"]
        print("command:", " ".join("'<launcher>'" if "\n" in a else a for a in res["cmd"]))
        print(f"requests {s['requests']} (counted {s['counted']}), ok {s['ok']}, "
              f"output tokens per request {s['token_counts']}"
              f"{'' if s['tokens_exact'] else ' (NOT exact)'}")
        print(f"TTFT error vs {args.ttft_ms:g} ms: p50 {fmt(te['p50'])} ms, "
              f"p99 {fmt(te['p99'])} ms (min {fmt(te['min'])}, max {fmt(te['max'])})")
        print(f"ITL error vs {args.itl_ms:g} ms between consecutive chunks (GuideLLM's: "
              f"per-request means): p50 {fmt(ie['p50'])} ms, p99 {fmt(ie['p99'])} ms")
        print(f"schedule: sends over {fmt(sch['send_span_s'])} s (achieved "
              f"{fmt(sch['achieved_rate'], 2)} req/s, asked {args.rate:g}), targets "
              f"plausible: {sch['targets_plausible']}, {sch['distinct_gaps']} distinct "
              f"gaps of {sch['gaps']}; dispatch lag p50 {fmt(s['lag_ms']['p50'])} ms, "
              f"p99 {fmt(s['lag_ms']['p99'])} ms")
        print(f"cost: cpu {res['cpu_s']:.2f} s (user {res['user_s']:.2f}, sys "
              f"{res['sys_s']:.2f}; startup {fmt(res['cpu_s_startup'], 2)}, requests "
              f"{fmt(res['cpu_s_requests'], 3)} over {fmt(res['requests_window_s'], 2)} s, "
              f"after {fmt(res['cpu_s_after'], 2)}), wall {res['wall_s']:.1f} s, peak tree "
              f"RSS {fmt(res['peak_rss_mib'], 0)} MiB (largest process "
              f"{res['max_process_rss_mib']:.0f} MiB, {res['processes']} processes)")
        if args.json:
            print(json.dumps(res["records"], indent=1))
        ok = (s["counted"] > 0 and s["ok"] == s["counted"] and s["tokens_exact"]
              and te["p50"] is not None and 0 <= te["p50"] < 10 and te["min"] > -0.5)
        print("smoke:", "PASS" if ok else "FAIL")
        if args.keep or not ok:
            print("work directory:", workdir)
    except BaseException:
        print("work directory:", workdir)
        raise
    if ok and not args.keep and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
