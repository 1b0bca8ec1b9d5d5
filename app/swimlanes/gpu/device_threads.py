"""The host side of a multi-device run: one thread per host thread of the program (one per
device where it declares none), and waits between them.

:class:`DeviceThreads` gives each host thread a Python thread of its own, on which its device's
context is current; a device's work that no one thread of the program issues (set-up, tear-down)
runs on the device's first thread. The helpers here find the event waits that cross threads,
wait on the host for another thread's event, and name the link between two GPUs. Qt-free; numba
is imported only on the worker threads.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from swimlanes.gpu.backend_api import Buffer, Step, flag_reached
from swimlanes.gpu.errors import ExecutionCancelled, GpuError
from swimlanes.gpu.multi_plan import MultiOp, MultiPlan
from swimlanes.model.document import EVENT_OPS, Pipeline

#: How long a device thread waits for the others (start barrier, another device's event)
#: before the run is declared stuck.
WAIT_S = 120.0
T = TypeVar("T")


class DeviceThreads:
    """One single-thread pool per host thread, on ``count`` devices: ``thread_device[t]`` is
    thread t's device (default: one thread per device). Device d's own calls (set-up,
    tear-down) run on its first thread; each thread issues its ops on its own."""

    def __init__(self, count: int, simulator: bool, thread_device: list[int] | None = None):
        self.thread_device = list(range(count)) if thread_device is None else list(thread_device)
        if sorted(set(self.thread_device)) != list(range(count)):
            raise GpuError(f"every one of the {count} devices needs a host thread")
        self.threads = [
            cf.ThreadPoolExecutor(1, f"swimlanes-gpu{d}-thread{t}", _enter(d, simulator))
            for t, d in enumerate(self.thread_device)
        ]
        self.pools = [self.threads[self.thread_device.index(d)] for d in range(count)]

    def call(self, d: int, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on device ``d``'s first thread."""
        return self.pools[d].submit(fn, *args).result()

    def all(
        self,
        fn: Callable[[int], T],
        stop: threading.Event | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> list[T]:
        """``fn(d)`` on every device's first thread at once; the first error is raised once
        all have returned. At the first error ``stop`` is set and ``on_error`` called, so that
        the other threads stop early instead of waiting for the one that failed."""
        return _all_at_once(self.pools, fn, stop, on_error)

    def each_thread(
        self,
        fn: Callable[[int], T],
        stop: threading.Event | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> list[T]:
        """``fn(t)`` on every host thread at once, stopping as :meth:`all` does."""
        return _all_at_once(self.threads, fn, stop, on_error)

    def close(self) -> None:
        for pool in self.threads:
            pool.shutdown(wait=True)


def _all_at_once(
    pools: list[cf.ThreadPoolExecutor],
    fn: Callable[[int], T],
    stop: threading.Event | None,
    on_error: Callable[[], None] | None,
) -> list[T]:
    futures = [pool.submit(fn, k) for k, pool in enumerate(pools)]
    done, _ = cf.wait(futures, return_when=cf.FIRST_EXCEPTION)
    failed = [f for f in done if f.exception() is not None]
    if failed and stop is not None:
        stop.set()
    if failed and on_error is not None:
        on_error()
    cf.wait(futures)
    # The first failure is the cause; the others' errors follow from it.
    for f in [*failed, *futures]:
        err = f.exception()
        if err is not None:
            raise err
    return [f.result() for f in futures]


def _enter(d: int, simulator: bool) -> Callable[[], None]:
    def enter() -> None:
        if not simulator:  # the simulator has one device; its backends stand for the others
            from numba import cuda

            cuda.select_device(d)

    return enter


def link_kind(a: int, b: int, simulator: bool) -> str:
    """ "NVLink" or "PCIe" for the GPUs of ordinals ``a`` and ``b`` (NVML's P2P status), or
    "Link" where it cannot tell (the simulator, no NVML)."""
    if simulator:
        return "Link"
    try:
        import importlib

        pynvml: Any = importlib.import_module("pynvml")  # nvidia-ml-py

        pynvml.nvmlInit()
        try:
            ha, hb = pynvml.nvmlDeviceGetHandleByIndex(a), pynvml.nvmlDeviceGetHandleByIndex(b)
            nvlink = pynvml.nvmlDeviceGetP2PStatus(ha, hb, pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
            return "NVLink" if nvlink == pynvml.NVML_P2P_STATUS_OK else "PCIe"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML, or an old one: the name stays neutral
        return "Link"


def host_await(flag: Buffer, counter: list[int], stop: threading.Event, index: int) -> Step:
    """An event_sync on another thread's event: the host waits until that event's stream set
    its flag (the event completed), or the run stopped."""
    arr = flag.array
    assert arr is not None

    def waiting() -> None:
        deadline = time.monotonic() + WAIT_S
        while not flag_reached(int(arr[0]), counter[0]):
            if stop.is_set():
                raise ExecutionCancelled(f"stopped at op {index}: another device stopped")
            if time.monotonic() > deadline:
                raise GpuError(f"op {index} waited {WAIT_S:g} s for another device's event")
            time.sleep(0.00002)

    return waiting


def cross_device_waits(pipeline: Pipeline, plan: MultiPlan) -> dict[int, int]:
    """Waits (event_wait, event_sync) whose event's latest earlier record another host thread
    issues (on another device, or another thread of the same one): wait op index -> record op
    index. Such a wait must not pass before that record is issued, as a wait on a not yet
    recorded event would in CUDA."""
    latest: dict[str, MultiOp] = {}
    out: dict[int, int] = {}
    for op in plan.ops:
        name = pipeline.program[op.index].event
        if name is None:
            continue
        if op.kind == "event_record":
            latest[name] = op
        elif op.kind in EVENT_OPS and name in latest and latest[name].thread != op.thread:
            out[op.index] = latest[name].index
    return out
