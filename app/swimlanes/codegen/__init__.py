"""Code export: turn a pipeline into a runnable Numba CUDA script or CUDA C++ program."""

from swimlanes.codegen.cuda import generate_cuda
from swimlanes.codegen.plan import CodegenError, cpp_string_literal, python_string_literal
from swimlanes.codegen.python import generate_python

LANGUAGES = {"python": generate_python, "cuda": generate_cuda}

__all__ = [
    "LANGUAGES",
    "CodegenError",
    "cpp_string_literal",
    "generate_cuda",
    "generate_python",
    "python_string_literal",
]
