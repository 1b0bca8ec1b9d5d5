"""Executor scenarios under numba's CUDA simulator, run in a child process by the CI tests.

numba reads NUMBA_ENABLE_CUDASIM when numba.cuda is first imported, so these run in their own
process (tests/gpu/test_executor_sim.py starts it) and never change how other tests see CUDA.
Prints one JSON object: scenario name -> what the tests check.
"""

from __future__ import annotations

import json
import os
import sys

from swimlanes.model.document import OP_KINDS

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

from swimlanes.gpu.errors import ExecutionCancelled, GpuError  # noqa: E402
from swimlanes.gpu.executor import execute  # noqa: E402
from swimlanes.gpu.plan import DeviceInfo  # noqa: E402
from swimlanes.gpu.sim_backend import SimulatorBackend  # noqa: E402
from swimlanes.model.validate import pipeline_from_dict  # noqa: E402

STREAMS = [
    {"name": "s1", "kind": "non_blocking", "priority": -3},
    {"name": "s2", "kind": "blocking"},
]
PROGRAM = [
    {"op": "h2d", "stream": "s1", "bytes": 4096, "label": "H2D a"},
    {"op": "kernel", "stream": "s1", "blocks": 264, "threads": 256, "duration_us": 30},
    {"op": "event_record", "stream": "s1", "event": "ready"},
    {"op": "event_wait", "stream": "s2", "event": "ready"},
    {"op": "d2h", "stream": "s2", "bytes": 2048, "host_memory": "pageable"},
    {"op": "h2d", "stream": "s2", "bytes": 8192},
    {"op": "d2d", "stream": "s1", "bytes": 1024},
    {"op": "memset", "bytes": 512, "async": False},
    {"op": "host_func", "stream": "s2", "duration_us": 20},
    {"op": "malloc", "bytes": 1000},
    {"op": "free"},
    {"op": "host", "duration_us": 10},
    {"op": "stream_sync", "stream": "s1"},
    {"op": "event_sync", "event": "ready"},
    {"op": "device_sync"},
]
# Every API call the executor issues for a pipeline op: all op kinds but host work.
ISSUE_CALLS = set(OP_KINDS) - {"host"}


def pipeline(program=PROGRAM, streams=STREAMS):
    doc = {"format": "swimlanes-pipeline", "version": 1, "name": "sim"}
    return pipeline_from_dict({**doc, "streams": streams, "program": program})


def issued(be: SimulatorBackend) -> list[list]:
    """Calls that issue program ops (the warm-up stream's launches left out)."""
    return [
        list(c)
        for c in be.calls
        if c[0] in ISSUE_CALLS and c[1:2] not in (("warm-up",), ("probe reference",))
    ]


def order() -> dict:
    be = SimulatorBackend()
    tl = execute(pipeline(), repeat=1, warmup=0, backend="none", cuda_backend=be)
    return {
        "issued": issued(be),
        "live": be.live_allocations,
        "rows": len(tl),
        "source": tl.source,
        "ops": tl.ops_json(),
        "meta": {k: v for k, v in tl.meta.items() if isinstance(v, str | int | float)},
    }


def reuse() -> dict:
    out = {}
    for repeat in (1, 4):
        be = SimulatorBackend()
        execute(pipeline(), repeat=repeat, warmup=1, cuda_backend=be)
        out[f"allocs_{repeat}"] = [list(c) for c in be.calls if c[0] == "alloc"]
        out[f"live_{repeat}"] = be.live_allocations
    return out


def memory() -> dict:
    small = DeviceInfo("tiny", 132, 2048, 32, free_bytes=3 << 30, total_bytes=4 << 30)
    be = SimulatorBackend(info=small)
    big = [
        {"op": "h2d", "stream": "s1", "bytes": 5 << 30},
        {"op": "h2d", "stream": "s2", "bytes": 7 << 29},
    ]
    try:
        execute(pipeline(big), cuda_backend=be)
        device = None
    except GpuError as err:
        device = str(err)
    device_allocs = sum(1 for c in be.calls if c[0] == "alloc")
    be2 = SimulatorBackend(host_bytes=2 << 30)
    try:
        execute(pipeline([{"op": "h2d", "stream": "s1", "bytes": 3 << 30}]), cuda_backend=be2)
        host = None
    except GpuError as err:
        host = str(err)
    return {
        "device": device,
        "device_allocs": device_allocs,
        "host": host,
        "host_allocs": sum(1 for c in be2.calls if c[0] == "alloc"),
    }


def _stop_after(n: int):
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > n

    return stop


def cancel() -> dict:
    out = {}
    for after in (3, 40):
        be = SimulatorBackend()
        stop = _stop_after(after)

        try:
            execute(pipeline(), repeat=3, cancel=stop, backend="none", cuda_backend=be)
            out[f"after_{after}"] = {"cancelled": False}
        except ExecutionCancelled as err:
            out[f"after_{after}"] = {
                "cancelled": True,
                "message": str(err),
                "live": be.live_allocations,
                "issued": len(issued(be)),
            }
    return out


class FailingBackend(SimulatorBackend):
    """Fails the Nth issued copy (a CUDA error mid-run) or the Nth allocation."""

    def __init__(self, fail_copy: int = 0, fail_alloc: int = 0) -> None:
        super().__init__()
        self.fail_copy, self.fail_alloc, self.copies, self.allocs = fail_copy, fail_alloc, 0, 0

    def alloc(self, kind, nbytes):
        self.allocs += 1
        if self.allocs == self.fail_alloc:
            raise GpuError("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY")
        return super().alloc(kind, nbytes)

    def prepare_copy(self, kind, s, dev, other, nbytes, sync):
        inner = super().prepare_copy(kind, s, dev, other, nbytes, sync)

        def step():
            self.copies += 1
            if self.copies == self.fail_copy:
                raise GpuError("cuMemcpyDtoHAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS")
            inner()

        return step


def errors() -> dict:
    out = {}
    for name, be in (
        ("mid_run", FailingBackend(fail_copy=7)),
        ("setup", FailingBackend(fail_alloc=3)),
    ):
        try:
            execute(pipeline(), repeat=3, cuda_backend=be)
            out[name] = {"raised": False}
        except GpuError as err:
            out[name] = {"raised": True, "message": str(err), "live": be.live_allocations}
    be = SimulatorBackend()
    tl = execute(pipeline(), repeat=2, cuda_backend=be)  # the app stays usable afterwards
    out["after"] = {"rows": len(tl), "live": be.live_allocations}
    return out


def callbacks() -> dict:
    fractions, partial = [], []
    tl = execute(
        pipeline(),
        repeat=3,
        warmup=1,
        cuda_backend=SimulatorBackend(),
        progress=fractions.append,
        on_partial=lambda t: partial.append(t.meta["repeat"]),
    )
    spread = tl.start_spread is not None and tl.end_spread is not None
    return {
        "fractions": fractions,
        "partial": partial,
        "spread": spread,
        "backend": tl.meta["backend"],
        "note": tl.meta["note"],
    }


SCENARIOS = {f.__name__: f for f in (order, reuse, memory, cancel, errors, callbacks)}

if __name__ == "__main__":
    names = sys.argv[1:] or list(SCENARIOS)
    print(json.dumps({n: SCENARIOS[n]() for n in names}))
