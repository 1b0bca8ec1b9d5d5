"""Code export: turn a pipeline into a runnable Numba CUDA script or CUDA C++ program.

A single-device pipeline goes through ``python`` and ``cuda``; a pipeline that declares several
devices or several host threads on a device, or uses a peer copy or a collective, through
``python_multi`` and ``cuda_multi`` (one host thread per device, or per declared host thread,
each issuing its own ops; peer copies, NCCL).
"""

from swimlanes.codegen import cuda, python
from swimlanes.codegen.cuda_multi import generate_cuda_multi
from swimlanes.codegen.multi import is_multi_device
from swimlanes.codegen.plan import CodegenError, cpp_string_literal, python_string_literal
from swimlanes.codegen.python_multi import generate_python_multi
from swimlanes.model.document import Pipeline


def generate_python(pipeline: Pipeline, *, repeat: int = 5) -> str:
    """The Numba CUDA script of ``pipeline`` (printable ASCII only); a :class:`CodegenError`
    names a value the script cannot hold."""
    if is_multi_device(pipeline):
        return generate_python_multi(pipeline, repeat=repeat)
    return python.generate_python(pipeline, repeat=repeat)


def generate_cuda(pipeline: Pipeline, *, repeat: int = 5) -> str:
    """The CUDA C++ program of ``pipeline`` (printable ASCII only); a :class:`CodegenError`
    names a value the program cannot hold."""
    if is_multi_device(pipeline):
        return generate_cuda_multi(pipeline, repeat=repeat)
    return cuda.generate_cuda(pipeline, repeat=repeat)


LANGUAGES = {"python": generate_python, "cuda": generate_cuda}

__all__ = [
    "LANGUAGES",
    "CodegenError",
    "cpp_string_literal",
    "generate_cuda",
    "generate_python",
    "python_string_literal",
]
