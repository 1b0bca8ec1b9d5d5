"""NCCL for the multi-device executor: a small typed ctypes wrapper of the NCCL library.

Binding decision (issue 15). Two ways were tried, both on a machine of 2 H200s (2026-11-24,
driver 580.159.04, CUDA 13, NCCL 2.28.9 from the image's ``nvidia-nccl-cu13``):

* ``nccl4py`` 0.6.0 (NVIDIA's Python bindings, the current release): the image has no nccl4py,
  so its 3.7 MB wheel had to be carried; installed without its dependencies it imported there
  and found the same NCCL (``get_version()`` 22809). Its wheel pins ``cuda-core~=1.0`` and
  ``cuda-pathfinder>=1.5.4``, and its ``cu13`` extra pulls ``nvidia-cutlass-dsl`` (for its
  device-side API, which Swimlanes does not use): one more dependency, with pins, for every
  machine the app runs on.
* ``cuda-bindings`` (already the executor's driver binding) plus the NCCL library that the
  ``nvidia-nccl-cu13`` wheel (or a system NCCL) installs, loaded through ``ctypes``: it ran the
  multi-GPU tests and the links calibration there (peer copies, all four collectives, one and
  two ranks, data checked).

Swimlanes uses the second: the executor needs twelve entry points of NCCL's stable C API
(``ncclGetVersion``, ``ncclGetUniqueId``, ``ncclCommInitAll``, ``ncclCommInitRank``, the four
collectives, ``ncclGroupStart``/``End``, ``ncclCommDestroy``/``Abort``, plus
``ncclGetErrorString``), the wrapper below types each of them, and it adds no dependency:
whatever NCCL the machine's PyTorch or JAX uses is found and used. Streams and device pointers
are plain integers (the executor's ``cuda.bindings`` handles), so nothing is converted between
two bindings. ``tests/gpu/run_on_device.sh multi`` prints which NCCL loaded and whether
nccl4py imports beside it (where its wheel is carried), so the choice can be re-checked.

Nothing here is imported at app start: :func:`load_nccl` runs only when a pipeline with a
collective is executed or links are calibrated (CI has no GPU and no NCCL).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys
from typing import Any

from swimlanes.gpu.errors import GpuError

NCCL_SUCCESS = 0
#: ncclDataType_t and ncclRedOp_t values (nccl.h, stable since NCCL 2.0).
NCCL_FLOAT32 = 7
NCCL_SUM = 0
#: The unique id's size in bytes (NCCL_UNIQUE_ID_BYTES).
UNIQUE_ID_BYTES = 128
#: Where a program may point Swimlanes at a particular NCCL library.
LIBRARY_VARIABLE = "SWIMLANES_NCCL_LIBRARY"

_Comm = ctypes.c_void_p
_Stream = ctypes.c_void_p


class UniqueId(ctypes.Structure):
    """ncclUniqueId: 128 opaque bytes that every rank of one communicator shares."""

    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def _candidates() -> list[str]:
    """Library paths to try, most specific first: the variable, NVIDIA's wheels on sys.path
    (nvidia-nccl-cu13 and -cu12), then the loader's search path."""
    names = [os.environ.get(LIBRARY_VARIABLE, "")]
    for root in sys.path:
        for sub in ("nvidia/nccl/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"):
            names += sorted(glob.glob(os.path.join(root, sub, "libnccl.so*")))
    names += ["libnccl.so.2", "libnccl.so"]
    return [n for n in names if n]


class Nccl:
    """The NCCL library with typed entry points; every call's result is checked."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.path = str(getattr(lib, "_name", "libnccl"))
        c_int, c_size, vp = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p
        sigs: dict[str, list[Any]] = {
            "ncclGetVersion": [ctypes.POINTER(c_int)],
            "ncclGetUniqueId": [ctypes.POINTER(UniqueId)],
            "ncclCommInitAll": [ctypes.POINTER(_Comm), c_int, ctypes.POINTER(c_int)],
            "ncclCommInitRank": [ctypes.POINTER(_Comm), c_int, UniqueId, c_int],
            "ncclAllReduce": [vp, vp, c_size, c_int, c_int, _Comm, _Stream],
            "ncclReduceScatter": [vp, vp, c_size, c_int, c_int, _Comm, _Stream],
            "ncclAllGather": [vp, vp, c_size, c_int, _Comm, _Stream],
            "ncclBroadcast": [vp, vp, c_size, c_int, c_int, _Comm, _Stream],
            "ncclGroupStart": [],
            "ncclGroupEnd": [],
            "ncclCommDestroy": [_Comm],
            "ncclCommAbort": [_Comm],
        }
        for name, args in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, c_int
        lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = [c_int], ctypes.c_char_p

    def check(self, result: int, call: str) -> None:
        """Raise a GpuError naming ``call`` and NCCL's own text when ``result`` is an error."""
        if result != NCCL_SUCCESS:
            text = self.lib.ncclGetErrorString(result)
            raise GpuError(f"{call} failed: {text.decode() if text else result}")

    def version(self) -> str:
        """NCCL's version as ``2.27.7`` (its code is major*10000 + minor*100 + patch)."""
        code = ctypes.c_int(0)
        self.check(self.lib.ncclGetVersion(ctypes.byref(code)), "ncclGetVersion")
        v = code.value
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"

    def unique_id(self) -> UniqueId:
        uid = UniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        return uid

    def init_all(self, ordinals: list[int]) -> list[int]:
        """One communicator per listed device (rank order), made in this process at once."""
        comms = (_Comm * len(ordinals))()
        devs = (ctypes.c_int * len(ordinals))(*ordinals)
        self.check(self.lib.ncclCommInitAll(comms, len(ordinals), devs), "ncclCommInitAll")
        return [int(c or 0) for c in comms]

    def init_rank(self, nranks: int, uid: UniqueId, rank: int) -> int:
        """This rank's communicator (the device current in the calling thread)."""
        comm = _Comm()
        self.check(
            self.lib.ncclCommInitRank(ctypes.byref(comm), nranks, uid, rank), "ncclCommInitRank"
        )
        return int(comm.value or 0)

    def all_reduce(self, send: int, recv: int, count: int, comm: int, stream: int) -> int:
        return int(
            self.lib.ncclAllReduce(send, recv, count, NCCL_FLOAT32, NCCL_SUM, comm, stream or None)
        )

    def reduce_scatter(self, send: int, recv: int, count: int, comm: int, stream: int) -> int:
        """``count``: elements each rank receives."""
        return int(
            self.lib.ncclReduceScatter(
                send, recv, count, NCCL_FLOAT32, NCCL_SUM, comm, stream or None
            )
        )

    def all_gather(self, send: int, recv: int, count: int, comm: int, stream: int) -> int:
        """``count``: elements each rank sends."""
        return int(self.lib.ncclAllGather(send, recv, count, NCCL_FLOAT32, comm, stream or None))

    def broadcast(self, send: int, recv: int, count: int, root: int, comm: int, stream: int) -> int:
        return int(
            self.lib.ncclBroadcast(send, recv, count, NCCL_FLOAT32, root, comm, stream or None)
        )

    def group_start(self) -> None:
        self.check(self.lib.ncclGroupStart(), "ncclGroupStart")

    def group_end(self) -> None:
        self.check(self.lib.ncclGroupEnd(), "ncclGroupEnd")

    def destroy(self, comm: int) -> None:
        self.check(self.lib.ncclCommDestroy(comm), "ncclCommDestroy")

    def abort(self, comm: int) -> None:
        """Stop the communicator's unfinished work (kernels waiting for a rank that never
        came) and free it: the way out of a run that failed or was cancelled midway."""
        self.check(self.lib.ncclCommAbort(comm), "ncclCommAbort")


@functools.cache
def load_nccl() -> Nccl:
    """The NCCL library (cached), or a GpuError that says where it was looked for."""
    tried = []
    for name in _candidates():
        try:
            return Nccl(ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL))
        except (OSError, AttributeError) as err:
            tried.append(f"{name} ({err})")
    raise GpuError(
        "NCCL is not available: install nvidia-nccl-cu13 (or set "
        f"{LIBRARY_VARIABLE} to libnccl.so.2); tried " + "; ".join(tried[:4])
    )


def nccl4py_status() -> str:
    """Whether NVIDIA's nccl4py imports here and its version (the device check prints it)."""
    try:
        import nccl.bindings.nccl as binding  # type: ignore[import-not-found]
    except Exception as err:  # noqa: BLE001 - any import failure is the answer
        return f"nccl4py not usable: {type(err).__name__}: {err}"
    version = getattr(binding, "get_version", None)
    return f"nccl4py imports (NCCL {version() if callable(version) else '?'})"
