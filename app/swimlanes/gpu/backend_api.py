"""The interface between the executor and CUDA, and the types its implementations share.

The executor plans, then asks a backend for buffers, streams and events, and for one prepared
*issue step* per op: a no-argument callable that makes exactly the CUDA call the op stands for.
Preparing the calls before the timed region keeps Python work out of it. Two implementations
satisfy :class:`CudaBackend`: :class:`swimlanes.gpu.backend.NumbaBackend` (a real GPU) and
:class:`swimlanes.gpu.sim_backend.SimulatorBackend` (numba's CUDA simulator, for CI). Both
import this module; the simulator backend never imports the real one, whose
:func:`~swimlanes.gpu.backend.make_backend` picks between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from swimlanes.gpu.plan import DeviceInfo, KernelPlan
from swimlanes.model.document import Stream

Step = Callable[[], None]

# Driver stream handles for the two default streams (cuda.h: CU_STREAM_LEGACY, _PER_THREAD).
LEGACY_STREAM = 1
PER_THREAD_STREAM = 2


@dataclass
class Buffer:
    """A device or host allocation; ``ptr`` is its address, ``array`` a uint8 view if host."""

    kind: str
    nbytes: int
    ptr: int
    array: np.ndarray | None = None
    owner: Any = None


@dataclass
class StreamHandle:
    """A created (or default) stream: the driver handle and the object numba launches on."""

    name: str
    kind: str
    priority: int
    handle: int
    numba_stream: Any = None
    owned: bool = False
    driver: Any = field(default=None, repr=False)


class CudaBackend(Protocol):
    """What the executor needs from CUDA. All ``prepare_*`` methods return issue steps."""

    name: str
    simulator: bool

    @property
    def live_allocations(self) -> int: ...

    def device_info(self) -> DeviceInfo: ...
    def driver_version(self) -> str: ...
    def host_available_bytes(self) -> int | None: ...
    def alloc(self, kind: str, nbytes: int) -> Buffer: ...
    def release(self, buf: Buffer) -> None: ...
    def create_stream(self, stream: Stream) -> StreamHandle: ...
    def destroy_stream(self, s: StreamHandle) -> None: ...
    def create_event(self) -> Any: ...
    def destroy_event(self, ev: Any) -> None: ...
    def compile_kernels(self) -> None: ...
    def prepare_kernel(
        self, k: KernelPlan, s: StreamHandle, a: Buffer | None, b: Buffer | None
    ) -> Step: ...
    def prepare_copy(
        self, kind: str, s: StreamHandle, dev: Buffer, other: Buffer, nbytes: int, sync: bool
    ) -> Step: ...
    def prepare_memset(self, s: StreamHandle, dev: Buffer, nbytes: int, sync: bool) -> Step: ...
    def prepare_event_record(self, ev: Any, s: StreamHandle) -> Step: ...
    def prepare_event_wait(self, ev: Any, s: StreamHandle) -> Step: ...
    def prepare_event_sync(self, ev: Any) -> Step: ...
    def prepare_stream_sync(self, s: StreamHandle) -> Step: ...
    def prepare_device_sync(self) -> Step: ...
    def prepare_host_func(self, s: StreamHandle, slot: np.ndarray) -> Step: ...
    def prepare_malloc(self, slots: list[int], slot: int, nbytes: int) -> Step: ...
    def prepare_free(self, slots: list[int], slot: int) -> Step: ...
    def free_slot(self, slots: list[int], slot: int) -> None: ...
    def alloc_slot(self, slots: list[int], slot: int, nbytes: int) -> None: ...
    def synchronize(self) -> None: ...
    def elapsed_ns(self, ev_from: Any, ev_to: Any) -> int | None: ...
    def close(self) -> None: ...


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where the OS does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def busy_wait_ns(duration_ns: int) -> None:
    """Keep the host thread busy (not sleeping) for ``duration_ns``, like real host work."""
    pc = time.perf_counter_ns
    end = pc() + duration_ns
    while pc() < end:
        pass


def flag_reached(value: int, target: int) -> bool:
    """cuStreamWaitValue32's default test: (int32)(value - target) >= 0, a cyclic >=."""
    return (value - target) & 0xFFFFFFFF < 0x80000000
