"""The native callback behind ``host_func`` ops (``cuLaunchHostFunc``).

CUDA runs host functions on a driver thread. A Python callback would take the GIL and stall the
thread issuing the pipeline, which a C++ program's callback does not do, so the callback is
compiled to native code with ``numba.cfunc``. Its user data is an int64[4] slot:
``[duration_ns, start_ns, end_ns, scratch]``; it busy-waits ``duration_ns`` on CLOCK_MONOTONIC
(the clock of ``time.perf_counter_ns`` on Linux) and writes when it started and ended.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np

SLOT_DURATION, SLOT_START, SLOT_END = 0, 1, 2
CLOCK_MONOTONIC = 1


def new_slot(duration_ns: int) -> np.ndarray:
    """The user data of one host_func op (kept alive by the caller for the whole run)."""
    slot = np.zeros(6, dtype=np.int64)
    slot[SLOT_DURATION] = duration_ns
    return slot


@functools.cache
def host_func_pointer() -> int:
    """Address of the compiled ``void callback(void *slot)``."""
    from numba import carray, cfunc, types

    libc = ctypes.CDLL(None)
    clock_gettime = libc.clock_gettime
    clock_gettime.argtypes = [ctypes.c_int, ctypes.c_void_p]
    clock_gettime.restype = ctypes.c_int

    @cfunc(types.void(types.voidptr))
    def callback(p):  # pragma: no cover - runs on a CUDA driver thread
        d = carray(p, 6, dtype=np.int64)
        ts = d[4:]
        clock_gettime(CLOCK_MONOTONIC, ts.ctypes.data)
        start = ts[0] * 1000000000 + ts[1]
        now = start
        while now - start < d[0]:
            clock_gettime(CLOCK_MONOTONIC, ts.ctypes.data)
            now = ts[0] * 1000000000 + ts[1]
        d[1] = start
        d[2] = now

    # The compiled callback must outlive every run that calls it: the cached function holds it.
    host_func_pointer.keepalive = callback  # type: ignore[attr-defined]
    address = callback.address
    assert address is not None  # a cfunc given its signature is compiled at once
    return int(address)


@functools.cache
def launch_host_func() -> Callable[[int, int], int]:
    """``launch(stream, slot_address) -> CUresult``: ``cuLaunchHostFunc`` of the native
    callback, called straight into the driver library.

    Not through ``cuda.bindings.driver.cuLaunchHostFunc``: that wraps every host function in a
    callback that takes the GIL before calling it, so the callback would wait while the thread
    issuing the pipeline runs Python (a ``host`` op's busy loop, the code between two calls),
    which a C++ program's callback never does."""
    libcuda = ctypes.CDLL("libcuda.so.1")
    call = libcuda.cuLaunchHostFunc
    call.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    call.restype = ctypes.c_int
    fn = host_func_pointer()

    def launch(stream: int, data: int) -> int:
        return int(call(stream, fn, data))

    return launch
