"""The backend for numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), used by CI.

The simulator has no driver: no raw allocations, no stream flags or priorities, no
``external_stream``, no timing events, no device attributes, no host functions. This backend
keeps the executor's planning and issuing logic exactly as on a GPU and replaces only those
calls: buffers are simulator device arrays and numpy arrays, streams are ``cuda.stream()``,
copies go through numba's ``copy_to_device`` / ``copy_to_host`` on those streams, and every
issued call is appended to :attr:`calls` so tests can check what was issued, in which order.
The simulator runs every GPU thread as a Python thread, so a kernel is launched with one
block of one thread and its requested configuration is logged instead.

For multi-device runs each simulated device is one backend: peer copies are host copies,
collectives meet on the host (swimlanes.gpu.collectives), and a stream's wait for another
device's event is a host wait, since work runs when it is issued. So a pipeline whose host
threads depend on each other's device work in a cycle (which a GPU resolves on the device)
stops there after a time-out instead of running.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from swimlanes.gpu.backend_api import (
    Buffer,
    Step,
    StreamHandle,
    busy_wait_ns,
    flag_reached,
    host_available_bytes,
)
from swimlanes.gpu.errors import GpuError
from swimlanes.gpu.hostfunc import SLOT_DURATION, SLOT_END, SLOT_START
from swimlanes.gpu.plan import DeviceInfo, KernelPlan
from swimlanes.model.document import Stream

#: numba's simulator runs one kernel at a time in a process: the devices' threads take turns.
_KERNEL_LOCK = threading.Lock()
#: Seconds a simulated stream waits for another device's event before giving up.
SIM_WAIT_S = 120.0
#: What the simulated device reports (an H200's shape, with a settable amount of free memory).
SIM_DEVICE = DeviceInfo("numba CUDA simulator", 132, 2048, 32, 8 << 30, 8 << 30)


class SimEvent:
    """A simulator stand-in for a CUDA event: remembers when it was recorded."""

    def __init__(self) -> None:
        self.recorded_ns: int | None = None


class SimulatorBackend:
    """Runs a plan under numba's CUDA simulator and logs every call."""

    name = "simulator"
    simulator = True

    def __init__(self, info: DeviceInfo = SIM_DEVICE, host_bytes: int | None = None) -> None:
        from numba import config, cuda

        # numba.config sets its options from the environment at import time: mypy sees none.
        if not config.ENABLE_CUDASIM:  # type: ignore[attr-defined]
            raise GpuError("the simulator backend needs NUMBA_ENABLE_CUDASIM=1")
        self.cuda = cuda
        self.info = info
        self.host_bytes = host_bytes
        self.calls: list[tuple[Any, ...]] = []
        self._live = 0
        self._kernel: Any = None
        self._next_ptr = 0x1000

    @property
    def live_allocations(self) -> int:
        return self._live

    def device_info(self) -> DeviceInfo:
        return self.info

    def driver_version(self) -> str:
        """The simulator has no driver: its numba version stands in (a calibration made under
        it then belongs to that numba)."""
        import numba

        return f"numba {numba.__version__} CUDA simulator"

    def host_available_bytes(self) -> int | None:
        return self.host_bytes if self.host_bytes is not None else host_available_bytes()

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, kind: str, nbytes: int) -> Buffer:
        nbytes = max(1, int(nbytes))
        if kind == "device":
            arr = self.cuda.device_array(nbytes, dtype=np.uint8)
        elif kind == "pinned":
            arr = self.cuda.pinned_array(nbytes, dtype=np.uint8)
        else:
            arr = np.ones(nbytes, dtype=np.uint8)
        self._next_ptr += nbytes
        self._live += 1
        self.calls.append(("alloc", kind, nbytes))
        return Buffer(kind, nbytes, self._next_ptr, None if kind == "device" else arr, arr)

    def release(self, buf: Buffer) -> None:
        buf.owner = buf.array = None
        self._live -= 1
        self.calls.append(("release", buf.kind, buf.nbytes))

    # -- streams and events -----------------------------------------------------------------
    def create_stream(self, stream: Stream) -> StreamHandle:
        if stream.kind == "legacy_default":
            return StreamHandle(stream.name, stream.kind, 0, 1, self.cuda.default_stream())
        self._live += 1
        self.calls.append(("create_stream", stream.name, stream.kind, stream.priority))
        return StreamHandle(
            stream.name, stream.kind, stream.priority, 0, self.cuda.stream(), owned=True
        )

    def destroy_stream(self, s: StreamHandle) -> None:
        if s.owned:
            s.owned = False
            self._live -= 1
            self.calls.append(("destroy_stream", s.name))

    def create_event(self) -> SimEvent:
        self._live += 1
        return SimEvent()

    def destroy_event(self, ev: Any) -> None:
        self._live -= 1

    def elapsed_ns(self, ev_from: Any, ev_to: Any) -> int | None:
        if ev_from.recorded_ns is None or ev_to.recorded_ns is None:
            return None
        return ev_to.recorded_ns - ev_from.recorded_ns

    def synchronize(self) -> None:
        self.cuda.synchronize()

    # -- issue steps ------------------------------------------------------------------------
    def _log(self, *entry: Any) -> None:
        self.calls.append(entry)

    def compile_kernels(self) -> None:
        if self._kernel is None:
            cuda = self.cuda

            @cuda.jit
            def stand_in(out):
                out[0] = 1

            self._kernel = stand_in
            self._scratch = cuda.device_array(1, dtype=np.float32)

    def prepare_kernel(
        self, k: KernelPlan, s: StreamHandle, a: Buffer | None, b: Buffer | None
    ) -> Step:
        self.compile_kernels()
        launch, out = self._kernel[1, 1, s.numba_stream], self._scratch
        kind = "kernel" if k.purpose == "op" else "warm-up kernel"
        entry = (kind, s.name, k.variant, k.blocks, k.threads, k.block_ns)

        def step() -> None:
            self._log(*entry)
            with _KERNEL_LOCK:  # one simulated kernel at a time, whichever device's thread
                launch(out)

        return step

    def prepare_copy(
        self, kind: str, s: StreamHandle, dev: Buffer, other: Buffer, nbytes: int, sync: bool
    ) -> Step:
        d, h, ns = dev.owner, other.owner, s.numba_stream
        stream = 0 if sync else ns

        def step() -> None:
            self._log(kind, s.name, nbytes, other.kind, sync)
            if kind == "h2d":
                d[:nbytes].copy_to_device(h[:nbytes], stream=stream)
            elif kind == "d2h":
                d[:nbytes].copy_to_host(h[:nbytes], stream=stream)
            else:
                h[:nbytes].copy_to_device(d[:nbytes], stream=stream)

        return step

    def prepare_memset(self, s: StreamHandle, dev: Buffer, nbytes: int, sync: bool) -> Step:
        def step() -> None:
            self._log("memset", s.name, nbytes, sync)

        return step

    def prepare_event_record(self, ev: Any, s: StreamHandle) -> Step:
        def step() -> None:
            self._log("event_record", s.name)
            ev.recorded_ns = time.perf_counter_ns()

        return step

    def prepare_event_wait(self, ev: Any, s: StreamHandle) -> Step:
        return lambda: self._log("event_wait", s.name)

    def prepare_event_sync(self, ev: Any) -> Step:
        return lambda: self._log("event_sync")

    def prepare_stream_sync(self, s: StreamHandle) -> Step:
        def step() -> None:
            self._log("stream_sync", s.name)
            s.numba_stream.synchronize()

        return step

    def prepare_device_sync(self) -> Step:
        def step() -> None:
            self._log("device_sync")
            self.cuda.synchronize()

        return step

    def prepare_host_func(self, s: StreamHandle, slot: np.ndarray) -> Step:
        # Kernels and copies already ran synchronously, so running the callback now keeps order.
        def step() -> None:
            self._log("host_func", s.name)
            slot[SLOT_START] = time.perf_counter_ns()
            busy_wait_ns(int(slot[SLOT_DURATION]))
            slot[SLOT_END] = time.perf_counter_ns()

        return step

    def alloc_slot(self, slots: list[int], slot: int, nbytes: int) -> None:
        self._live += 1
        self._next_ptr += nbytes
        slots[slot] = self._next_ptr

    def prepare_malloc(self, slots: list[int], slot: int, nbytes: int) -> Step:
        def step() -> None:
            self._log("malloc", nbytes)
            self.alloc_slot(slots, slot, nbytes)

        return step

    def prepare_free(self, slots: list[int], slot: int) -> Step:
        def step() -> None:
            self._log("free")
            self.free_slot(slots, slot)

        return step

    def free_slot(self, slots: list[int], slot: int) -> None:
        if slots[slot]:
            slots[slot] = 0
            self._live -= 1

    # -- several devices: each simulated device is one backend ------------------------------
    def context_handle(self) -> Any:
        return self

    def enable_peer_access(self, peer_ordinal: int, peer_context: Any) -> bool:
        self._log("enable_peer_access", peer_ordinal)
        return True

    def f32_view(self, buf: Buffer) -> np.ndarray:
        """The simulated device buffer's memory as float32 (a view: writes go to the buffer)."""
        arr = getattr(buf.owner, "_ary", None)
        if arr is None:
            raise GpuError("not a simulated device buffer")
        whole = arr[: arr.nbytes // 4 * 4]
        return whole.view(np.float32)

    def fill_f32(self, buf: Buffer, nbytes: int, value: float) -> None:
        self.f32_view(buf)[: nbytes // 4] = value

    def read_f32(self, buf: Buffer, element: int) -> float:
        return float(self.f32_view(buf)[element])

    def alloc_flag(self) -> Buffer:
        self._live += 1
        self.calls.append(("alloc", "flag", 4))
        return Buffer("flag", 4, 0, np.zeros(1, dtype=np.uint32))

    def prepare_signal(self, s: StreamHandle, flag: Buffer, counter: list[int]) -> Step:
        """The simulator's work is done when issued: the flag is set at once."""
        arr = flag.array
        assert arr is not None

        def step() -> None:
            self._log("signal", s.name)
            arr[0] = counter[0]

        return step

    def prepare_await(self, s: StreamHandle, flag: Buffer, counter: list[int]) -> Step:
        """The simulator runs work when it is issued, so the stream's wait is the host's."""
        arr = flag.array
        assert arr is not None

        def step() -> None:
            self._log("await", s.name)
            deadline = time.monotonic() + SIM_WAIT_S
            while not flag_reached(int(arr[0]), counter[0]):
                if time.monotonic() > deadline:
                    raise GpuError(f"stream {s.name} waited {SIM_WAIT_S:g} s for an event")
                time.sleep(0.0001)

        return step

    def prepare_peer_copy(
        self,
        s: StreamHandle,
        dst: Buffer,
        dst_context: Any,
        src: Buffer,
        src_context: Any,
        nbytes: int,
    ) -> Step:
        """A host copy between the two simulated devices' buffers, in issue order."""
        a, b = src.owner._ary, dst.owner._ary

        def step() -> None:
            self._log("peer_copy", s.name, nbytes)
            b[:nbytes] = a[:nbytes]

        return step

    def close(self) -> None:
        pass
