"""Multi-device executor scenarios under numba's CUDA simulator (run in a child process by
tests/gpu/test_multi_executor_sim.py, since numba reads NUMBA_ENABLE_CUDASIM at import).
Prints one JSON object: scenario name -> what the tests check.
"""

from __future__ import annotations

import json
import os
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

from swimlanes.gpu import multi_executor  # noqa: E402
from swimlanes.gpu.errors import ExecutionCancelled, GpuError  # noqa: E402
from swimlanes.gpu.executor import execute  # noqa: E402
from swimlanes.gpu.sim_backend import SimulatorBackend  # noqa: E402
from swimlanes.model.validate import pipeline_from_dict  # noqa: E402
from swimlanes.timeline.timeline import DEP_KINDS  # noqa: E402

CREATED: list[SimulatorBackend] = []
#: Set by a scenario: the next device backend made fails its Nth issued peer copy.
FAIL_PEER_COPY = {"nth": 0}


class FailingPeerCopy(SimulatorBackend):
    """A device whose Nth issued peer copy fails (a CUDA error mid-run)."""

    def __init__(self, nth: int) -> None:
        super().__init__()
        self.nth, self.copies = nth, 0

    def prepare_peer_copy(self, s, dst, dst_context, src, src_context, nbytes):  # type: ignore[no-untyped-def]
        inner = super().prepare_peer_copy(s, dst, dst_context, src, src_context, nbytes)

        def step() -> None:
            self.copies += 1
            if self.copies == self.nth:
                raise GpuError("cuMemcpyPeerAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS")
            inner()

        return step


def _tracked(simulator: bool) -> SimulatorBackend:
    nth, FAIL_PEER_COPY["nth"] = FAIL_PEER_COPY["nth"], 0
    be = FailingPeerCopy(nth) if nth else SimulatorBackend()
    CREATED.append(be)
    return be


multi_executor._new_backend = _tracked  # every device's backend, so tests see them all


def doc(program: list[dict], devices: int = 2, streams: list[dict] | None = None) -> dict:
    names = [f"gpu{d}" for d in range(devices)]
    ranks = names[:2] if devices > 1 else names
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": "multi",
        "devices": [{"name": n} for n in names],
        "communicators": [{"name": "world", "devices": ranks}],
        "streams": streams or [{"name": f"s{d}", "device": n} for d, n in enumerate(names)],
        "program": program,
    }


def ar(stream: str, nbytes: int = 4096, kind: str = "all_reduce", **more: object) -> dict:
    return {"op": kind, "stream": stream, "bytes": nbytes, "communicator": "world", **more}


TWO = [
    {"op": "h2d", "stream": "s0", "bytes": 4096, "label": "load 0"},
    {"op": "h2d", "stream": "s1", "bytes": 4096, "label": "load 1"},
    {"op": "peer_copy", "stream": "s0", "bytes": 8192, "src_device": "gpu0", "dst_device": "gpu1"},
    {"op": "kernel", "stream": "s1", "blocks": 4, "threads": 64, "block_us": 5},
    ar("s0"),
    ar("s1"),
    {"op": "peer_copy", "stream": "s1", "bytes": 1024, "src_device": "gpu1", "dst_device": "gpu0"},
    {"op": "device_sync", "device": "gpu1"},
    {"op": "device_sync"},
]


def run(program: list[dict], devices: int = 2, drop: int | None = None, **kw: object) -> dict:
    CREATED.clear()
    p = pipeline_from_dict(doc(program, devices))
    if drop is not None:  # an edit the file format would refuse: the executor must too
        del p.program[drop]
    first = SimulatorBackend()
    CREATED.append(first)
    try:
        tl = execute(p, cuda_backend=first, **kw)  # type: ignore[arg-type]
    except (GpuError, ExecutionCancelled) as err:
        return {
            "error": str(err),
            "type": type(err).__name__,
            "live": [be.live_allocations for be in CREATED],
            "allocs": sum(1 for be in CREATED for c in be.calls if c[0] == "alloc"),
        }
    calls = [[list(c) for c in be.calls if c[0] not in ("alloc", "release")] for be in CREATED]
    return {
        "rows": len(tl),
        "labels": tl.labels,
        "device_names": tl.device_names,
        "stream_names": tl.stream_names,
        "stream_device": tl.stream_device.tolist(),
        "engine_names": tl.engine_names,
        "engine_device": tl.engine_device.tolist(),
        "engine": [tl.engine_names[e] if e >= 0 else None for e in tl.engine.tolist()],
        "host_device": tl.host_device.tolist(),
        "link_names": tl.link_names,
        "links": [
            [int(r), tl.link_names[int(i)]] for r, i in zip(tl.link_op, tl.link_id, strict=True)
        ],
        "collective_deps": [
            [int(a), int(b)]
            for a, b, k in zip(tl.dep_src, tl.dep_dst, tl.dep_kind, strict=True)
            if DEP_KINDS[int(k)] == "collective"
        ],
        "start": [int(x) for x in tl.start],
        "end": [int(x) for x in tl.end],
        "issue_start": [int(x) for x in tl.issue_start],
        "issue_end": [int(x) for x in tl.issue_end],
        "data_check": tl.meta["data_check"],
        "meta_devices": tl.meta["devices"],
        "peer_access": tl.meta["peer_access"],
        "live": [be.live_allocations for be in CREATED],
        "calls": calls,
        "backends": len(CREATED),
    }


def two_devices() -> dict:
    return run(TWO, repeat=2, warmup=1)


def every_collective() -> dict:
    program = [
        ar("s0", 8192, "reduce_scatter"), ar("s1", 8192, "reduce_scatter"),
        ar("s0", 8192, "all_gather"), ar("s1", 8192, "all_gather"),
        ar("s0", 4096, "broadcast", root="gpu1"), ar("s1", 4096, "broadcast", root="gpu1"),
        ar("s0", 4096), ar("s1", 4096),
    ]  # fmt: skip
    return run(program, repeat=1, warmup=0)


def one_device() -> dict:
    """Peer copy to itself and each collective of one rank, on a single device."""
    program = [
        {"op": "peer_copy", "stream": "s0", "bytes": 4096},
        ar("s0"), ar("s0", kind="reduce_scatter"), ar("s0", kind="all_gather"),
        ar("s0", kind="broadcast"),
    ]  # fmt: skip
    return run(program, devices=1, repeat=1, warmup=0)


def too_many_devices() -> dict:
    os.environ["SWIMLANES_SIM_GPUS"] = "2"  # a machine of two simulated GPUs
    try:
        return run(TWO, devices=3)
    finally:
        del os.environ["SWIMLANES_SIM_GPUS"]


def missing_rank() -> dict:
    return run([ar("s0"), ar("s1"), {"op": "device_sync"}], drop=1)


def cancel_mid_run() -> dict:
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 12

    return run(TWO, repeat=3, warmup=1, cancel=stop)


def error_on_one_device() -> dict:
    """gpu1's first peer copy fails while gpu0 waits for it in the all-reduce."""
    FAIL_PEER_COPY["nth"] = 1
    program = [
        {"op": "peer_copy", "stream": "s1", "bytes": 1024, "src_device": "gpu1",
         "dst_device": "gpu0"},
        ar("s0"), ar("s1"),
    ]  # fmt: skip
    return run(program, repeat=2, warmup=0)


def device_memory() -> dict:
    from swimlanes.gpu.plan import DeviceInfo

    CREATED.clear()
    small = DeviceInfo("small", 132, 2048, 32, free_bytes=1 << 30, total_bytes=2 << 30)
    first = SimulatorBackend(info=small)
    CREATED.append(first)
    big = [{"op": "peer_copy", "stream": "s1", "bytes": 3 << 30, "src_device": "gpu0",
            "dst_device": "gpu1"}]  # fmt: skip
    try:
        execute(pipeline_from_dict(doc(big)), cuda_backend=first)
        return {"error": None}
    except GpuError as err:
        allocs = sum(1 for be in CREATED for c in be.calls if c[0] == "alloc")
        return {"error": str(err), "allocs": allocs}


def cross_device_event() -> dict:
    program = [
        {"op": "host", "duration_us": 3000},
        {"op": "event_record", "stream": "s0", "event": "ready"},
        {"op": "event_wait", "stream": "s1", "event": "ready"},
        {"op": "kernel", "stream": "s1", "blocks": 1, "threads": 32, "block_us": 1},
    ]
    return run(program, repeat=1, warmup=0)


def links_calibration() -> dict:
    """The links calibration end to end on two simulated GPUs (small sizes: host memory)."""
    from swimlanes.engine.presets import get_preset
    from swimlanes.gpu import calibrate_links as cl

    cl.QUICK_COPY_SIZES = [4096, 1 << 20]
    cl.QUICK_NCCL_SIZES = [1024, 16384, 1 << 20]
    fields, raw = cl.calibrate_links(gpus=2, quick=True, repeat=1)
    preset = cl.apply_links(get_preset("h200").to_dict(), fields, "Links measured.")
    return {"fields": fields, "raw": raw, "preset_gpus": preset["gpus"]}


SCENARIOS = {
    f.__name__: f
    for f in (
        two_devices,
        every_collective,
        one_device,
        too_many_devices,
        missing_rank,
        cancel_mid_run,
        cross_device_event,
        links_calibration,
        error_on_one_device,
        device_memory,
    )  # fmt: skip
}

if __name__ == "__main__":
    names = sys.argv[1:] or list(SCENARIOS)
    print(json.dumps({n: SCENARIOS[n]() for n in names}))
