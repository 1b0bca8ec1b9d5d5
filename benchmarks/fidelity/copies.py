"""Copies measured vs simulated, per copy kind and size, on one half of a fidelity data set.

``python benchmarks/fidelity/copies.py --data FILE [--data FILE ...] [--split train]``

For every H2D and D2H copy whose time the model computes (no ``duration_us``), the ratio of
its measured to its simulated device time (first DMA byte to last) and host call time, grouped
by direction, host memory, synchronous or not, and size; then the pageable copies' staging rate
in the pipelines by quarter of the seeds (the order they were measured in), which shows how
much that rate drifted during one device call. Look at the training half (the default): the
held-out half is for quoting figures, not for deciding what to change.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measurements import FidelityRun, load_fidelity_data, preset_as_calibrated_now  # noqa: E402

from swimlanes.engine import simulate  # noqa: E402
from swimlanes.engine.presets import DevicePreset  # noqa: E402
from swimlanes.timeline.timeline import NO_TIME, Timeline  # noqa: E402

#: (direction, host memory, "sync" or "async", bytes)
CopyKey = tuple[str, str, str, int]
#: Quarters of the seeds a data set's pipelines were measured in (seed order is run order).
QUARTERS = 4


def _rows(tl: Timeline) -> dict[int, int]:
    """Program index -> timeline row, of the ops that ran on the device."""
    return {int(tl.index[r]): r for r in range(len(tl)) if tl.start[r] != NO_TIME}


def copy_ratios(
    runs: list[FidelityRun], preset: DevicePreset
) -> dict[CopyKey, list[tuple[float, float]]]:
    """(measured / simulated device time, measured / simulated call time) of every modelled
    H2D and D2H copy of ``runs``, grouped by :data:`CopyKey`."""
    out: dict[CopyKey, list[tuple[float, float]]] = defaultdict(list)
    for run in runs:
        meas, sim = run.timeline, simulate(run.pipeline, preset)
        ms, ss = _rows(meas), _rows(sim)
        for i, op in enumerate(run.pipeline.program):
            if op.op not in ("h2d", "d2h") or op.duration_us is not None:
                continue
            if i not in ms or i not in ss:
                continue
            m, s = ms[i], ss[i]
            md, sd = int(meas.end[m] - meas.start[m]), int(sim.end[s] - sim.start[s])
            mc = int(meas.issue_end[m] - meas.issue_start[m])
            sc = int(sim.issue_end[s] - sim.issue_start[s])
            if md <= 0 or sd <= 0 or sc <= 0:
                continue
            sync = "sync" if op.is_async is False else "async"
            key = (op.op, op.host_memory or "pinned", sync, int(op.bytes or 0))
            out[key].append((md / sd, mc / sc))
    return dict(out)


def staging_rates_by_quarter(
    runs: list[FidelityRun], preset: DevicePreset, kind: str, min_bytes: int
) -> list[list[float]]:
    """GB/s of the pageable ``kind`` copies of at least ``min_bytes`` beyond their first
    staging chunk (bytes past the chunk over the device time past the chunk's pinned DMA),
    per quarter of the seeds."""
    chunk = preset.pageable_chunk_bytes(kind)
    first_ns = preset.copy_ns(kind, chunk, "pinned")
    quarters: list[list[float]] = [[] for _ in range(QUARTERS)]
    top = max((r.seed for r in runs), default=0) + 1
    for run in runs:
        meas = run.timeline
        ms = _rows(meas)
        for i, op in enumerate(run.pipeline.program):
            nbytes = int(op.bytes or 0)
            if op.op != kind or op.host_memory != "pageable" or op.duration_us is not None:
                continue
            if nbytes < min_bytes or nbytes <= chunk or i not in ms:
                continue
            dev = int(meas.end[ms[i]] - meas.start[ms[i]]) - first_ns
            if dev > 0:
                quarters[run.seed * QUARTERS // top].append((nbytes - chunk) / dev)
    return quarters


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _print_ratios(ratios: dict[CopyKey, list[tuple[float, float]]], least: int) -> None:
    for key in sorted(ratios):
        values = ratios[key]
        if len(values) < least:
            continue
        dev = [d for d, _ in values]
        call = statistics.median(c for _, c in values)
        kind, memory, sync, nbytes = key
        print(
            f"  {kind} {memory:8s} {sync:5s} {nbytes:>10d} B  n={len(values):4d}  device "
            f"{statistics.median(dev):5.2f} (p10 {_percentile(dev, 0.1):5.2f}, "
            f"p90 {_percentile(dev, 0.9):5.2f})  call {call:5.2f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True, help="a packed data set")
    ap.add_argument("--split", default="train", choices=("train", "held_out"))
    ap.add_argument("--least", type=int, default=8, help="leave out groups of fewer copies")
    args = ap.parse_args()
    for path in args.data:
        data = load_fidelity_data(path)
        preset = preset_as_calibrated_now(data)
        runs = [
            r
            for r in data.runs
            if r.split == args.split and not r.timeline.meta.get("cupti_unmatched")
        ]
        gpu = data.host.get("gpu", {}).get("name", "?")
        print(f"{gpu}, measured {data.host.get('date')}, {args.split} half, measured/simulated:")
        _print_ratios(copy_ratios(runs, preset), args.least)
        for kind in ("h2d", "d2h"):
            quarters = staging_rates_by_quarter(runs, preset, kind, 4 << 20)
            shown = " ".join(f"{statistics.median(q):.2f}" if q else "-" for q in quarters)
            print(f"  pageable {kind} >= 4 MiB, GB/s past the first chunk by seed quarter: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
