"""Insight building blocks and the rules about how the host program drives the GPU.

Each rule is a small function ``rule(ctx) -> list[Insight]`` over an :class:`InsightContext`,
which holds the pipeline, its timeline aligned to the run start, the device preset and figures
shared by the rules (metrics, each op's dependency-ready time). The rules here look at the API
calls themselves: ``pageable_copy``, ``sync_copy``, ``legacy_default_serialises`` and
``launch_bound``. The schedule rules and :func:`swimlanes.timeline.insights.explain` live in
``insights.py``.

Where the device preset is known, rules estimate what a fix saves by simulating the changed
pipeline ("what if the copies were pinned?"): the estimate comes from the same model that drew
the chart, never from a rule of thumb.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from swimlanes.model.document import (
    COPY_OPS,
    DEFAULT_STREAM,
    HOST_COPY_OPS,
    OP_KINDS,
    Op,
    Pipeline,
)
from swimlanes.timeline.compare import fmt_bytes, fmt_gbps, fmt_pct, fmt_time, plural, run_origin
from swimlanes.timeline.metrics import Metrics, compute_metrics
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, Timeline

SEVERITIES: tuple[str, ...] = ("problem", "warning", "info")
#: Dependencies that the program's semantics impose (not queue or engine contention).
SEMANTIC_DEPS: tuple[str, ...] = ("stream", "event", "default_stream", "host")
#: Below this an effect is timer-noise sized and never reported.
MIN_ABS_NS = 5_000
#: Above this many ops, what-if estimates (one simulation each) are skipped to stay interactive.
WHAT_IF_MAX_OPS = 20_000
BLOCKING_STREAM_KINDS = ("blocking", "per_thread_default")
HOST_SYNC_OPS = ("stream_sync", "event_sync")
_KERNEL = OP_KINDS.index("kernel")


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
    preset: Any = None
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
        self, key: str, change: Callable[[Pipeline], None] | None = None, preset: Any = None
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
        self, key: str, change: Callable[[Pipeline], None] | None, preset: Any
    ) -> int | None:
        if key not in self._what_if_cache:
            self._what_if_cache[key] = self._simulate(change, preset or self.preset)
        return self._what_if_cache[key]

    def _simulate(self, change: Callable[[Pipeline], None] | None, device: Any) -> int | None:
        if device is None or len(self.pipeline.program) > WHAT_IF_MAX_OPS:
            return None
        try:
            from swimlanes.engine import simulate
        except ImportError:
            return None
        pipeline = self.pipeline.copy()
        if change is not None:
            change(pipeline)
        try:
            return int(simulate(pipeline, device).makespan_ns)
        except (ValueError, RuntimeError):  # the engine cannot run the variant: no estimate
            return None


def grade(ctx: InsightContext, cost_ns: float, saving: int | None = None) -> str:
    """Severity from what an effect costs: the model's what-if saving when known (the effect
    may be real but off the critical path), else the time it costs directly."""
    impact = cost_ns if saving is None else saving
    if impact >= 0.10 * ctx.makespan:
        return "problem"
    return "warning" if ctx.significant(impact) else "info"


def _saving_text(ctx: InsightContext, saving: int | None, change: str) -> str:
    if saving is None or saving <= 0:
        return ""
    return (
        f" {change}, the model predicts {fmt_time(ctx.makespan - saving)} instead of "
        f"{fmt_time(ctx.makespan)} ({fmt_pct(saving, ctx.makespan)} shorter)."
    )


# -- rules about the API calls -------------------------------------------------------------------
def pageable_copy(ctx: InsightContext) -> list[Insight]:
    """Copies from or to pageable host memory: staged, slow, and blocking the host thread."""
    rows = ctx.rows_where(
        lambda op: op.op in HOST_COPY_OPS and op.effective_host_memory == "pageable"
    )
    if not rows:
        return []
    tl = ctx.timeline
    nbytes = int(tl.bytes[rows].sum())
    dev_ns = ctx.device_time(rows)
    host_ns = ctx.host_time(rows)

    def pin(p: Pipeline) -> None:
        for op in p.program:
            if op.op in HOST_COPY_OPS and op.effective_host_memory == "pageable":
                op.host_memory = "pinned"

    saving = ctx.what_if_saving("pinned", pin)
    if not ctx.significant(host_ns) and not ctx.significant(dev_ns, 0.05):
        return []
    message = (
        f"{plural(len(rows), 'copy', 'copies')} ({fmt_bytes(nbytes)}) use pageable host "
        f"memory: {ctx.names(rows)}. The driver cannot DMA from pageable pages, so it stages "
        "each copy through a pinned bounce buffer: the copies ran at "
        f"{fmt_gbps(nbytes, dev_ns)} on average, and the host thread was blocked in them for "
        f"{fmt_time(host_ns)} ({fmt_pct(host_ns, ctx.makespan)} of the run), because an async "
        "H2D from pageable memory returns only once its data is staged and a D2H to pageable "
        "memory only when it is done. Nothing after them could be issued meanwhile."
        + _saving_text(ctx, saving, "With pinned host buffers")
    )
    return [
        Insight(
            rule="pageable_copy",
            severity=grade(ctx, host_ns, saving),
            title=f"{plural(len(rows), 'copy', 'copies')} use pageable host memory",
            message=message,
            advice=(
                "Allocate these host buffers pinned (cudaMallocHost / cudaHostAlloc; in Numba "
                "cuda.pinned_array, in PyTorch tensor.pin_memory()), or cudaHostRegister the "
                "existing buffers, and keep them for the whole run: pinning is costly, reuse it."
            ),
            op_indexes=ctx.indexes(rows),
            estimated_saving_ns=saving,
        )
    ]


def sync_copy(ctx: InsightContext) -> list[Insight]:
    """Synchronous copies and memsets (async false) that block the host or serialise the device."""
    rows = ctx.rows_where(lambda op: op.op in (*COPY_OPS, "memset") and not op.effective_async)
    # a blocking copy with no device work issued after it (fetching the result) costs nothing
    rows = [r for r in rows if ctx.device_work_after(r)]
    if not rows:
        return []
    host_ns = ctx.host_time(rows)

    def make_async(p: Pipeline) -> None:
        for op in p.program:
            if op.op in (*COPY_OPS, "memset") and not op.effective_async:
                op.is_async = True

    saving = ctx.what_if_saving("async", make_async)
    if not ctx.significant(max(host_ns, saving or 0)):
        return []
    tl = ctx.timeline
    on_default = [r for r in rows if tl.stream_name(r) == DEFAULT_STREAM]
    memsets = sum(tl.op_kind(r) == "memset" for r in rows)
    what, whats = (
        ("copy", "copies")
        if memsets == 0
        else ("memset", "memsets")
        if memsets == len(rows)
        else ("copy or memset", "copies and memsets")
    )
    message = (
        f"{plural(len(rows), 'synchronous ' + what, 'synchronous ' + whats)} "
        f"({ctx.names(rows)}) block the host thread "
        f"until the device has finished them: {fmt_time(host_ns)} "
        f"({fmt_pct(host_ns, ctx.makespan)} of the run) during which no later call could be "
        "issued, so the GPU could not be given the next work ahead of time."
    )
    if on_default:
        message += (
            f" {len(on_default)} of them run on the legacy default stream, which also waits "
            "for, and holds back, every blocking stream."
        )
    message += _saving_text(ctx, saving, "Made asynchronous")
    return [
        Insight(
            rule="sync_copy",
            severity=grade(ctx, host_ns, saving),
            title=f"{plural(len(rows), 'synchronous ' + what, 'synchronous ' + whats)} "
            f"{'blocks' if len(rows) == 1 else 'block'} the host",
            message=message,
            advice=(
                "Use cudaMemcpyAsync / cudaMemsetAsync on a created stream with pinned host "
                "buffers (PyTorch: .to(device, non_blocking=True) from pinned memory), and "
                "synchronise once, with an event or stream sync, only where the host needs the "
                "data."
            ),
            op_indexes=ctx.indexes(rows),
            estimated_saving_ns=saving,
        )
    ]


def _blocking_stream_indexes(ctx: InsightContext) -> list[np.ndarray]:
    """Per blocking stream, the program indexes of its device ops (sorted)."""
    tl = ctx.timeline
    out = []
    for s, name in enumerate(tl.stream_names):
        if ctx.stream_kind(name) in BLOCKING_STREAM_KINDS:
            idx = np.sort(tl.index[ctx.on_device & (tl.stream == s)])
            if len(idx):
                out.append(idx)
    return out


def _default_stream_partners(
    ctx: InsightContext, row: int, streams: list[np.ndarray]
) -> tuple[list[int], list[int]]:
    """Blocking-stream ops that a legacy default stream op waited for / that waited for it:
    the last device op of each blocking stream issued before it, the first issued after it."""
    me = int(ctx.timeline.index[row])
    before, after = [], []
    for idx in streams:
        k = int(np.searchsorted(idx, me))
        if k > 0:
            before.append(ctx.row_of_index[int(idx[k - 1])])
        if k < len(idx) and idx[k] == me:
            k += 1
        if k < len(idx):
            after.append(ctx.row_of_index[int(idx[k])])
    return before, after


def legacy_default_serialises(ctx: InsightContext) -> list[Insight]:
    """Device work on the legacy default stream serialising the blocking streams around it."""
    tl = ctx.timeline
    legacy = [
        s for s, name in enumerate(tl.stream_names) if ctx.stream_kind(name) == "legacy_default"
    ]
    rows = np.flatnonzero(ctx.on_device & np.isin(tl.stream, legacy)).tolist()
    waited_for: list[int] = []
    waited_by: list[int] = []
    culprits = []
    streams = _blocking_stream_indexes(ctx)
    for r in rows:
        before, after = _default_stream_partners(ctx, r, streams)
        if before or after:
            culprits.append(r)
            waited_for += before
            waited_by += after
    if not culprits:
        return []

    def unblock(p: Pipeline) -> None:
        for s in p.streams:
            if s.kind in BLOCKING_STREAM_KINDS:
                s.kind = "non_blocking"

    saving = ctx.what_if_saving("non_blocking", unblock)
    if saving is not None and not ctx.significant(saving, 0.01):
        return []  # the barriers are real but cost nothing here
    waited_for = sorted(set(waited_for))
    waited_by = sorted(set(waited_by) - set(culprits))
    message = (
        f"{ctx.names(culprits)} run on the legacy default stream, which is synchronising: "
        "an op there starts only after all previously issued work in every blocking stream, "
        "and work issued later to blocking streams waits for it."
    )
    it, them = ("It", "it") if len(culprits) == 1 else ("They", "them")
    if waited_for:
        message += f" {it} waited for {ctx.names(waited_for)}."
    if waited_by:
        message += f" Then {ctx.names(waited_by)} waited for {them}."
    message += _saving_text(ctx, saving, "With non-blocking streams")
    return [
        Insight(
            rule="legacy_default_serialises",
            severity=grade(ctx, 0, saving) if saving is not None else "warning",
            title="The legacy default stream serialises the other streams",
            message=message,
            advice=(
                "Move this work to a created stream, create the other streams with "
                "cudaStreamCreateWithFlags(..., cudaStreamNonBlocking), or build with "
                "--default-stream per-thread (nvcc) / CUDA_API_PER_THREAD_DEFAULT_STREAM so the "
                "default stream stops synchronising; order what must be ordered with events."
            ),
            op_indexes=ctx.indexes([*culprits, *waited_for, *waited_by]),
            estimated_saving_ns=saving,
        )
    ]


def _free_launch_saving(ctx: InsightContext) -> int | None:
    """What the model saves when kernel launches cost the host nothing (an upper bound for
    CUDA Graphs, whose single launch still costs a few microseconds)."""
    costs = getattr(ctx.preset, "issue_cost_us", None)
    if not dataclasses.is_dataclass(ctx.preset) or not isinstance(costs, dict):
        return None
    free = dataclasses.replace(ctx.preset, issue_cost_us={**costs, "kernel": 0.0})
    return ctx.what_if_saving("free-launches", None, free)


def launch_bound(ctx: InsightContext) -> list[Insight]:
    """Many short kernels whose launches, not their work, set the pace."""
    tl = ctx.timeline
    kernels = np.flatnonzero((tl.kind == _KERNEL) & ctx.on_device & (tl.issue_end != NO_TIME))
    if len(kernels) < 20:
        return []
    run = tl.end[kernels] - tl.start[kernels]
    cost = tl.issue_end[kernels] - tl.issue_start[kernels]
    host_limited = kernels[(tl.issue_end[kernels] >= ctx.dep_ready[kernels]) & (run < cost)]
    waiting = ctx.metrics.gpu_waiting_on_host_ns
    if len(host_limited) < max(20, len(kernels) // 2) or waiting < 0.2 * ctx.makespan:
        return []
    span = int(tl.issue_end[host_limited].max() - tl.issue_start[host_limited].min())
    rate = len(host_limited) / (span / 1e9) if span > 0 else 0.0
    message = (
        f"{len(host_limited)} kernels ran for {fmt_time(float(np.median(run)))} each (median) "
        f"but each launch cost the host {fmt_time(float(np.median(cost)))}: the host issued "
        f"{rate:,.0f} launches/s and the GPU waited on it for {fmt_time(waiting)} "
        f"({fmt_pct(waiting, ctx.makespan)} of the run). Between "
        f"{fmt_time(int(tl.issue_start[host_limited].min()))} and "
        f"{fmt_time(int(tl.issue_end[host_limited].max()))} the launch rate, not the GPU, sets "
        "the pace."
    )
    saving = _free_launch_saving(ctx)
    if saving is not None and saving > 0:
        message += (
            " If the launches cost the host nothing (one CUDA Graph launch for all of them), "
            f"the model predicts {fmt_time(ctx.makespan - saving)}."
        )
    return [
        Insight(
            rule="launch_bound",
            severity="problem" if waiting >= 0.5 * ctx.makespan else "warning",
            title=f"Launch-bound: {len(host_limited)} short kernels wait on the host",
            message=message,
            advice=(
                "Launch fewer, bigger kernels: fuse the small ones or give each more work, or "
                "capture the sequence once as a CUDA Graph and launch the graph (one call), so "
                "the host issue cost is paid once; keep other host work off the issuing thread."
            ),
            op_indexes=ctx.indexes(host_limited),
            estimated_saving_ns=saving,
        )
    ]
