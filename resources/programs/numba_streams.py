"""Numba: chunks of an array copied in, scaled and copied out, one chunk per stream.

Capture it: ``swimlanes capture --range chunks -- python numba_streams.py``.
"""

import numpy as np
from numba import cuda

from swimlanes.gpu.capture import region


@cuda.jit
def scale(a, factor):
    i = cuda.grid(1)
    if i < a.size:
        for _ in range(64):
            a[i] = a[i] * factor + 1.0


chunks, n = 4, 1 << 22
host = cuda.pinned_array((chunks, n), dtype=np.float32)
host[:] = 1.0
streams = [cuda.stream() for _ in range(chunks)]
device = [cuda.device_array(n, dtype=np.float32, stream=s) for s in streams]


def run() -> None:
    for k, s in enumerate(streams):
        device[k].copy_to_device(host[k], stream=s)
        scale[(n + 255) // 256, 256, s](device[k], np.float32(0.5))
        device[k].copy_to_host(host[k], stream=s)
    cuda.synchronize()


run()  # warm-up: compiles the kernel
with region("chunks"):
    run()
