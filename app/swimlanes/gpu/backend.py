"""The real CUDA backend (:class:`NumbaBackend`) and :func:`make_backend`, which picks it or
the simulator one.

:class:`NumbaBackend` drives a real GPU through Numba CUDA (kernel launches) and
``cuda.bindings.driver`` (streams with flags and priority, copies, memsets, events, host
functions, raw allocations). The interface it implements, and the types both backends share,
are in :mod:`swimlanes.gpu.backend_api`. Every allocation is counted so tests can assert that
nothing is left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Any

import numpy as np

from swimlanes.gpu.availability import cuda_available
from swimlanes.gpu.backend_api import (
    LEGACY_STREAM,
    PER_THREAD_STREAM,
    Buffer,
    CudaBackend,
    Step,
    StreamHandle,
    host_available_bytes,
)
from swimlanes.gpu.errors import NO_GPU_MESSAGE, GpuError
from swimlanes.gpu.plan import DeviceInfo, KernelPlan
from swimlanes.model.document import Stream


class NumbaBackend:
    """A real GPU through Numba CUDA and ``cuda.bindings.driver``."""

    name = "numba"
    simulator = False

    def __init__(self) -> None:
        from cuda.bindings import driver
        from numba import cuda

        self.cuda = cuda
        self.drv = driver
        try:
            self.context = cuda.current_context()
        except Exception as err:  # noqa: BLE001 - numba raises several types here
            raise GpuError(f"cannot open the GPU: {err}") from None
        self._device = cuda.get_current_device()
        self._live = 0
        self._kernels: Any = None

    # -- errors and facts -------------------------------------------------------------------
    def check(self, result: Any, call: str) -> Any:
        """Unpack a cuda.bindings result; a CUDA error becomes a GpuError naming the call."""
        err = result[0]
        if err != self.drv.CUresult.CUDA_SUCCESS:
            _, name = self.drv.cuGetErrorName(err)
            text = name.decode() if isinstance(name, bytes) else str(err)
            raise GpuError(f"{call} failed: {text}")
        if len(result) == 1:
            return None
        return result[1] if len(result) == 2 else result[1:]

    @property
    def live_allocations(self) -> int:
        return self._live

    def device_info(self) -> DeviceInfo:
        a = self.drv.CUdevice_attribute
        dev = self.check(self.drv.cuCtxGetDevice(), "cuCtxGetDevice")

        def attr(x: Any) -> int:
            return int(self.check(self.drv.cuDeviceGetAttribute(x, dev), "cuDeviceGetAttribute"))

        free, total = self.check(self.drv.cuMemGetInfo(), "cuMemGetInfo")
        name = self._device.name
        return DeviceInfo(
            name=name.decode() if isinstance(name, bytes) else str(name),
            sm_count=attr(a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            max_threads_per_sm=attr(a.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
            max_blocks_per_sm=attr(a.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
            free_bytes=int(free),
            total_bytes=int(total),
        )

    def driver_version(self) -> str:
        """The NVIDIA driver and the CUDA version it supports (``580.95.05, CUDA 13.0``):
        part of the host identity a calibration is valid for."""
        from swimlanes.gpu.host import nvidia_kernel_module_version

        v = int(self.check(self.drv.cuDriverGetVersion(), "cuDriverGetVersion"))
        cuda = f"CUDA {v // 1000}.{v % 1000 // 10}"
        module = nvidia_kernel_module_version()
        return f"{module}, {cuda}" if module else cuda

    def host_available_bytes(self) -> int | None:
        return host_available_bytes()

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, kind: str, nbytes: int) -> Buffer:
        nbytes = max(1, int(nbytes))
        if kind == "device":
            ptr = int(self.check(self.drv.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})"))
            buf = Buffer(kind, nbytes, ptr)
        elif kind == "pinned":
            arr = self.cuda.pinned_array(nbytes, dtype=np.uint8)
            buf = Buffer(kind, nbytes, int(arr.ctypes.data), arr)
        else:
            arr = np.ones(nbytes, dtype=np.uint8)  # touched, so no first-use page faults
            buf = Buffer(kind, nbytes, int(arr.ctypes.data), arr)
        self._live += 1
        return buf

    def release(self, buf: Buffer) -> None:
        if buf.kind == "device":
            self.check(self.drv.cuMemFree(buf.ptr), "cuMemFree")
        elif buf.kind == "flag":
            self.check(self.drv.cuMemFreeHost(buf.ptr), "cuMemFreeHost")
        buf.array = None
        self._live -= 1

    def device_view(self, buf: Buffer, nbytes: int, dtype: Any = np.float32) -> Any:
        """A numba device array over part of a raw device buffer (no copy, not owned)."""
        itemsize = np.dtype(dtype).itemsize
        desc = {
            "shape": (max(1, nbytes // itemsize),),
            "typestr": np.dtype(dtype).str,
            "data": (buf.ptr, False),
            "version": 3,
            "strides": None,
        }
        return self.cuda.from_cuda_array_interface(desc, owner=None, sync=False)

    # -- streams and events -----------------------------------------------------------------
    def create_stream(self, stream: Stream) -> StreamHandle:
        cuda = self.cuda
        if stream.kind == "legacy_default":
            return StreamHandle(
                stream.name, stream.kind, 0, LEGACY_STREAM, cuda.legacy_default_stream()
            )
        if stream.kind == "per_thread_default":
            ns = cuda.per_thread_default_stream()
            return StreamHandle(stream.name, stream.kind, 0, PER_THREAD_STREAM, ns)
        flags = 1 if stream.kind == "non_blocking" else 0  # CU_STREAM_NON_BLOCKING
        lo, hi = self.check(self.drv.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange")
        prio = min(max(stream.priority, int(hi)), int(lo))  # CUDA clamps; so do we, visibly
        handle = self.check(
            self.drv.cuStreamCreateWithPriority(flags, prio), "cuStreamCreateWithPriority"
        )
        self._live += 1
        return StreamHandle(
            stream.name, stream.kind, prio, int(handle), cuda.external_stream(int(handle)), True
        )

    def destroy_stream(self, s: StreamHandle) -> None:
        if s.owned:
            s.numba_stream = None
            self.check(self.drv.cuStreamDestroy(s.handle), "cuStreamDestroy")
            s.owned = False
            self._live -= 1

    def create_event(self) -> Any:
        ev = self.check(self.drv.cuEventCreate(0), "cuEventCreate")  # timing enabled
        self._live += 1
        return ev

    def destroy_event(self, ev: Any) -> None:
        self.check(self.drv.cuEventDestroy(ev), "cuEventDestroy")
        self._live -= 1

    def elapsed_ns(self, ev_from: Any, ev_to: Any) -> int | None:
        err, ms = self.drv.cuEventElapsedTime(ev_from, ev_to)
        if err != self.drv.CUresult.CUDA_SUCCESS:
            return None
        return round(ms * 1e6)

    def synchronize(self) -> None:
        self.check(self.drv.cuCtxSynchronize(), "cuCtxSynchronize")

    # -- kernels ----------------------------------------------------------------------------
    def compile_kernels(self) -> None:
        if self._kernels is None:
            from swimlanes.gpu import kernels

            try:
                self._kernels = kernels.build(simulator=False)
            except Exception as err:  # noqa: BLE001 - NVRTC, linker and numba errors alike
                raise GpuError(f"cannot compile the synthetic kernels: {err}") from err

    def prepare_kernel(
        self, k: KernelPlan, s: StreamHandle, a: Buffer | None, b: Buffer | None
    ) -> Step:
        self.compile_kernels()
        return self._kernels.prepare(k, s.numba_stream, self, a, b)

    def residency_shared_bytes(self, dispatcher: Any, blocks_per_sm: int) -> int:
        """Dynamic shared memory per block that lets at most ``blocks_per_sm`` blocks share an
        SM: how a real kernel's shared memory limits its residency. Raises GpuError when the
        device cannot limit it that far."""
        a = self.drv.CUdevice_attribute
        dev = self.check(self.drv.cuCtxGetDevice(), "cuCtxGetDevice")

        def attr(x: Any) -> int:
            return int(self.check(self.drv.cuDeviceGetAttribute(x, dev), "cuDeviceGetAttribute"))

        per_sm = attr(a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
        reserved = attr(a.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
        opt_in = attr(a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        # Just over 1/(n+1) of the SM's shared memory per block (in the 128-byte allocation
        # unit): n blocks fit, n + 1 do not.
        unit = 128
        per_block = per_sm // (blocks_per_sm + 1) // unit * unit + unit - reserved
        if per_block > opt_in:
            raise GpuError(
                f"blocks_per_sm {blocks_per_sm}: this GPU cannot keep fewer than "
                f"{per_sm // (opt_in + reserved) + 1} blocks per SM through shared memory"
            )
        function = next(iter(dispatcher.overloads.values()))._codelibrary.get_cufunc()
        f = self.drv.CUfunction_attribute
        for key, value in (
            (f.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, opt_in),
            (f.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100),
        ):
            self.check(
                self.drv.cuKernelSetAttribute(key, value, function.handle, function.device.id),
                "cuKernelSetAttribute",
            )
        return per_block

    # -- copies and memsets -----------------------------------------------------------------
    def prepare_copy(
        self, kind: str, s: StreamHandle, dev: Buffer, other: Buffer, nbytes: int, sync: bool
    ) -> Step:
        d, check, ok = self.drv, self.check, self.drv.CUresult.CUDA_SUCCESS
        stream = d.CUstream(s.handle)
        dptr, optr = d.CUdeviceptr(dev.ptr), other.ptr
        if kind == "h2d":
            call, args = d.cuMemcpyHtoDAsync, (dptr, optr, nbytes, stream)
            sync_call, sync_args = d.cuMemcpyHtoD, (dptr, optr, nbytes)
        elif kind == "d2h":
            call, args = d.cuMemcpyDtoHAsync, (optr, dptr, nbytes, stream)
            sync_call, sync_args = d.cuMemcpyDtoH, (optr, dptr, nbytes)
        else:
            optr_d = d.CUdeviceptr(other.ptr)
            call, args = d.cuMemcpyDtoDAsync, (optr_d, dptr, nbytes, stream)
            sync_call, sync_args = d.cuMemcpyDtoD, (optr_d, dptr, nbytes)
        if sync and s.handle == LEGACY_STREAM:
            # cudaMemcpy: the plain synchronous call, on the legacy default stream.
            def step() -> None:
                r = sync_call(*sync_args)
                if r[0] != ok:
                    check(r, sync_call.__name__)
        elif sync:
            # A synchronous copy on a named stream: async copy, then wait for the stream
            # (what torch's .to(non_blocking=False) does).
            stream_sync = d.cuStreamSynchronize

            def step() -> None:
                r = call(*args)
                if r[0] != ok:
                    check(r, call.__name__)
                r = stream_sync(stream)
                if r[0] != ok:
                    check(r, "cuStreamSynchronize")
        else:

            def step() -> None:
                r = call(*args)
                if r[0] != ok:
                    check(r, call.__name__)

        return step

    def prepare_memset(self, s: StreamHandle, dev: Buffer, nbytes: int, sync: bool) -> Step:
        d, check, ok = self.drv, self.check, self.drv.CUresult.CUDA_SUCCESS
        stream, dptr = d.CUstream(s.handle), d.CUdeviceptr(dev.ptr)
        if sync:

            def step() -> None:
                r = d.cuMemsetD8(dptr, 0, nbytes)
                if r[0] != ok:
                    check(r, "cuMemsetD8")
        else:

            def step() -> None:
                r = d.cuMemsetD8Async(dptr, 0, nbytes, stream)
                if r[0] != ok:
                    check(r, "cuMemsetD8Async")

        return step

    # -- ordering and synchronisation -------------------------------------------------------
    def _simple(self, call: Any, *args: Any) -> Step:
        check, ok = self.check, self.drv.CUresult.CUDA_SUCCESS

        def step() -> None:
            r = call(*args)
            if r[0] != ok:
                check(r, call.__name__)

        return step

    def prepare_event_record(self, ev: Any, s: StreamHandle) -> Step:
        return self._simple(self.drv.cuEventRecord, ev, self.drv.CUstream(s.handle))

    def prepare_event_wait(self, ev: Any, s: StreamHandle) -> Step:
        return self._simple(self.drv.cuStreamWaitEvent, self.drv.CUstream(s.handle), ev, 0)

    def prepare_event_sync(self, ev: Any) -> Step:
        return self._simple(self.drv.cuEventSynchronize, ev)

    def prepare_stream_sync(self, s: StreamHandle) -> Step:
        return self._simple(self.drv.cuStreamSynchronize, self.drv.CUstream(s.handle))

    def prepare_device_sync(self) -> Step:
        return self._simple(self.drv.cuCtxSynchronize)

    def prepare_host_func(self, s: StreamHandle, slot: np.ndarray) -> Step:
        from swimlanes.gpu.hostfunc import launch_host_func

        launch = launch_host_func()
        stream, data = s.handle, slot.ctypes.data  # the driver's handle, as an int

        def step() -> None:
            err = launch(stream, data)
            if err:  # CUDA_SUCCESS is 0
                self.check((self.drv.CUresult(err),), "cuLaunchHostFunc")

        return step

    def prepare_malloc(self, slots: list[int], slot: int, nbytes: int) -> Step:
        d, check = self.drv, self.check

        def step() -> None:
            slots[slot] = int(check(d.cuMemAlloc(nbytes), "cuMemAlloc"))
            self._live += 1

        return step

    def prepare_free(self, slots: list[int], slot: int) -> Step:
        return lambda: self.free_slot(slots, slot)

    def free_slot(self, slots: list[int], slot: int) -> None:
        """cuMemFree the slot's allocation if it holds one (also used by cleanup)."""
        ptr = slots[slot]
        if ptr:
            slots[slot] = 0
            self._live -= 1
            self.check(self.drv.cuMemFree(ptr), "cuMemFree")

    def alloc_slot(self, slots: list[int], slot: int, nbytes: int) -> None:
        slots[slot] = int(self.check(self.drv.cuMemAlloc(nbytes), "cuMemAlloc"))
        self._live += 1

    # -- several devices (swimlanes.gpu.multi_executor) -----------------------------------
    def context_handle(self) -> Any:
        """The driver context this backend's calls run in (its device's primary context)."""
        return self.check(self.drv.cuCtxGetCurrent(), "cuCtxGetCurrent")

    def ordinal(self) -> int:
        return int(self.check(self.drv.cuCtxGetDevice(), "cuCtxGetDevice"))

    def enable_peer_access(self, peer_ordinal: int, peer_context: Any) -> bool:
        """Let this device's kernels and copies reach ``peer``'s memory directly
        (cuCtxEnablePeerAccess); False where the pair cannot (copies then go through the host)."""
        d = self.drv
        me = self.ordinal()
        can = self.check(d.cuDeviceCanAccessPeer(me, peer_ordinal), "cuDeviceCanAccessPeer")
        if not can:
            return False
        err = d.cuCtxEnablePeerAccess(peer_context, 0)[0]
        if err not in (d.CUresult.CUDA_SUCCESS, d.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED):
            self.check((err,), "cuCtxEnablePeerAccess")
        return True

    def fill_f32(self, buf: Buffer, nbytes: int, value: float) -> None:
        """Fill the first ``nbytes`` (whole float32s) of a device buffer with ``value``."""
        bits = int(np.array([value], dtype=np.float32).view(np.uint32)[0])
        count = nbytes // 4
        if count:
            self.check(self.drv.cuMemsetD32(buf.ptr, bits, count), "cuMemsetD32")

    def read_f32(self, buf: Buffer, element: int) -> float:
        """One float32 of a device buffer (after the run: for the data check)."""
        out = np.zeros(1, dtype=np.float32)
        self.check(self.drv.cuMemcpyDtoH(out.ctypes.data, buf.ptr + 4 * element, 4), "cuMemcpyDtoH")
        return float(out[0])

    def alloc_flag(self) -> Buffer:
        """A 32-bit flag in pinned host memory that every device's streams can write and wait
        on (portable, mapped: with unified addressing its address is the same everywhere)."""
        d = self.drv
        flags = int(d.CU_MEMHOSTALLOC_PORTABLE) | int(d.CU_MEMHOSTALLOC_DEVICEMAP)
        ptr = int(self.check(d.cuMemHostAlloc(4, flags), "cuMemHostAlloc"))
        arr = np.ctypeslib.as_array((ctypes.c_uint32 * 1).from_address(ptr))
        arr[0] = 0
        self._live += 1
        return Buffer("flag", 4, ptr, arr)

    def prepare_signal(self, s: StreamHandle, flag: Buffer, counter: list[int]) -> Step:
        """cuStreamWriteValue32: the stream sets ``flag`` to ``counter[0]`` (read at issue)
        once its earlier work is done."""
        d, check, ok = self.drv, self.check, self.drv.CUresult.CUDA_SUCCESS
        stream, addr, write = d.CUstream(s.handle), d.CUdeviceptr(flag.ptr), d.cuStreamWriteValue32

        def step() -> None:
            r = write(stream, addr, counter[0], 0)
            if r[0] != ok:
                check(r, "cuStreamWriteValue32")

        return step

    def prepare_await(self, s: StreamHandle, flag: Buffer, counter: list[int]) -> Step:
        """cuStreamWaitValue32: later work on the stream waits until ``flag`` reaches
        ``counter[0]`` (read at issue), without blocking the host."""
        d, check, ok = self.drv, self.check, self.drv.CUresult.CUDA_SUCCESS
        stream, addr, wait = d.CUstream(s.handle), d.CUdeviceptr(flag.ptr), d.cuStreamWaitValue32
        geq = int(d.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)

        def step() -> None:
            r = wait(stream, addr, counter[0], geq)
            if r[0] != ok:
                check(r, "cuStreamWaitValue32")

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
        """cudaMemcpyPeerAsync: ``src`` (in ``src_context``) to ``dst`` on stream ``s``."""
        d = self.drv
        args = (
            d.CUdeviceptr(dst.ptr), dst_context, d.CUdeviceptr(src.ptr), src_context, nbytes,
            d.CUstream(s.handle),
        )  # fmt: skip
        return self._simple(d.cuMemcpyPeerAsync, *args)

    def close(self) -> None:
        """Drop numba's deferred frees so released memory really returns to the driver."""
        with contextlib.suppress(Exception):  # best effort on a possibly broken context
            self.context.deallocations.clear()


def device_count() -> int:
    """GPUs this process can use: the driver's count, or the simulated devices
    (``SWIMLANES_SIM_GPUS``, default 8) under numba's CUDA simulator."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return int(os.environ.get("SWIMLANES_SIM_GPUS", "8"))
    from swimlanes.gpu.availability import cuda_device_count

    return cuda_device_count()


def make_backend(kind: str = "auto") -> CudaBackend:
    """The real backend, or the simulator one when NUMBA_ENABLE_CUDASIM=1 is set."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or kind == "simulator":
        from swimlanes.gpu.sim_backend import SimulatorBackend

        return SimulatorBackend()
    if not cuda_available():
        raise GpuError(NO_GPU_MESSAGE)
    return NumbaBackend()
