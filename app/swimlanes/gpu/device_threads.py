"""The host side of a multi-device run: one thread per device, and waits between devices.

:class:`DeviceThreads` gives each device a thread of its own, on which that device's context is
current, and runs work on one device's thread or on all of them at once. The helpers here find
the event waits that cross devices, wait on the host for another device's event, and name the
link between two GPUs. Qt-free; numba is imported only on the device threads.
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
    """One single-thread pool per device; device d's CUDA calls all run on its thread."""

    def __init__(self, count: int, simulator: bool) -> None:
        self.pools = [
            cf.ThreadPoolExecutor(1, f"swimlanes-gpu{d}", _enter(d, simulator))
            for d in range(count)
        ]

    def call(self, d: int, fn: Callable[..., T], *args: Any) -> T:
        return self.pools[d].submit(fn, *args).result()

    def all(
        self,
        fn: Callable[[int], T],
        stop: threading.Event | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> list[T]:
        """``fn(d)`` on every device's thread at once; the first error is raised once all
        have returned. At the first error ``stop`` is set and ``on_error`` called, so that the
        other threads stop early instead of waiting for the one that failed."""
        futures = [pool.submit(fn, d) for d, pool in enumerate(self.pools)]
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

    def close(self) -> None:
        for pool in self.pools:
            pool.shutdown(wait=True)


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
    """An event_sync on another device's event: the host waits until that event's stream set
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
    """Waits (event_wait, event_sync) whose event's latest earlier record is on another
    device: wait op index -> record op index."""
    latest: dict[str, MultiOp] = {}
    out: dict[int, int] = {}
    for op in plan.ops:
        name = pipeline.program[op.index].event
        if name is None:
            continue
        if op.kind == "event_record":
            latest[name] = op
        elif op.kind in EVENT_OPS and name in latest and latest[name].device != op.device:
            out[op.index] = latest[name].index
    return out
