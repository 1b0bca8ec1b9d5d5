"""Whether a CUDA driver and a GPU are present, asked of the driver library directly."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os


@functools.cache
def cuda_available() -> bool:
    """True when a CUDA driver and at least one GPU are present.

    Asks the driver library directly (cuInit + cuDeviceGetCount), so numba is not imported and
    no context is created. With ``NUMBA_ENABLE_CUDASIM=1`` numba's CUDA simulator stands in for
    the GPU (``make_backend`` picks it), so the GPU commands can be tested without one.
    """
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return True
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return False
    try:
        if lib.cuInit(0) != 0:
            return False
        count = ctypes.c_int(0)
        return lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
    except AttributeError:
        return False


def cuda_device_count() -> int:
    """How many GPUs the driver reports (0 without a driver)."""
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
        if lib.cuInit(0) != 0:
            return 0
        count = ctypes.c_int(0)
        return count.value if lib.cuDeviceGetCount(ctypes.byref(count)) == 0 else 0
    except (OSError, AttributeError):
        return 0
