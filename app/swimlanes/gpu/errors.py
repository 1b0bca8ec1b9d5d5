"""Errors raised by the GPU executor and calibration (no numba import here)."""

from __future__ import annotations

NO_GPU_MESSAGE = "no CUDA GPU found: simulation still works"


class GpuError(RuntimeError):
    """A user-facing GPU failure with a clear message (no GPU, not enough memory, CUDA error)."""


class ExecutionCancelled(Exception):
    """The run was cancelled; every buffer, stream and event has been released."""


def gib(nbytes: int) -> str:
    """Bytes as GiB with one decimal, the unit of the memory messages."""
    return f"{nbytes / 2**30:.1f} GiB"
