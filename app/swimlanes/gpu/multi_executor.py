"""Run a pipeline of several devices, or of several host threads on a device (or with peer
copies and collectives), and measure it.

One worker thread per host thread of the program, as real programs have: one per device where
the program declares no threads, else one per declared thread, each with its device's primary
context current. Set-up runs in program order, op by op on the op's device's first thread (so
cross-device events and buffers exist before they are used); each timed repetition then starts
every thread at one barrier, and each issues its own ops in program order, as the simulator's
semantics say: a thread's syncs block only it, and ``device_sync`` waits for the device's work
whichever thread issued it. A per-thread default stream is CUDA's own ``CU_STREAM_PER_THREAD``
handle, used by its owning thread only, so it means that thread's stream. An event wait whose
latest record another thread issues must wait for that record even when its thread gets there
first (CUDA would let a wait on a not yet recorded event pass): the record's stream also writes
a flag in pinned host memory (``cuStreamWriteValue32``, the repetition's number) and the
waiting stream waits for it on the device (``cuStreamWaitValue32``), so no host thread blocks;
an ``event_sync`` on such an event waits on the host for the flag. An error on one thread stops
the others (at their next call, or wherever they wait for it) and is the one reported, naming
the thread.

Peer access is enabled between every pair that copies or rings data; peer copies are
``cuMemcpyPeerAsync`` on the op's stream; collectives run through NCCL (:mod:`.nccl`): one
communicator per pipeline communicator, made with ``ncclCommInitAll``. Their buffers are sized
per op, filled with a known value (a peer copy's source with its device's number + 1, a
collective's send buffer with its rank + 1), and the results are checked after the run
(``meta["data_check"]``). Under numba's CUDA simulator peer copies are host copies and
collectives are computed on the host, so the same bookkeeping is tested without a GPU.

Whatever happens (error, cancel), NCCL communicators are aborted or destroyed and every
allocation, stream and event is released before this returns.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from swimlanes.gpu.backend import device_count, make_backend
from swimlanes.gpu.backend_api import Buffer, CudaBackend, Step
from swimlanes.gpu.collectives import Collectives, make_collectives
from swimlanes.gpu.device_run import LOCAL_STEPS, Cancel, DeviceRun, Progress, chain, quietly
from swimlanes.gpu.device_threads import (
    WAIT_S,
    DeviceThreads,
    cross_device_waits,
    host_await,
    link_kind,
)
from swimlanes.gpu.errors import ExecutionCancelled, GpuError
from swimlanes.gpu.multi_plan import (
    MultiOp,
    MultiPlan,
    check_device_count,
    check_multi_memory,
    make_multi_plan,
)
from swimlanes.gpu.multi_timeline import expected_value, multi_timeline
from swimlanes.gpu.probes import NvtxRanges, Probe, make_probe
from swimlanes.model.document import COLLECTIVE_OPS, PEER_COPY, Pipeline
from swimlanes.model.op_kinds import register_layer
from swimlanes.model.validate import validate
from swimlanes.timeline.timeline import NO_TIME, Timeline

#: Ops whose data check the run's meta lists even when they passed (all failures are listed).
CHECKS_SHOWN = 64
#: Python's GIL switch interval while several threads of one device issue: a thread busy in
#: host work (a spin that holds the GIL) lets the others issue within about this long, instead
#: of Python's default 5 ms, so that its host work delays only its own calls.
THREAD_SWITCH_S = 20e-6


class _DeviceRun(DeviceRun):
    """One device's share of the run: :class:`DeviceRun`'s resources and steps, set up op by op."""

    #: Program index of each of this device's ops (its plan's ops are numbered locally).
    indexes: list[int]

    def program_index(self, i: int) -> int:
        return self.indexes[i] if i < len(self.indexes) else i

    def setup_local(self, probe: Probe) -> None:
        be = self.backend
        for s in self.plan.streams:
            self.streams[s.name] = be.create_stream(s)
        self.pools = {name: self._alloc_pool(sizes) for name, sizes in self.plan.buffers.items()}
        be.compile_kernels()
        self.probe = probe
        self._prepare_warm_up()

    def add_step(self, local: int, step: Step, nvtx: NvtxRanges) -> None:
        op = self.plan.ops[local]
        assert self.probe is not None and local == len(self.steps)
        stream = self.streams.get(op.stream) if op.stream else None
        pb, pa = self.probe.hooks(op, stream)
        nb, na = nvtx.hooks(op.label)
        self.steps.append(step)
        self.before.append(chain(nb, pb))
        self.after.append(chain(pa, na))

    def prepare_local(self, local: int, latest: dict[str, Any]) -> Step:
        op = self.plan.ops[local]
        stream = self.streams.get(op.stream) if op.stream else None
        return self._prepare(op, stream, self.pools.get(op.stream or ""), latest)

    def alloc_flag(self) -> Buffer:
        flag: Buffer = getattr(self.backend, "alloc_flag")()  # noqa: B009
        self.buffers.append(flag)
        return flag

    def alloc_device(self, nbytes: int, fill: float | None) -> Buffer:
        buf = self.backend.alloc("device", nbytes)
        self.buffers.append(buf)
        fill_f32 = getattr(self.backend, "fill_f32")  # noqa: B009 - not part of CudaBackend
        fill_f32(buf, nbytes, 0.0 if fill is None else fill)
        return buf

    def issue(self, order: list[int], times: tuple[np.ndarray, np.ndarray],
              start: threading.Barrier, cancel: Cancel, thread: str | None) -> None:  # fmt: skip
        """One host thread's share of the repetition: its ops (``order``, local indexes) once
        every thread is at ``start``; their host spans go to ``times``. An error names
        ``thread`` (a program of several threads)."""
        start.wait(WAIT_S)
        try:
            self._issue_all(*times, cancel, order)
        except GpuError as err:
            if thread is None:
                raise
            raise GpuError(f"host thread {thread}: {err}") from err

    def settle(self) -> None:
        """After issuing: wait for the device and free the malloc slots."""
        self.backend.synchronize()
        for i in range(len(self.malloc_slots)):
            self.backend.free_slot(self.malloc_slots, i)

    def collect(self, t_s: np.ndarray, t_e: np.ndarray) -> dict[str, np.ndarray]:
        """This device's columns on the host clock (every device idle: CUPTI's records of the
        repetition are all delivered by the first device's flush)."""
        if not len(t_s):
            cols = ("issue_start", "issue_end", "start", "end")
            return {k: np.zeros(0, dtype=np.int64) for k in cols}
        rel = self._collect(t_s, t_e)
        t0 = int(t_s[0])
        for col, v in rel.items():  # back to the host clock: devices share one origin later
            mask = v != NO_TIME if col in ("start", "end") else slice(None)
            v[mask] += t0
        return rel


class _MultiRun:
    """Everything one multi-device execute() holds; :meth:`release` frees all of it."""

    def __init__(self, pipeline: Pipeline, plan: MultiPlan, backends: list[CudaBackend],
                 workers: DeviceThreads) -> None:  # fmt: skip
        self.pipeline, self.plan, self.backends, self.workers = pipeline, plan, backends, workers
        self.runs: list[_DeviceRun] = []
        #: Per host thread, the local indexes of its ops in its device's run, in order.
        self.orders = [plan.thread_order(t) for t in range(len(plan.threads))]
        self.collectives: Collectives | None = None
        self.stop = threading.Event()
        #: Cross-device events: the record op's flag (pinned, every device's streams reach
        #: it), set by its stream to the repetition's number when the event completes.
        self.flags: dict[int, Buffer] = {}
        self.counter = [0]
        self.cross: dict[int, int] = {}
        self.outputs: dict[int, tuple[int, Buffer, int]] = {}  # op -> (device, buffer, bytes)
        self.peer: dict[str, bool] = {}
        self.link_kinds: dict[tuple[int, int], str] = {}
        self.session: Any = None
        self.failed = False

    # -- set-up -------------------------------------------------------------------------------
    def setup(self, probe_choice: str, nvtx: NvtxRanges) -> None:
        plan, w = self.plan, self.workers
        for d, be in enumerate(self.backends):
            # Made on the device's own thread: the main thread has no device context.
            self.runs.append(w.call(d, _new_run, be, plan.plans[d]))
            self.runs[d].indexes = [op.index for op in plan.ops if op.device == d]
        probes = self._probes(_probe_choice(self.pipeline, probe_choice))
        w.all(lambda d: self.runs[d].setup_local(probes[d]))
        self._enable_peers()
        if plan.communicators and any(op.comm for op in plan.ops):
            ordinals = {c: m for c, m in plan.communicators.items()}
            self.collectives = make_collectives(self.backends, ordinals)
        latest: dict[str, Any] = {}
        self.cross = cross_device_waits(self.pipeline, plan)
        for op in plan.ops:
            step = self._prepare(op, latest)
            w.call(op.device, self.runs[op.device].add_step, op.local, step, nvtx)

    def _probes(self, choice: str) -> list[Probe]:
        if choice in ("auto", "cupti") and not self.backends[0].simulator:
            from swimlanes.gpu.multi_probe import CuptiSession, DeviceCupti
            from swimlanes.gpu.probes import cupti_loads

            if cupti_loads():
                self.session = CuptiSession()
                session = self.session
                return [self.workers.call(d, DeviceCupti, be, session, d)
                        for d, be in enumerate(self.backends)]  # fmt: skip
            if choice == "cupti":
                raise GpuError("CUPTI is not available: install cupti-python matching the driver")
        return [self.workers.call(d, make_probe, be, choice) for d, be in enumerate(self.backends)]

    def _enable_peers(self) -> None:
        contexts = [self.workers.call(d, _context, be) for d, be in enumerate(self.backends)]
        for a, b in sorted(self.plan.pairs()):
            for x, y in ((a, b), (b, a)):
                be = self.backends[x]
                ok = self.workers.call(x, be.enable_peer_access, y, contexts[y])  # type: ignore[attr-defined]
                self.peer[f"{self.plan.devices[x]}->{self.plan.devices[y]}"] = bool(ok)
            self.link_kinds[(a, b)] = link_kind(a, b, self.backends[0].simulator)
        self.contexts = contexts

    def _prepare(self, op: MultiOp, latest: dict[str, Any]) -> Step:
        run, w = self.runs[op.device], self.workers
        builder = MULTI_DEVICE_STEPS.get(op.kind)
        if builder is not None:
            return builder(self, op)
        step = w.call(op.device, run.prepare_local, op.local, latest)
        be: Any = self.backends[op.device]
        stream = run.streams.get(run.plan.ops[op.local].stream or "")
        if op.index in set(self.cross.values()):  # a record another device waits for
            flag = self.flags[op.index] = w.call(op.device, run.alloc_flag)
            return _then(step, w.call(op.device, be.prepare_signal, stream, flag, self.counter))
        if op.index in self.cross:
            flag = self.flags[self.cross[op.index]]
            if op.kind == "event_wait":  # the stream waits on the device, the host goes on
                wait = w.call(op.device, be.prepare_await, stream, flag, self.counter)
                return _then(wait, step)
            return _then(host_await(flag, self.counter, self.stop, op.index), step)
        return step

    def release_waits(self) -> None:
        """Let every stream and thread waiting on a cross-device event go (a failed run)."""
        for flag in self.flags.values():
            if flag.array is not None:
                flag.array[0] = (self.counter[0] + 0x3FFFFFFF) & 0xFFFFFFFF

    def _peer_copy(self, op: MultiOp) -> Step:
        w, n = self.workers, op.send_bytes
        src = w.call(op.src, self.runs[op.src].alloc_device, n, float(op.src + 1))
        dst = w.call(op.dst, self.runs[op.dst].alloc_device, n, None)
        run = self.runs[op.device]
        stream = run.streams[run.plan.ops[op.local].stream or ""]
        be = self.backends[op.device]
        self.outputs[op.index] = (op.dst, dst, n)
        prepare = be.prepare_peer_copy  # type: ignore[attr-defined]
        return w.call(op.device, prepare, stream, dst, self.contexts[op.dst], src,
                      self.contexts[op.src], n)  # fmt: skip

    def _collective(self, op: MultiOp) -> Step:
        assert self.collectives is not None
        run, w = self.runs[op.device], self.workers
        send = w.call(op.device, run.alloc_device, op.send_bytes, float(op.rank + 1))
        recv = w.call(op.device, run.alloc_device, op.recv_bytes, None)
        stream = run.streams[run.plan.ops[op.local].stream or ""]
        self.outputs[op.index] = (op.device, recv, op.recv_bytes)
        return w.call(op.device, self.collectives.prepare, op, stream, send, recv)

    # -- one repetition -------------------------------------------------------------------------
    def repetition(self, cancel: Cancel) -> list[dict[str, np.ndarray]]:
        w, runs = self.workers, self.runs
        w.all(lambda d: _untimed(runs[d]))
        if self.session is not None:
            self.session.next_repetition()
        for d in range(len(runs)):  # one device at a time: CUPTI's flush is process-wide
            probe = runs[d].probe
            assert probe is not None
            w.call(d, probe.begin_repetition, runs[d]._warm_up)
        self.counter[0] += 1  # this repetition's cross-device events
        plan = self.plan
        start = threading.Barrier(len(plan.threads))
        times = [(np.zeros(len(r.steps), dtype=np.int64), np.zeros(len(r.steps), dtype=np.int64))
                 for r in runs]  # fmt: skip
        named = self.pipeline.is_multi_thread

        def stop() -> bool:
            return self.stop.is_set() or (cancel is not None and cancel())

        def issue(t: int) -> None:
            d = plan.thread_device[t]
            runs[d].issue(self.orders[t], times[d], start, stop, plan.threads[t] if named else None)

        gc_was_on = gc.isenabled()
        gc.disable()  # one collection would stall every device's thread
        switch = sys.getswitchinterval()
        if named:
            sys.setswitchinterval(THREAD_SWITCH_S)

        def unblock() -> None:
            # Threads still waiting for the one that failed: at the start, or (simulator) in
            # a collective. NCCL's own waits end in release(), once every thread returned.
            start.abort()
            self.release_waits()
            if self.collectives is not None:
                self.collectives.interrupt()

        try:
            w.each_thread(issue, self.stop, unblock)
        except BaseException:
            self.failed = True
            raise
        finally:
            sys.setswitchinterval(switch)
            if gc_was_on:
                gc.enable()
        w.all(lambda d: runs[d].settle())
        # One device after another: the first one's flush takes every device's records.
        return [w.call(d, runs[d].collect, *times[d]) for d in range(len(runs))]

    def data_check(self) -> dict[str, Any]:
        """Each peer copy's and collective's output buffer, first and last element, against
        what it must hold: ``ok``, how many were ``checked``, and per op (the first
        :data:`CHECKS_SHOWN`, and every one that failed) what it held and should have."""
        ops: dict[str, Any] = {}
        checked, failed = 0, 0
        for op in self.plan.ops:
            if op.index not in self.outputs or self.outputs[op.index][2] < 4:
                continue
            d, buf, nbytes = self.outputs[op.index]
            read = getattr(self.backends[d], "read_f32")  # noqa: B009
            got = [
                self.workers.call(d, read, buf, 0),
                self.workers.call(d, read, buf, nbytes // 4 - 1),
            ]
            want = expected_value(op)
            checked += 1
            failed += got != want
            if checked <= CHECKS_SHOWN or got != want:
                ops[str(op.index)] = {"expected": want, "got": got, "ok": got == want}
        return {"ok": not failed, "checked": checked, "failed": failed, "ops": ops}

    # -- tear-down ----------------------------------------------------------------------------
    def release(self) -> None:
        if self.failed:
            self.release_waits()
        if self.collectives is not None:
            if self.failed:
                quietly(self.collectives.abort)
            quietly(self.collectives.close)
        for d, run in enumerate(self.runs):
            with contextlib.suppress(Exception):
                self.workers.call(d, run.release)
        self.runs.clear()


#: The issue step of each kind that involves several devices (the others are each device's
#: own: device_run.LOCAL_STEPS).
MULTI_DEVICE_STEPS: dict[str, Callable[[_MultiRun, MultiOp], Step]] = {
    PEER_COPY: _MultiRun._peer_copy,
    **dict.fromkeys(COLLECTIVE_OPS, _MultiRun._collective),
}
register_layer("executor", (*LOCAL_STEPS, *MULTI_DEVICE_STEPS))


def _new_run(be: CudaBackend, plan: Any) -> _DeviceRun:
    return _DeviceRun(be, plan, be.device_info().sm_count)


def _context(be: CudaBackend) -> Any:
    return be.context_handle()  # type: ignore[attr-defined]


def _probe_choice(pipeline: Pipeline, choice: str) -> str:
    """The measurement back end for ``pipeline``: where CUPTI's records cannot be matched to a
    program of several threads' ops, ``auto`` measures with events (``cupti``: refused)."""
    why = _cupti_cannot(pipeline) if choice in ("auto", "cupti") else None
    if why is None:
        return choice
    if choice == "cupti":
        raise GpuError(
            f"CUPTI cannot measure this pipeline: {why}; measure it with the events back end "
            "(--backend events)"
        )
    return "events"


def _cupti_cannot(pipeline: Pipeline) -> str | None:
    """Why CUPTI's records, matched to ops by stream handle and call order, would be given to
    the wrong ops of a program of several threads (None where they would not)."""
    if not pipeline.is_multi_thread:
        return None
    if any(s.kind == "per_thread_default" for s in pipeline.streams):
        return (
            "its per-thread default streams are each their thread's own, but share one handle, "
            "which CUPTI's records are matched by"
        )
    users: dict[str, set[str]] = {}
    for op in pipeline.program:
        if op.stream_name is not None:
            users.setdefault(op.stream_name, set()).add(pipeline.op_thread(op))
    shared = [name for name, threads in users.items() if len(threads) > 1]
    if shared:
        return (
            f"several threads issue on stream {shared[0]}, in an order that changes from run to "
            "run, and CUPTI's records are matched to ops in program order"
        )
    return None


def _untimed(run: _DeviceRun) -> None:
    run.prefill_frees()
    for step in run.touch_steps:
        step()


def _then(step: Step, after: Callable[[], None]) -> Step:
    def both() -> None:
        step()
        after()

    return both


def execute_multi(
    pipeline: Pipeline,
    *,
    repeat: int = 5,
    warmup: int = 1,
    backend: str = "auto",
    progress: Progress = None,
    cancel: Cancel = None,
    on_partial: Callable[[Timeline], None] | None = None,
    cuda_backend: CudaBackend | None = None,
    nvtx: bool | None = None,
    available: int | None = None,
) -> Timeline:
    """:func:`swimlanes.gpu.executor.execute` for a pipeline of several devices (or with peer
    copies or collectives): same arguments, same errors. ``cuda_backend`` stands for the first
    device (the simulator backend: every device is simulated); ``available`` overrides how
    many GPUs the machine has (tests)."""
    if repeat < 1 or warmup < 0:
        raise GpuError("repeat must be at least 1 and warmup at least 0")
    problems = validate(pipeline)
    if problems:
        raise GpuError("the pipeline is not valid: " + "; ".join(str(p) for p in problems))
    simulator = cuda_backend.simulator if cuda_backend is not None else _simulating()
    check_device_count(pipeline, available if available is not None else device_count())
    names = pipeline.device_names
    n = len(names)
    workers = DeviceThreads(n, simulator, [names.index(d) for _, d in pipeline.thread_list()])
    run: _MultiRun | None = None
    try:
        backends = [cuda_backend if d == 0 and cuda_backend is not None else
                    workers.call(d, _new_backend, simulator) for d in range(n)]  # fmt: skip
        infos = [workers.call(d, be.device_info) for d, be in enumerate(backends)]
        plan = make_multi_plan(pipeline, infos)
        check_multi_memory(plan, infos, backends[0].host_available_bytes())
        run = _MultiRun(pipeline, plan, backends, workers)
        return _repeat(run, pipeline, infos, repeat, warmup, backend, nvtx, progress, cancel,
                       on_partial)  # fmt: skip
    except (GpuError, ExecutionCancelled):
        raise
    except Exception as err:  # noqa: BLE001 - numba/driver/NCCL errors become one message
        raise GpuError(f"the GPU run failed: {type(err).__name__}: {err}") from err
    finally:
        if run is not None:
            run.release()
        workers.close()


def _repeat(run: _MultiRun, pipeline: Pipeline, infos: list[Any], repeat: int, warmup: int,
            backend: str, nvtx: bool | None, progress: Progress, cancel: Cancel,
            on_partial: Callable[[Timeline], None] | None) -> Timeline:  # fmt: skip
    ranges = NvtxRanges(nvtx)
    run.setup(backend, ranges)
    reps: list[list[dict[str, np.ndarray]]] = []
    total = warmup + repeat
    for r in range(total):
        if cancel is not None and cancel():
            raise ExecutionCancelled(f"cancelled before repetition {r + 1}")
        data = run.repetition(cancel)
        if r >= warmup:
            reps.append(data)
            if on_partial is not None:
                on_partial(multi_timeline(run, infos, reps, ranges))
        if progress is not None:
            progress((r + 1) / total)
    tl = multi_timeline(run, infos, reps, ranges)
    tl.meta["data_check"] = run.data_check()
    return tl


def _simulating() -> bool:
    import os

    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _new_backend(simulator: bool) -> CudaBackend:
    return make_backend("simulator" if simulator else "auto")
