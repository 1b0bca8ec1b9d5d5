"""Fit the preset's timing figures from measured runs: one global value per figure.

``swimlanes calibrate`` runs its own small pipelines and fits them here; the accuracy tool
(tests/gpu/accuracy.py ``--fit``) fits the shipped measurements of every example the same way.
Each figure is a median (or, for the bidirectional copy costs, a least-squares line) over every
op of every run that shows it cleanly, i.e. where nothing else could have delayed the op:

* ``host_call_gap_us``: a call's start minus the previous call's return;
* ``copy_launch_latency_us``: a pinned copy's start minus its call's end (issue cost after the
  call's start), when its engine was idle and its stream had nothing left to run;
* ``dependency_latency_us`` / ``kernel_dependency_latency_us``: an op's start minus the end of
  the previous op of its stream, issued well before that end, with its engine free then
  (other engine / kernel after kernel);
* ``copy_engine_gap_us``: a copy's start minus the end of the engine's previous copy when it
  was ready, with no copy of the other direction running then; ``bidirectional_rest_us`` (per
  direction) the extra when one was;
* ``bidirectional_slowdown`` and ``bidirectional_overhead_us`` (per direction): the line
  ``time against the other direction = (1 + slowdown) x work left for it + overhead`` through
  the copies that ran against the other direction for at least half their life (the work left
  is the copy's time alone less the time it ran alone).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

import numpy as np

from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import NO_TIME, Timeline

_ENGINE_CLASS = {"kernel": 0, "memset": 0, "d2d": 0, "h2d": 1, "d2h": 2}
_COPIES = ("h2d", "d2h")
#: An op counts as issued "well before" what it waits for when its call returned this early.
_EARLY_NS = 5000
#: Fewest samples a figure is fitted from.
MIN_SAMPLES = 3


class _Run:
    """One measured run with per-op facts (program order)."""

    def __init__(self, pipeline: Pipeline, tl: Timeline, preset: DevicePreset) -> None:
        order = np.argsort(tl.index, kind="stable")
        self.tl = tl
        self.rows = [int(r) for r in order]
        self.op = {int(r): pipeline.program[int(tl.index[r])] for r in order}
        self.kind = {r: tl.op_kind(r) for r in self.rows}
        self.timed = [r for r in self.rows if tl.start[r] != NO_TIME and tl.end[r] != NO_TIME]
        self.pinned = [
            r
            for r in self.timed
            if self.kind[r] in _COPIES and self.op[r].effective_host_memory == "pinned"
        ]
        self.preset = preset
        self.call_ns = _modelled_calls(pipeline, preset)

    def call_return(self, r: int) -> int:
        """When the model has ``r``'s call return: its start plus the call's modelled cost
        (by its place in the program, ``call_cost_factors``, and repeats included)."""
        index = int(self.tl.index[r])
        cost = self.call_ns[index] if self.call_ns else self.preset.issue_cost_ns(self.kind[r])
        return int(self.tl.issue_start[r]) + cost

    def solo_ns(self, r: int) -> int:
        op = self.op[r]
        if op.duration_us is not None:
            return round(op.duration_us * 1000.0)
        return self.preset.copy_ns(self.kind[r], op.bytes or 0, op.effective_host_memory)

    def other_copy_running(self, r: int, t: int) -> bool:
        """A copy of the other direction than ``r`` runs across time ``t``."""
        other = "d2h" if self.kind[r] == "h2d" else "h2d"
        tl = self.tl
        return any(self.kind[x] == other and tl.start[x] < t < tl.end[x] for x in self.pinned)


def fit_timing(runs: Iterable[tuple[Pipeline, Timeline]], preset: DevicePreset) -> dict[str, float]:
    """The timing figures the runs show (see the module docstring), rounded to ns.

    ``preset`` supplies the issue costs and copy rates the fit takes as known. A figure with
    fewer than MIN_SAMPLES clean samples is left out.
    """
    samples: dict[str, list[float]] = {}
    lines: dict[str, list[tuple[float, float]]] = {"h2d": [], "d2h": []}
    for pipeline, tl in runs:
        run = _Run(pipeline, tl, preset)
        _host_gaps(run, samples)
        _copy_launch(run, samples)
        _dependency_gaps(run, samples)
        _engine_gaps(run, samples)
        _bidirectional(run, lines)
    out: dict[str, float] = {}

    def median(key: str) -> float | None:
        values = samples.get(key, [])
        return statistics.median(values) if len(values) >= MIN_SAMPLES else None

    for key in (
        "host_call_gap_us",
        "copy_launch_latency_us",
        "dependency_latency_us",
        "kernel_dependency_latency_us",
        "copy_engine_gap_us",
    ):
        value = median(key)
        if value is not None:
            out[key] = round(max(0.0, value), 3)
    gap = out.get("copy_engine_gap_us", 0.0)
    for kind, suffix in (("h2d", ""), ("d2h", "_d2h")):
        contended = median(f"contended_gap_{kind}")
        if contended is not None:
            out[f"bidirectional_rest{suffix}_us"] = round(max(0.0, contended - gap), 3)
        line = _line(lines[kind])
        if line is not None:
            out[f"bidirectional_slowdown{suffix}"] = round(max(0.0, line[0] - 1.0), 4)
            out[f"bidirectional_overhead{suffix}_us"] = round(max(0.0, line[1]), 3)
    return out


def _modelled_calls(pipeline: Pipeline, preset: DevicePreset) -> list[int] | None:
    """Each op's call cost as the simulator charges it on ``preset`` (None: a pipeline the
    planner does not take, whose calls then cost their issue cost)."""
    from swimlanes.engine.plan import plan_ops

    try:
        plan = plan_ops(pipeline, preset)
    except (ValueError, KeyError):
        return None
    gap = round(preset.host_call_gap_us * 1000.0)
    return [cost - gap for cost in plan.cost]


def _add(samples: dict[str, list[float]], key: str, ns: float) -> None:
    samples.setdefault(key, []).append(ns / 1000.0)


def _host_gaps(run: _Run, samples: dict) -> None:
    tl, rows = run.tl, run.rows
    for a, b in zip(rows, rows[1:], strict=False):
        _add(samples, "host_call_gap_us", int(tl.issue_start[b]) - int(tl.issue_end[a]))


def _copy_launch(run: _Run, samples: dict) -> None:
    """Copies whose start only their launch can explain: engine idle, and the stream's last
    op a copy of the same kind done before the call (or one on another engine done long
    before: its dependency latency would count otherwise)."""
    tl = run.tl
    last: dict[int, int] = {}  # stream -> its last op on a device engine
    for r in run.rows:
        s = int(tl.stream[r])
        if r in run.pinned and r != run.rows[0]:
            call_return = run.call_return(r)
            idle = not any(
                run.kind[x] == run.kind[r] and x != r and tl.start[x] < tl.start[r]
                and tl.end[x] > call_return - 3000
                for x in run.pinned
            )  # fmt: skip
            p = last.get(s)
            if p is None:
                clear = True
            elif run.kind[p] == run.kind[r]:
                clear = int(tl.end[p]) <= int(tl.issue_start[r])
            else:
                clear = int(tl.end[p]) <= call_return - 2 * _EARLY_NS
            if idle and clear:
                _add(samples, "copy_launch_latency_us", int(tl.start[r]) - call_return)
        if r in run.timed and run.kind[r] in _ENGINE_CLASS:
            last[s] = r


def _dependency_gaps(run: _Run, samples: dict) -> None:
    tl = run.tl
    last: dict[int, int] = {}
    device = [r for r in run.timed if run.kind[r] in _ENGINE_CLASS]
    for r in device:
        s, cls = int(tl.stream[r]), _ENGINE_CLASS[run.kind[r]]
        p = last.get(s)
        last[s] = r
        if p is None or s < 0 or int(tl.issue_end[r]) > int(tl.end[p]) - _EARLY_NS:
            continue
        p_cls = _ENGINE_CLASS[run.kind[p]]
        if cls == p_cls and cls != 0:
            continue  # copies of one engine: its gap, fitted below
        end_p = int(tl.end[p])
        busy = any(
            _ENGINE_CLASS[run.kind[x]] == cls and x not in (p, r)
            and tl.start[x] < tl.start[r] and tl.end[x] > end_p
            for x in device
        )  # fmt: skip
        if not busy:
            key = "kernel_dependency_latency_us" if cls == p_cls else "dependency_latency_us"
            _add(samples, key, int(tl.start[r]) - end_p)


def _engine_gaps(run: _Run, samples: dict) -> None:
    tl = run.tl
    for kind in _COPIES:
        copies = sorted((r for r in run.pinned if run.kind[r] == kind), key=lambda r: tl.start[r])
        for a, b in zip(copies, copies[1:], strict=False):
            end_a = int(tl.end[a])
            if int(tl.issue_end[b]) > end_a - 2000:
                continue
            s = int(tl.stream[b])
            before = [
                x for x in run.timed
                if int(tl.stream[x]) == s and tl.index[x] < tl.index[b] and x != a
            ]  # fmt: skip
            if before and max(int(tl.end[x]) for x in before) > end_a - 2 * _EARLY_NS:
                continue  # b was not ready when a ended
            gap = int(tl.start[b]) - end_a
            if run.other_copy_running(a, end_a):
                _add(samples, f"contended_gap_{kind}", gap)
            else:
                _add(samples, "copy_engine_gap_us", gap)


def _bidirectional(run: _Run, lines: dict[str, list[tuple[float, float]]]) -> None:
    tl = run.tl
    for r in run.pinned:
        kind = run.kind[r]
        other = "d2h" if kind == "h2d" else "h2d"
        a, b = int(tl.start[r]), int(tl.end[r])
        if b <= a:
            continue
        against = min(
            b - a,
            sum(
                max(0, min(b, int(tl.end[x])) - max(a, int(tl.start[x])))
                for x in run.pinned
                if run.kind[x] == other
            ),
        )
        if against >= 0.5 * (b - a):
            # Time against the other direction = (1 + slowdown) x the work left for it + the
            # fixed cost, where the work left is the time alone less the time spent alone.
            alone = (b - a) - against
            lines[kind].append(((run.solo_ns(r) - alone) / 1000.0, against / 1000.0))


def _line(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares (slope, intercept) of contended time over contended work; through the
    origin when every point has about the same work."""
    if len(points) < MIN_SAMPLES:
        return None
    solo = np.array([p[0] for p in points])
    dur = np.array([p[1] for p in points])
    if np.ptp(solo) <= 1e-3 * solo.max():
        return float(np.median(dur / solo)), 0.0
    slope, intercept = np.polyfit(solo, dur, 1)
    return float(slope), float(intercept)
