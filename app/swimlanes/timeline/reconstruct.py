"""A measured timeline (a profiler trace, a capture) rebuilt as an editable pipeline.

The pipeline replays the host program the timeline recorded, call by call in issue order:

* **streams**: one per stream of the trace. A capture (``swimlanes capture``) says which is
  the legacy default stream (``default``) and each created stream's flags and priority. In a
  PyTorch (Kineto) trace, stream 7 is PyTorch's default stream, the legacy default stream, and
  every other stream is ``non_blocking``, as PyTorch creates its side streams. Other traces:
  every stream is ``blocking``.
* **kernels** keep their measured device time (``duration_us``) and, where the trace gives
  grid and block, their launch shape (``blocks``, ``threads``; else one block of 256 threads,
  which shares the SMs as a small kernel would); **copies** their direction, bytes and host
  memory (pageable where the trace says so, else pinned), and ``is_async: false`` when the
  call was a synchronous ``cudaMemcpy``; **memsets** their bytes. H2D and D2H copies also
  keep their measured device time (``duration_us``): the program's own copies, from its own
  buffers, ran at a speed no calibration of other buffers predicts (PyTorch's 4 MiB ``.cpu()``
  copies took 323 us (median) in one run and 1131 us in another on the same kind of host; a
  CuPy pinned H2D ran at 42 GB/s where calibrate had measured 55 GB/s a minute earlier). A
  pinned copy that a copy of the other direction overlapped keeps the time it would have
  taken alone by the slowdown of the preset it is rebuilt for (``contention``): the
  simulator slows it down again wherever the replay overlaps it, so a replay that overlaps
  it as measured gives back its measured time, and an edit that moves it away from the other
  direction gives it its time alone (the same host's 16 MiB H2D copies ran 12% slower against
  D2H copies in one capture and 62% in another, where calibrate said 24%). Rebuilt without a
  preset, such a copy stays modelled. An async pageable H2D keeps its measured call as
  ``call_us`` too: it returns once its data is staged, and the simulator stages for what is
  left of that call after the call's cost. A pageable D2H keeps the host's time after its DMA
  (copying the last chunk out, returning) as ``copy_out_us``. That time belongs to the copy as
  it was measured:
  changing its host memory drops it, and its staging call's time with it, as does making
  the staging call synchronous (:func:`swimlanes.model.op_defaults.host_memory_changes`,
  ``async_changes``), so that the model times the copy as edited. (A typed or measured
  ``duration_us`` stays through a change of size or direction: the inspector shows it as the
  copy's duration override, which the user clears to let the model time the copy.)
* **events**: a wait or event sync whose record the trace names waits on that record's event
  (``e<row>``); the record goes on the stream the trace says it was waited on, else on the
  stream of the last GPU work issued before it. A wait whose record is unknown, or a record on
  an unknown stream that nothing waits for, cannot be replayed and is left out (listed in the
  notes).
* **syncs** (stream, event, device), ``malloc`` and ``free`` as they were called.
* **host time between calls** (the program's own work, and calls Swimlanes does not model) as
  ``host`` ops: each gap longer than ``min_host_gap_us``;
* **host threads**: calls made from several host threads (``meta["host_threads"]``, which a
  capture and a trace import record) replay as several threads (``thread 0``, ``thread 1``, in
  the order of their first call), each with its own calls and its own host time between them;
  a program of one thread stays one.
* **each call's own measured time** as its ``call_us`` when the call does not wait for the
  device (a kernel launch, an async copy, an event record, a first ``cudaMalloc`` initialising
  the context): the simulation then spends what the program spent, on any preset. A call that
  waits (a sync, a synchronous or pageable copy) keeps the preset's cost: its wait is what the
  model predicts, and an edit (pinning the memory, dropping the sync) must be able to change it.
  A pageable D2H or synchronous copy's call keeps the preset's cost too (its device time is
  the measured one); an async pageable H2D's measured call is its staging (above).

:func:`reconstruct` also returns the measurement re-indexed to the pipeline's program (host gap
ops shift the indices; left-out rows get indices past the program), so that compare, the app's
side-by-side view and a saved run line the two up op by op. Qt-free.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swimlanes.model.document import (
    DEFAULT_STREAM,
    MAX_NAME_CHARS,
    OP_KINDS,
    HostThread,
    Op,
    Pipeline,
    Stream,
)
from swimlanes.timeline.metrics import covered_before, interval_union
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, Timeline

#: PyTorch's default stream in Kineto traces (the legacy default stream).
KINETO_DEFAULT_STREAM = "stream 7"
#: Host gaps shorter than this are the calls' own overhead, not program work.
MIN_HOST_GAP_US = 2.0
#: Calls that wait for the device: their measured time is the wait the model simulates.
_WAITING_KINDS = ("stream_sync", "event_sync", "device_sync")
#: A kernel's shape when the trace does not say: one block of 256 threads.
UNKNOWN_SHAPE = (1, 256)

_SYNC_COPY_CALLS = ("cudaMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD", "cuMemcpy")
_EVENT_DEP = DEP_KINDS.index("event")


@dataclass
class Reconstruction:
    """The rebuilt pipeline, the measurement indexed to its program, and what was guessed or
    left out (one line each, for the user)."""

    pipeline: Pipeline
    measured: Timeline
    notes: list[str] = field(default_factory=list)


def reconstruct(
    tl: Timeline,
    *,
    name: str | None = None,
    min_host_gap_us: float = MIN_HOST_GAP_US,
    contention: CopyContention | None = None,
) -> Reconstruction:
    """Rebuild ``tl``'s host program as a pipeline (see the module doc); ``contention``: the
    copy slowdown of the preset it is rebuilt for, which lets copies that ran against the
    other direction keep their measured time too."""
    builder = _Builder(tl, min_host_gap_us, contention)
    program = builder.program()
    pipeline = Pipeline(
        name=name or (f"{tl.name} (rebuilt)" if tl.name else "rebuilt from a trace"),
        streams=builder.streams(),
        program=program,
        host_threads=[HostThread(name) for name in builder.thread_names],
    )
    replayed = (
        "kernels"
        if not builder.timed_copies
        else (
            "kernels and copies"
            if contention is not None
            else "kernels and copies (pinned ones where no copy of the other direction overlapped them)"
        )
    )
    pipeline.extra["description"] = (
        f"Rebuilt from a measured timeline of {len(tl)} ops"
        f"{' on ' + tl.device if tl.device else ''}: {replayed} keep their measured time, "
        "host time between calls became host ops, and calls that do not wait for the device "
        "keep their measured time (call_us)."
    )
    return Reconstruction(pipeline, builder.measured(len(program)), _summarised(builder.notes))


def _device_us(span_ns: int) -> float:
    """A measured device span as an op's ``duration_us``: us to the ns, at least 1 ns (the
    format takes only positive times)."""
    return max(0.001, round(span_ns / 1000.0, 3))


@dataclass(frozen=True)
class CopyContention:
    """How the preset a pipeline is rebuilt for slows an H2D and a D2H copy that run at once,
    per direction (H2D, D2H): the factor a copy's time grows by while a copy of the other
    direction runs, and the fixed cost (us) it pays the first time that happens (the
    preset's ``bidirectional_slowdown`` and ``bidirectional_overhead_us`` keys)."""

    slowdown: tuple[float, float]
    overhead_us: tuple[float, float]

    def alone_ns(self, kind: str, span_ns: int, overlapped_ns: int) -> int:
        """The time a copy of ``kind`` that took ``span_ns``, ``overlapped_ns`` of it against
        the other direction, would take alone: the model's slowdown taken out again, so
        that the model, overlapping it as measured, gives back ``span_ns``."""
        d = 0 if kind == "h2d" else 1
        slowed = max(0.0, overlapped_ns - self.overhead_us[d] * 1000.0) / (1.0 + self.slowdown[d])
        return round(span_ns - overlapped_ns + slowed)


def _overlapped_ns(tl: Timeline) -> dict[int, int]:
    """Rows of H2D and D2H copies that a copy of the other direction overlapped on the
    device, with how long (ns) it did."""
    kind = np.asarray(tl.kind)
    timed = (np.asarray(tl.start) != NO_TIME) & (np.asarray(tl.end) != NO_TIME)
    rows = {k: np.flatnonzero(timed & (kind == OP_KINDS.index(k))) for k in ("h2d", "d2h")}
    out: dict[int, int] = {}
    for mine, other in (("h2d", "d2h"), ("d2h", "h2d")):
        busy = interval_union(tl.start[rows[other]], tl.end[rows[other]])
        mine_rows = rows[mine]
        overlapped = covered_before(busy, tl.end[mine_rows]) - covered_before(
            busy, tl.start[mine_rows]
        )
        out.update((int(r), int(v)) for r, v in zip(mine_rows, overlapped, strict=True) if v > 0)
    return out


def _short(label: str) -> str:
    """A label within the file format's limit (C++ kernel names run to hundreds of characters):
    the start, which names the kernel, then an ellipsis."""
    return label if len(label) <= MAX_NAME_CHARS else label[: MAX_NAME_CHARS - 1] + "\u2026"


def _summarised(notes: list[str], keep: int = 3) -> list[str]:
    """One line per kind of note: the first few rows, then how many more."""
    by_what: dict[str, list[str]] = {}
    for note in notes:
        row, what = note.split(": ", 1)
        by_what.setdefault(what, []).append(row.removeprefix("row "))
    out = []
    for what, rows in by_what.items():
        more = f" and {len(rows) - keep} more" if len(rows) > keep else ""
        out.append(f"{what} (rows {', '.join(rows[:keep])}{more})")
    return out


def _host_threads(tl: Timeline) -> tuple[dict[int, str], list[str]]:
    """Each row's host thread and the threads' names (``thread 0``, ... in the order of their
    first call; after the stable issue-order sort the rows are in), from
    ``meta["host_threads"]``; nothing when the calls came from one thread."""
    raw = tl.meta.get("host_threads")
    if not isinstance(raw, list) or len(raw) != len(tl):
        return {}, []
    when = np.where(tl.issue_start != NO_TIME, tl.issue_start, tl.start)
    names: dict[str, str] = {}
    of_row: dict[int, str] = {}
    for row in np.argsort(when, kind="stable").tolist():
        key = raw[row]
        if isinstance(key, str | int) and key != "":
            of_row[row] = names.setdefault(str(key), f"thread {len(names)}")
    if len(names) < 2:
        return {}, []
    return of_row, list(names.values())


def _ranges(raw: Any) -> list[tuple[str, int, int]]:
    """The timeline's named ranges (``meta["ranges"]``: [name, start, end] in its ns): NVTX
    ranges of a capture or an Nsight Systems export, a PyTorch trace's record_function ones."""
    if not isinstance(raw, list):
        return []
    return [
        (str(r[0]), int(r[1]), int(r[2]))
        for r in raw
        if isinstance(r, list) and len(r) == 3 and all(type(v) is int for v in r[1:])
    ]


class _Builder:
    def __init__(
        self, tl: Timeline, min_host_gap_us: float, contention: CopyContention | None
    ) -> None:
        self.tl = tl
        self.contention = contention
        self.min_gap_ns = round(min_host_gap_us * 1000)
        self.kineto = tl.meta.get("trace_format") == "kineto"
        self.calls: list[str] = list(tl.meta.get("calls") or [""] * len(tl))
        self.shapes: dict[str, Any] = dict(tl.meta.get("kernel_shapes") or {})
        self.pageable = {int(r) for r in tl.meta.get("pageable_rows", [])}
        self.timed_copies = 0  # copies given their measured device time
        self.overlapped_ns = _overlapped_ns(tl)
        ranges = _ranges(tl.meta.get("ranges"))
        # By start; of ranges that start together, the first listed is taken (visited last).
        order = sorted(range(len(ranges)), key=lambda k: (ranges[k][1], -k))
        self.ranges = [ranges[k] for k in order]
        self.range_starts = [r[1] for r in self.ranges]
        self.notes: list[str] = []
        self.thread_of_row, self.thread_names = _host_threads(tl)
        self.op_of_row: dict[int, int] = {}
        self.record_of: dict[int, int] = {}  # consumer row -> record row
        for s, d, k in zip(
            tl.dep_src.tolist(), tl.dep_dst.tolist(), tl.dep_kind.tolist(), strict=True
        ):
            if k == _EVENT_DEP:
                self.record_of[d] = s

    def range_label(self, row: int, label: str) -> str:
        """``label`` prefixed by the innermost named range its call was made in ("conv1: ...")."""
        t = int(self.tl.issue_start[row])
        if t == NO_TIME:
            return label
        # Back from the latest range to start by t: the first still open at t is the
        # innermost (nested ranges end in reverse order, so this stops after a few steps).
        for k in range(bisect_right(self.range_starts, t) - 1, -1, -1):
            name, _, end = self.ranges[k]
            if end >= t:
                return f"{name}: {label}" if label else name
        return label

    # -- streams ----------------------------------------------------------------------------
    def _legacy(self) -> str | None:
        """The trace's name of the legacy default stream: a capture says; in a PyTorch trace
        it is stream 7."""
        named = self.tl.meta.get("legacy_stream")
        if isinstance(named, str):
            return named
        return KINETO_DEFAULT_STREAM if self.kineto else None

    def stream_of(self, row: int) -> str | None:
        s = int(self.tl.stream[row])
        if s < 0:
            return None
        name = self.tl.stream_names[s]
        return DEFAULT_STREAM if name == self._legacy() else name

    def streams(self) -> list[Stream]:
        flags = self.tl.meta.get("stream_flags") or {}
        out = []
        for name in self.tl.stream_names:
            if name == self._legacy():
                continue
            known = flags.get(name) if isinstance(flags, dict) else None
            kind = "non_blocking" if self.kineto else "blocking"
            priority = 0
            if isinstance(known, dict):
                kind = {"NON_BLOCKING": "non_blocking", "DEFAULT": "blocking"}.get(
                    str(known.get("flag")), kind
                )
                priority = int(known.get("priority") or 0)
            out.append(Stream(name, kind=kind, priority=priority))
        return out

    # -- the program ------------------------------------------------------------------------
    def program(self) -> list[Op]:
        tl = self.tl
        when = np.where(tl.issue_start != NO_TIME, tl.issue_start, tl.start)
        order = np.argsort(when, kind="stable").tolist()
        program: list[Op] = []
        # Per host thread (None: the one thread of a one-thread program):
        free_from: dict[str | None, int] = {}  # when its previous call returned
        carry: dict[str | None, int] = {}  # host time too short for an op, kept for the next
        last_stream: dict[str | None, str] = {}
        thread: str | None = self.thread_names[0] if self.thread_names else None
        for row in order:
            thread = self.thread_of_row.get(row, thread)  # GPU work without a call: the last
            op = self.op_for(row, last_stream.get(thread))
            if op is None:
                continue
            begin = int(tl.issue_start[row])
            if begin != NO_TIME and thread in free_from:
                carry[thread] = carry.get(thread, 0) + begin - free_from[thread]
            if carry.get(thread, 0) > self.min_gap_ns:
                gap = round(carry[thread] / 1000.0, 3)
                program.append(Op("host", duration_us=gap, label="host work", host_thread=thread))
                carry[thread] = 0
            op.call_us = self.call_us(row, op)
            op.host_thread = thread
            self.op_of_row[row] = len(program)
            program.append(op)
            if tl.issue_end[row] != NO_TIME:
                free_from[thread] = int(tl.issue_end[row])
            if tl.on_device[row] and op.stream is not None:
                last_stream[thread] = op.stream
        return program

    def call_us(self, row: int, op: Op) -> float | None:
        """The call's measured host time, for a call that does not wait for the device (a
        waiting call's time is the wait the model predicts, which an edit must be able to
        change); None when the trace has no call span. An async pageable H2D's call is its
        staging, which the simulator takes from its measured call (the call's cost, then
        staging for the rest of it): how fast a host stages is its memory's state, which no
        preset knows."""
        tl = self.tl
        if self.waits_for_device(op) and not op.stages_on_call:
            return None
        if tl.issue_start[row] == NO_TIME or tl.issue_end[row] == NO_TIME:
            return None
        return round(max(0, int(tl.issue_end[row] - tl.issue_start[row])) / 1000.0, 3)

    @staticmethod
    def waits_for_device(op: Op) -> bool:
        return op.op in _WAITING_KINDS or op.is_async is False or op.host_memory == "pageable"

    def op_for(self, row: int, last_stream: str | None) -> Op | None:
        tl, kind = self.tl, self.tl.op_kind(row)
        label = _short(self.range_label(row, tl.labels[row])) or None
        stream = self.stream_of(row)
        if kind == "kernel":
            blocks, threads = self.shapes.get(str(row), UNKNOWN_SHAPE)
            dur = _device_us(int(tl.end[row] - tl.start[row]))
            return Op("kernel", stream=stream, label=label, blocks=int(blocks),
                      threads=int(threads), duration_us=dur)  # fmt: skip
        if kind in ("h2d", "d2h", "d2d", "memset"):
            return self.copy_op(row, kind, stream, label)
        if kind == "event_record":
            return self.record_op(row, stream, last_stream, label)
        if kind in ("event_wait", "event_sync"):
            return self.consumer_op(row, kind, stream, label)
        if kind == "stream_sync" and stream is None:
            self.notes.append(f"row {row}: a stream sync on an unknown stream")
            return None
        if kind in ("stream_sync", "device_sync", "malloc", "free"):
            return Op(kind, stream=stream if kind == "stream_sync" else None, label=label)
        self.notes.append(f"row {row}: a {kind} call, which is not replayed")
        return None

    def copy_op(self, row: int, kind: str, stream: str | None, label: str | None) -> Op:
        nbytes = max(1, int(self.tl.bytes[row]))
        if kind == "memset":
            return Op("memset", stream=stream, label=label, bytes=nbytes)
        op = Op(kind, stream=stream, label=label, bytes=nbytes)
        if kind in ("h2d", "d2h"):
            op.host_memory = "pageable" if row in self.pageable else "pinned"
        if self.calls[row] in _SYNC_COPY_CALLS:
            op.is_async = False
        span = (int(self.tl.start[row]), int(self.tl.end[row]))
        if self.replays_device_time(op, row) and NO_TIME not in span:
            took = span[1] - span[0]
            overlapped = self.overlapped_ns.get(row, 0)
            if overlapped and self.contention is not None:
                took = self.contention.alone_ns(kind, took, overlapped)
            op.duration_us = _device_us(took)
            self.timed_copies += 1
        returned = int(self.tl.issue_end[row])
        if kind == "d2h" and op.host_memory == "pageable" and NO_TIME not in (*span, returned):
            # The host's copy-out after the DMA (the first use of fresh pages made some 1.4 ms
            # where most took 90 us: no preset knows that).
            op.copy_out_us = round(max(0, returned - span[1]) / 1000.0, 3)
        return op

    def replays_device_time(self, op: Op, row: int) -> bool:
        """Whether copy ``op`` (trace row ``row``) keeps its measured device time: a pageable
        one, a pinned one that no copy of the other direction overlapped in the measurement
        (its measured time is then its time alone on the link), and, when the pipeline is
        rebuilt for a preset (``contention``), an overlapped pinned one too, as the time it
        would take alone by that preset's slowdown (the simulator slows it down again where
        the replay overlaps it). Without a preset an overlapped copy stays modelled."""
        if op.op not in ("h2d", "d2h"):
            return False
        return (
            op.host_memory == "pageable"
            or row not in self.overlapped_ns
            or self.contention is not None
        )

    def record_op(
        self, row: int, stream: str | None, last_stream: str | None, label: str | None
    ) -> Op | None:
        if stream is None:
            stream = self._waited_on_stream(row) or last_stream
        if stream is None:
            self.notes.append(f"row {row}: an event record on an unknown stream")
            return None
        return Op("event_record", stream=stream, label=label, event=f"e{row}")

    def consumer_op(self, row: int, kind: str, stream: str | None, label: str | None) -> Op | None:
        record = self.record_of.get(row)
        if record is None or record not in self.op_of_row:
            self.notes.append(f"row {row}: an {kind.replace('_', ' ')} on an unknown event")
            return None
        if kind == "event_wait" and stream is None:
            self.notes.append(f"row {row}: an event wait on an unknown stream")
            return None
        return Op(kind, stream=stream if kind == "event_wait" else None, label=label,
                  event=f"e{record}")  # fmt: skip

    def _waited_on_stream(self, row: int) -> str | None:
        waits = self.tl.meta.get("record_streams") or {}
        name = waits.get(str(row))
        if name is None:
            return None
        return DEFAULT_STREAM if self.kineto and name == KINETO_DEFAULT_STREAM else name

    # -- the measurement, indexed to the program -----------------------------------------------
    def measured(self, n_ops: int) -> Timeline:
        out = self.tl.copy()
        index, past = [], n_ops
        for r in range(len(out)):
            if r in self.op_of_row:
                index.append(self.op_of_row[r])
            else:
                index.append(past)
                past += 1
        out.index = np.asarray(index, dtype=np.int64)
        return out
