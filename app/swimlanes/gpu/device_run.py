"""One device's share of a GPU run: its resources, prepared issue steps and repetitions.

:class:`DeviceRun` holds what :func:`swimlanes.gpu.executor.execute` allocates, creates and
prepares for one device (streams, pooled buffers, events, the probe, one issue step per op)
and releases all of it in :meth:`DeviceRun.release`; the multi-device executor keeps one per
device. Also the median repetition and the spread columns both executors report.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from swimlanes.gpu.backend_api import Buffer, CudaBackend, Step, StreamHandle, busy_wait_ns
from swimlanes.gpu.errors import ExecutionCancelled, GpuError
from swimlanes.gpu.host import this_host
from swimlanes.gpu.hostfunc import SLOT_END, SLOT_START, new_slot
from swimlanes.gpu.plan import KernelPlan, OpPlan, ResourcePlan
from swimlanes.gpu.probes import NvtxRanges, Probe, make_probe
from swimlanes.model.document import Stream
from swimlanes.timeline.timeline import NO_TIME

#: How long every SM spins before the first repetition, so the GPU leaves its idle clocks.
RAMP_UP_NS = 200_000_000

Progress = Callable[[float], None] | None
Cancel = Callable[[], bool] | None
T = TypeVar("T")


class DeviceRun:
    """The resources of one device in one execute() call; :meth:`release` frees all of them."""

    def __init__(self, backend: CudaBackend, plan: ResourcePlan, sm_count: int) -> None:
        self.backend = backend
        self.sm_count = sm_count
        self.plan = plan
        self.streams: dict[str, StreamHandle] = {}
        self.buffers: list[Buffer] = []
        self.events: list[Any] = []
        self.record_events: dict[int, Any] = {}
        self.host_slots: dict[int, np.ndarray] = {}
        self.malloc_slots: list[int] = [0] * len(plan.malloc_bytes)
        self.probe: Probe | None = None
        self.steps: list[Step] = []
        self.before: list[Step | None] = []
        self.after: list[Step | None] = []
        self.warm_stream: StreamHandle | None = None
        self.warm_steps: list[Step] = []
        self.touch_steps: list[Step] = []
        # Which GPU, driver, CPU and host measured: compare finds that host's preset by it.
        self.host = this_host(backend).to_dict()

    # -- set-up (before the timed region) ---------------------------------------------------
    def setup(self, probe_choice: str, nvtx: NvtxRanges) -> None:
        be = self.backend
        for s in self.plan.streams:
            self.streams[s.name] = be.create_stream(s)
        pools = {name: self._alloc_pool(sizes) for name, sizes in self.plan.buffers.items()}
        be.compile_kernels()
        self.probe = make_probe(be, probe_choice)
        latest: dict[str, Any] = {}
        for op in self.plan.ops:
            stream = self.streams.get(op.stream) if op.stream else None
            self.steps.append(self._prepare(op, stream, pools.get(op.stream or ""), latest))
            pb, pa = self.probe.hooks(op, stream)
            nb, na = nvtx.hooks(op.label)
            self.before.append(chain(nb, pb))
            self.after.append(chain(pa, na))
        self._prepare_warm_up()

    def _prepare_warm_up(self) -> None:
        """Tiny launches of every kernel the pipeline uses (on a private stream) and on each
        program stream, run before each repetition outside the timed region, so that the
        first op of a repetition is not slowed by first-use work; plus one clock ramp-up."""
        be = self.backend
        self.warm_stream = be.create_stream(Stream("warm-up", "non_blocking", 0))
        a, b = be.alloc("device", 256), be.alloc("device", 256)
        self.buffers += [a, b]
        variants = {k.variant for k in self.plan.kernels}
        tiny = {
            "spin": KernelPlan("spin", 1, 32, block_ns=0, purpose="warm-up"),
            "fma": KernelPlan("fma", 1, 32, fma_iters=1, purpose="warm-up"),
            "stream": KernelPlan("stream", 1, 32, elements=1, purpose="warm-up"),
        }
        self.warm_steps = [
            be.prepare_kernel(tiny[v], self.warm_stream, a, b) for v in sorted(variants)
        ]
        # Touch every program stream too (before the probe starts its repetition, so that
        # CUPTI's per-stream record counts only hold the pipeline's own ops).
        self.touch_steps = [be.prepare_kernel(tiny["spin"], s, a, b) for s in self.streams.values()]
        self.warm_steps.append(be.prepare_memset(self.warm_stream, a, 256, False))
        if not be.simulator:
            # Idle GPUs run at low clocks: keep every SM busy for a moment before measuring.
            ramp = KernelPlan("spin", self.sm_count * 8, 256, block_ns=RAMP_UP_NS)
            be.prepare_kernel(ramp, self.warm_stream, a, b)()
            be.synchronize()

    def _alloc_pool(self, sizes: Any) -> dict[str, Buffer]:
        pool = {}
        for kind, nbytes in (
            ("device", sizes.device),
            ("device2", sizes.device2),
            ("pinned", sizes.pinned),
            ("pageable", sizes.pageable),
        ):
            if nbytes:
                buf = self.backend.alloc("device" if kind.startswith("device") else kind, nbytes)
                self.buffers.append(buf)
                pool[kind] = buf
        return pool

    def _event(self) -> Any:
        ev = self.backend.create_event()
        self.events.append(ev)
        return ev

    def _prepare(
        self,
        op: OpPlan,
        s: StreamHandle | None,
        pool: dict[str, Buffer] | None,
        latest: dict[str, Any],
    ) -> Step:
        step = LOCAL_STEPS.get(op.kind)
        if step is None:
            raise GpuError(f"op {op.index}: cannot execute a {op.kind} op")
        return step(self, op, s, pool, latest)

    def prefill_frees(self) -> None:
        """Allocate (untimed) what frees will release that no earlier malloc allocated."""
        for i, slot in enumerate(self.malloc_slots):
            if not slot and not any(
                o.kind == "malloc" and o.malloc_slot == i for o in self.plan.ops
            ):
                self.backend.alloc_slot(self.malloc_slots, i, self.plan.malloc_bytes[i])

    # -- one repetition ---------------------------------------------------------------------
    def repetition(self, cancel: Cancel) -> dict[str, np.ndarray]:
        n = len(self.steps)
        be, probe = self.backend, self.probe
        assert probe is not None
        self.prefill_frees()
        for step in self.touch_steps:
            step()
        probe.begin_repetition(self._warm_up)
        t_s = np.empty(n, dtype=np.int64)
        t_e = np.empty(n, dtype=np.int64)
        gc_was_on = gc.isenabled()
        gc.disable()  # a collection inside the timed region would show up as a host stall
        try:
            self._issue_all(t_s, t_e, cancel)
        finally:
            if gc_was_on:
                gc.enable()
        be.synchronize()
        for i in range(len(self.malloc_slots)):
            be.free_slot(self.malloc_slots, i)
        return self._collect(t_s, t_e)

    def _warm_up(self) -> None:
        for step in self.warm_steps:
            step()

    def _issue_all(
        self, t_s: np.ndarray, t_e: np.ndarray, cancel: Cancel, order: list[int] | None = None
    ) -> None:
        """The timed region: issue every op (or those of ``order``, one host thread's, in that
        order), recording each call's host span."""
        pc, steps, before, after = time.perf_counter_ns, self.steps, self.before, self.after
        for i in range(len(steps)) if order is None else order:
            if cancel is not None and cancel():
                raise ExecutionCancelled(f"cancelled at op {self.program_index(i)}")
            b = before[i]
            if b is not None:
                b()
            t0 = pc()
            try:
                steps[i]()
            except Exception as err:  # noqa: BLE001 - numba raises its own CUDA error types
                op = self.plan.ops[i]
                raise GpuError(
                    f"CUDA error at op {self.program_index(i)} ({op.label}): {err}; the run was "
                    "stopped and its memory, streams and events released"
                ) from err
            t_s[i] = t0
            t_e[i] = pc()
            a = after[i]
            if a is not None:
                a()

    def program_index(self, i: int) -> int:
        """The program index of this run's op ``i`` (the same on a single device)."""
        return i

    def _collect(self, t_s: np.ndarray, t_e: np.ndarray) -> dict[str, np.ndarray]:
        assert self.probe is not None
        n = len(t_s)
        start = np.full(n, NO_TIME, dtype=np.int64)
        end = np.full(n, NO_TIME, dtype=np.int64)
        for index, (s, e) in self.probe.spans().items():
            start[index], end[index] = s, e
        for index, ev in self.record_events.items():
            t = self.probe.event_time(ev)
            if t is not None:
                start[index] = end[index] = max(t, int(t_s[index]))
        for index, slot in self.host_slots.items():
            start[index], end[index] = slot[SLOT_START], slot[SLOT_END]
        t0 = int(t_s[0]) if n else 0
        rel = {"issue_start": t_s - t0, "issue_end": t_e - t0, "start": start, "end": end}
        for col in ("start", "end"):
            mask = rel[col] != NO_TIME
            rel[col][mask] -= t0
        return rel

    # -- tear-down ----------------------------------------------------------------------------
    def release(self) -> None:
        be = self.backend
        quietly(be.synchronize)
        for i in range(len(self.malloc_slots)):
            quietly(be.free_slot, self.malloc_slots, i)
        if self.probe is not None:
            quietly(self.probe.close)
        for ev in self.events:
            quietly(be.destroy_event, ev)
        for buf in self.buffers:
            quietly(be.release, buf)
        for s in [*self.streams.values(), *([self.warm_stream] if self.warm_stream else [])]:
            quietly(be.destroy_stream, s)
        self.steps.clear()
        self.events.clear()
        self.buffers.clear()
        quietly(be.close)


def planned(value: T | None, op: OpPlan, what: str) -> T:
    """``value``, which the planner gives every op of ``op``'s kind."""
    if value is None:
        raise GpuError(f"op {op.index}: a {op.kind} op planned without {what}")
    return value


def quietly(fn: Callable[..., Any], *args: Any) -> None:
    # Tear-down after an error must go on and release everything else.
    with contextlib.suppress(Exception):
        fn(*args)


def chain(a: Step | None, b: Step | None) -> Step | None:
    if a is None or b is None:
        return a or b

    def both() -> None:
        a()
        b()

    return both


def median_repetition(spans: list[int]) -> int:
    """The position of the repetition whose device span is the median (the lower of the two
    middle ones for an even count; the earliest of equal spans)."""
    return sorted(range(len(spans)), key=spans.__getitem__)[(len(spans) - 1) // 2]


def spread(v: np.ndarray) -> np.ndarray:
    out = np.full(v.shape[1], NO_TIME, dtype=np.int64)
    ok = (v != NO_TIME).all(axis=0)
    if ok.any():
        p10, p90 = np.percentile(v[:, ok], [10, 90], axis=0)
        out[ok] = np.round(p90 - p10).astype(np.int64)
    return out


# -- one issue step per kind of op --------------------------------------------------------------
# Each builds the step that issues ``op`` (one device's op: the multi-device kinds are the
# multi-device executor's, gpu/multi_executor.MULTI_DEVICE_STEPS), from the run's resources,
# its stream ``s``, its pooled buffers and the latest record of each event.
_Pool = dict[str, Buffer] | None
StepBuilder = Callable[[DeviceRun, OpPlan, StreamHandle | None, _Pool, dict[str, Any]], Step]


def _copy_step(run: DeviceRun, op: OpPlan, s: StreamHandle | None, pool: _Pool, _: dict) -> Step:
    buffers = planned(pool, op, "buffers")
    other = buffers["device2"] if op.kind == "d2d" else buffers[op.host_memory]
    return run.backend.prepare_copy(
        op.kind, planned(s, op, "a stream"), buffers["device"], other, op.nbytes, not op.is_async
    )


def _memset_step(run: DeviceRun, op: OpPlan, s: StreamHandle | None, pool: _Pool, _: dict) -> Step:
    buffers = planned(pool, op, "buffers")
    return run.backend.prepare_memset(
        planned(s, op, "a stream"), buffers["device"], op.nbytes, not op.is_async
    )


def _kernel_step(run: DeviceRun, op: OpPlan, s: StreamHandle | None, pool: _Pool, _: dict) -> Step:
    a = pool.get("device") if pool else None
    b = pool.get("device2") if pool else None
    return run.backend.prepare_kernel(
        planned(op.kernel, op, "a kernel"), planned(s, op, "a stream"), a, b
    )


def _record_step(
    run: DeviceRun, op: OpPlan, s: StreamHandle | None, _: _Pool, latest: dict[str, Any]
) -> Step:
    name = planned(op.event, op, "an event")
    ev = run.record_events[op.index] = latest[name] = run._event()
    return run.backend.prepare_event_record(ev, planned(s, op, "a stream"))


def _wait_step(
    run: DeviceRun, op: OpPlan, s: StreamHandle | None, _: _Pool, latest: dict[str, Any]
) -> Step:
    """event_wait (the stream waits) and event_sync (the host waits)."""
    name = planned(op.event, op, "an event")
    if name not in latest:
        latest[name] = run._event()  # never recorded: waiting on it is a no-op
    if op.kind == "event_wait":
        return run.backend.prepare_event_wait(latest[name], planned(s, op, "a stream"))
    return run.backend.prepare_event_sync(latest[name])


def _host_func_step(run: DeviceRun, op: OpPlan, s: StreamHandle | None, _: _Pool, __: dict) -> Step:
    slot = run.host_slots[op.index] = new_slot(op.duration_ns)
    return run.backend.prepare_host_func(planned(s, op, "a stream"), slot)


def _malloc_step(run: DeviceRun, op: OpPlan, _: StreamHandle | None, __: _Pool, ___: dict) -> Step:
    m = planned(op.malloc_slot, op, "a malloc slot")
    return run.backend.prepare_malloc(run.malloc_slots, m, run.plan.malloc_bytes[m])


def _free_step(run: DeviceRun, op: OpPlan, _: StreamHandle | None, __: _Pool, ___: dict) -> Step:
    return run.backend.prepare_free(run.malloc_slots, planned(op.malloc_slot, op, "a malloc slot"))


#: The issue step of each kind one device runs alone (the executor's per-kind table).
LOCAL_STEPS: dict[str, StepBuilder] = {
    "h2d": _copy_step,
    "d2h": _copy_step,
    "d2d": _copy_step,
    "memset": _memset_step,
    "kernel": _kernel_step,
    "event_record": _record_step,
    "event_wait": _wait_step,
    "event_sync": _wait_step,
    "stream_sync": lambda run, op, s, _, __: run.backend.prepare_stream_sync(
        planned(s, op, "a stream")
    ),
    "device_sync": lambda run, op, s, _, __: run.backend.prepare_device_sync(),
    "host_func": _host_func_step,
    "host": lambda run, op, s, _, __: functools.partial(busy_wait_ns, op.duration_ns),
    "malloc": _malloc_step,
    "free": _free_step,
}
