"""CuPy streams: a host-to-device copy on one stream while kernels run on others.

The copy overlaps the kernels only if its host buffer is pinned (page-locked): a pageable
buffer makes the copy synchronous. Capture it:
``swimlanes capture --range overlap -- python cupy_streams.py``.
"""

import cupy as cp
import cupyx

from swimlanes.gpu.capture import region

n = 1 << 24
copy_stream, stream_a, stream_b = cp.cuda.Stream(), cp.cuda.Stream(), cp.cuda.Stream()
host = cupyx.empty_pinned((n,), dtype=cp.float32)
host[:] = 1.0
d_in = cp.empty(n, dtype=cp.float32)
x = cp.random.rand(n, dtype=cp.float32)
y = cp.random.rand(n, dtype=cp.float32)
z, w = cp.empty_like(x), cp.empty_like(x)


def step() -> None:
    with copy_stream:
        d_in.set(host, stream=copy_stream)
    with stream_a:
        for _ in range(4):
            cp.multiply(x, y, out=z)
    with stream_b:
        for _ in range(4):
            cp.add(x, y, out=w)
    copy_stream.synchronize()
    cp.cuda.Device().synchronize()


step()  # warm-up: kernel compilation and the memory pool
with region("overlap"):
    step()
