"""CUPTI across several devices: one activity stream for the process, one clock.

CUPTI's activity records of every context come through one buffer callback, with CUPTI's own
timestamps (one clock for all devices) and each record's device id. Each device of a run gets a
:class:`DeviceCupti` probe: it learns its streams' ids, and after a repetition takes its own
streams' records from one flush shared by all devices (:class:`CuptiSession`), so no device's
flush drops another's records.

Matching records to ops is the single-device rule (per stream, in call order), loosened for
NCCL: a collective call may launch one kernel or several (``ncclDevKernel_AllReduce_...``,
each its own correlation id), or a device-to-device copy on a single rank. The consecutive
NCCL kernels at a collective's place in its stream's records are its span.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from swimlanes.gpu.backend_api import CudaBackend, Step, StreamHandle
from swimlanes.gpu.plan import OpPlan
from swimlanes.gpu.probes import CuptiProbe
from swimlanes.model.document import COLLECTIVE_OPS

Record = tuple[int, int, int, int, str, int]


def is_nccl(tag: str) -> bool:
    """Whether a record's tag (a kernel's name) is one of NCCL's kernels."""
    return tag.startswith("nccl") or "ncclDevKernel" in tag or "ncclKernel" in tag


class CuptiSession:
    """The records of one repetition, flushed once and shared by every device's probe."""

    def __init__(self) -> None:
        self.generation = 0
        self._taken = -1
        self._records: list[Record] = []
        self._lock = threading.Lock()
        #: CUPTI device id -> pipeline device position, learnt from each device's probes.
        self.device_of: dict[int, int] = {}
        #: Per collective kind, the names of the NCCL kernels (or copies) that timed it.
        self.kernels: dict[str, set[str]] = {}

    def next_repetition(self) -> None:
        self.generation += 1

    def records(self, probe: CuptiProbe) -> list[Record]:
        with self._lock:
            if self._taken != self.generation:
                self._records = probe._flush_tagged()
                self._taken = self.generation
            return self._records


class DeviceCupti(CuptiProbe):
    """One device's CUPTI probe in a multi-device run (see the module docstring)."""

    def __init__(self, backend: CudaBackend, session: CuptiSession, device: int) -> None:
        super().__init__(backend)
        self.session = session
        self.device = device
        self.kinds: dict[int, str] = {}
        # Copies between devices come as MEMCPY2 (peer-to-peer) records, where CUPTI has them.
        with contextlib.suppress(Exception):
            self.cupti.activity_enable(self.cupti.ActivityKind.MEMCPY2)

    def hooks(self, op: OpPlan, stream: StreamHandle | None) -> tuple[Step | None, Step | None]:
        self.kinds[op.index] = op.kind
        return super().hooks(op, stream)

    def learn(self) -> None:
        """Learn this device's stream ids now (devices one after another, untimed)."""
        if self.stream_of_id is None:
            self._learn_stream_ids()

    def begin_repetition(self, warm_up: Step) -> None:
        self.learn()
        super().begin_repetition(warm_up)

    def spans(self) -> dict[int, tuple[int, int]]:
        assert self.stream_of_id is not None
        per_stream: dict[int, list[Record]] = {}
        for r in self.session.records(self):
            handle = self.stream_of_id.get(r[1])
            if handle is not None:
                per_stream.setdefault(handle, []).append(r)
                if r[5] >= 0:
                    self.session.device_of.setdefault(r[5], self.device)
        out: dict[int, tuple[int, int]] = {}
        for handle, indexes in self.timed.items():
            matched = match_records([self.kinds[i] for i in indexes], per_stream.get(handle, []))
            if matched is None:
                got = len(per_stream.get(handle, []))
                self.unmatched.append(
                    f"device {self.device} stream {self.handles[handle].name}: {got} records "
                    f"for {len(indexes)} ops"
                )
                continue
            for index, (start, end, tag) in zip(indexes, matched, strict=True):
                out[index] = (start - self.offset_ns, end - self.offset_ns)
                if self.kinds[index] in COLLECTIVE_OPS:
                    self.session.kernels.setdefault(self.kinds[index], set()).add(tag)
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.cupti.activity_disable(self.cupti.ActivityKind.MEMCPY2)
        super().close()


def match_records(kinds: list[str], records: list[Record]) -> list[tuple[int, int, str]] | None:
    """Spans of one stream's timed ops (their ``kinds`` in call order) from its ``records`` in
    correlation order: one record per op, except that a collective also takes the NCCL
    kernels right after its own when the stream has more records than ops (a call that
    launched several). None when the records do not fit the ops."""
    surplus = len(records) - len(kinds)
    if surplus < 0:
        return None
    out: list[tuple[int, int, str]] = []
    i = 0
    for kind in kinds:
        start, end, tag = records[i][2], records[i][3], records[i][4]
        i += 1
        if kind in COLLECTIVE_OPS:
            while surplus > 0 and i < len(records) and is_nccl(records[i][4]):
                start, end = min(start, records[i][2]), max(end, records[i][3])
                i += 1
                surplus -= 1
        out.append((start, end, tag))
    return out if i == len(records) else None


def describe_devices(session: CuptiSession, names: list[str]) -> dict[str, Any]:
    """CUPTI's device ids and the pipeline devices they were mapped to (for the run's meta)."""
    return {str(k): names[v] for k, v in sorted(session.device_of.items())}


def describe_kernels(session: CuptiSession) -> dict[str, list[str]]:
    """Per collective kind, the kernels (names shortened at their arguments) that timed it."""
    return {k: sorted({t.split("(")[0] for t in v}) for k, v in sorted(session.kernels.items())}
