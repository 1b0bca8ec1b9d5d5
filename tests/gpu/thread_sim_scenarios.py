"""Scenarios of pipelines with several host threads on one device, run by the executor under
numba's CUDA simulator (in a child process started by tests/gpu/test_executor_threads.py, since
numba reads NUMBA_ENABLE_CUDASIM at import). Prints one JSON object: scenario name -> what the
tests check.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

from swimlanes.gpu import multi_executor  # noqa: E402
from swimlanes.gpu.errors import ExecutionCancelled, GpuError  # noqa: E402
from swimlanes.gpu.executor import execute  # noqa: E402
from swimlanes.gpu.sim_backend import SimulatorBackend  # noqa: E402
from swimlanes.model.document import Pipeline  # noqa: E402
from swimlanes.model.generators_threads import per_thread_streams_pipeline  # noqa: E402
from swimlanes.model.validate import pipeline_from_dict  # noqa: E402


class ThreadLog(SimulatorBackend):
    """Logs the Python thread that made each call; ``fail_on`` = (stream, n): the n-th kernel
    launched on that stream fails (a CUDA error mid-run)."""

    def __init__(self, fail_on: tuple[str, int] | None = None) -> None:
        super().__init__()
        self.fail_on = fail_on
        self.launched: dict[str, int] = {}

    def _log(self, *entry: Any) -> None:
        super()._log(*entry, threading.current_thread().name)

    def prepare_kernel(self, k, s, a, b):  # type: ignore[no-untyped-def]
        inner = super().prepare_kernel(k, s, a, b)
        if self.fail_on is None or s.name != self.fail_on[0]:
            return inner

        def step() -> None:
            self.launched[s.name] = self.launched.get(s.name, 0) + 1
            if self.launched[s.name] == self.fail_on[1]:  # type: ignore[index]
                raise GpuError("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED")
            inner()

        return step


def run(pipeline: Pipeline, fail_on: tuple[str, int] | None = None, **kw: Any) -> dict:
    be = ThreadLog(fail_on)
    multi_executor._new_backend = lambda simulator: be  # noqa: SLF001 - one device: its backend
    try:
        tl = execute(pipeline, cuda_backend=be, **kw)
    except (GpuError, ExecutionCancelled) as err:
        return {"error": str(err), "type": type(err).__name__, "live": be.live_allocations}
    streams = {s.name for s in pipeline.all_streams}
    # the calls each Python thread made on the program's streams or for its syncs
    issued = [
        [c[0], c[1] if len(c) > 2 and c[1] in streams else None, c[-1]]
        for c in be.calls
        if c[0] in ("h2d", "d2h", "kernel", "stream_sync", "event_record", "event_sync")
        and (len(c) < 3 or c[1] in streams or c[0] == "event_sync")
    ]
    return {
        "rows": len(tl),
        "labels": tl.labels,
        "thread_names": tl.thread_names,
        "thread_device": tl.thread_device.tolist(),
        "host_thread": tl.host_thread.tolist(),
        "issue_start": [int(x) for x in tl.issue_start],
        "issue_end": [int(x) for x in tl.issue_end],
        "start": [int(x) for x in tl.start],
        "end": [int(x) for x in tl.end],
        "backend": tl.meta["backend"],
        "issued": issued,
        "live": be.live_allocations,
    }


def lesson() -> dict:
    return run(per_thread_streams_pipeline(batches=2), repeat=2, warmup=1)


def two_threads(program: list[dict]) -> Pipeline:
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "threads",
            "host_threads": [{"name": "a"}, {"name": "b"}],
            "streams": [{"name": "sa", "host_thread": "a"}, {"name": "sb", "host_thread": "b"}],
            "program": program,
        }
    )


def kernel(stream: str, label: str) -> dict:
    return {"op": "kernel", "stream": stream, "blocks": 1, "threads": 32, "block_us": 1,
            "label": label}  # fmt: skip


def sync_blocks_only_its_thread() -> dict:
    """a waits in an event sync for b's record, which b issues after 30 ms of host work; b
    goes on issuing meanwhile. Then a's own kernel, b's last kernels and stream sync."""
    program = [
        {"op": "host", "host_thread": "b", "duration_us": 30000, "label": "b works"},
        {"op": "event_record", "stream": "sb", "event": "ready", "label": "b ready"},
        {"op": "event_sync", "host_thread": "a", "event": "ready", "label": "a waits"},
        kernel("sa", "a k"),
        kernel("sb", "b k1"),
        kernel("sb", "b k2"),
        {"op": "stream_sync", "stream": "sb", "label": "b syncs"},
    ]
    return run(two_threads(program), repeat=1, warmup=0)


def threads_issue_together() -> dict:
    """a is busy on the host for 30 ms; b issues its kernels and its sync meanwhile."""
    program = [
        {"op": "host", "host_thread": "a", "duration_us": 30000, "label": "a works"},
        kernel("sb", "b k1"),
        kernel("sb", "b k2"),
        {"op": "stream_sync", "stream": "sb", "label": "b syncs"},
        kernel("sa", "a k"),
    ]
    return run(two_threads(program), repeat=1, warmup=0)


def error_on_one_thread() -> dict:
    """worker1's second kernel fails while worker0 goes on issuing its own batches."""
    return run(per_thread_streams_pipeline(batches=3), ("worker1 default", 2), repeat=2, warmup=0)


def cupti_asked() -> dict:
    return run(per_thread_streams_pipeline(batches=1), repeat=1, warmup=0, backend="cupti")


def one_stream_of_two_threads() -> dict:
    """Both threads issue on the legacy default stream (the lesson without per-thread default
    streams); and the same asking for CUPTI, which cannot tell their calls apart."""
    legacy = per_thread_streams_pipeline(batches=2, legacy=True)
    out = run(legacy, repeat=1, warmup=0)
    out["cupti"] = run(legacy, repeat=1, warmup=0, backend="cupti")
    return out


SCENARIOS = {
    f.__name__: f
    for f in (
        lesson,
        sync_blocks_only_its_thread,
        threads_issue_together,
        error_on_one_thread,
        cupti_asked,
        one_stream_of_two_threads,
    )
}

if __name__ == "__main__":
    names = sys.argv[1:] or list(SCENARIOS)
    print(json.dumps({n: SCENARIOS[n]() for n in names}))
