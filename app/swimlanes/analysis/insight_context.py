"""Insight building blocks: the :class:`Insight` record and the :class:`InsightContext` every
rule reads (the pipeline, its timeline aligned to the run start, the device preset, and figures
shared by the rules: metrics, each op's dependency-ready time, what-if simulations).

The rules are in ``insight_rules.py`` and ``insight_schedule.py``;
:func:`swimlanes.analysis.insights.explain` runs them; the what-if simulations go through
:mod:`swimlanes.analysis.what_if`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from swimlanes.analysis.what_if import what_if_makespan
from swimlanes.engine import DevicePreset
from swimlanes.model.document import (
    Op,
    Pipeline,
)
from swimlanes.timeline.compare import fmt_pct, fmt_time, run_origin
from swimlanes.timeline.metrics import Metrics, compute_metrics
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, Timeline

SEVERITIES: tuple[str, ...] = ("problem", "warning", "info")
#: Dependencies that the program's semantics impose (not queue or engine contention).
SEMANTIC_DEPS: tuple[str, ...] = ("stream", "event", "default_stream", "host")
#: Below this an effect is timer-noise sized and never reported.
MIN_ABS_NS = 5_000
BLOCKING_STREAM_KINDS = ("blocking", "per_thread_default")
HOST_SYNC_OPS = ("stream_sync", "event_sync")


@dataclass(frozen=True)
class Insight:
    """One finding about a schedule, tied to the ops it concerns.

    ``rule`` is a stable id (for tests, filters and docs); ``message`` says what happens and
    why in CUDA terms with figures; ``advice`` says what to change; ``op_indexes`` are program
    indexes (the GUI selects them); ``estimated_saving_ns`` is the makespan the model predicts
    the advice saves, when it could be estimated.
    """

    rule: str
    severity: str
    title: str
    message: str
    advice: str
    op_indexes: tuple[int, ...] = ()
    estimated_saving_ns: int | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}")
        # A fix the model says would not shorten the run has no saving to report.
        if self.estimated_saving_ns is not None and self.estimated_saving_ns <= 0:
            object.__setattr__(self, "estimated_saving_ns", None)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "title": self.title,
            "message": self.message,
            "advice": self.advice,
            "op_indexes": list(self.op_indexes),
            "estimated_saving_us": None
            if self.estimated_saving_ns is None
            else round(self.estimated_saving_ns / 1000.0, 3),
        }


# -- shared context ------------------------------------------------------------------------------
@dataclass
class InsightContext:
    """What every rule reads: the program, its timeline from t=0, the preset, shared figures."""

    pipeline: Pipeline
    timeline: Timeline
    preset: DevicePreset | None = None
    measured: Timeline | None = None
    #: True when ``timeline`` was simulated with ``preset``: it is the what-if baseline.
    timeline_is_model: bool = False
    _what_if_cache: dict[str, int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.timeline = self.timeline.shifted(-run_origin(self.timeline))

    # figures ------------------------------------------------------------------------------------
    @cached_property
    def metrics(self) -> Metrics:
        return compute_metrics(self.timeline)

    @cached_property
    def makespan(self) -> int:
        return max(int(self.timeline.makespan_ns), 1)

    def significant(self, ns: float, fraction: float = 0.02) -> bool:
        """Large enough to matter: above the noise floor and ``fraction`` of the makespan."""
        return ns >= max(MIN_ABS_NS, fraction * self.makespan)

    @cached_property
    def dep_ready(self) -> np.ndarray:
        """Per row, when the ops it semantically depends on were done (0 without such deps)."""
        tl = self.timeline
        ready = np.zeros(len(tl), dtype=np.int64)
        if len(tl.dep_src) == 0:
            return ready
        kinds = np.asarray([DEP_KINDS.index(k) for k in SEMANTIC_DEPS], dtype=np.int8)
        keep = np.isin(tl.dep_kind, kinds)
        src, dst = tl.dep_src[keep].astype(np.int64), tl.dep_dst[keep].astype(np.int64)
        src_end = tl.end[src]
        ok = src_end != NO_TIME
        np.maximum.at(ready, dst[ok], src_end[ok])
        return ready

    @cached_property
    def ready(self) -> np.ndarray:
        """Per row, the earliest the op could start: issued and its dependencies done."""
        return np.maximum(self.dep_ready, self.issued)

    @cached_property
    def issued(self) -> np.ndarray:
        """Per row, when the op reached the device's queues: when its API call returned, or
        for a blocking call (which returns only once the work is done) when the work began."""
        tl = self.timeline
        issued = np.where(tl.issue_end != NO_TIME, tl.issue_end, 0)
        return np.where(tl.start != NO_TIME, np.minimum(issued, tl.start), issued)

    @cached_property
    def _deps_by_dst(self) -> dict[int, list[tuple[int, int]]]:
        tl = self.timeline
        out: dict[int, list[tuple[int, int]]] = {}
        for src, dst, kind in zip(
            tl.dep_src.tolist(), tl.dep_dst.tolist(), tl.dep_kind.tolist(), strict=True
        ):
            out.setdefault(dst, []).append((src, kind))
        return out

    def deps_of(self, row: int, kinds: Iterable[str] = SEMANTIC_DEPS) -> list[tuple[int, str]]:
        """(source row, kind) of the dependencies of ``row`` of the given kinds."""
        wanted = {DEP_KINDS.index(k) for k in kinds}
        return [(src, DEP_KINDS[k]) for src, k in self._deps_by_dst.get(row, ()) if k in wanted]

    # rows, ops and names -----------------------------------------------------------------------
    def op(self, row: int) -> Op | None:
        """The pipeline op of a timeline row (None for rows the program does not have)."""
        i = int(self.timeline.index[row])
        prog = self.pipeline.program
        if 0 <= i < len(prog) and prog[i].op == self.timeline.op_kind(row):
            return prog[i]
        return None

    def rows_where(self, pred: Callable[[Op], bool]) -> list[int]:
        """Timeline rows whose pipeline op satisfies ``pred``, in program order."""
        rows = []
        for r in range(len(self.timeline)):
            op = self.op(r)
            if op is not None and pred(op):
                rows.append(r)
        return rows

    @cached_property
    def on_device(self) -> np.ndarray:
        """Rows with a device span (cached: the Timeline property recomputes it)."""
        return self.timeline.on_device

    @cached_property
    def _stream_kinds(self) -> dict[str, str]:
        return {s.name: s.kind for s in self.pipeline.all_streams}

    def stream_kind(self, name: str | None) -> str | None:
        return self._stream_kinds.get(name) if name else None

    def name(self, row: int) -> str:
        tl = self.timeline
        stream = tl.stream_name(row)
        where = f" on {stream}" if stream else ""
        return f"'{tl.labels[row] or tl.op_kind(row)}'{where} (#{int(tl.index[row])})"

    def names(self, rows: Sequence[int], limit: int = 4) -> str:
        shown = [self.name(r) for r in rows[:limit]]
        more = len(rows) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

    def indexes(self, rows: Iterable[int]) -> tuple[int, ...]:
        return tuple(sorted({int(self.timeline.index[r]) for r in rows}))

    def device_time(self, rows: Sequence[int]) -> int:
        tl = self.timeline
        rows_a = np.asarray(rows, dtype=np.int64)
        if len(rows_a) == 0:
            return 0
        ok = self.on_device[rows_a]
        return int((tl.end[rows_a][ok] - tl.start[rows_a][ok]).sum())

    def host_time(self, rows: Sequence[int]) -> int:
        tl = self.timeline
        total = 0
        for r in rows:
            if tl.issue_start[r] != NO_TIME and tl.issue_end[r] != NO_TIME:
                total += int(tl.issue_end[r] - tl.issue_start[r])
        return total

    @cached_property
    def _last_device_index(self) -> int:
        tl = self.timeline
        on = self.on_device & (tl.engine >= 0)
        return int(tl.index[on].max()) if np.any(on) else -1

    def device_work_after(self, row: int) -> bool:
        """Whether any op doing device work is issued after ``row``."""
        return int(self.timeline.index[row]) < self._last_device_index

    @cached_property
    def row_of_index(self) -> dict[int, int]:
        """Program index -> timeline row."""
        return {int(i): r for r, i in enumerate(self.timeline.index.tolist())}

    # what-if simulation ---------------------------------------------------------------------------
    def what_if_saving(
        self,
        key: str,
        change: Callable[[Pipeline], None] | None = None,
        preset: DevicePreset | None = None,
    ) -> int | None:
        """Makespan the model saves if ``change`` is applied to a copy of the pipeline (or the
        preset is replaced); None when no preset is known, the pipeline is too large to
        re-simulate quickly, or the engine refuses the changed pipeline."""
        if self.timeline_is_model:
            base: int | None = int(self.timeline.makespan_ns)
        else:
            base = self._simulated_makespan("base", None, None)
        alt = self._simulated_makespan(key, change, preset)
        if base is None or alt is None:
            return None
        return base - alt

    def _simulated_makespan(
        self, key: str, change: Callable[[Pipeline], None] | None, preset: DevicePreset | None
    ) -> int | None:
        if key not in self._what_if_cache:
            device = preset or self.preset
            self._what_if_cache[key] = (
                None if device is None else what_if_makespan(self.pipeline, device, change)
            )
        return self._what_if_cache[key]


def grade(ctx: InsightContext, cost_ns: float, saving: int | None = None) -> str:
    """Severity from what an effect costs: the model's what-if saving when known (the effect
    may be real but off the critical path), else the time it costs directly."""
    impact = cost_ns if saving is None else saving
    if impact >= 0.10 * ctx.makespan:
        return "problem"
    return "warning" if ctx.significant(impact) else "info"


def saving_text(ctx: InsightContext, saving: int | None, change: str) -> str:
    if saving is None or saving <= 0:
        return ""
    return (
        f" {change}, the model predicts {fmt_time(ctx.makespan - saving)} instead of "
        f"{fmt_time(ctx.makespan)} ({fmt_pct(saving, ctx.makespan)} shorter)."
    )
