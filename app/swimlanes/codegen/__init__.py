"""Code export: turn a pipeline into a runnable Numba CUDA script or CUDA C++ program."""

from swimlanes.codegen.cuda import generate_cuda
from swimlanes.codegen.python import generate_python

LANGUAGES = {"python": generate_python, "cuda": generate_cuda}

__all__ = ["LANGUAGES", "generate_cuda", "generate_python"]
