"""Measurement back ends: how the executor learns when each op really ran on the device.

* :class:`CuptiProbe` (default where ``cupti-python`` loads): CUPTI activity records for
  kernels (CONCURRENT_KERNEL, which does not serialise kernels the way KERNEL does), memcpy and
  memset, matched to program indexes by stream and call order (see :class:`CuptiProbe`), with
  CUPTI's clock aligned to ``time.perf_counter_ns``. CUPTI asks for a record buffer at the
  first activity after it starts or after a flush, and that request stalls the issuing thread,
  so each repetition starts with a tiny memset on a private stream (its records are dropped)
  and flushing happens only after the device is idle, never inside the timed region.
* :class:`EventProbe` (fallback): a timing event recorded before and after each op on its
  stream. An event fires when its *stream* reaches it, not when an engine starts the op, so a
  span can include time the op spent waiting for a busy copy engine or for free SMs, and the
  two extra event records per op add host time to every call.
* :class:`NvtxRanges`: NVTX ranges named after op labels, so Nsight Systems shows the
  pipeline's names. On when a profiler is attached (it sets NVTX_INJECTION64_PATH) or asked for.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import itertools
import os
import time
from typing import Any

from swimlanes.gpu.backend_api import LEGACY_STREAM, Buffer, CudaBackend, Step, StreamHandle
from swimlanes.gpu.errors import GpuError
from swimlanes.gpu.plan import OpPlan
from swimlanes.model.document import MULTI_DEVICE_OPS

#: Ops whose device span a probe measures (the others are timed by the executor itself).
TIMED_KINDS = ("h2d", "d2h", "d2d", "memset", "kernel", *MULTI_DEVICE_OPS)
#: CUPTI activity kinds that carry device spans (CONCURRENT_KERNEL does not serialise kernels).
_WORK_KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
#: Generous room per activity record when sizing CUPTI's buffer.
RECORD_BYTES = 512

EVENTS_NOTE = (
    "event spans: an op's start event fires when its stream reaches the op, not when an engine "
    "starts it, so a span includes time spent queued behind other streams' work on the same "
    "engine"
)
CUPTI_NOTE = "CUPTI activity records: spans show when each kernel, copy and memset really ran"


class Probe:
    """Base: the reference event that maps CUDA event times to the host clock."""

    name = "none"
    note = "no device spans were measured (host spans only)"

    def __init__(self, backend: CudaBackend) -> None:
        self.backend = backend
        self.ref = backend.create_event()
        self.ref_host_ns = 0
        self.legacy = StreamHandle("probe reference", "legacy_default", 0, LEGACY_STREAM)
        self._record_ref = backend.prepare_event_record(self.ref, self.legacy)

    def hooks(self, op: OpPlan, stream: StreamHandle | None) -> tuple[Step | None, Step | None]:
        return None, None

    def begin_repetition(self, warm_up: Step) -> None:
        """Just before the timed region: run ``warm_up``, wait for the device, take the
        reference time."""
        warm_up()
        self.backend.synchronize()
        self._record_ref()
        # The GPU is idle, so the reference fires as soon as the record reaches it.
        self.ref_host_ns = time.perf_counter_ns()

    def event_time(self, ev: Any) -> int | None:
        """Host-clock time of a recorded event (None if it was not recorded)."""
        dt = self.backend.elapsed_ns(self.ref, ev)
        return None if dt is None else self.ref_host_ns + dt

    def spans(self) -> dict[int, tuple[int, int]]:
        """After the repetition (device idle): program index -> (start, end) on the host clock."""
        return {}

    def close(self) -> None:
        self.backend.destroy_event(self.ref)


class EventProbe(Probe):
    """Timing events around each device op, on the op's own stream."""

    name = "events"
    note = EVENTS_NOTE

    def __init__(self, backend: CudaBackend) -> None:
        super().__init__(backend)
        self.events: dict[int, tuple[Any, Any]] = {}

    def hooks(self, op: OpPlan, stream: StreamHandle | None) -> tuple[Step | None, Step | None]:
        if op.kind not in TIMED_KINDS or stream is None:
            return None, None
        start, end = self.backend.create_event(), self.backend.create_event()
        self.events[op.index] = (start, end)
        return (
            self.backend.prepare_event_record(start, stream),
            self.backend.prepare_event_record(end, stream),
        )

    def spans(self) -> dict[int, tuple[int, int]]:
        out = {}
        for index, (s, e) in self.events.items():
            ts, te = self.event_time(s), self.event_time(e)
            if ts is not None and te is not None:
                out[index] = (ts, te)
        return out

    def close(self) -> None:
        for s, e in self.events.values():
            self.backend.destroy_event(s)
            self.backend.destroy_event(e)
        self.events.clear()
        super().close()


@functools.cache
def _cupti() -> Any:
    from cupti import cupti

    return cupti


def cupti_loads() -> bool:
    """True when cupti-python imports and its library loads."""
    try:
        _cupti().get_timestamp()
    except Exception:  # noqa: BLE001 - missing wheel, missing libcupti, wrong version
        return False
    return True


class CuptiProbe(Probe):
    """CUPTI activity records, matched to ops by stream and issue order.

    Each op this probe times makes one CUDA call that yields activity records on its stream;
    records merged per correlation id (one id per call) and sorted by it (the order the calls
    were made) are, stream by stream, that stream's timed ops in program order. Stream ids are
    learnt once, before the first repetition, from a tiny memset on each stream. Nothing is
    called per op in the timed region: pushing external correlation ids costs two CUPTI calls
    per op and needs driver-API records, which made launch-bound pipelines about 15% slower.
    """

    name = "cupti"
    note = CUPTI_NOTE
    BUFFER_BYTES = 16 << 20
    #: (correlation id, stream id, start, end, kernel name or kind, device id) per record.
    _records: list[tuple[int, int, int, int, str, int]] = []
    _registered = False

    def __init__(self, backend: CudaBackend) -> None:
        super().__init__(backend)
        try:
            self.cupti = _cupti()
            self._enable()
        except Exception as err:  # noqa: BLE001 - any CUPTI failure: say so, caller falls back
            super().close()
            raise GpuError(f"CUPTI is not usable here: {err}") from None
        self.offset_ns = self._clock_offset()
        self.warm_stream = backend.create_stream(_private_stream())
        self.warm_buf: Buffer = backend.alloc("device", 256)
        self._warm = backend.prepare_memset(self.warm_stream, self.warm_buf, 256, False)
        self.timed: dict[int, list[int]] = {}
        self.handles: dict[int, StreamHandle] = {}
        self.stream_of_id: dict[int, int] | None = None
        self.unmatched: list[str] = []

    def _enable(self) -> None:
        cupti = self.cupti
        if not CuptiProbe._registered:
            records = CuptiProbe._records

            def requested() -> tuple[int, int]:
                return CuptiProbe.BUFFER_BYTES, 0

            def completed(activities: list) -> None:
                # Record objects may be views into CUPTI's buffer: copy the fields out now.
                # The kernel's name (or the record's kind) and device let a multi-device run
                # tell NCCL's kernels and each GPU's records apart.
                for r in activities:
                    tag = getattr(r, "name", None) or str(getattr(r, "kind", ""))
                    records.append(
                        (int(r.correlation_id), int(r.stream_id), int(r.start), int(r.end),
                         str(tag), int(getattr(r, "device_id", -1)))
                    )  # fmt: skip

            cupti.activity_register_callbacks(requested, completed)
            CuptiProbe._registered = True
        for kind in _WORK_KINDS:
            cupti.activity_enable(getattr(cupti.ActivityKind, kind))

    def _clock_offset(self) -> int:
        """CUPTI timestamp minus perf_counter_ns, from the tightest of 50 bracketed reads."""
        get, pc = self.cupti.get_timestamp, time.perf_counter_ns
        best = (1 << 62, 0)
        for _ in range(50):
            a = pc()
            c = get()
            b = pc()
            if b - a < best[0]:
                best = (b - a, c - (a + b) // 2)
        return best[1]

    def _flush(self) -> list[tuple[int, int, int, int]]:
        """Deliver every record (device idle): (correlation id, stream id, start, end) merged
        per correlation id, in correlation-id order."""
        return [r[:4] for r in self._flush_tagged()]

    def _flush_tagged(self) -> list[tuple[int, int, int, int, str, int]]:
        """:meth:`_flush` with each merged record's first tag and device id kept."""
        self.cupti.activity_flush_all(1)
        merged: dict[int, tuple[int, int, int, int, str, int]] = {}
        for corr, sid, start, end, tag, device in CuptiProbe._records:
            if corr in merged:
                _, _, s0, e0, tag, device = merged[corr]
                start, end = min(start, s0), max(end, e0)
            merged[corr] = (corr, sid, start, end, tag, device)
        CuptiProbe._records.clear()
        return [merged[c] for c in sorted(merged)]

    def hooks(self, op: OpPlan, stream: StreamHandle | None) -> tuple[Step | None, Step | None]:
        if op.kind in TIMED_KINDS and stream is not None:
            if op.kind == "memset" and not op.is_async:
                # cuMemsetD8, the synchronous memset, runs on the legacy default stream
                # whatever stream the op names: its record comes from there.
                stream = self.legacy
            self.timed.setdefault(stream.handle, []).append(op.index)
            self.handles[stream.handle] = stream
        return None, None

    def _learn_stream_ids(self) -> None:
        handles = list(self.handles)
        steps = [
            self.backend.prepare_memset(self.handles[h], self.warm_buf, 256, False) for h in handles
        ]
        self._flush()
        for step in steps:
            step()
        self.backend.synchronize()
        records = self._flush()
        if len(records) != len(handles):
            raise GpuError(f"CUPTI reported {len(records)} of {len(handles)} stream probes")
        self.stream_of_id = {r[1]: h for r, h in zip(records, handles, strict=True)}

    def begin_repetition(self, warm_up: Step) -> None:
        if self.stream_of_id is None:
            self._learn_stream_ids()
        # One buffer must hold a whole repetition's records (a kernel record is ~200 bytes):
        # a second buffer requested mid-run would stall the issuing thread.
        timed = sum(len(v) for v in self.timed.values())
        CuptiProbe.BUFFER_BYTES = min(1 << 30, max(16 << 20, RECORD_BYTES * timed))
        self.backend.synchronize()
        self._flush()  # drop the records of whatever ran before
        warm_cupti = self._warm

        def warm() -> None:
            # After a flush CUPTI asks for a new buffer at the next activity, and a kernel's
            # first record in a buffer costs more: let both happen here, not in the timed run.
            warm_cupti()
            warm_up()

        super().begin_repetition(warm)

    def spans(self) -> dict[int, tuple[int, int]]:
        assert self.stream_of_id is not None
        per_stream: dict[int, list[tuple[int, int]]] = {}
        for _, sid, start, end in self._flush():
            handle = self.stream_of_id.get(sid)
            if handle is not None:  # the warm-up stream and other streams are not the pipeline's
                per_stream.setdefault(handle, []).append((start, end))
        out: dict[int, tuple[int, int]] = {}
        for handle, indexes in self.timed.items():
            records = per_stream.get(handle, [])
            if len(records) != len(indexes):
                self.unmatched.append(
                    f"stream {self.handles[handle].name}: {len(records)} records "
                    f"for {len(indexes)} ops"
                )
                continue
            for index, (start, end) in zip(indexes, records, strict=True):
                out[index] = (start - self.offset_ns, end - self.offset_ns)
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing must not hide the run's own error
            self.cupti.activity_flush_all(1)
            for kind in _WORK_KINDS:
                self.cupti.activity_disable(getattr(self.cupti.ActivityKind, kind))
        CuptiProbe._records.clear()
        self.backend.release(self.warm_buf)
        self.backend.destroy_stream(self.warm_stream)
        super().close()


def _private_stream() -> Any:
    from swimlanes.model.document import Stream

    return Stream("cupti warm-up", "non_blocking", 0)


def make_probe(backend: CudaBackend, choice: str) -> Probe:
    """``auto``: CUPTI where it loads, else events; ``cupti`` fails clearly where it does not.

    ``none`` measures no device spans at all (host spans, event records and host functions
    only): the uninstrumented reference that benchmarks compare the back ends with.
    """
    if choice not in ("auto", "cupti", "events", "none"):
        raise GpuError(f"unknown measurement backend {choice!r} (auto, cupti or events)")
    if choice == "none":
        return Probe(backend)
    if backend.simulator:
        return EventProbe(backend)
    if choice in ("auto", "cupti"):
        if cupti_loads():
            try:
                return CuptiProbe(backend)
            except GpuError:
                if choice == "cupti":
                    raise
        elif choice == "cupti":
            raise GpuError("CUPTI is not available: install cupti-python matching the driver")
    return EventProbe(backend)


def _nvtx_library() -> Any:
    """The NVTX library: CUDA 13's libnvtx3interop, or the older libnvToolsExt, from the
    system, a CUDA toolkit or NVIDIA's pip packages (None when there is none)."""
    import glob
    import sys

    stems = ("nvtx3interop", "nvToolsExt")
    names = [ctypes.util.find_library(stem) for stem in stems]
    names += [f"lib{stem}.so.1" for stem in stems]
    roots = [*sys.path, os.environ.get("CUDA_HOME", "/usr/local/cuda")]
    subs = ("nvidia/cu13/lib", "nvidia/nvtx/lib", "nvidia/cuda_nvtx/lib", "lib64")
    for root, sub, stem in itertools.product(roots, subs, stems):
        names += sorted(glob.glob(os.path.join(root, sub, f"lib{stem}.so*")))
    for name in filter(None, names):
        try:
            lib = ctypes.CDLL(name)
            lib.nvtxRangePushA  # noqa: B018 - the symbol this needs
            return lib
        except (OSError, AttributeError):
            continue
    return None


class NvtxRanges:
    """NVTX push/pop around each issued call (silently off where NVTX is missing)."""

    def __init__(self, enabled: bool | None) -> None:
        if enabled is None:
            enabled = bool(os.environ.get("NVTX_INJECTION64_PATH"))
        self.push: Any = None
        self.pop: Any = None
        self.status = "off: no profiler attached"
        if enabled:
            self._load()

    def _load(self) -> None:
        try:
            import nvtx

            self.push, self.pop = nvtx.push_range, nvtx.pop_range
            self.status = "on (nvtx package)"
            return
        except ImportError:
            pass
        lib = _nvtx_library()
        if lib is None:
            self.status = "off: NVTX library not found"
            return
        lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
        push = lib.nvtxRangePushA
        self.push = lambda label: push(label.encode())
        self.pop = lib.nvtxRangePop
        self.status = f"on ({os.path.basename(lib._name)})"

    def hooks(self, label: str) -> tuple[Step | None, Step | None]:
        if self.push is None:
            return None, None
        return functools.partial(self.push, label), self.pop
