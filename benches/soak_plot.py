#!/usr/bin/env python3
"""Summary, bounds check and SVG plot of a benches/soak.sh CSV (no matplotlib needed).

    soak_plot.py soak.csv [--warmup S] [--rss-bound-kib K] [--fd-bound N] [--check] [--svg F]

Growth after warm-up = the median of the last third of the samples after the warm-up
minus the median of the first third: a leak grows steadily, while open connections
(in-flight probes, pooled idle ones) make single samples jump up and down. With --check, exit 1 when RSS or fd growth exceeds its bound (or when the
daemon made no probes at all).
"""

import argparse
import csv
import sys


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("", None) else None) for k, v in r.items()})
    return rows


def slope(xs, ys):
    """Least-squares slope of ys over xs (per unit of xs)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def median(v):
    v = sorted(v)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2


def growth(rows, key, warmup):
    after = [r for r in rows if r["t_s"] >= warmup and r[key] is not None]
    if not after:
        return None, None, None
    third = max(1, len(after) // 3)
    base = median([r[key] for r in after[:third]])
    return base, median([r[key] for r in after[-third:]]) - base, slope(
        [r["t_s"] / 60 for r in after], [r[key] for r in after]
    )


def svg(rows, path, title):
    w, h, pad = 720, 440, 60
    panels = [
        ("RSS (MiB)", [("rss", lambda r: r["rss_kib"] / 1024, "#1f77b4")]),
        (
            "open fds / threads",
            [
                ("fds", lambda r: r["fds"], "#d62728"),
                ("threads", lambda r: r["threads"], "#2ca02c"),
            ],
        ),
    ]
    tmax = max(r["t_s"] for r in rows) / 60 or 1
    ph = (h - 2 * pad) / len(panels) - 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
    ]
    for i, (label, series) in enumerate(panels):
        top = pad + i * (ph + 40)
        vals = [f(r) for _, f, _ in series for r in rows]
        vmax = max(vals) * 1.15 or 1
        x0, x1, y0, y1 = pad, w - 20, top + ph, top
        out.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{ph}" fill="none" stroke="#999"/>')
        out.append(f'<text x="{x0 - 8}" y="{y1 + 4}" text-anchor="end">{vmax:.0f}</text>')
        out.append(f'<text x="{x0 - 8}" y="{y0 + 4}" text-anchor="end">0</text>')
        out.append(f'<text x="{x0 + 6}" y="{y1 + 14}">{label}</text>')
        for k, (name, f, color) in enumerate(series):
            pts = " ".join(
                f"{x0 + (r['t_s'] / 60) / tmax * (x1 - x0):.1f},{y0 - f(r) / vmax * ph:.1f}"
                for r in rows
            )
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>')
            out.append(f'<text x="{x1 - 80}" y="{y1 + 14 + 14 * k}" fill="{color}">{name}</text>')
        out.append(f'<text x="{x1}" y="{y0 + 14}" text-anchor="end">{tmax:.0f} min</text>')
        out.append(f'<text x="{x0}" y="{y0 + 14}">0</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--warmup", type=float, default=60)
    ap.add_argument("--rss-bound-kib", type=float, default=4096)
    ap.add_argument("--fd-bound", type=float, default=16)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--svg")
    a = ap.parse_args()
    rows = load(a.csv)
    if len(rows) < 2:
        print(f"{a.csv}: fewer than 2 samples", file=sys.stderr)
        return 1
    last = rows[-1]
    probes, fails = last["probes"] or 0, last["failures"] or 0
    print(
        f"{last['t_s'] / 60:.1f} min, {len(rows)} samples, {probes:.0f} probes "
        f"({probes / max(last['t_s'], 1):.1f}/s), {fails:.0f} failed ({fails / max(probes, 1):.1%})"
    )
    problems = []
    for key, unit, bound, scale in (
        ("rss_kib", "MiB", a.rss_bound_kib, 1024),
        ("fds", "", a.fd_bound, 1),
        ("threads", "", None, 1),
        ("tasks", "", None, 1),
    ):
        base, grew, per_min = growth(rows, key, a.warmup)
        if base is None:
            print(f"{key}: not sampled")
            continue
        vals = [r[key] for r in rows if r[key] is not None]
        print(
            f"{key}: min {min(vals) / scale:.1f} max {max(vals) / scale:.1f} {unit}; after "
            f"{a.warmup:.0f}s warm-up: first third {base / scale:.1f}, growth {grew / scale:+.1f} {unit} "
            f"(slope {per_min / scale:+.3f}/min)"
            + (f", bound {bound / scale:.1f}" if bound is not None else "")
        )
        if bound is not None and grew > bound:
            problems.append(f"{key} grew by {grew / scale:.1f} {unit} after warm-up (bound {bound / scale:.1f})")
    if probes <= 0:
        problems.append("the daemon made no probes")
    if a.svg:
        svg(rows, a.svg, f"llmprobe daemon soak: 20 probes/s with faults, {last['t_s'] / 60:.0f} min")
        print(f"plot written to {a.svg}")
    if a.check and problems:
        print("FAIL: " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
