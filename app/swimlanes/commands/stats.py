"""``swimlanes stats TRACE [--json]``: per-stream op counts, busy time and overlap of a trace,
a saved run or a timeline file.

A file can hold several timelines (a Chrome trace Swimlanes exported with a simulation and a
measurement): each is summarised. The JSON's top-level keys describe the first (the measured
one, which the app opens), and ``timelines`` lists every timeline's summary in that shape.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.services.errors import CommandError
from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.formats.io import TraceError, load_timelines_any
from swimlanes.timeline.metrics import (
    compute_metrics,
    covered_at_least,
    device_op_mask,
    interval_union,
    metrics_json,
    union_length,
)
from swimlanes.timeline.timeline import Timeline

_COPY = np.array([OP_KINDS.index(k) for k in ("h2d", "d2h", "d2d")], dtype=np.int8)


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def _stream_pairs(
    names: list[str], unions: list[tuple[np.ndarray, np.ndarray]]
) -> list[dict[str, Any]]:
    """Time each pair of streams both run device work (from each stream's busy union)."""
    busy = [int((e - s).sum()) for s, e in unions]
    pairs = []
    for a in range(len(unions)):
        for b in range(a + 1, len(unions)):
            both = union_length(
                np.concatenate([unions[a][0], unions[b][0]]),
                np.concatenate([unions[a][1], unions[b][1]]),
            )
            pairs.append(
                {"a": names[a], "b": names[b], "overlap_us": _us(busy[a] + busy[b] - both)}
            )
    return pairs


def stats_json(tl: Timeline) -> dict[str, Any]:
    """Per-stream counts and busy time, engine busy time, and stream-pair overlap."""
    m = compute_metrics(tl)
    dev = device_op_mask(tl)
    unions = []
    streams = []
    for s, name in enumerate(tl.stream_names):
        on = tl.stream == s
        unions.append(interval_union(tl.start[dev & on], tl.end[dev & on]))
        streams.append(
            {
                "name": name,
                "ops": int(on.sum()),
                "kernels": int((on & (tl.kind == OP_KINDS.index("kernel"))).sum()),
                "memcpy": int((on & np.isin(tl.kind, _COPY)).sum()),
                "memset": int((on & (tl.kind == OP_KINDS.index("memset"))).sum()),
                "busy_us": _us(m.stream_busy_ns[name]),
            }
        )
    pairs = _stream_pairs(tl.stream_names, unions)
    engines = {
        name: {
            "ops": int((dev & (tl.engine == e)).sum()),
            "busy_us": _us(m.engine_busy_ns[name]),
            "busy_pct": round(m.engine_busy_pct[name], 2),
        }
        for e, name in enumerate(tl.engine_names)
    }
    return {
        "name": tl.name,
        "source": tl.source,
        "device": tl.device,
        "ops": len(tl),
        "makespan_us": _us(m.makespan_ns),
        "streams": streams,
        "engines": engines,
        "overlap": {
            "pairs": pairs,
            "total_us": _us(covered_at_least(unions, 2)),
            "engines_us": _us(m.overlap_ns),
            "compute_copy_us": _us(m.compute_copy_overlap_ns),
        },
        "host_only_ops": int((tl.stream < 0).sum()),
        "metrics": metrics_json(m),
    }


def _ms(us: float) -> str:
    return fmt_time(us * 1000.0)


def format_stats(st: dict[str, Any]) -> str:
    """The human-readable form of :func:`stats_json`."""
    where = f" on {st['device']}" if st["device"] else ""
    lines = [
        f"{st['name']}: {st['source']}{where}, {st['ops']} ops, makespan {_ms(st['makespan_us'])}",
        "",
        f"{'stream':<24}{'ops':>8}{'kernels':>9}{'memcpy':>8}{'memset':>8}{'busy':>14}",
    ]
    for s in st["streams"]:
        lines.append(
            f"{s['name'][:23]:<24}{s['ops']:>8}{s['kernels']:>9}{s['memcpy']:>8}"
            f"{s['memset']:>8}{_ms(s['busy_us']):>14}"
        )
    if st["host_only_ops"]:
        lines.append(f"{'(host only)':<24}{st['host_only_ops']:>8}")
    lines += ["", f"{'engine':<24}{'ops':>8}{'busy':>14}{'busy %':>9}"]
    for name, e in st["engines"].items():
        lines.append(f"{name:<24}{e['ops']:>8}{_ms(e['busy_us']):>14}{e['busy_pct']:>8.1f}%")
    ov = st["overlap"]
    lines += ["", "stream overlap (time both streams run device work):"]
    lines += [f"  {p['a']} + {p['b']}: {_ms(p['overlap_us'])}" for p in ov["pairs"]] or ["  none"]
    met = st["metrics"]
    lines += [
        f"  two or more streams busy: {_ms(ov['total_us'])}",
        f"two or more engines busy: {_ms(ov['engines_us'])} ({met['overlap_pct']:.1f}%), "
        f"compute with copies: {_ms(ov['compute_copy_us'])}",
        f"GPU idle: {_ms(met['gpu_idle_us'])}, of which waiting on the host: "
        f"{_ms(met['gpu_waiting_on_host_us'])}",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        timelines, _pipeline = load_timelines_any(args.trace)
    except TraceError as err:
        raise CommandError(f"{args.trace}: {err}") from None
    each = [stats_json(tl) for tl in timelines]
    if args.json:
        print(json.dumps({**each[0], "timelines": each}, indent=2))
    elif len(each) == 1:
        print(format_stats(each[0]))
    else:
        names = ", ".join(f"{st['name']} ({st['source']})" for st in each)
        blocks = [f"{len(each)} timelines in this file: {names}"]
        print("\n\n".join(blocks + [format_stats(st) for st in each]))
    return 0
