#!/usr/bin/env python3
"""Writes llmprobe's Grafana dashboards (dashboards/*.json) from one description.

The JSON files are what users import and what the Helm chart ships; this script is how
they are edited, so every panel gets the same datasource reference, unit, legend and grid
layout. `generate.py --check` exits 1 when a committed JSON file differs from what this
script writes (run by tests/tools/dashboards.sh).

Metric names come from docs/metrics.md only. Recording rules (llmprobe:...) come from
alerts/llmprobe-recording.yaml. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Every panel and query uses the dashboard's `datasource` variable: no ${DS_...} import
# placeholders, which break file and sidecar provisioning.
DS = {"type": "prometheus", "uid": "${datasource}"}
# `location` matches every series when "All" (`.*` also matches a missing label).
SEL = 'location=~"$location", target=~"$target", model=~"$model", scenario=~"$scenario"'
SEL_TM = 'location=~"$location", target=~"$target", model=~"$model"'
BY = "target, model, scenario"
RATE = "$__rate_interval"


def le_match(var: str) -> str:
    """Matcher for the bucket whose boundary is the value of template variable `var`.

    Prometheus 3 stores integer boundaries as le="1.0", Prometheus 2 keeps the exporter's
    le="1"; the optional ".0" matches both. Values must be bucket boundaries (docs/metrics.md).
    """
    return "le=~`${%s}(\\.0)?`" % var


# ---------------------------------------------------------------- template variables


def datasource_var() -> dict:
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "hide": 0,
        "includeAll": False,
        "multi": False,
        "options": [],
        "refresh": 1,
        "regex": "",
        "skipUrlSync": False,
    }


def query_var(name: str, label: str, query: str) -> dict:
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DS,
        # A plain label_values() string: every Grafana version since 7 reads it.
        "query": query,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "hide": 0,
        "includeAll": True,
        "allValue": ".*",
        "multi": True,
        "options": [],
        "refresh": 2,
        "regex": "",
        "sort": 1,
        "skipUrlSync": False,
    }


def custom_var(name: str, label: str, values: list[str], default: str, description: str) -> dict:
    return {
        "name": name,
        "label": label,
        "description": description,
        "type": "custom",
        "query": ",".join(values),
        "current": {"selected": True, "text": default, "value": default},
        "options": [{"selected": v == default, "text": v, "value": v} for v in values],
        "hide": 0,
        "includeAll": False,
        "multi": False,
        "skipUrlSync": False,
    }


def probe_vars() -> list[dict]:
    return [
        datasource_var(),
        # Where the probers run (`location` in their config); empty with one prober.
        query_var("location", "Location", "label_values(llmprobe_build_info, location)"),
        query_var("target", "Target", "label_values(llmprobe_requests_total, target)"),
        query_var(
            "model", "Model", 'label_values(llmprobe_requests_total{target=~"$target"}, model)'
        ),
        query_var(
            "scenario",
            "Scenario",
            'label_values(llmprobe_requests_total{target=~"$target", model=~"$model"}, scenario)',
        ),
    ]


# ---------------------------------------------------------------- panels


# The histograms whose buckets carry exemplars (the newest probe of each bucket: trace ID,
# probe ID); a time series over them asks Grafana to draw those probes as dots.
EXEMPLAR_BUCKETS = tuple(
    f"llmprobe_{scope}{name}_seconds_bucket"
    for scope in ("", "replica_")
    for name in ("ttft", "ttfa", "tpot", "request_duration")
)


def target(expr: str, legend: str, ref: str) -> dict:
    return {"refId": ref, "datasource": DS, "expr": expr, "legendFormat": legend, "range": True}


def targets(queries: list[tuple[str, str]]) -> list[dict]:
    return [target(e, legend, chr(ord("A") + i)) for i, (e, legend) in enumerate(queries)]


def timeseries(title: str, desc: str, unit: str, queries: list[tuple[str, str]], *,
               w: int = 12, h: int = 8, minimum: float | None = 0,
               thresholds: list[tuple[str, float | None]] | None = None) -> dict:
    defaults: dict = {
        "unit": unit,
        "custom": {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 10,
            "showPoints": "never",
            "spanNulls": False,
            "thresholdsStyle": {"mode": "line" if thresholds else "off"},
        },
        "color": {"mode": "palette-classic"},
        "thresholds": threshold_steps(thresholds or [("green", None)]),
    }
    if minimum is not None:
        defaults["min"] = minimum
    return {
        "type": "timeseries",
        "title": title,
        "description": desc,
        "datasource": DS,
        "_size": (w, h),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                       "calcs": ["mean", "max", "lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [dict(t, exemplar=True) if any(b in t["expr"] for b in EXEMPLAR_BUCKETS)
                    else t for t in targets(queries)],
    }


def stat(title: str, desc: str, unit: str, queries: list[tuple[str, str]], *,
         w: int = 6, h: int = 5, thresholds: list[tuple[str, float | None]] | None = None,
         decimals: int | None = None) -> dict:
    defaults: dict = {
        "unit": unit,
        "color": {"mode": "thresholds"},
        "thresholds": threshold_steps(thresholds or [("blue", None)]),
    }
    if decimals is not None:
        defaults["decimals"] = decimals
    return {
        "type": "stat",
        "title": title,
        "description": desc,
        "datasource": DS,
        "_size": (w, h),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value",
            "graphMode": "area",
            "justifyMode": "auto",
            "orientation": "auto",
            "textMode": "value_and_name",
        },
        "targets": [dict(t, instant=True, range=False) for t in targets(queries)],
    }


def table(title: str, desc: str, columns: list[tuple[str, str, str]], *, w: int = 24,
          h: int = 9, sort_by: str | None = None,
          colored: dict[str, list[tuple[str, float | None]]] | None = None) -> dict:
    """One row per series label set: each (column name, unit, instant query) is a column,
    the queries' results merged on their common labels (Grafana's `merge` transformation),
    the time column dropped. `colored` columns get a background from their thresholds."""
    colored = colored or {}
    overrides = []
    for i, (name, unit, _) in enumerate(columns):
        props: list[dict] = [{"id": "unit", "value": unit}]
        if name in colored:
            props += [{"id": "custom.cellOptions", "value": {"type": "color-background"}},
                      {"id": "thresholds", "value": threshold_steps(colored[name])}]
        overrides.append({"matcher": {"id": "byName", "options": name}, "properties": props})
    refs = [chr(ord("A") + i) for i in range(len(columns))]
    options: dict = {"showHeader": True, "cellHeight": "sm",
                     "footer": {"show": False, "reducer": ["sum"], "countRows": False,
                                "fields": ""}}
    if sort_by:
        options["sortBy"] = [{"displayName": sort_by, "desc": False}]
    return {
        "type": "table",
        "title": title,
        "description": desc,
        "datasource": DS,
        "_size": (w, h),
        "fieldConfig": {"defaults": {"unit": "short",
                                     "custom": {"align": "auto",
                                                "cellOptions": {"type": "auto"}},
                                     "color": {"mode": "thresholds"},
                                     "thresholds": threshold_steps([("green", None)])},
                        "overrides": overrides},
        "options": options,
        "transformations": [
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True},
                "renameByName": {f"Value #{r}": name for r, (name, _, _) in zip(refs, columns)},
            }},
        ],
        "targets": [dict(target(expr, "__auto", r), format="table", instant=True, range=False)
                    for r, (_, _, expr) in zip(refs, columns)],
    }


def threshold_steps(steps: list[tuple[str, float | None]]) -> dict:
    return {"mode": "absolute", "steps": [{"color": c, "value": v} for c, v in steps]}


def row(title: str) -> dict:
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "_size": (24, 1)}


ATTAINMENT = [("red", None), ("orange", 0.95), ("green", 0.99)]


def quantiles(metric: str) -> list[tuple[str, str]]:
    return [
        (
            f"histogram_quantile({q}, sum by ({BY}, le) "
            f"(rate({metric}_bucket{{{SEL}}}[{RATE}])))",
            f"p{int(q * 100)} {{{{target}}}}/{{{{scenario}}}}",
        )
        for q in (0.5, 0.9, 0.99)
    ]


def attainment(metric: str, var: str) -> list[tuple[str, str]]:
    return [(
        f"sum by ({BY}) (rate({metric}_bucket{{{SEL}, {le_match(var)}}}[$__range]))\n"
        f"/\nsum by ({BY}) (rate({metric}_count{{{SEL}}}[$__range]))",
        "{{target}}/{{scenario}}",
    )]


def slo_met(sli: str) -> list[tuple[str, str]]:
    """Fraction of the successful probes that met their own scenario's threshold for `sli`
    (counted by the daemon, llmprobe_slo_met_requests_total), like the SLI rules: a failed
    probe is an availability miss, not a latency one."""
    all_ = f"sum by ({BY}) (rate(llmprobe_requests_total{{{SEL}}}[$__range]))"
    return [(
        f'sum by ({BY}) (rate(llmprobe_slo_met_requests_total{{{SEL}, sli="{sli}"}}[$__range]))\n'
        f"/\n({all_}\n  - (sum by ({BY}) (rate(llmprobe_request_failures_total{{{SEL}}}[$__range]))"
        f" or 0 * {all_}))",
        f"{sli.upper()} {{{{target}}}}/{{{{scenario}}}}",
    )]


def burn(sli: str) -> list[tuple[str, str]]:
    return [
        (
            f"llmprobe:{sli}_error:ratio_rate{w}{{{SEL}}}\n"
            f'/ scalar(1 - llmprobe:slo_objective:ratio{{sli="{sli}"}})',
            f"{w} {{{{target}}}}/{{{{scenario}}}}",
        )
        for w in ("5m", "1h", "6h", "3d")
    ]


def slo_dashboard() -> dict:
    panels = [
        row("SLO attainment over the dashboard range"),
        stat("Goodput ratio",
             "Probes that succeeded and met every SLO of their scenario, over all probes.",
             "percentunit",
             [(f"sum by ({BY}) (rate(llmprobe_goodput_requests_total{{{SEL}}}[$__range]))\n/\n"
               f"sum by ({BY}) (rate(llmprobe_requests_total{{{SEL}}}[$__range]))",
               "{{target}}/{{scenario}}")],
             thresholds=ATTAINMENT, decimals=2),
        stat("TTFT <= ${ttft_slo}s (what-if)",
             "Fraction of first tokens within the threshold chosen in the ttft_slo variable "
             "(a histogram bucket boundary), to explore thresholds; the SLI and alerts use "
             "each scenario's own threshold (the tiles below).",
             "percentunit", attainment("llmprobe_ttft_seconds", "ttft_slo"),
             thresholds=ATTAINMENT, decimals=2),
        stat("TPOT <= ${tpot_slo}s (what-if)",
             "Fraction of probes whose time per output token is within the threshold "
             "chosen in the tpot_slo variable (a bucket boundary).",
             "percentunit", attainment("llmprobe_tpot_seconds", "tpot_slo"),
             thresholds=ATTAINMENT, decimals=2),
        stat("E2E <= ${e2e_slo}s (what-if)",
             "Fraction of probes whose end-to-end latency is within the threshold "
             "chosen in the e2e_slo variable (a bucket boundary).",
             "percentunit", attainment("llmprobe_request_duration_seconds", "e2e_slo"),
             thresholds=ATTAINMENT, decimals=2),
        stat("TTFT SLO met (own threshold)",
             "Successful probes with a TTFT within their scenario's own threshold, over the "
             "successful probes: the TTFT SLI the alerts burn (failures burn availability).",
             "percentunit", slo_met("ttft"), w=8, thresholds=ATTAINMENT, decimals=2),
        stat("TPOT SLO met (own threshold)",
             "Successful probes with a TPOT within their scenario's own threshold, over the "
             "successful probes.", "percentunit", slo_met("tpot"), w=8, thresholds=ATTAINMENT,
             decimals=2),
        stat("E2E SLO met (own threshold)",
             "Successful probes within their scenario's own end-to-end threshold, over the "
             "successful probes.", "percentunit", slo_met("e2e"), w=8, thresholds=ATTAINMENT,
             decimals=2),
        stat("Time since last success",
             "Seconds since the last successful probe, and the LlmprobeProbeDown threshold: "
             "max(600 s, 5 / configured rate).",
             "s",
             [(f"time() - max by ({BY}) (llmprobe_last_success_timestamp_seconds{{{SEL}}})",
               "{{target}}/{{scenario}}"),
              (f"clamp_min(5 / max by ({BY}) (llmprobe_probe_rate_per_second{{{SEL}}}), 600)",
               "alert after {{target}}/{{scenario}}")],
             w=12, thresholds=[("green", None), ("orange", 120), ("red", 600)]),
        stat("Configured SLO thresholds",
             "The scenario's SLO thresholds from the daemon config (absent when unset).",
             "s",
             [(f"max by ({BY}) (llmprobe_slo_ttft_seconds{{{SEL}}})", "TTFT {{target}}/{{scenario}}"),
              (f"max by ({BY}) (llmprobe_slo_tpot_seconds{{{SEL}}})", "TPOT {{target}}/{{scenario}}"),
              (f"max by ({BY}) (llmprobe_slo_e2e_seconds{{{SEL}}})", "E2E {{target}}/{{scenario}}"),
              (f"max by ({BY}) (llmprobe_slo_ttfa_seconds{{{SEL}}})", "TTFA {{target}}/{{scenario}}")],
             w=12),
        row("Latency"),
        timeseries("Time to first token", "TTFT quantiles, from the actual send to the first "
                   "content token.", "s", quantiles("llmprobe_ttft_seconds")),
        timeseries("Time per output token", "TPOT quantiles (vLLM's definition: (last - first) "
                   "/ (output tokens - 1)).", "s", quantiles("llmprobe_tpot_seconds")),
        timeseries("Inter-token latency", "Per-token ITL quantiles; a gap is shared among the "
                   "tokens of the later chunk.", "s",
                   quantiles("llmprobe_inter_token_latency_seconds")),
        timeseries("End-to-end latency", "E2E quantiles, from the send to the last token.",
                   "s", quantiles("llmprobe_request_duration_seconds")),
        timeseries("Time to first answer token", "TTFA quantiles: from the send to the first "
                   "answer (non-reasoning) token. Equals TTFT when the model does not reason; "
                   "the gap to TTFT is the time spent reasoning.", "s",
                   quantiles("llmprobe_ttfa_seconds")),
        timeseries("Reasoning tokens per probe", "Mean reasoning tokens per probe, next to "
                   "all output tokens per probe.", "none",
                   [(f"sum by ({BY}) (rate(llmprobe_reasoning_tokens_total{{{SEL}}}[{RATE}])) "
                     f"/ sum by ({BY}) (rate(llmprobe_requests_total{{{SEL}}}[{RATE}]))",
                     "reasoning {{target}}/{{scenario}}"),
                    (f"sum by ({BY}) (rate(llmprobe_output_tokens_total{{{SEL}}}[{RATE}])) "
                     f"/ sum by ({BY}) (rate(llmprobe_requests_total{{{SEL}}}[{RATE}]))",
                     "output {{target}}/{{scenario}}")]),
        row("Goodput and failures"),
        timeseries("Goodput ratio", "Good probes over all probes.", "percentunit",
                   [(f"sum by ({BY}) (rate(llmprobe_goodput_requests_total{{{SEL}}}[{RATE}]))\n/\n"
                     f"sum by ({BY}) (rate(llmprobe_requests_total{{{SEL}}}[{RATE}]))",
                     "{{target}}/{{scenario}}")]),
        timeseries("Probe rate", "Probes completed per second, the good ones, and the "
                   "configured rate (arrivals are Poisson, so the completed rate scatters "
                   "around it).", "reqps",
                   [(f"sum by ({BY}) (rate(llmprobe_requests_total{{{SEL}}}[{RATE}]))",
                     "all {{target}}/{{scenario}}"),
                    (f"max by ({BY}) (llmprobe_probe_rate_per_second{{{SEL}}})",
                     "configured {{target}}/{{scenario}}"),
                    (f"sum by ({BY}) (rate(llmprobe_goodput_requests_total{{{SEL}}}[{RATE}]))",
                     "good {{target}}/{{scenario}}")]),
        timeseries("Failures by reason", "Failed probes per second by reason (http_4xx, "
                   "http_429, http_5xx, gateway_rejected, gateway_evicted, connect, tls, "
                   "timeout, stream_error, empty_output, cancelled).", "reqps",
                   [(f"sum by ({BY}, reason) "
                     f"(rate(llmprobe_request_failures_total{{{SEL}}}[{RATE}]))",
                     "{{reason}} {{target}}/{{scenario}}")]),
        timeseries("Skipped probes", "Arrivals dropped because max in-flight was reached or "
                   "the token budget was spent.", "reqps",
                   [(f"sum by ({BY}, reason) (rate(llmprobe_probes_skipped_total{{{SEL}}}[{RATE}]))",
                     "{{reason}} {{target}}/{{scenario}}")]),
        row("Correctness"),
        timeseries("Answer check failure ratio", "Judged answers that failed each answer "
                   "check over all answers it judged (failed requests have no answer and "
                   "are not judged). LlmprobeAnswerCheckFailing pages at 50% over 15m.",
                   "percentunit",
                   [(f"sum by ({BY}, check) (rate(llmprobe_check_failures_total{{{SEL}}}[{RATE}]))\n/\n"
                     f"sum by ({BY}, check) (rate(llmprobe_check_runs_total{{{SEL}}}[{RATE}]))",
                     "{{check}} {{target}}/{{scenario}}")],
                   thresholds=[("green", None), ("red", 0.5)]),
        stat("Last check result", "1 when the check passed on the last judged answer, 0 when "
             "it failed; the daemon's status page (/) shows the last failure's reason and "
             "an excerpt of the answer.", "short",
             [(f"min by ({BY}, check) (llmprobe_check_last_passed{{{SEL}}})",
               "{{check}} {{target}}/{{scenario}}")], w=12, h=8,
             thresholds=[("red", None), ("green", 1)], decimals=0),
        row("Golden-set accuracy"),
        timeseries("Golden-set accuracy and its 95% interval", "Correct golden-set answers "
                   "over the rolling window of the last judged answers, with the Wilson "
                   "interval's bounds and the validated model's baseline (docs/measurement.md). "
                   "LlmprobeGoldenAccuracyDrop opens a ticket when the upper bound stays "
                   "below the baseline for 15m with at least 50 answers judged.",
                   "percentunit",
                   [(f"max by ({BY}) (llmprobe_golden_accuracy_ratio{{{SEL}}})",
                     "accuracy {{target}}/{{scenario}}"),
                    (f"max by ({BY}) (llmprobe_golden_accuracy_lower_ratio{{{SEL}}})",
                     "lower {{target}}/{{scenario}}"),
                    (f"max by ({BY}) (llmprobe_golden_accuracy_upper_ratio{{{SEL}}})",
                     "upper {{target}}/{{scenario}}"),
                    (f"min by ({BY}) (llmprobe_golden_baseline_ratio{{{SEL}}})",
                     "baseline {{target}}/{{scenario}}")]),
        timeseries("Golden-set answers", "Judged golden-set answers per second, by verdict "
                   "(failed requests are failures, never wrong answers).", "reqps",
                   [(f"sum by ({BY}, verdict) (rate(llmprobe_golden_answers_total{{{SEL}}}[{RATE}]))",
                     "{{verdict}} {{target}}/{{scenario}}")]),
        row("Model fingerprint"),
        timeseries("Fingerprint divergence", "Mean total-variation distance between the "
                   "endpoint's top-k logprobs and its baseline's (docs/measurement.md), and "
                   "the threshold from the baseline's own noise. LlmprobeModelDrift tickets "
                   "when it stays above for 15m.", "short",
                   [(f"max by ({BY}) (llmprobe_fingerprint_divergence{{{SEL}}})",
                     "divergence {{target}}/{{scenario}}"),
                    (f"max by ({BY}) (llmprobe_fingerprint_threshold_divergence{{{SEL}}})",
                     "threshold {{target}}/{{scenario}}")]),
        timeseries("Fingerprint token agreement", "Tokens matching the baseline's before the "
                   "first difference, over the baseline's tokens: 1 is the same greedy answer "
                   "to every prompt.", "percentunit",
                   [(f"min by ({BY}) (llmprobe_fingerprint_token_agreement_ratio{{{SEL}}})",
                     "{{target}}/{{scenario}}")]),
        row("Error budget burn rate"),
        timeseries("Availability error budget burn rate", "Failed probes (any reason) over "
                   "all probes, over the error budget (1 - objective, from "
                   "llmprobe:slo_objective:ratio). 1 spends the budget exactly over the SLO "
                   "period; pages at 14.4 (1h and 5m) and 6 (6h and 30m). Its page inhibits "
                   "the latency and goodput pages of the same target.",
                   "suffix:x", burn("availability"), thresholds=[("green", None), ("orange", 6),
                                                                 ("red", 14.4)]),
        timeseries("Goodput error budget burn rate", "Probes that failed or missed an SLO "
                   "(the composite) over the error budget. Pages (after 5m) only when no "
                   "availability or latency page explains it.",
                   "suffix:x", burn("goodput"), thresholds=[("green", None), ("orange", 6),
                                                            ("red", 14.4)]),
        timeseries("TTFT error budget burn rate", "Successful probes missing their scenario's "
                   "TTFT threshold, over the successful probes, over the error budget.",
                   "suffix:x",
                   burn("ttft"), thresholds=[("green", None), ("orange", 6), ("red", 14.4)]),
        timeseries("TPOT error budget burn rate", "Successful probes missing their scenario's "
                   "TPOT threshold, over the successful probes, over the error budget.",
                   "suffix:x",
                   burn("tpot"), thresholds=[("green", None), ("orange", 6), ("red", 14.4)]),
        timeseries("E2E error budget burn rate", "Successful probes missing their scenario's "
                   "end-to-end threshold, over the successful probes, over the error budget.",
                   "suffix:x", burn("e2e"), w=24,
                   thresholds=[("green", None), ("orange", 6), ("red", 14.4)]),
        row("Prober health"),
        timeseries("Self-check TTFT error", "The prober's own error bar: TTFT measured on a "
                   "loopback reference engine minus its known truth (docs/daemon.md, "
                   "Self-check). When it grows, every TTFT this instance reports carries it. "
                   "LlmprobeSelfCheckDegraded warns at a p99 of 25 ms over 10m.", "s",
                   [(f"histogram_quantile({q}, sum by (instance, le) "
                     f"(rate(llmprobe_self_check_ttft_error_seconds_bucket[{RATE}])))",
                     f"p{int(q * 100)} {{{{instance}}}}") for q in (0.5, 0.99)],
                   thresholds=[("green", None), ("orange", 0.01), ("red", 0.025)]),
        timeseries("Self-check ITL error p99", "Distance of each per-token ITL from the "
                   "reference engine's gap: how much of an ITL tail the prober adds.", "s",
                   [(f"histogram_quantile(0.99, sum by (instance, le) "
                     f"(rate(llmprobe_self_check_itl_error_seconds_bucket[{RATE}])))",
                     "p99 {{instance}}")]),
        timeseries("CPU throttling", "Share of CFS periods in which the prober's cgroup was "
                   "throttled (absent without a CPU limit). A throttled prober timestamps "
                   "late; LlmprobeSelfCheckDegraded warns above 25% over 10m.", "percentunit",
                   [(f"sum by (instance) (rate(llmprobe_cgroup_cpu_throttled_periods_total[{RATE}]))\n/\n"
                     f"sum by (instance) (rate(llmprobe_cgroup_cpu_periods_total[{RATE}]))",
                     "{{instance}}")],
                   thresholds=[("green", None), ("red", 0.25)]),
        timeseries("Dispatch lag p99", "Actual send minus scheduled send, of the probes and "
                   "of the self-probes. When this grows the client, not the server, is the "
                   "bottleneck (coordinated omission).", "s",
                   [(f"histogram_quantile(0.99, sum by ({BY}, le) "
                     f"(rate(llmprobe_dispatch_lag_seconds_bucket{{{SEL}}}[{RATE}])))",
                     "p99 {{target}}/{{scenario}}"),
                    (f"histogram_quantile(0.99, sum by (instance, le) "
                     f"(rate(llmprobe_self_check_dispatch_lag_seconds_bucket[{RATE}])))",
                     "p99 self-check {{instance}}")]),
        timeseries("Probes in flight", "Probes sent and not yet finished.", "short",
                   [(f"sum by ({BY}) (llmprobe_inflight_requests{{{SEL}}})",
                     "{{target}}/{{scenario}}")]),
        timeseries("Failures by location", "Share of probes that failed, per prober "
                   "location (the `location` label of each prober; one unnamed line with a "
                   "single prober). One location failing alone points at its network, not "
                   "at the endpoint.", "percentunit",
                   [(f"sum by (location) (rate(llmprobe_request_failures_total{{{SEL}}}[{RATE}]))"
                     f"\n/\nsum by (location) (rate(llmprobe_requests_total{{{SEL}}}[{RATE}]))",
                     "{{location}}")]),
        timeseries("Probers reporting", "1 while a prober (one llmprobe instance, by its "
                   "location, shard and instance) reports; 0 when its scrape fails or its "
                   "self-check stopped probing (llmprobe:prober_reporting:bool, the input of "
                   "LlmprobeAbsent). Two lines per location and shard with high "
                   "availability.", "short",
                   [('max by (location, shard, instance) '
                     '(llmprobe:prober_reporting:bool{location=~"$location"})',
                     "{{location}} {{shard}} {{instance}}")]),
    ]
    variables = probe_vars() + [
        custom_var("ttft_slo", "TTFT SLO (s)", ["0.1", "0.25", "0.5", "0.75", "1", "2.5", "5"],
                   "0.5", "A bucket boundary of llmprobe_ttft_seconds."),
        custom_var("tpot_slo", "TPOT SLO (s)", ["0.025", "0.05", "0.075", "0.1", "0.15", "0.2"],
                   "0.1", "A bucket boundary of llmprobe_tpot_seconds."),
        custom_var("e2e_slo", "E2E SLO (s)", ["1", "2", "2.5", "5", "10", "15", "20", "30", "60"],
                   "10", "A bucket boundary of llmprobe_request_duration_seconds."),
    ]
    return dashboard("llmprobe-slo", "llmprobe / SLO overview",
                     "Latency, goodput and error-budget burn of the endpoints llmprobe probes.",
                     panels, variables)


def client_ttft(window: str) -> str:
    return (f"(sum by (target, model) (rate(llmprobe_ttft_seconds_sum{{{SEL}}}[{window}]))\n"
            f"/ sum by (target, model) (rate(llmprobe_ttft_seconds_count{{{SEL}}}[{window}])))")


def server_ttft(window: str) -> str:
    return (f"(sum by (target, model) "
            f"(rate(llmprobe_engine_ttft_observed_seconds_total{{{SEL_TM}}}[{window}]))\n"
            f"/ sum by (target, model) "
            f"(rate(llmprobe_engine_ttft_observations_total{{{SEL_TM}}}[{window}])))")


def fleet_or_engine(fleet: str, engine: str, engine_agg: str = "sum") -> str:
    """A fleet gauge (`llmprobe_fleet_*`, one series per target from each llmprobe
    instance, hence `max`) where the target discovers its replicas, else the single
    engine's gauge behind its front door."""
    return (f"max by (target, model) ({fleet}{{{SEL_TM}}})\n"
            f"or {engine_agg} by (target, model) ({engine}{{{SEL_TM}}})")


BY_REPLICA = "target, model, replica"


def replica_table() -> dict:
    per = f"by ({BY_REPLICA})"
    return table(
        "Replicas now",
        "One row per discovered replica (targets with replicas_from): its engine's running "
        "and waiting requests, KV cache use and headroom (1 - running / max sequences, 0 "
        "while it queues) from the last scrape, whether that scrape worked, its GPUs' "
        "utilisation and energy per output token, and its own probes' TTFT p99 and goodput "
        "over the dashboard range. Sorted by headroom: the replica that is full, or slow, "
        "or failing while the fleet's average looks fine comes first.",
        [("Running", "short",
          f"sum {per} (llmprobe_replica_engine_running_requests{{{SEL_TM}}})"),
         ("Waiting", "short",
          f"sum {per} (llmprobe_replica_engine_waiting_requests{{{SEL_TM}}})"),
         ("KV cache", "percentunit",
          f"max {per} (llmprobe_replica_engine_kv_cache_usage_ratio{{{SEL_TM}}})"),
         ("Headroom", "percentunit",
          f"min {per} (llmprobe_replica_headroom_ratio{{{SEL_TM}}})"),
         ("GPU util", "percentunit",
          f"max {per} (llmprobe_replica_gpu_utilization_ratio{{{SEL_TM}}})"),
         ("J/token", "joule",
          f"max {per} (llmprobe_replica_energy_per_output_token_joules{{{SEL_TM}}})"),
         ("TTFT p99", "s",
          f"histogram_quantile(0.99, sum by ({BY_REPLICA}, le) "
          f"(rate(llmprobe_replica_ttft_seconds_bucket{{{SEL}}}[$__range])))"),
         ("Goodput", "percentunit",
          f"sum {per} (rate(llmprobe_replica_goodput_requests_total{{{SEL}}}[$__range]))\n/\n"
          f"sum {per} (rate(llmprobe_replica_requests_total{{{SEL}}}[$__range]))"),
         ("Scraped", "bool_yes_no",
          f"min {per} (llmprobe_replica_engine_scrape_success{{{SEL_TM}}})")],
        sort_by="Headroom",
        colored={"Waiting": [("green", None), ("red", 1)],
                 "KV cache": [("green", None), ("orange", 0.9)],
                 "Headroom": [("red", None), ("orange", 0.1), ("green", 0.25)],
                 "Goodput": ATTAINMENT,
                 "Scraped": [("red", None), ("green", 1)]},
    )


def fleet_panels() -> list[dict]:
    """Targets that discover their replicas (replicas_from): the set, its cost, and each
    replica on its own. Empty for targets without replicas_from."""
    return [
        row("Fleet: discovered replicas"),
        timeseries("Replicas: discovered, scraped, queueing", "Replicas in the discovered "
                   "set (after max_replicas), those whose last engine scrape worked (the fleet "
                   "sums run over these), those with waiting requests, and those found beyond "
                   "max_replicas and not probed.", "short",
                   [(f"max by (target, model) (llmprobe_fleet_replicas{{{SEL_TM}}})",
                     "discovered {{target}}"),
                    (f"max by (target, model) (llmprobe_fleet_scraped_replicas{{{SEL_TM}}})",
                     "scraped {{target}}"),
                    (f"max by (target, model) (llmprobe_fleet_queueing_replicas{{{SEL_TM}}})",
                     "queueing {{target}}"),
                    (f"max by (target, model) (llmprobe_discovery_refused_replicas{{{SEL_TM}}})",
                     "refused {{target}}")]),
        stat("Fleet $ per 1M output tokens", "gpu_hourly x GPUs per replica x replicas / "
             "(3600 x the replicas' summed generation tok/s) x 1e6, now (needs a capacity "
             "block with gpu_hourly).", "currencyUSD",
             [(f"max by (target, model) "
               f"(llmprobe_fleet_cost_per_million_output_tokens_dollars{{{SEL_TM}}})",
               "{{target}}")], w=4, h=8, decimals=2),
        stat("Since replica refresh", "Seconds since the replica set was last refreshed "
             "(DNS or SD read) successfully; after a failed refresh the last good set is "
             "kept and probed.", "s",
             [(f"time() - max by (target, model) "
               f"(llmprobe_discovery_last_success_timestamp_seconds{{{SEL_TM}}})",
               "{{target}}")],
             w=4, h=8, thresholds=[("green", None), ("orange", 120), ("red", 600)]),
        stat("Discovery errors", "Failed refreshes of the replica set (DNS or SD errors) "
             "over the dashboard range.", "short",
             [(f"sum by (target, model) "
               f"(increase(llmprobe_discovery_errors_total{{{SEL_TM}}}[$__range]))",
               "{{target}}")],
             w=4, h=8, thresholds=[("green", None), ("orange", 1)], decimals=0),
        replica_table(),
        timeseries("TTFT p99 per replica", "TTFT p99 of each replica's own probes over 5m "
                   "windows (the rule llmprobe:replica_ttft:p99_rate5m); at a low "
                   "replica_rate, few probes fall in a window and the line has holes.", "s",
                   [(f"histogram_quantile(0.99, sum by ({BY_REPLICA}, le) "
                     f"(rate(llmprobe_replica_ttft_seconds_bucket{{{SEL}}}[5m])))",
                     "{{replica}} {{target}}")]),
        timeseries("Running and waiting per replica", "Each replica engine's running and "
                   "waiting requests: uneven load, or one replica queueing while others "
                   "idle.", "short",
                   [(f"sum by ({BY_REPLICA}) (llmprobe_replica_engine_running_requests{{{SEL_TM}}})",
                     "running {{replica}} {{target}}"),
                    (f"sum by ({BY_REPLICA}) (llmprobe_replica_engine_waiting_requests{{{SEL_TM}}})",
                     "waiting {{replica}} {{target}}")]),
    ]


def gpu_live(suffix: str) -> str:
    """A GPU telemetry family (`llmprobe_{fleet,engine}_<suffix>`, dcgm-exporter matched to
    the engines): the fleet's where the target discovers its replicas, else its engine's.
    HA twins read the same exporter, hence `max` on both sides."""
    return fleet_or_engine(f"llmprobe_fleet_{suffix}", f"llmprobe_engine_{suffix}", "max")


def energy_panels() -> list[dict]:
    """What the GPUs behind a target draw and what a token costs in energy, dollars and
    CO2; empty for targets without GPU telemetry."""
    gpu_part = gpu_live("gpu_cost_per_million_output_tokens_dollars")
    energy_part = gpu_live("energy_cost_per_million_output_tokens_dollars")
    return [
        row("Energy and cost per token"),
        timeseries("GPU power", "Power drawn by the GPUs matched to the target's engines "
                   "(dcgm-exporter), summed over those GPUs: over every scraped replica's "
                   "for a target with replicas_from, else the engine's behind the front "
                   "door.", "watt",
                   [(gpu_live("gpu_power_watts"), "power {{target}}")], w=8),
        timeseries("GPU utilisation", "Mean utilisation of the matched GPUs (0..1). High "
                   "while the engine generates no tokens is LlmprobeGpusBusyNoTokens (over "
                   "50% for 10m): a stuck engine, or another process on the GPUs.",
                   "percentunit",
                   [(gpu_live("gpu_utilization_ratio"), "utilisation {{target}}")], w=8),
        stat("GPUs matched", "GPUs of the exporter matched to the target's engines (summed "
             "over the replicas). 0 or fewer than deployed: the match is wrong, and every "
             "figure of this row with it.", "short",
             [(gpu_live("gpus"), "{{target}}")], w=4, h=8, decimals=0),
        stat("GPU scrape", "Whether the last scrape of the GPU exporter worked; when it "
             "fails, this row goes stale.", "bool_yes_no",
             [(f"min by (target, model) (llmprobe_fleet_gpu_scrape_success{{{SEL_TM}}})\n"
               f"or min by (target, model) (llmprobe_engine_gpu_scrape_success{{{SEL_TM}}})",
               "{{target}}")],
             w=4, h=8, thresholds=[("red", None), ("green", 1)]),
        timeseries("Energy per output token", "Δ GPU energy / Δ generation tokens of the "
                   "engines over each scrape window (idle power included; absent while no "
                   "token is generated); for a fleet, its summed energy over its summed "
                   "tokens.", "joule",
                   [(gpu_live("energy_per_output_token_joules"), "J/token {{target}}")], w=8),
        timeseries("Output tokens per joule", "The inverse: generation tokens per joule the "
                   "GPUs drew (absent while no token is generated). Higher is better.",
                   "suffix: tok/J",
                   [(gpu_live("output_tokens_per_joule"), "tok/J {{target}}")], w=8),
        timeseries("CO₂ per 1M output tokens", "J/token x 1e6 / 3.6e6 x grams_co2_per_kwh: "
                   "grams of CO₂ per million output tokens (only with grams_co2_per_kwh "
                   "configured).", "massg",
                   [(gpu_live("co2_per_million_output_tokens_grams"), "CO₂ {{target}}")], w=8),
        timeseries("$ per 1M output tokens by part", "GPU part: gpu_hourly x matched GPUs "
                   "/ 3600 / generation tok/s x 1e6. Energy part: J/token x 1e6 / 3.6e6 x "
                   "energy_price_per_kwh (only with energy_price_per_kwh configured). Their "
                   "sum (the GPU part alone without an energy price).", "currencyUSD",
                   [(gpu_part, "GPU {{target}}"),
                    (energy_part, "energy {{target}}"),
                    (f"({gpu_part})\n+ (({energy_part})\n   or 0 * ({gpu_part}))",
                     "GPU + energy {{target}}")], w=8),
        timeseries("Decode throughput vs roofline at the live batch", "The engines' "
                   "measured generation tok/s next to the capacity model's decode roofline "
                   "at the live batch (the running requests), where \"Decode throughput: "
                   "model vs live\" takes the largest batch that fits.", "suffix: tok/s",
                   [(fleet_or_engine("llmprobe_fleet_generation_tokens_per_second",
                                     "llmprobe_engine_generation_tokens_per_second", "max"),
                     "measured {{target}}"),
                    (gpu_live("roofline_tokens_per_second"), "roofline {{target}}")], w=8),
        timeseries("Roofline efficiency", "Measured generation tok/s / roofline tok/s at "
                   "the live batch. The roofline bounds decode from above; a ratio that "
                   "falls at the same batch is a slower engine (kernels, clocks, power or "
                   "thermal throttling).", "percentunit",
                   [(gpu_live("roofline_efficiency_ratio"), "{{target}}")], w=8),
    ]


def prefix_cache_panels() -> list[dict]:
    """Whether a repeated prompt prefix is served from the engines' prefix cache, seen from
    the prefix_cache scenarios' sessions (a cold probe, then warm probes reusing its
    prefix) and from the engine's own counters; empty for targets without such a scenario.
    Gauges over HA twins and locations: the best prober, as LlmprobePrefixCacheIneffective
    reads them (alerts/llmprobe-alerts.yaml)."""
    def tokens(family: str) -> str:
        return (f"sum by ({BY}, phase) "
                f"(increase(llmprobe_prefix_cache_{family}_tokens_total{{{SEL}}}[$__range]))")
    return [
        row("Prefix cache"),
        timeseries("Prefix cache hit ratio: probes vs engine", "Probes: the warm probes' "
                   "cached prompt tokens over their prompt tokens, as the server reports "
                   "them, over the scenario's last sessions (absent when the server reports "
                   "no cached tokens), with its objective: LlmprobePrefixCacheIneffective "
                   "tickets under it for 30m. Engine: the engine's own prefix-cache hit "
                   "ratio over its last scrape interval, over all its traffic. Both low: "
                   "the cache is off; the engine's normal while the probes' is low: the "
                   "router spreads sessions or the prefix changes on the way.",
                   "percentunit",
                   [(f"max by ({BY}) (llmprobe_prefix_cache_hit_ratio{{{SEL}}})",
                     "probes {{target}}/{{scenario}}"),
                    (f"min by ({BY}) (llmprobe_prefix_cache_objective_hit_ratio{{{SEL}}})",
                     "objective {{target}}/{{scenario}}"),
                    (f"max by (target, model) (llmprobe_engine_prefix_cache_hit_ratio{{{SEL_TM}}})",
                     "engine {{target}}")]),
        timeseries("Warm/cold TTFT ratio", "The warm probes' mean TTFT over the cold probes' "
                   "of the same sessions, with its objective: LlmprobePrefixCacheIneffective "
                   "tickets above it for 30m. The only signal from a server that reports no "
                   "cached tokens. Near 1 with a high hit ratio: the prefix is too short to "
                   "matter next to queueing and the network.", "percentunit",
                   [(f"min by ({BY}) (llmprobe_prefix_cache_ttft_ratio{{{SEL}}})",
                     "ratio {{target}}/{{scenario}}"),
                    (f"max by ({BY}) (llmprobe_prefix_cache_objective_ttft_ratio{{{SEL}}})",
                     "objective {{target}}/{{scenario}}")]),
        timeseries("Cold vs warm TTFT", "TTFT quantiles of the cold probes (a prefix no "
                   "engine has seen, prefilled whole) and of the warm ones (the same prefix "
                   "again). The gap is what the cache saves on every repeated prefix; it "
                   "closes when the cache stops working.", "s",
                   [(f"histogram_quantile({q}, sum by ({BY}, phase, le) "
                     f"(rate(llmprobe_prefix_cache_ttft_seconds_bucket{{{SEL}}}[{RATE}])))",
                     f"p{int(q * 100)} {{{{phase}}}} {{{{target}}}}/{{{{scenario}}}}")
                    for q in (0.5, 0.99)]),
        timeseries("Warm probes on their session's endpoint", "Share of the warm probes "
                   "served by the endpoint that served their session's cold probe, from the "
                   "gateway's x-gateway-destination-endpoint-served response header (absent "
                   "when the gateway does not send it). Under 0.9 while the hit ratio is "
                   "low: the router spreads sessions; about 1: the cache is off or the "
                   "prefix changes.", "percentunit",
                   [(f"max by ({BY}) (llmprobe_prefix_cache_same_endpoint_ratio{{{SEL}}})",
                     "{{target}}/{{scenario}}")],
                   thresholds=[("red", None), ("green", 0.9)]),
        timeseries("Prefix-cache probes by phase", "Cold and warm probes per second, and "
                   "those that failed (a failed probe counts in no ratio).", "reqps",
                   [(f"sum by ({BY}, phase) "
                     f"(rate(llmprobe_prefix_cache_probes_total{{{SEL}}}[{RATE}]))",
                     "{{phase}} {{target}}/{{scenario}}"),
                    (f"sum by ({BY}, phase) "
                     f"(rate(llmprobe_prefix_cache_failures_total{{{SEL}}}[{RATE}]))",
                     "failed {{phase}} {{target}}/{{scenario}}")]),
        stat("Cached prompt tokens over the range", "Cached prompt tokens over prompt "
             "tokens, as the server reports them, by phase over the dashboard range. Cold "
             "probes start with a fresh nonce, so theirs should be near 0.", "percentunit",
             [(f"{tokens('cached')}\n/\n{tokens('prompt')}",
               "{{phase}} {{target}}/{{scenario}}")], w=6, h=8, decimals=1),
        stat("Since the last session", "Seconds since the last completed session; the "
             "ratios above cover the last sessions, however old.", "s",
             [(f"time() - max by ({BY}) "
               f"(llmprobe_prefix_cache_last_session_timestamp_seconds{{{SEL}}})",
               "{{target}}/{{scenario}}")], w=6, h=8),
    ]


def capacity_dashboard() -> dict:
    panels = [
        row("Concurrency"),
        timeseries("Max concurrent sequences: model vs live", "The capacity model's maximum "
                   "concurrent sequences (KV pool tokens / context, vLLM's definition), the "
                   "live number and what is running now: summed over the scraped replicas "
                   "for a target with replicas_from, else from the engine behind the front "
                   "door.",
                   "short",
                   [(f"max by (target, model) (llmprobe_capacity_max_concurrent_sequences{{{SEL_TM}}})",
                     "model {{target}}"),
                    (fleet_or_engine("llmprobe_fleet_max_concurrent_sequences",
                                     "llmprobe_engine_max_concurrent_sequences", "max"),
                     "live {{target}}"),
                    (fleet_or_engine("llmprobe_fleet_running_requests",
                                     "llmprobe_engine_running_requests"),
                     "running {{target}}")]),
        timeseries("Engine running and waiting", "Requests the engines are running and "
                   "queueing (all clients, not only the probes): summed over the scraped "
                   "replicas for a target with replicas_from, else the engine behind the "
                   "front door.", "short",
                   [(fleet_or_engine("llmprobe_fleet_running_requests",
                                     "llmprobe_engine_running_requests"),
                     "running {{target}}"),
                    (fleet_or_engine("llmprobe_fleet_waiting_requests",
                                     "llmprobe_engine_waiting_requests"),
                     "waiting {{target}}")]),
        stat("Headroom", "Free concurrency: 1 - running / max concurrent sequences (and "
             "1 - KV use, the smaller; 0 while requests queue). For a target with "
             "replicas_from, over the fleet's sums, 0 while any replica queues; else the "
             "single engine's (live numbers when scraped, else the model). "
             "LlmprobeHeadroomLow fires under 10%.", "percentunit",
             [(f"min by (target, model) (llmprobe_fleet_headroom_ratio{{{SEL_TM}}})\n"
               f"or min by (target, model) (llmprobe_capacity_headroom_ratio{{{SEL_TM}}})",
               "{{target}}")],
             thresholds=[("red", None), ("orange", 0.1), ("green", 0.25)], decimals=1),
        stat("Engine scrape", "Whether the last scrape of the front door engine's own "
             "/metrics (engine_metrics_url) worked; replicas: the fleet row below.",
             "bool_yes_no",
             [(f"min by (target, model) (llmprobe_engine_scrape_success{{{SEL_TM}}})",
               "{{target}}")],
             thresholds=[("red", None), ("green", 1)]),
        stat("Engine scrape duration", "How long the last engine /metrics scrape took.", "s",
             [(f"max by (target, model) (llmprobe_engine_scrape_duration_seconds{{{SEL_TM}}})",
               "{{target}}")], w=12),
        *fleet_panels(),
        row("KV cache and memory"),
        timeseries("KV cache usage", "Fraction of the engine's KV cache in use: the fullest "
                   "replica for a target with replicas_from, else the engine behind the front "
                   "door.", "percentunit",
                   [(f"max by (target, model) (llmprobe_replica_engine_kv_cache_usage_ratio{{{SEL_TM}}})\n"
                     f"or max by (target, model) (llmprobe_engine_kv_cache_usage_ratio{{{SEL_TM}}})",
                     "{{target}}")], thresholds=[("green", None), ("orange", 0.9)]),
        timeseries("KV cache tokens: model vs live", "KV pool size in tokens per replica from "
                   "the capacity model, and the engine's live KV capacity.", "short",
                   [(f"max by (target, model) (llmprobe_capacity_kv_cache_tokens{{{SEL_TM}}})",
                     "model {{target}}"),
                    (f"max by (target, model) (llmprobe_engine_kv_cache_tokens{{{SEL_TM}}})",
                     "live {{target}}")]),
        stat("Weights per GPU", "Model weight bytes resident on each GPU (capacity model).",
             "bytes",
             [(f"max by (target, model) (llmprobe_capacity_weight_bytes{{{SEL_TM}}})",
               "{{target}}")], w=12),
        stat("KV bytes per token per GPU", "KV cache bytes one token occupies on each GPU "
             "(capacity model).", "bytes",
             [(f"max by (target, model) (llmprobe_capacity_kv_bytes_per_token{{{SEL_TM}}})",
               "{{target}}")], w=12),
        row("Throughput and cost"),
        timeseries("Decode throughput: model vs live", "Aggregate decode tokens/s: the "
                   "roofline model at the largest batch that fits, and the engine's observed "
                   "generation rate.", "suffix: tok/s",
                   [(f"max by (target, model) (llmprobe_capacity_decode_tokens_per_second{{{SEL_TM}}})",
                     "model {{target}}"),
                    (fleet_or_engine("llmprobe_fleet_generation_tokens_per_second",
                                     "llmprobe_engine_generation_tokens_per_second", "max"),
                     "live {{target}}")]),
        timeseries("$ per 1M output tokens: model vs live", "price/h x GPUs / (3600 x "
                   "aggregate tok/s) x 1e6, from the model and from the observed rate.",
                   "currencyUSD",
                   [(f"max by (target, model) "
                     f"(llmprobe_capacity_cost_per_million_output_tokens_dollars{{{SEL_TM}}})",
                     "model {{target}}"),
                    (fleet_or_engine("llmprobe_fleet_cost_per_million_output_tokens_dollars",
                                     "llmprobe_engine_cost_per_million_output_tokens_dollars",
                                     "max"),
                     "live {{target}}")]),
        stat("Probe spend over the range", "What the probes themselves cost, for targets with a "
             "price.", "currencyUSD",
             [(f"sum by (target, model) (increase(llmprobe_probe_cost_dollars_total{{{SEL}}}[$__range]))",
               "{{target}}")], w=8, decimals=4),
        timeseries("Probe spend rate", "The probes' own spend in dollars per hour.",
                   "currencyUSD",
                   [(f"3600 * sum by (target, model) "
                     f"(rate(llmprobe_probe_cost_dollars_total{{{SEL}}}[{RATE}]))",
                     "$/h {{target}}")], w=16),
        timeseries("Probe tokens", "Prompt and output tokens per second the probes send and "
                   "receive.", "suffix: tok/s",
                   [(f"sum by (target, model) (rate(llmprobe_prompt_tokens_total{{{SEL}}}[{RATE}]))",
                     "prompt {{target}}"),
                    (f"sum by (target, model) (rate(llmprobe_output_tokens_total{{{SEL}}}[{RATE}]))",
                     "output {{target}}")], w=24),
        *energy_panels(),
        *prefix_cache_panels(),
        row("Client vs server"),
        timeseries("TTFT: client vs server", "Mean TTFT of the probes and the engine's own "
                   "server-side mean (llmprobe_engine_ttft_observed_seconds_total over "
                   "_observations_total, the engine histogram's sum and count as counters), both "
                   "over the same window, and their gap: network, TLS, proxies, queueing in "
                   "front of the engine. Caveat: the server mean covers ALL the engine's traffic "
                   "(production prompts of other lengths, prefix-cache hits), the client mean "
                   "only the probes; a gap that moves matters more than its value, and it can "
                   "be negative. At low probe rates most $__rate_interval windows hold no probe "
                   "(no client line): the 1h gap is the steady one.", "s",
                   [(client_ttft(RATE), "client {{target}}"),
                    (server_ttft(RATE), "server {{target}}"),
                    (f"{client_ttft(RATE)}\n-\n{server_ttft(RATE)}", "gap {{target}}"),
                    (f"{client_ttft('1h')}\n-\n{server_ttft('1h')}", "gap 1h {{target}}")],
                   minimum=None, w=24),
    ]
    return dashboard("llmprobe-capacity", "llmprobe / Capacity & cost",
                     "Capacity model next to live engine load, headroom and $ per token.",
                     panels, probe_vars())


def dashboard(uid: str, title: str, description: str, panels: list[dict],
              variables: list[dict]) -> dict:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["llmprobe"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "annotations": {"list": [{
            "builtIn": 1,
            "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True,
            "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts",
            "type": "dashboard",
        }]},
        "links": [{
            "title": "llmprobe dashboards",
            "type": "dashboards",
            "tags": ["llmprobe"],
            "asDropdown": False,
            "includeVars": True,
            "keepTime": True,
            "icon": "external link",
            "targetBlank": False,
            "tooltip": "",
            "url": "",
        }],
        "templating": {"list": variables},
        "panels": layout(panels),
    }


def layout(panels: list[dict]) -> list[dict]:
    """Assigns ids and grid positions, left to right, wrapping at Grafana's 24 columns."""
    x = y = row_h = 0
    out = []
    for i, p in enumerate(panels, start=1):
        w, h = p.pop("_size")
        if x + w > 24:
            x, y, row_h = 0, y + row_h, 0
        p = {"id": i, "gridPos": {"h": h, "w": w, "x": x, "y": y}, **p}
        out.append(p)
        x += w
        row_h = max(row_h, h)
        if p["type"] == "row":
            x, y, row_h = 0, y + h, 0
    return out


DASHBOARDS = {"llmprobe-slo.json": slo_dashboard, "llmprobe-capacity.json": capacity_dashboard}


def render(build) -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a committed dashboard differs from the generated one")
    args = parser.parse_args()
    stale = []
    for name, build in DASHBOARDS.items():
        path = HERE / name
        text = render(build)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale dashboards (run dashboards/generate.py): {', '.join(stale)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
