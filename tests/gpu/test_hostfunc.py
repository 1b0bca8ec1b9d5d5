"""The native host_func callback (numba cfunc; runs on the CPU, no GPU needed)."""

from __future__ import annotations

import ctypes
import time

from swimlanes.gpu.hostfunc import SLOT_END, SLOT_START, host_func_pointer, new_slot


def test_callback_busy_waits_and_stamps_the_host_clock() -> None:
    callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(host_func_pointer())
    slot = new_slot(2_000_000)
    before = time.perf_counter_ns()
    callback(slot.ctypes.data)
    after = time.perf_counter_ns()
    assert before <= slot[SLOT_START] <= slot[SLOT_END] <= after
    assert slot[SLOT_END] - slot[SLOT_START] >= 2_000_000
    assert after - before < 50_000_000
