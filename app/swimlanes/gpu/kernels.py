"""Synthetic kernels that do what a pipeline's kernel op says.

* ``spin``: every block runs for an exact time by spinning on the GPU's ``%globaltimer``
  (nanoseconds), read through a tiny CUDA C device function linked into the kernel.
  ``cuda.nanosleep`` is not used: it only approximates the requested time.
* ``fma``: a loop of independent fused multiply-adds per thread (``flops`` kernels).
* ``stream``: a grid-stride copy through device memory, with optional FMAs per element
  (``bytes`` kernels, and ``flops`` + ``bytes`` roofline kernels).

Everything here is compiled eagerly (explicit signatures) when :func:`build` runs, which the
executor calls before the timed region.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

from swimlanes.gpu.plan import FMA_PER_TRIP, STREAM_FMA_PER_TRIP, KernelPlan

GLOBALTIMER_CU = r"""
extern "C" __device__ int swimlanes_globaltimer(unsigned long long *out)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    *out = t;
    return 0;
}
"""


def _globaltimer_source() -> str:
    # numba links source files by path; write ours once per process into a private folder.
    path = Path(tempfile.mkdtemp(prefix="swimlanes-cu-")) / "globaltimer.cu"
    path.write_text(GLOBALTIMER_CU, encoding="ascii")
    return str(path)


class Kernels:
    """The compiled kernels and the launch preparation for a :class:`KernelPlan`."""

    def __init__(self, spin: Any, fma: Any, stream: Any, scratch: Any) -> None:
        self.spin = spin
        self.fma = fma
        self.stream = stream
        self.scratch = scratch

    def prepare(self, k: KernelPlan, numba_stream: Any, backend: Any, a: Any, b: Any) -> Any:
        """A no-argument launch of the kernel ``k`` on ``numba_stream`` (configured now)."""
        kernel = {"spin": self.spin, "fma": self.fma, "stream": self.stream}[k.variant]
        shared = backend.residency_shared_bytes(kernel, k.blocks_per_sm) if k.blocks_per_sm else 0
        launch = kernel[k.blocks, k.threads, numba_stream, shared]
        if k.variant == "spin":
            block_ns = k.block_ns
            return lambda: launch(block_ns)
        if k.variant == "fma":
            iters, out = k.fma_iters, self.scratch
            return lambda: launch(iters, out)
        nbytes = k.elements * 4
        src, dst = backend.device_view(a, nbytes), backend.device_view(b, nbytes)
        n, trips = k.elements, -(-k.fma_per_element // STREAM_FMA_PER_TRIP)
        return lambda: launch(src, dst, n, trips)


def _timer(simulator: bool) -> Any:
    """The device function that reads a nanosecond clock: %globaltimer on a GPU, the host
    clock under the simulator (which runs kernels as Python threads)."""
    from numba import cuda

    if simulator:
        import time

        def read_timer() -> int:
            return time.perf_counter_ns()

        return cuda.jit(device=True)(read_timer)
    return cuda.declare_device("swimlanes_globaltimer", "uint64()", link=[_globaltimer_source()])


@functools.cache
def build(simulator: bool) -> Kernels:
    """Compile the kernels (under the simulator, ``spin`` reads the host clock instead)."""
    import numpy as np
    from numba import config, cuda, float32, int64

    # Pipelines launch tiny grids on purpose (launch-bound lessons); numba would warn each time.
    # (numba.config sets its options from the environment at import time: mypy sees none.)
    config.CUDA_LOW_OCCUPANCY_WARNINGS = False  # type: ignore[attr-defined]

    timer = _timer(simulator)

    @cuda.jit("void(int64)")
    def spin(block_ns):  # pragma: no cover - runs on the GPU
        # One thread per block watches the clock; the others wait at the barrier. With every
        # warp polling %globaltimer, CUPTI's kernel tracing slowed a full SM's blocks by
        # about 25% on an H200 (50 us per 200 us wave); one poller per block is unaffected.
        if cuda.threadIdx.x == 0:
            t0 = int64(timer())
            while int64(timer()) - t0 < block_ns:
                pass
        cuda.syncthreads()

    @cuda.jit("void(int32, float32[::1])")
    def fma(iters, out):  # pragma: no cover - runs on the GPU
        # 8 independent chains, 16 FMAs per loop trip: enough work per warp to hide the FMA
        # latency and the loop's own instructions.
        x = float32(cuda.threadIdx.x) * float32(1e-7)
        m, c = float32(0.9999), float32(1e-4)
        a0, a1, a2, a3 = x, x + float32(1), x + float32(2), x + float32(3)
        a4, a5, a6, a7 = x + float32(4), x + float32(5), x + float32(6), x + float32(7)
        for _ in range(iters):
            for _ in range(2):
                a0 = cuda.fma(a0, m, c)
                a1 = cuda.fma(a1, m, c)
                a2 = cuda.fma(a2, m, c)
                a3 = cuda.fma(a3, m, c)
                a4 = cuda.fma(a4, m, c)
                a5 = cuda.fma(a5, m, c)
                a6 = cuda.fma(a6, m, c)
                a7 = cuda.fma(a7, m, c)
        s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
        if s == float32(-1.0):  # never true; keeps the loop from being optimised away
            out[0] = s

    @cuda.jit("void(float32[::1], float32[::1], int64, int32)")
    def stream(src, dst, n, trips):  # pragma: no cover - runs on the GPU
        # Grid-stride and coalesced, four elements per thread at a time (four loads in
        # flight), each element's FMAs in two chains: eight independent chains like the fma
        # kernel's, 4 FMAs per element per loop trip. The tail, one element at a time, keeps
        # four chains and the same 4 FMAs per trip.
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        m, c = float32(0.9999), float32(1e-4)
        while i + 3 * stride < n:
            v0, v1 = src[i], src[i + stride]
            v2, v3 = src[i + 2 * stride], src[i + 3 * stride]
            w0, w1, w2, w3 = v0 + c, v1 + c, v2 + c, v3 + c
            for _ in range(trips):
                for _ in range(2):
                    v0 = cuda.fma(v0, m, c)
                    w0 = cuda.fma(w0, m, c)
                    v1 = cuda.fma(v1, m, c)
                    w1 = cuda.fma(w1, m, c)
                    v2 = cuda.fma(v2, m, c)
                    w2 = cuda.fma(w2, m, c)
                    v3 = cuda.fma(v3, m, c)
                    w3 = cuda.fma(w3, m, c)
            dst[i], dst[i + stride] = v0 + w0, v1 + w1
            dst[i + 2 * stride], dst[i + 3 * stride] = v2 + w2, v3 + w3
            i += 4 * stride
        while i < n:
            a0 = src[i]
            a1, a2, a3 = a0 + c, a0 - c, a0 + m
            for _ in range(trips):
                a0 = cuda.fma(a0, m, c)
                a1 = cuda.fma(a1, m, c)
                a2 = cuda.fma(a2, m, c)
                a3 = cuda.fma(a3, m, c)
            dst[i] = a0 + a1 + a2 + a3
            i += stride

    assert FMA_PER_TRIP == 16  # the fma kernel above: 8 chains, unrolled twice
    assert STREAM_FMA_PER_TRIP == 4  # the stream kernel: 2 chains per element, unrolled twice
    scratch = cuda.device_array(1, dtype=np.float32)
    return Kernels(spin, fma, stream, scratch)
