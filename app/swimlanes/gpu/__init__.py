"""Run pipelines on a real GPU through Numba CUDA (imported lazily; no Qt)."""

from __future__ import annotations

from typing import Any

from swimlanes.gpu.availability import cuda_available
from swimlanes.gpu.errors import NO_GPU_MESSAGE, ExecutionCancelled, GpuError

__all__ = ["NO_GPU_MESSAGE", "ExecutionCancelled", "GpuError", "cuda_available", "execute"]


def __getattr__(name: str) -> Any:
    # The executor module is light, but keep `import swimlanes.gpu` free of everything else.
    if name == "execute":
        from swimlanes.gpu.executor import execute

        return execute
    raise AttributeError(name)
